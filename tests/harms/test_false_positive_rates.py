"""False-positive rates of a toxicity classifier on paired sentences: pairs resampled together,
intervals at the asked confidence."""

import numpy as np
import pytest
from scipy import stats

from vlbias.harms.measures import false_positive_rates


def test_identical_flags_in_every_pair_give_a_ratio_of_exactly_one_in_every_resample():
    # resampling pairs keeps each pair's two flags together: every resample has as many AAVE as
    # standard sentences flagged; resampling the two varieties independently would not
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=40)
    row = false_positive_rates(scores, scores.copy(), [0.5], n_bootstrap=4_000).iloc[0]
    assert row["ratio"] == 1.0 and row["ratio_low"] == 1.0 and row["ratio_high"] == 1.0


def test_aave_flagged_wherever_standard_is_keeps_every_resampled_ratio_at_least_one():
    rng = np.random.default_rng(1)
    standard = rng.uniform(size=60)
    aave = np.where(rng.uniform(size=60) < 0.3, 0.99, standard)   # extra AAVE flags, never fewer
    row = false_positive_rates(standard, aave, [0.7], n_bootstrap=4_000).iloc[0]
    k_s, k_a = int((standard >= 0.7).sum()), int((aave >= 0.7).sum())
    assert row["ratio"] == pytest.approx(k_a / k_s) and row["ratio"] > 1.3
    assert row["ratio_low"] >= 1.0 and row["ratio_high"] > row["ratio"]


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_wilson_intervals_follow_the_confidence(confidence):
    standard = np.array([0.9] * 4 + [0.1] * 26)
    aave = np.array([0.9] * 11 + [0.1] * 19)
    row = false_positive_rates(standard, aave, [0.5], confidence=confidence, n_bootstrap=2_000).iloc[0]
    for prefix, k in (("fpr_standard", 4), ("fpr_aave", 11)):
        ci = stats.binomtest(k, 30).proportion_ci(confidence_level=confidence, method="wilson")
        assert row[f"{prefix}_low"] == pytest.approx(ci.low) and row[f"{prefix}_high"] == pytest.approx(ci.high)


def test_ratio_interval_widens_with_confidence_and_the_statement_names_it():
    rng = np.random.default_rng(2)
    standard, aave = rng.uniform(size=80), rng.uniform(size=80) ** 0.5
    rows = {c: false_positive_rates(standard, aave, [0.6, 2.0], confidence=c, n_bootstrap=5_000)
            for c in (0.90, 0.99)}
    narrow, wide = rows[0.90].iloc[0], rows[0.99].iloc[0]
    assert wide["ratio_low"] < narrow["ratio_low"] <= narrow["ratio"] <= narrow["ratio_high"] < wide["ratio_high"]
    # nothing flagged at 2.0: the statement quotes the AAVE interval at the confidence asked for
    assert "90% CI" in rows[0.90].iloc[1]["statement"] and "99% CI" in rows[0.99].iloc[1]["statement"]


def test_ratio_interval_is_the_pair_bootstrap_redone_by_hand_and_statements_read_right():
    standard = np.array([0.9, 0.1, 0.2, 0.8, 0.1, 0.3])
    aave = np.array([0.9, 0.7, 0.6, 0.9, 0.2, 0.8])
    table = false_positive_rates(standard, aave, [0.5, 0.95], n_bootstrap=400, seed=3).set_index("threshold")
    picks = np.random.default_rng(3).integers(0, 6, size=(400, 6))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (aave >= 0.5)[picks].sum(1) / (standard >= 0.5)[picks].sum(1)
    low, high = np.quantile(ratios[~np.isnan(ratios)], [0.025, 0.975], method="inverted_cdf")
    row = table.loc[0.5]
    assert (row["ratio"], row["ratio_low"], row["ratio_high"]) == pytest.approx((2.5, low, high))
    assert (row["flagged_standard"], row["flagged_aave"], row["n_pairs"]) == (2, 5, 6)
    assert row["statement"].startswith("AAVE flagged 2.50x as often (5 vs 2 of 6)")
    none = table.loc[0.95]
    assert np.isnan(none["ratio"]) and none["statement"] == (
        "no ratio: 0 of 6 standard sentences flagged, 0 of 6 AAVE (AAVE FPR 0%, 95% CI 0%-39%)")
    defaults = false_positive_rates(standard, aave, [0.5]).iloc[0]
    assert defaults["ratio_low"] == false_positive_rates(standard, aave, [0.5], n_bootstrap=10_000, seed=0).iloc[0][
        "ratio_low"]
    with pytest.raises(ValueError, match=r"^standard and AAVE scores must be paired \(same length\)$"):
        false_positive_rates(standard, aave[:5], [0.5])
