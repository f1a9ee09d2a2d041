"""Every ``confidence`` argument of the core statistics, against scipy at 0.90 and 0.99."""

import numpy as np
import pytest
from scipy import stats

from vlbias.stats import accuracy_summary, wilson_interval


@pytest.mark.parametrize("confidence", [0.90, 0.99])
@pytest.mark.parametrize("successes, trials", [(3, 10), (47, 50), (1, 7)])
def test_wilson_interval_follows_its_confidence(successes, trials, confidence):
    expected = stats.binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = wilson_interval(successes, trials, confidence)
    assert (low, high) == pytest.approx((expected.low, expected.high), rel=1e-12)


def test_wilson_interval_vectorised_matches_scalar_at_each_confidence():
    k, n = np.array([0, 4, 9]), np.array([9, 9, 9])
    for confidence in (0.90, 0.99):
        low, high = wilson_interval(k, n, confidence)
        for i in range(3):
            ci = stats.binomtest(int(k[i]), int(n[i])).proportion_ci(confidence_level=confidence, method="wilson")
            assert low[i] == pytest.approx(ci.low, abs=1e-12) and high[i] == pytest.approx(ci.high, abs=1e-12)
    # a wider confidence gives a strictly wider interval where the estimate is inside (0, 1)
    narrow, wide = wilson_interval(4, 9, 0.90), wilson_interval(4, 9, 0.99)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_accuracy_summary_passes_its_confidence_on(confidence):
    correct = np.array([True] * 17 + [False] * 8)
    ci = stats.binomtest(17, 25).proportion_ci(confidence_level=confidence, method="wilson")
    summary = accuracy_summary(correct, confidence)
    assert summary["n"] == 25 and summary["accuracy_%"] == pytest.approx(68.0)
    assert summary["ci_low_%"] == pytest.approx(100 * ci.low) and summary["ci_high_%"] == pytest.approx(100 * ci.high)


def test_accuracy_summary_of_nothing_has_no_accuracy():
    summary = accuracy_summary(np.array([], dtype=bool))
    assert summary["n"] == 0 and np.isnan(summary["accuracy_%"])


def test_self_similarity_of_one_embedding_is_refused_with_the_count():
    from vlbias.stats import self_similarity

    with pytest.raises(ValueError, match=r"embeddings needs at least 2 row\(s\), got 1"):
        self_similarity(np.ones((1, 3)))


@pytest.mark.parametrize("trials", [3, 6, 7, 10, 13])  # sizes where rounding would leave an edge by ~1e-16
def test_wilson_interval_is_exact_at_zero_and_all_successes(trials):
    low, high = wilson_interval(0, trials)
    assert low == 0.0 and 0 < high < 1
    low, high = wilson_interval(trials, trials)
    assert high == 1.0 and 0 < low < 1
    assert type(low) is float and type(high) is float   # scalars in, floats out
    lows, highs = wilson_interval(np.array([0, trials]), np.array([trials, trials]))
    assert lows[0] == 0.0 and highs[1] == 1.0 and lows.shape == highs.shape == (2,)


def test_rate_difference_interval_is_newcombes_hybrid_score_interval():
    from vlbias.stats import rate_difference_interval

    # Newcombe (1998), Statistics in Medicine 17:873, Table II example (a): 56/70 - 48/80, method 10
    difference, low, high = rate_difference_interval(56, 70, 48, 80)
    assert difference == pytest.approx(0.2) and (low, high) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    # at 0.90, from scipy's Wilson intervals by the method's formula
    (l1, u1), (l2, u2) = (stats.binomtest(k, n).proportion_ci(0.90, method="wilson") for k, n in ((9, 12), (3, 15)))
    p1, p2 = 9 / 12, 3 / 15
    expected = (p1 - p2, p1 - p2 - np.hypot(p1 - l1, u2 - p2), p1 - p2 + np.hypot(u1 - p1, p2 - l2))
    assert rate_difference_interval(9, 12, 3, 15, confidence=0.90) == pytest.approx(expected)


def test_wilson_and_permutation_p_value_refuse_bad_counts_by_name():
    from vlbias.stats import permutation_p_value

    finite = "^wilson_interval: successes and trials must be finite counts$"
    for successes, trials in ((np.nan, 10), (3, np.inf)):
        with pytest.raises(ValueError, match=finite):
            wilson_interval(successes, trials)
    for successes, trials in ((-1, 10), (11, 10)):
        with pytest.raises(ValueError, match=r"^wilson_interval: successes must lie in 0\.\.trials$"):
            wilson_interval(successes, trials)
    assert permutation_p_value(0, 1) == 0.5 and permutation_p_value(1, 1) == 1.0  # one permutation is a test
    with pytest.raises(ValueError, match=r"^permutations must be at least 1, got 0\.$"):
        permutation_p_value(0, 0)
    with pytest.raises(ValueError, match=r"^hits must lie between 0 and permutations=5, got 6\.$"):
        permutation_p_value(6, 5)


