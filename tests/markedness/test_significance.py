"""Permutation tests of the headline gaps: two tails, and the direction of the reported gap."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.markedness.significance import rate_gap_test, self_similarity_gap_table


def exact_two_sided_p(k_a, n_a, k_b, n_b):
    """P(|gap| >= |observed gap|) when A's count is Hypergeom(n_a + n_b, k_a + k_b, n_a)."""
    pooled = k_a + k_b
    support = np.arange(0, min(pooled, n_a) + 1)
    pmf = stats.hypergeom(n_a + n_b, pooled, n_a).pmf(support)
    gaps = support / n_a - (pooled - support) / n_b
    observed = abs(k_a / n_a - k_b / n_b)
    return pmf[gaps >= observed - 1e-12].sum(), pmf[gaps <= -observed + 1e-12].sum()


def test_rate_gap_test_counts_both_tails_of_an_asymmetric_null():
    # 6 of 12 against 12 of 60: the null of A's rate is skewed, its two tails differ (0.039 and 0.022)
    # and a one-sided test would miss a third of the p-value
    a = np.array([1] * 6 + [0] * 6, bool)
    b = np.array([1] * 12 + [0] * 48, bool)
    upper, lower = exact_two_sided_p(6, 12, 12, 60)
    assert lower > 0.02 and abs(upper - lower) > 0.01
    standard_error = np.sqrt((upper + lower) * (1 - upper - lower) / 100_000)
    result = rate_gap_test(a, b, permutations=100_000, seed=0)
    assert result["gap"] == pytest.approx(100 * (6 / 12 - 12 / 60))
    assert result["p_value"] == pytest.approx(upper + lower, abs=4 * standard_error)
    # swapping the groups flips the gap's sign, not the two-sided p-value
    swapped = rate_gap_test(b, a, permutations=100_000, seed=0)
    assert swapped["gap"] == pytest.approx(-result["gap"])
    assert swapped["p_value"] == pytest.approx(upper + lower, abs=4 * standard_error)


def test_rate_gap_test_p_is_one_when_the_rates_are_equal():
    a, b = np.array([1, 0, 1, 0], bool), np.array([1, 0] * 5, bool)
    result = rate_gap_test(a, b, permutations=2_000, seed=1)
    assert result["gap"] == 0 and result["p_value"] == 1.0


def pairwise_mean_cosine(x):
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.mean([unit[i] @ unit[j] for i in range(len(x)) for j in range(len(x)) if i != j])


def test_self_similarity_gap_table_reports_b_minus_a():
    rng = np.random.default_rng(0)
    centre = rng.normal(size=16)
    white = centre + 0.3 * rng.normal(size=(12, 16))   # A of "White vs Black": tight
    black = centre + 3.0 * rng.normal(size=(10, 16))   # B: loose, less self-similar
    records = pd.DataFrame({"race": ["White"] * 12 + ["Black"] * 10, "gender": ["Male", "Female"] * 11,
                            "age": ["20-29"] * 22})
    table = self_similarity_gap_table(records, np.concatenate([white, black]), permutations=200, seed=0)
    row = table.set_index("comparison").loc["White vs Black"]
    s_a, s_b = pairwise_mean_cosine(white), pairwise_mean_cosine(black)
    assert s_a > s_b + 0.2
    assert row["n_A"] == 12 and row["n_B"] == 10
    assert row["s_A"] == pytest.approx(s_a) and row["s_B"] == pytest.approx(s_b)
    assert row["gap (B − A)"] == pytest.approx(s_b - s_a) and row["gap (B − A)"] < 0
    assert 0 < row["p_value"] <= 1 / 201 * 2  # the planted gap beats (almost) every relabelling
    assert "Male vs Female" in table["comparison"].tolist()
