"""Planted-signal tests of Part I's paper pages (01a, 01b) on the demo's face world.

The demo's models are mini-CLIPs trained in the book (``trained:face-clip``) on the face world,
whose captions name White, Male and middle-aged pictures least, and whose White pictures vary
most. Each test computes the page's headline measure on the demo book's own models and pictures
(its cache: nothing is trained again) and checks that it recovers the planted cause beyond its
interval, and that the uniform-reporting control shows none.
"""

import numpy as np
import pytest

from vlbias import markedness as mk
from vlbias.data import load_dataset
from vlbias.embeddings import embed_images, embed_texts
from vlbias.models import load_image_text_model
from vlbias.stats import rate_difference_interval

PLANTED, CONTROL = "trained:face-clip", "trained:face-clip?uniform_named=0.5"


def _flags(spec, dataset):
    model = load_image_text_model(spec, device="cpu")
    embeddings = embed_images(model, dataset, progress=False)
    person, prompts = mk.prompt_set()
    flags = mk.unmarked_flags(embeddings, lambda texts: embed_texts(model, texts, progress=False), prompts, person)
    return embeddings, flags


def _gap_difference(records, planted, control, family, groups, n_boot=2000, seed=0):
    """The planted model's unmarked-rate gap of ``groups`` (over the rest of ``family``) minus the
    control's, on the same pictures: estimate and 95% percentile interval, resampling the pictures.
    Paired, so what the drawing alone gives both models (the control's gap) is taken out."""
    inside = records[family].isin(groups).to_numpy()
    flags = np.stack([planted[family].to_numpy(), control[family].to_numpy()]).astype(float)

    def difference(rows):
        gaps = flags[:, rows][:, inside[rows]].mean(axis=1) - flags[:, rows][:, ~inside[rows]].mean(axis=1)
        return gaps[0] - gaps[1]

    generator = np.random.default_rng(seed)
    draws = [difference(generator.integers(0, len(inside), len(inside))) for _ in range(n_boot)]
    return difference(np.arange(len(inside))), *np.percentile(draws, [2.5, 97.5])


def _gap(records, flags, family, groups):
    """Unmarked-rate gap (share) of ``groups`` over every other group of ``family``, Newcombe interval."""
    inside = records[family].isin(groups).to_numpy()
    unmarked = flags[family].to_numpy()
    return rate_difference_interval(int(unmarked[inside].sum()), int(inside.sum()), int(unmarked[~inside].sum()),
                                    int((~inside).sum()))


@pytest.mark.slow
def test_01b_unmarked_rates_recover_the_planted_reporting_bias(demo_cache):
    dataset = load_dataset("fairface", root="world", split="val")
    records = dataset.records
    _, planted = _flags(PLANTED, dataset)
    _, control = _flags(CONTROL, dataset)
    # Figure 4: White, named least, is unmarked most often, above every other race's interval
    race = mk.unmarked_by(records, planted, "race", "race").set_index("group")
    others = race.drop(index="White")
    assert race.loc["White", "ci_low_%"] > others["ci_high_%"].max()
    # the control names every race equally often: White is not singled out beyond the other races
    # (its pictures still vary most, and a picture that matches every label less surely is unmarked a
    # little more often: the control's White gap is small, the planted one is large; checked below)
    control_race = mk.unmarked_by(records, control, "race", "race").set_index("group")
    assert control_race.loc["White", "ci_low_%"] <= control_race.drop(index="White")["ci_high_%"].max()
    # every family: the planted default groups are unmarked more often than the rest, beyond the
    # interval (by at least 10 points for race and gender, 5 for the four middle ages against the five
    # others), and by more than under the control on the same pictures (whose drawing alone may favour a
    # group: White's pictures vary most), the paired difference of the two gaps beyond 0. (The two gaps'
    # own intervals may overlap: on the machine of 2026-12-02 the race gaps were 20.1 [13.3, 28.7] and
    # 10.5 [3.9, 19.1] points, their paired difference 9.6 [1.0, 17.9]; gender 15.9 [7.9, 23.8] and age
    # 12.1 [5.3, 19.9] points of difference.)
    for family, default, margin in (("race", ["White"], 0.1), ("gender", ["Male"], 0.1),
                                    ("age", ["20-29", "30-39", "40-49", "50-59"], 0.05)):
        gap, low, high = _gap(records, planted, family, default)
        assert low > margin, (family, gap, low, high)
        difference, difference_low, difference_high = _gap_difference(records, planted, control, family, default)
        assert difference_low > 0, (family, (gap, low, high), (difference, difference_low, difference_high))


@pytest.mark.slow
def test_01a_the_group_captions_leave_unnamed_is_less_self_similar_than_the_other_races(demo_cache):
    """The planted-reporting mini-CLIP embeds White, the group its captions leave unnamed and whose
    pictures vary most, less self-similarly than the other six races on average.

    Not that White is the *lowest* of the seven: which group is lowest also depends on the trained
    weights, which are the same bit for bit on one machine but not across CPUs. Retrained with its
    learning rate or epochs nudged (1.9e-3, 2.1e-3; 29, 31 epochs) on the machine of 2026-12-03, the
    planted model put White lowest once and Indian or Black lowest four times (CI's machine put Indian
    lowest too), while White's deficit against the others' mean stayed between -0.020 and -0.063. Under
    the control the deficit changed sign when retrained (-0.050 and -0.002), so it is not claimed there;
    the variety's own effect is tested below, on two worlds under the control."""
    dataset = load_dataset("fairface", root="world", split="val")
    embeddings = embed_images(load_image_text_model(PLANTED, device="cpu"), dataset, progress=False)
    by_race = mk.self_similarity_by_group(dataset.records, embeddings, "race").set_index("race")["self_similarity"]
    deficit = by_race["White"] - by_race.drop(index="White").mean()
    assert deficit < -0.01, by_race.sort_values()


@pytest.mark.slow
def test_01a_self_similarity_recovers_the_planted_variety_under_uniform_reporting(demo_cache):
    """The control model (every label named equally often) embeds White pictures, which vary most in
    the face world, less self-similarly than the same pictures drawn with the others' variety."""
    model = load_image_text_model(CONTROL, device="cpu")

    def white(query):
        dataset = load_dataset("fairface", root=query, split="val")
        embeddings = embed_images(model, dataset, progress=False)
        race = dataset.records["race"].to_numpy()
        return embeddings[race == "White"]

    varied, alike = white("world"), white("world?varied_race_variety=0.2")
    test = mk.self_similarity_gap_test(varied, alike, permutations=1000, seed=0)
    assert test["gap"] < -0.03 and test["p_value"] < 0.01, test