def test_unit_rows_default_name_and_dimension_check():
    from vlbias.stats import unit_rows

    with pytest.raises(ValueError, match=r"^vectors has 1 row\(s\) of zeros \(first: row 1\), which have no "
                                         r"direction; drop them \(often an unknown word or a blank image\)$"):
        unit_rows([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="^vectors has vectors of dimension 3, the others 4"):
        unit_rows(np.ones((2, 3)), dim=4)
    np.testing.assert_allclose(unit_rows([[3.0, 4.0]], dim=2), [[0.6, 0.8]])


def test_finite_rows_and_vectors_shapes_and_errors_by_name():
    from vlbias.stats import finite_rows, finite_vector, self_similarity

    assert finite_rows([1, 2], "v").tolist() == [[1.0, 2.0]]  # one vector is one row
    assert finite_rows([], "v", min_rows=0, dim=3).shape == (0, 3)
    assert finite_rows([], "v", min_rows=0).shape == (0, 0)
    assert finite_rows(np.ones((2, 3), np.float32), "v").dtype == np.float64
    assert finite_rows(np.ones((2, 3)), "v", dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match=r"^v must be a 2-D array \(one vector per row\), got shape \(1, 2, 3\)$"):
        finite_rows(np.ones((1, 2, 3)), "v")
    with pytest.raises(ValueError, match=r"^v needs at least 1 row\(s\), got 0 \(an empty set\? check that its "
                                         r"words or images were found\)$"):
        finite_rows([], "v")
    with pytest.raises(ValueError, match=r"^v needs at least 3 row\(s\), got 2"):
        finite_rows(np.ones((2, 2)), "v", min_rows=3)
    with pytest.raises(ValueError, match=r"^v has vectors of dimension 2, the others 3: embed everything with the "
                                         r"same model$"):
        finite_rows(np.ones((2, 2)), "v", dim=3)
    with pytest.raises(ValueError, match=r"^v has 2 row\(s\) with NaN or inf \(first: row 1\); drop or recompute "
                                         r"them$"):
        finite_rows([[1.0, 2.0], [np.nan, 0.0], [0.0, np.inf]], "v")
    assert finite_vector([1, 2, 3], "s").tolist() == [1.0, 2.0, 3.0] and finite_vector([1], "s").dtype == np.float64
    with pytest.raises(ValueError, match=r"^s must be a 1-D vector, got shape \(2, 1\)$"):
        finite_vector([[1], [2]], "s")
    with pytest.raises(ValueError, match=r"^s needs at least 2 row\(s\), got 1"):
        finite_vector([1.0], "s", min_size=2)
    with pytest.raises(ValueError, match=r"^embeddings needs at least 2 row\(s\), got 1"):
        self_similarity([[1.0, 0.0]])
    # mean cosine over distinct pairs: (1, 0), (0, 1), (1, 1)/sqrt 2 -> (0 + 2 cos 45°) / 3
    assert self_similarity([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]]) == pytest.approx(2 * np.sqrt(0.5) / 3)


def test_wilson_of_no_trials_is_nan_quietly_and_of_one_trial_is_scipys():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0 / 0 is silenced inside, not left to the caller
        low, high = wilson_interval(np.array([0, 0, 1]), np.array([0, 1, 1]))
    assert np.isnan(low[0]) and np.isnan(high[0])
    for i, k in ((1, 0), (2, 1)):
        ci = stats.binomtest(k, 1).proportion_ci(0.95, method="wilson")
        assert (low[i], high[i]) == pytest.approx((ci.low, ci.high))


# --------------------------------------------------------------------------- paired tests shared by the parts' controls


@pytest.mark.parametrize("only_a, only_b, both", [(7, 2, 5), (2, 7, 0), (4, 4, 3), (0, 6, 1), (12, 1, 9)])
def test_mcnemar_exact_equals_scipys_exact_binomial_test(only_a, only_b, both):
    from scipy.stats import binomtest

    from vlbias.stats import mcnemar_exact

    a = np.array([True] * only_a + [False] * only_b + [True] * both + [False] * 3)
    b = np.array([False] * only_a + [True] * only_b + [True] * both + [False] * 3)
    result = mcnemar_exact(a, b)
    assert (result["n"], result["a_only"], result["b_only"]) == (a.size, only_a, only_b)
    assert result["p_mcnemar"] == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue, rel=1e-12)


