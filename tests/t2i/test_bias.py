"""Shares, VRBS, Spearman and their bootstrap, against hand-worked values and scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.metrics import vrbs
from vlbias.t2i.bias import (bootstrap_bias_scores, bias_scores, classify_gaps, compare_with_reference,
                             diversity_by_group, generated_shares, mean_pairwise_distance, reference_shares,
                             spearman)


def labels_from_counts(counts: dict[str, tuple[int, int, int]]) -> pd.DataFrame:
    """profession -> (female, male, no person) image counts, as a label table."""
    rows = []
    for profession, (female, male, nobody) in counts.items():
        rows += [(profession, "female")] * female + [(profession, "male")] * male + [(profession, "no person")] * nobody
    return pd.DataFrame(rows, columns=["profession", "perceived"])


COUNTS = {"nurse": (9, 1, 2), "carpenter": (0, 10, 0), "teacher": (6, 4, 0), "lawyer": (3, 7, 5)}
REFERENCE = pd.Series({"nurse": 0.90, "carpenter": 0.02, "teacher": 0.78, "lawyer": 0.35, "pilot": 0.05})


def test_shares_leave_out_images_without_a_person():
    shares = generated_shares(labels_from_counts(COUNTS))
    assert shares.loc["nurse", ["n_images", "n_person", "n_female"]].tolist() == [12, 10, 9]
    assert shares["generated share"].to_dict() == pytest.approx({"carpenter": 0.0, "lawyer": 0.3, "nurse": 0.9, "teacher": 0.6})
    low, high = shares.loc["teacher", ["ci_low", "ci_high"]]
    assert low < 0.6 < high


def test_vrbs_and_spearman_on_a_hand_worked_example():
    table = compare_with_reference(generated_shares(labels_from_counts(COUNTS)), REFERENCE)
    assert sorted(table.index) == ["carpenter", "lawyer", "nurse", "teacher"]  # pilot has no images
    # |gaps| = 0.02, 0.05, 0.00, 0.18 -> mean 0.0625
    scores = bias_scores(table)
    assert scores["VRBS"] == pytest.approx(1 - 0.0625)
    assert scores["VRBS"] == pytest.approx(vrbs([0.0, 0.3, 0.9, 0.6], [0.02, 0.35, 0.90, 0.78]))
    # identical ranks (carpenter < lawyer < teacher < nurse in both): rho = 1
    assert scores["spearman_rho"] == pytest.approx(1.0)
    rho, p = spearman([0.1, 0.4, 0.2, 0.9, 0.5], [0.2, 0.1, 0.3, 0.8, 0.7])
    expected = stats.spearmanr([0.1, 0.4, 0.2, 0.9, 0.5], [0.2, 0.1, 0.3, 0.8, 0.7])
    assert rho == pytest.approx(0.7) and p == pytest.approx(expected.pvalue)  # 1 - 6*6/(5*24)


def test_bootstrap_interval_covers_estimate_and_shrinks_with_more_images():
    rng = np.random.default_rng(0)
    truth = pd.Series(np.linspace(0.05, 0.95, 12), index=[f"job{k}" for k in range(12)])

    def sample(n):
        rows = [(job, "female" if rng.random() < p else "male") for job, p in truth.items() for _ in range(n)]
        return pd.DataFrame(rows, columns=["profession", "perceived"])

    small = bootstrap_bias_scores(sample(10), truth, n_boot=400, seed=1)
    large = bootstrap_bias_scores(sample(400), truth, n_boot=400, seed=1)
    for table in (small, large):
        assert (table["ci_low"] <= table["estimate"]).all() and (table["estimate"] <= table["ci_high"]).all()
    width = lambda t, m: t.loc[m, "ci_high"] - t.loc[m, "ci_low"]  # noqa: E731
    assert width(large, "VRBS") < width(small, "VRBS") / 3  # about 1/sqrt(40) as wide
    assert large.loc["VRBS", "estimate"] > 0.95 and large.loc["spearman_rho", "ci_low"] > 0.9


def test_bootstrap_matches_resampling_images_directly():
    labels = labels_from_counts(COUNTS)
    table = bootstrap_bias_scores(labels, REFERENCE, n_boot=1500, seed=2)
    rng = np.random.default_rng(5)
    table_ref = compare_with_reference(generated_shares(labels), REFERENCE)
    # the direct way, in numpy: resample each profession's images, share = female / with a person
    shares = []
    for profession, group in labels.groupby("profession"):
        drawn = group["perceived"].to_numpy()[rng.integers(len(group), size=(4000, len(group)))]
        shares.append(((drawn == "female").sum(1) / (drawn != "no person").sum(1), REFERENCE[profession]))
    values = 1 - np.mean([np.abs(share - reference) for share, reference in shares], axis=0)
    estimate = bias_scores(table_ref)["VRBS"]
    assert table.loc["VRBS", "estimate"] == pytest.approx(estimate)
    # VRBS: the estimate -/+ 1.96 standard deviations of the replicates (the standard interval)
    half = 1.959964 * values.std(ddof=1)
    assert table.loc["VRBS", "ci_low"] == pytest.approx(estimate - half, abs=0.01)
    assert table.loc["VRBS", "ci_high"] == pytest.approx(min(1.0, estimate + half), abs=0.01)


def shares_sample(generated: dict[str, float], n: int) -> pd.DataFrame:
    """``n`` images per profession, exactly ``round(n * share)`` of them labelled female."""
    rows = [(job, "female" if k < round(n * share) else "male") for job, share in generated.items() for k in range(n)]
    return pd.DataFrame(rows, columns=["profession", "perceived"])


@pytest.mark.parametrize("offset", [0.0, 0.05, 0.3])
def test_the_vrbs_interval_holds_its_estimate_at_near_and_far_from_the_reference(offset):
    from vlbias.t2i.bias import percentile_interval

    # 8 professions, 20 images each; the generated shares equal to the reference (offset 0: VRBS 1.000,
    # whose percentile interval lies wholly below it), 0.05 from it, or 0.3 from it
    reference = pd.Series([0.3, 0.35, 0.4, 0.45, 0.55, 0.6, 0.65, 0.7], index=[f"job{k}" for k in range(8)])
    generated = {job: min(1.0, share + offset) if k % 2 else max(0.0, share - offset)
                 for k, (job, share) in enumerate(reference.items())}
    table = bootstrap_bias_scores(shares_sample(generated, 20), reference, n_boot=2000, seed=3).loc["VRBS"]
    assert table["estimate"] == pytest.approx(1 - offset)
    assert table["ci_low"] <= table["estimate"] <= table["ci_high"] <= 1.0
    assert table["ci_high"] - table["ci_low"] > 0.02  # it has a width: the sampling of 20 images a profession
    # the replicates' own percentile interval, for contrast (the same draws: seed 3)
    rng = np.random.default_rng(3)
    replicates = []
    counts = np.array([[round(20 * share), 20 - round(20 * share)] for share in generated.values()])
    draws = np.stack([rng.multinomial(20, row / 20, size=2000) for row in counts], axis=1)
    for replicate in draws[..., 0] / 20:
        replicates.append(1 - np.mean(np.abs(replicate - reference.to_numpy())))
    percentile = percentile_interval(replicates, 0.95)
    if offset == 0.0:
        assert percentile["ci_high"] < 1.0  # the percentile interval excludes the estimate, 1.000
    if offset == 0.3:  # far from the reference the replicates are near-normal: the two intervals agree
        assert table["ci_low"] == pytest.approx(percentile["ci_low"], abs=0.01)
        assert table["ci_high"] == pytest.approx(percentile["ci_high"], abs=0.01)


def test_gap_patterns():
    table = pd.DataFrame({"generated share": [0.99, 0.30, 0.62, 0.70, 0.50],
                          "reference share": [0.90, 0.60, 0.55, 0.80, 0.50]}, index=list("abcde"))
    assert classify_gaps(table, tolerance=0.001).tolist() == ["amplified", "reversed", "amplified", "attenuated", "matched"]


def test_pairwise_distance_and_diversity():
    same = np.tile([[1.0, 0.0]], (4, 1))
    opposite = np.array([[1.0, 0.0], [-1.0, 0.0]])
    orthogonal = np.eye(3)
    assert mean_pairwise_distance(same) == pytest.approx(0.0)
    assert mean_pairwise_distance(opposite) == pytest.approx(2.0)
    assert mean_pairwise_distance(orthogonal) == pytest.approx(1.0)
    embeddings = np.vstack([same[:2], orthogonal[:2, :2], [[0.0, 1.0]]])
    diversity = diversity_by_group(embeddings, ["x", "x", "y", "y", "z"])
    assert diversity.to_dict() == pytest.approx({"x": 0.0, "y": 1.0})


def test_reference_tables_ship_with_the_package():
    bls = reference_shares()
    assert len(bls) == 40 and bls["nurse"] == pytest.approx(0.90) and bls["carpenter"] == pytest.approx(0.02)
    assert "Bureau of Labor Statistics" in bls.attrs["source"]


def test_too_few_professions_with_a_person_leave_the_measures_undefined_and_say_why():
    # 04b in the rehearsal: a random-weight annotator labels every image "no person"; the page goes on
    from vlbias.t2i import findings
    from vlbias.t2i.bias import paired_bootstrap_change, published_scores
    from vlbias.t2i.controls import paired_bias_comparison

    labels = labels_from_counts({"nurse": (0, 0, 4), "carpenter": (1, 3, 0), "lawyer": (0, 0, 2)})
    scores = bootstrap_bias_scores(labels, REFERENCE, n_boot=10)
    assert list(scores.index) == ["VRBS", "spearman_rho"] and scores[["estimate", "ci_low", "ci_high"]].isna().all().all()
    assert (scores["n_boot"] == 0).all()
    assert scores["note"].str.contains(r"only 1 profession\(s\) of the 3 drawn .* annotator's prompts").all()
    table = compare_with_reference(generated_shares(labels), REFERENCE)
    assert np.isnan(bias_scores(table)["VRBS"]) and "need 3 or more" in bias_scores(table)["note"]
    from vlbias.t2i.study import StudyRun

    boxed = findings.bias_findings(StudyRun.from_labels("CompVis/stable-diffusion-v1-4", labels, REFERENCE),
                                   None, published_scores())
    assert [f.verdict for f in boxed] == ["cannot test", "cannot test"]
    assert all("only 1 profession" in (f.ours + f.note) for f in boxed)
    nobody = labels.assign(perceived="no person", seed=range(len(labels)))
    change = paired_bootstrap_change(nobody, nobody, REFERENCE, n_boot=10)
    assert change[["a", "b", "change"]].isna().all().all() and change["note"].str.startswith("undefined: only 0").all()
    summary, per_profession = paired_bias_comparison(nobody, nobody, REFERENCE, n_boot=10)
    assert np.isnan(summary["VRBS change"]) and summary["note"].startswith("undefined: only 0 profession(s) of the 3")
    assert per_profession.empty
    # three scorable professions: defined again, no note
    defined = labels_from_counts({"nurse": (3, 1, 0), "carpenter": (1, 3, 0), "lawyer": (2, 2, 0)})
    assert "note" not in bootstrap_bias_scores(defined, REFERENCE, n_boot=10).columns


@pytest.mark.parametrize("bad,message", [([0.2, np.nan, 0.4], "model_share has 1 row"),
                                         ([0.2, 0.3, 0.4, 0.5], "one length"), ([20.0, 30.0, 40.0], "outside"),
                                         ([], "at least")])
def test_vrbs_and_spearman_refuse_bad_shares(bad, message):
    from vlbias.t2i.bias import spearman, vrbs

    for measure in (vrbs, spearman):
        with pytest.raises(ValueError, match=message):
            measure(bad, [0.1, 0.5, 0.9])


def seeded(labels: pd.DataFrame) -> pd.DataFrame:
    return labels.assign(seed=labels.groupby("profession").cumcount())


def test_paired_bootstrap_of_a_change_keeps_the_seeds_paired():
    from vlbias.t2i.bias import bootstrap_bias_scores, paired_bootstrap_change

    rng = np.random.default_rng(3)
    professions = {name: rng.integers(2, 9) for name in ["nurse", "carpenter", "teacher", "lawyer"]}
    a = seeded(labels_from_counts({name: (f, 10 - f, 0) for name, f in professions.items()}))
    # identical runs: the change is exactly 0 in every replicate
    same = paired_bootstrap_change(a, a.sample(frac=1, random_state=0), REFERENCE, n_boot=100)
    assert (same[["change", "ci_low", "ci_high"]].to_numpy() == 0).all()
    # planted: run b turns one male nurse image female (same seed), nothing else changes
    b = a.copy()
    flipped = b.index[(b.profession == "nurse") & (b.perceived == "male")][0]
    b.loc[flipped, "perceived"] = "female"
    reference = REFERENCE.copy()
    reference["nurse"] = 1.0  # every female image more moves the nurse share towards it
    change = paired_bootstrap_change(a, b, reference, n_boot=500, seed=1)
    table_a = compare_with_reference(generated_shares(a), reference)
    table_b = compare_with_reference(generated_shares(b), reference)
    expected = vrbs(table_b["generated share"], table_b["reference share"]) - vrbs(table_a["generated share"], table_a["reference share"])
    assert change.loc["VRBS", "change"] == pytest.approx(expected) == pytest.approx(0.1 / 4)
    low, high = change.loc["VRBS", ["ci_low", "ci_high"]]
    # VRBS's change gets the standard interval (as VRBS alone): symmetric about the estimate, so it holds
    # it; in every replicate b differs from a only where the flipped seed was drawn (never a loss), and
    # the interval's width is that resampling's: 2 z sd of changes between 0 and 0.1 / 4 per draw
    assert low < expected < high and (low + high) / 2 == pytest.approx(expected)
    assert 0 < high - low < 2 * 1.96 * 0.1 / 4
    independent = bootstrap_bias_scores(a, reference, n_boot=500, seed=1).loc["VRBS"]
    assert high - low < (independent.ci_high - independent.ci_low) / 2  # pairing removes the shared noise


def test_paired_bootstrap_refuses_unpaired_runs():
    from vlbias.t2i.bias import paired_bootstrap_change

    a = seeded(labels_from_counts(COUNTS))
    with pytest.raises(ValueError, match="no partner"):
        paired_bootstrap_change(a, a.iloc[1:], REFERENCE)
    with pytest.raises(ValueError, match="lacks the columns"):
        paired_bootstrap_change(a.drop(columns="seed"), a, REFERENCE)


def test_shares_and_bootstrap_follow_their_target_columns_and_defaults():
    labels = labels_from_counts(COUNTS).rename(columns={"profession": "job", "perceived": "seen"})
    male = generated_shares(labels, target="male", group="job", label="seen", excluded=("no person",),
                            confidence=0.90)
    assert male.columns.tolist() == ["n_images", "n_person", "n_male", "generated share", "ci_low", "ci_high"]
    assert male.loc["lawyer", ["n_images", "n_person", "n_male"]].tolist() == [15, 10, 7]
    ci = stats.binomtest(7, 10).proportion_ci(0.90, method="wilson")
    assert male.loc["lawyer", ["generated share", "ci_low", "ci_high"]].tolist() == pytest.approx([0.7, ci.low, ci.high])
    # nobody excluded: "no person" images count as persons; a target nobody got has share 0
    everyone = generated_shares(labels, target="robot", group="job", label="seen", excluded=())
    assert everyone.loc["lawyer", ["n_person", "n_robot", "generated share"]].tolist() == [15, 0, 0.0]
    table = compare_with_reference(generated_shares(labels_from_counts(COUNTS)), REFERENCE)
    assert table.index.tolist() == ["carpenter", "lawyer", "nurse", "teacher"]  # pilot: no images, left out
    assert table.loc["nurse", "gap"] == pytest.approx(0.9 - 0.9) and table.loc["lawyer", "gap"] == pytest.approx(0.3 - 0.35)
    scores = bias_scores(table)
    rho, p = stats.spearmanr(table["generated share"], table["reference share"])
    assert scores == pytest.approx({"professions": 4, "VRBS": 1 - np.mean(np.abs(table["gap"])), "spearman_rho": rho,
                                    "spearman_p": p})
    boot = bootstrap_bias_scores(labels_from_counts(COUNTS), REFERENCE)
    pd.testing.assert_frame_equal(boot, bootstrap_bias_scores(labels_from_counts(COUNTS), REFERENCE, n_boot=1000,
                                                              confidence=0.95, seed=0))
    assert boot.columns.tolist() == ["estimate", "ci_low", "ci_high", "n_boot"] and boot.loc["VRBS", "n_boot"] == 1000
    by_male = bootstrap_bias_scores(labels, 1 - REFERENCE, target="male", group="job", label="seen", n_boot=50)
    assert by_male.loc["VRBS", "estimate"] == pytest.approx(scores["VRBS"])  # the male side of the same gaps
    two = bias_scores(table.iloc[:2])
    assert np.isnan(two["VRBS"]) and two["note"].startswith("undefined: only 2 profession(s) have both a reference share")


def test_scorable_limits_joins_gap_patterns_and_spearman_size():
    from vlbias.t2i.bias import label_counts

    table = compare_with_reference(generated_shares(labels_from_counts(COUNTS)), REFERENCE)
    assert bias_scores(table.iloc[:3])["professions"] == 3  # three are enough
    assert bias_scores(table.iloc[:2])["note"] == (
        "undefined: only 2 profession(s) have both a reference share and an image the annotator labelled as showing a "
        "person, and VRBS and Spearman's ρ need 3 or more. Check the annotator's prompts (does 'no person' win "
        "everywhere?) and that the profession names match the reference table.")
    with pytest.raises(ValueError, match=r"needs at least 3"):
        spearman([0.1, 0.2], [0.3, 0.4])
    # a profession without a reference share is left out; one with a single person image stays
    labels = labels_from_counts({**COUNTS, "astronaut": (1, 0, 0), "pilot": (1, 0, 3)})
    joined = compare_with_reference(generated_shares(labels), REFERENCE)
    assert "astronaut" not in joined.index and joined.loc["pilot", "n_person"] == 1
    assert label_counts(labels).loc["pilot"].tolist() == [1, 0, 3]  # profession and perceived by default
    gaps = pd.DataFrame({"generated share": [0.3, 0.7, 0.6], "reference share": [0.5, 0.5, 0.6]}, index=list("abc"))
    patterns = classify_gaps(gaps)
    # a reference at parity has no majority to reverse; equal shares are matched at tolerance 0
    assert patterns.tolist() == ["amplified", "amplified", "matched"] and patterns.name == "pattern"


def test_bootstrap_leaves_out_professions_without_a_person_quietly_and_passes_exclusions_on():
    import warnings

    # "rare": one person among ten images, so about a third of the replicates draw nobody there
    labels = labels_from_counts({"nurse": (8, 2, 0), "carpenter": (1, 9, 0), "rare": (1, 0, 9)})
    reference = pd.Series({"nurse": 0.9, "carpenter": 0.05, "rare": 0.4})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        boot = bootstrap_bias_scores(labels, reference, n_boot=200, seed=1)
        nobody = generated_shares(labels_from_counts({"ghost": (0, 0, 3), "nurse": (1, 0, 0)}))
        # tiny professions: some replicates give every profession the same share (no rank correlation)
        tiny = bootstrap_bias_scores(labels_from_counts({"nurse": (1, 1, 0), "carpenter": (1, 1, 0), "rare": (2, 1, 0)}),
                                     reference, n_boot=300, seed=2)
    assert tiny.loc["spearman_rho", "n_boot"] < 300
    assert np.isnan(nobody.loc["ghost", "generated share"]) and nobody.loc["nurse", "generated share"] == 1.0
    # rho needs all three professions: replicates without "rare" have none, the others do
    assert 0 < boot.loc["spearman_rho", "n_boot"] < 200 and boot.loc["VRBS", "n_boot"] == 200
    everyone = bootstrap_bias_scores(labels, reference, excluded=(), n_boot=20)
    shares = compare_with_reference(generated_shares(labels, excluded=()), reference)
    assert everyone.loc["VRBS", "estimate"] == pytest.approx(bias_scores(shares)["VRBS"])
    assert everyone.loc["VRBS", "estimate"] != boot.loc["VRBS", "estimate"]


def test_spearman_is_undefined_when_either_side_is_constant_and_scipys_otherwise():
    from scipy.stats import spearmanr

    from vlbias.t2i.bias import spearman

    varied, other = [0.1, 0.9, 0.4, 0.6], [0.2, 0.8, 0.7, 0.3]
    for p, q in (([0.5] * 4, varied), (varied, [0.5] * 4), ([0.0] * 4, [1.0] * 4)):
        rho, p_value = spearman(p, q)
        assert np.isnan(rho) and np.isnan(p_value)
    # a spread of exactly 1 (shares 0 and 1) is not constant
    for p, q in ((varied, other), ([0.0, 1.0, 0.5, 0.25], other), (other, [1.0, 0.0, 0.5, 0.75])):
        expected = spearmanr(p, q)
        assert spearman(p, q) == pytest.approx((expected.statistic, expected.pvalue))


def test_spearman_on_a_constant_side_does_not_warn():
    import warnings

    from vlbias.t2i.bias import spearman

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(spearman([0.5] * 4, [0.1, 0.9, 0.4, 0.6])[0])
        assert np.isnan(spearman([0.1, 0.9, 0.4, 0.6], [0.5] * 4)[0])
