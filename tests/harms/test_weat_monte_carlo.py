"""The Monte Carlo WEAT p-value's (hits + 1) / (n + 1) rule, and the shipped Caliskan battery."""

import math

import numpy as np
import pytest
from scipy import stats

from vlbias.weat import caliskan_tests, random_subset_sums, weat_test_from_scores


def test_most_extreme_split_has_monte_carlo_p_one_over_n_plus_one_never_zero():
    # X holds the 10 largest of 20 distinct scores: only 1 of C(20, 10) = 184,756 partitions reaches
    # it, so 999 random ones (almost surely) miss it and p = (0 + 1) / (999 + 1), not 0 / 999
    scores_x, scores_y = np.arange(10, 20, dtype=float), np.arange(0, 10, dtype=float)
    result = weat_test_from_scores(scores_x, scores_y, n_permutations=999, max_exact=1, seed=0)
    assert not result.exact and result.n_partitions == 999
    assert result.p_value == 1 / 1000
    # the least extreme split: every random partition reaches it, p = (999 + 1) / (999 + 1)
    assert weat_test_from_scores(scores_y, scores_x, n_permutations=999, max_exact=1, seed=0).p_value == 1.0


def test_monte_carlo_p_of_a_middling_split_matches_scipy_randomised_rule():
    # scipy's randomised permutation test uses the same (hits + 1) / (n + 1) rule; with an exact
    # reference p the two agree within Monte Carlo error, and k / n would sit 1/(n+1)-ish lower
    rng = np.random.default_rng(7)
    scores_x, scores_y = rng.normal(0.3, 1, 9), rng.normal(0, 1, 9)
    exact = weat_test_from_scores(scores_x, scores_y)
    assert exact.exact and exact.n_partitions == math.comb(18, 9)
    monte_carlo = weat_test_from_scores(scores_x, scores_y, n_permutations=20_000, max_exact=1, seed=3)
    assert abs(monte_carlo.p_value - exact.p_value) < 4 * np.sqrt(exact.p_value * (1 - exact.p_value) / 20_000)
    reference = stats.permutation_test((scores_x, scores_y), lambda x, y, axis: x.sum(axis) - y.sum(axis),
                                       permutation_type="independent", alternative="greater",
                                       n_resamples=math.comb(18, 9), vectorized=True)
    assert exact.p_value == pytest.approx(reference.pvalue, abs=1e-12)


def test_shipped_caliskan_battery_has_the_ten_tests_and_their_word_lists():
    tests = caliskan_tests()
    assert len(tests) == 10
    assert [test["id"] for test in tests] == [f"WEAT{i}" for i in range(1, 11)]
    sizes = {test["id"]: [len(test[key]) for key in "XYAB"] for test in tests}
    assert sizes["WEAT1"] == sizes["WEAT2"] == [25, 25, 25, 25]
    assert sizes["WEAT5"] == [18, 18, 8, 8] and sizes["WEAT9"] == [6, 6, 7, 7]
    assert all(sizes[f"WEAT{i}"] == [8, 8, 8, 8] for i in (6, 7, 8, 10))
    for test in tests:
        for key in "XYAB":
            words = test[key]
            assert words and all(isinstance(w, str) and w.strip() == w and w for w in words), (test["id"], key)
            assert len(set(words)) == len(words), (test["id"], key)
            assert isinstance(test[f"{key}_name"], str) and test[f"{key}_name"]
        # a WEAT compares sets of equal size (Caliskan et al. 2017)
        assert len(test["X"]) == len(test["Y"]) and len(test["A"]) == len(test["B"]), test["id"]
    flowers = next(test for test in tests if "flower" in test["X_name"].lower())
    assert {"rose", "tulip"} <= set(flowers["X"]) and {"ant", "spider"} <= set(flowers["Y"])
    assert {"love", "peace"} <= set(flowers["A"]) and {"hatred", "ugly"} <= set(flowers["B"])


@pytest.mark.parametrize("size", [1, 3, 5])
def test_random_subset_sums_are_the_smallest_keys_of_each_row_over_uneven_chunks(size):
    # the draws, redone with argsort: row i sums the scores at the `size` smallest of its uniform keys
    scores = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0])
    got = np.concatenate(list(random_subset_sums(scores, size, 7, np.random.default_rng(3), chunk=3)))
    rng = np.random.default_rng(3)
    keys = np.vstack([rng.random((rows, 5)) for rows in (3, 3, 1)])
    assert got.tolist() == scores[np.argsort(keys, axis=1)[:, :size]].sum(axis=1).tolist()