def test_mcnemar_exact_without_discordant_items_and_unpaired_input():
    from vlbias.stats import mcnemar_exact

    assert mcnemar_exact([True, False, True], [True, False, True])["p_mcnemar"] == 1.0
    with pytest.raises(ValueError, match="paired"):
        mcnemar_exact([True, False], [True, False, True])


def test_paired_accuracy_difference_resamples_items_together():
    from vlbias.stats import paired_accuracy_difference

    rng = np.random.default_rng(3)
    a = rng.random(400) < 0.8
    b = np.where(rng.random(400) < 0.9, a, ~a)  # b agrees with a on ~90% of the items
    result = paired_accuracy_difference(a, b, n_bootstrap=4000, confidence=0.95, seed=1)
    per_item = a.astype(float) - b.astype(float)
    assert result["difference"] == pytest.approx(per_item.mean())
    # large-sample check: the percentile interval is close to mean +/- z * sd / sqrt(n) of the paired differences
    half = 1.959964 * per_item.std(ddof=0) / np.sqrt(per_item.size)
    assert result["low"] == pytest.approx(per_item.mean() - half, abs=0.25 * half)
    assert result["high"] == pytest.approx(per_item.mean() + half, abs=0.25 * half)
    # identical answers: every paired resample differs by exactly 0 (unpaired resampling would not)
    same = paired_accuracy_difference(a, a, n_bootstrap=500)
    assert (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)
    narrow = paired_accuracy_difference(a, b, n_bootstrap=4000, confidence=0.5, seed=1)
    assert result["low"] < narrow["low"] <= narrow["high"] < result["high"]


def test_paired_accuracy_difference_empty_and_unpaired():
    from vlbias.stats import paired_accuracy_difference

    empty = paired_accuracy_difference([], [])
    assert all(np.isnan(empty[key]) for key in ("difference", "low", "high"))
    with pytest.raises(ValueError, match="paired 1-d"):
        paired_accuracy_difference([1, 0, 1], [1, 0])


def test_holm_adjust_by_hand():
    from vlbias.stats import holm_adjust

    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> running max 0.06
    np.testing.assert_allclose(holm_adjust([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # NaN (a test not run) stays NaN and does not count towards m = 2
    np.testing.assert_allclose(holm_adjust([0.01, np.nan, 0.04]), [0.02, np.nan, 0.04])
    np.testing.assert_allclose(holm_adjust([0.6, 0.7]), [1.0, 1.0])  # capped at 1
    with pytest.raises(ValueError, match=r"p_values must lie in \[0, 1\]"):
        holm_adjust([0.5, 1.5])


def test_paired_tests_on_0_1_integers_one_item_and_edges():
    from vlbias.stats import holm_adjust, mcnemar_exact, paired_accuracy_difference

    # 0/1 integers are answers too (bitwise ~ on integers would miscount)
    ints = mcnemar_exact([1, 1, 0, 1, 0], [0, 1, 1, 0, 0])
    assert (ints["a_only"], ints["b_only"]) == (2, 1)
    one = paired_accuracy_difference([1], [0])
    assert (one["difference"], one["low"], one["high"]) == (1.0, 1.0, 1.0)
    # the only discordant item is the first: resamples must be able to draw it
    first = paired_accuracy_difference([1, 0, 0, 0, 0], [0, 0, 0, 0, 0], n_bootstrap=2000)
    assert first["high"] > 0
    # seeded: the default seed is 0, and a seed reproduces
    a, b = np.array([1, 0, 1, 1, 0, 1, 0, 1] * 5), np.array([1, 1, 0, 1, 0, 0, 0, 1] * 5)
    assert paired_accuracy_difference(a, b) == paired_accuracy_difference(a, b, seed=0)
    assert paired_accuracy_difference(a, b, seed=7) == paired_accuracy_difference(a, b, seed=7)
    # confidence 0.5: close to mean +/- 0.674 sd/sqrt(n) (a wrong tail would be far wider)
    rng = np.random.default_rng(5)
    x, y = rng.random(600) < 0.7, rng.random(600) < 0.6
    d = x.astype(float) - y.astype(float)
    half = 0.67449 * d.std() / np.sqrt(d.size)
    narrow = paired_accuracy_difference(x, y, n_bootstrap=8000, confidence=0.5, seed=2)
    assert narrow["high"] - narrow["low"] == pytest.approx(2 * half, rel=0.15)
    # p-values of exactly 0 and 1 are valid
    np.testing.assert_allclose(holm_adjust([0.0, 1.0, 0.2]), [0.0, 1.0, 0.4])

