import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.metrics import self_similarity, vrbs
from vlbias.stats import accuracy_summary, holm_adjust, wilson_interval, with_holm


def brute_force_self_similarity(x):
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    gram = x @ x.T
    n = len(x)
    return (gram.sum() - np.trace(gram)) / (n * (n - 1))


@pytest.mark.parametrize("n,d", [(2, 3), (7, 5), (50, 16)])
def test_self_similarity_matches_all_pairs(n, d):
    x = np.random.default_rng(n).normal(size=(n, d)) + 0.3
    assert self_similarity(x) == pytest.approx(brute_force_self_similarity(x), abs=1e-12)


def test_self_similarity_hand_worked():
    # three unit vectors: e1, e1, e2 -> pairs (1, 0, 0) -> mean 1/3
    x = np.array([[1.0, 0], [1.0, 0], [0, 1.0]])
    assert self_similarity(x) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        self_similarity(x[:1])


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (47, 100), (100, 100)])
def test_wilson_interval_matches_scipy(k, n):
    low, high = wilson_interval(k, n)
    reference = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert low == pytest.approx(reference.low, abs=1e-9)
    assert high == pytest.approx(reference.high, abs=1e-9)


def test_vrbs_hand_worked():
    # |0.9-0.8| + |0.1-0.4| = 0.1 + 0.3 -> mean 0.2 -> 0.8
    assert vrbs([0.9, 0.1], [0.8, 0.4]) == pytest.approx(0.8)
    assert vrbs([0.5], [0.5]) == 1.0
    with pytest.raises(ValueError):
        vrbs([0.5, 0.2], [0.5])


def test_accuracy_summary():
    summary = accuracy_summary([True, True, False, True])
    assert summary["n"] == 4 and summary["accuracy_%"] == 75.0
    ci = stats.binomtest(3, 4).proportion_ci(method="wilson")
    assert summary["ci_low_%"] == pytest.approx(100 * ci.low) and summary["ci_high_%"] == pytest.approx(100 * ci.high)


def test_unit_rows_gives_cosines_as_dot_products_and_refuses_a_zero_row():
    from vlbias.stats import unit_rows

    x = np.array([[3.0, 4.0], [0.0, -2.0]])
    np.testing.assert_allclose(unit_rows(x), [[0.6, 0.8], [0.0, -1.0]])
    np.testing.assert_allclose(unit_rows([3.0, 4.0]), [[0.6, 0.8]])  # one vector is one row
    assert unit_rows(x, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match=r"row\(s\) of zeros"):
        unit_rows([[1.0, 0.0], [0.0, 0.0]])


def test_permutation_p_value_counts_the_observed_labelling_and_matches_scipy():
    from vlbias.stats import permutation_p_value

    assert permutation_p_value(0, 999) == pytest.approx(1 / 1000)
    assert permutation_p_value(999, 999) == 1.0
    # scipy's randomised two-sided test of a mean difference, recounted by hand from its null distribution
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.3, 1, 12), rng.normal(0, 1, 15)
    result = stats.permutation_test((a, b), lambda x, y: np.mean(x) - np.mean(y), n_resamples=499,
                                    alternative="greater", random_state=1)
    hits = int(np.sum(result.null_distribution >= result.statistic * (1 - 1e-14)))
    assert permutation_p_value(hits, 499) == pytest.approx(result.pvalue)
    with pytest.raises(ValueError, match="hits"):
        permutation_p_value(1000, 999)


def test_holm_on_hand_computed_p_values():
    # sorted: 0.01, 0.02, 0.03, 0.04 with m = 4 -> 0.04, 0.06, 0.06 (monotone: max(0.06, 0.06)), 0.06
    p = [0.03, 0.01, 0.04, 0.02]
    np.testing.assert_allclose(holm_adjust(p), [0.06, 0.04, 0.06, 0.06])
    # the step-down maximum matters: 0.001*3 = 0.003, 0.04*2 = 0.08, 0.045*1 = 0.045 -> 0.08
    np.testing.assert_allclose(holm_adjust([0.045, 0.001, 0.04]), [0.08, 0.003, 0.08])
    # capped at 1; NaN stays NaN and does not count in m
    np.testing.assert_allclose(holm_adjust([0.5, np.nan, 0.4]), [0.8, np.nan, 0.8])


def test_holm_equals_the_definition_on_random_p_values():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.2, 10)
    order = np.argsort(p)
    expected = np.empty(10)
    for rank, index in enumerate(order):
        expected[index] = min(1, max((10 - j) * p[order[j]] for j in range(rank + 1)))
    np.testing.assert_allclose(holm_adjust(p), expected)


def test_holm_rejects_values_outside_the_unit_interval():
    with pytest.raises(ValueError, match="p_values"):
        holm_adjust([0.2, 1.5])


def test_with_holm_adjusts_within_each_set_of_embeddings():
    table = pd.DataFrame({"embeddings": ["a", "a", "b", "b"], "p_value": [0.01, 0.04, 0.03, 0.5]})
    out = with_holm(table)
    np.testing.assert_allclose(out["p_holm"], [0.02, 0.04, 0.06, 0.5])
    assert out["p < 0.05"].tolist() == [True, True, True, False]
    assert out["p_holm < 0.05"].tolist() == [True, True, False, False]


def test_the_standard_bootstrap_interval_is_the_estimate_plus_minus_z_standard_deviations_within_bounds():
    from vlbias.stats import standard_interval

    half = 1.959963984540054 * np.sqrt(2.5)  # z(0.975) times the sample sd of 0..4
    assert standard_interval([0, 1, 2, 3, 4], 2.0) == pytest.approx((2 - half, 2 + half))
    assert standard_interval([0, 1, 2, 3, 4, np.nan], 0.5, bounds=(0.0, 1.0)) == pytest.approx((0.0, 1.0))
    assert standard_interval([0, 1, 2, 3, 4], 2.0, confidence=0.5) == pytest.approx((2 - 0.6744897501960817 * np.sqrt(2.5),
                                                                                   2 + 0.6744897501960817 * np.sqrt(2.5)))
    assert all(np.isnan(standard_interval([1.0], 1.0)))
