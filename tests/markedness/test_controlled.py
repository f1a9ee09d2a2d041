"""Part I as a controlled experiment: the per-kind markedness call, the gap interval, and the planted signal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlbias.markedness.controlled import (across_seeds, reporting_conditions, reporting_experiment, world_prompts,
                                          world_unmarked_flags)
from vlbias.stats import rate_difference_interval


@pytest.mark.parametrize("counts, published", [
    # Newcombe (1998), Stat. Med. 17:873-890, Table II, method 10 (score interval from Wilson, no correction)
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
])
def test_gap_interval_matches_newcombes_worked_examples(counts, published):
    difference, low, high = rate_difference_interval(*counts)
    assert difference == pytest.approx(counts[0] / counts[1] - counts[2] / counts[3])
    assert (low, high) == pytest.approx(published, abs=6e-5)


def test_each_picture_is_judged_against_its_own_kinds_prompts():
    # planted geometry: texts on the unit circle at known angles, images at known angles
    angles = {"a photo of a circle": 0.0, "a photo of a red circle": 0.5, "a photo of a blue circle": -1.0,
              "a photo of a star": 2.0, "a photo of a red star": 2.6, "a photo of a blue star": 1.7}

    def text_embed(texts):
        return np.array([[np.cos(angles[t]), np.sin(angles[t])] for t in texts])

    records = pd.DataFrame({"kind": ["circle", "star", "circle", "star"], "colour": ["red", "blue", "blue", "red"]})
    image_angles = np.array([0.1, 1.95, 0.4, 2.5])
    images = np.stack([np.cos(image_angles), np.sin(image_angles)], axis=1)
    flags = world_unmarked_flags(records, images, text_embed)
    # by hand: unmarked iff the bare prompt is the nearest angle among the kind's three prompts
    expected = []
    for kind, angle in zip(records["kind"], image_angles):
        bare, labelled = world_prompts(kind, ["blue", "red"])
        distance = {t: abs(angle - angles[t]) for t in [bare, *labelled["colour"].values()]}
        expected.append(min(distance, key=distance.get) == bare)
    assert flags.tolist() == expected == [True, True, False, False]


def test_conditions_name_the_reporting_gap():
    conditions = reporting_conditions([0.1, 0.9], others=0.9, uniform=0.5, epochs=3)
    assert conditions["reporting_gap"].tolist() == pytest.approx([0.8, 0.0, 0.0])
    assert conditions["spec"].iloc[0] == "trained:world-clip?red_named=0.1&blue_named=0.9&seed=0&epochs=3"
    assert conditions["control"].tolist() == [False, False, True]
    seeded = reporting_conditions([0.1], uniform=0.5, seeds=[4, 5])
    assert seeded["seed"].tolist() == [4, 4, 5, 5] and seeded["spec"].iloc[2].endswith("&seed=5")


def test_across_seeds_gives_the_t_interval_of_the_seed_means_and_keeps_a_lone_seed_interval():
    from scipy import stats

    table = pd.DataFrame({"condition": ["a", "a", "a", "b"], "seed": [0, 1, 2, 0], "gap_pp": [10.0, 16.0, 25.0, 3.0],
                          "ci_low_pp": [5.0, 9.0, 20.0, -2.0], "ci_high_pp": [15.0, 22.0, 30.0, 8.0], "control": False})
    summary = across_seeds(table, "gap_pp", "ci_low_pp", "ci_high_pp", ["condition"]).set_index("condition")
    values = table["gap_pp"][:3]
    low, high = stats.t.interval(0.95, 2, loc=values.mean(), scale=stats.sem(values))
    assert summary.loc["a", ["gap_pp", "ci_low_pp", "ci_high_pp"]].tolist() == pytest.approx([values.mean(), low, high])
    assert summary.loc["a", ["seeds", "seed_min", "seed_max"]].tolist() == [3, 10.0, 25.0]
    assert summary.loc["b", ["gap_pp", "ci_low_pp", "ci_high_pp", "seeds"]].tolist() == [3.0, -2.0, 8.0, 1]
    cut = across_seeds(table, "gap_pp", "ci_low_pp", "ci_high_pp", ["condition"], bounds=(0, 30)).set_index("condition")
    assert cut.loc["a", ["ci_low_pp", "ci_high_pp"]].tolist() == pytest.approx([max(low, 0), min(high, 30)])


@pytest.mark.slow
def test_planted_signal_unmarked_gap_follows_the_reporting_gap(demo_cache):
    """The cause is planted: red goes unnamed more often, so red pictures become unmarked.

    At the demo settings (every kind half red, seeds 0, 1 and 2) the red-minus-blue unmarked gap,
    averaged over the seeds, grows with the reporting gap; at the largest gap its interval across
    seeds lies above zero, and every seed's gap there lies above every seed's gap under uniform
    reporting at 0.5, whose interval across seeds holds zero. (One model's gap under uniform
    reporting strays far, either way: the bare prompt is then a near-tie between the colours;
    hence the seeds.) The twelve models are those the demo book's 01c trained (its cache).
    """
    from vlbias.data import load_dataset
    from vlbias.data.planted_world import spread_shares, world_root

    conditions = reporting_conditions([0.1, 0.5, 0.9], others=0.9, uniform=0.5, share_spread=0.0, seeds=[0, 1, 2])
    test = load_dataset("planted-world", root=world_root(shares=spread_shares(0.0)), split="test")
    result = reporting_experiment(conditions, test, device="cpu")
    gaps = result["gaps"].set_index("condition")
    assert (gaps["seeds"] == 3).all()
    sweep = gaps[~gaps["control"]].sort_values("reporting_gap")
    assert sweep["gap_pp"].is_monotonic_increasing
    control = gaps[gaps["control"]].iloc[0]
    assert sweep["ci_low_pp"].iloc[-1] > 0 and sweep["seed_min"].iloc[-1] > control["seed_max"]
    assert control["ci_low_pp"] < 0 < control["ci_high_pp"]
    # the planted signal is the contrast with the control: seed by seed, the widest reporting gap's unmarked
    # gap exceeds the control's, as the page's box computes it (whose t interval across three seeds is wide:
    # its banner says how many seeds the contrast needs)
    from vlbias.markedness import findings as mk_findings

    per_seed = result["by_seed"]["gaps"].pivot_table(index="seed", columns="condition", values="gap_pp")
    widest = sweep.index[-1]
    assert (per_seed[widest] - per_seed[control.name] > 0).all(), per_seed
    found = mk_findings.reporting_findings(result["gaps"], result["by_seed"]["gaps"], None,
                                           mk_findings.reporting_specs(conditions))
    assert found[0].estimates["contrast"].value == pytest.approx((per_seed[widest] - per_seed[control.name]).mean())
    assert found[0].verdict in ("recovered", "not recovered")
    assert found[0].control_spec.startswith("trained:world-clip?red_named=0.5&blue_named=0.5&seed=0")
