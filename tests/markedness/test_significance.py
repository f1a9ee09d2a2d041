"""Permutation tests of the headline gaps: two tails, and the direction of the reported gap."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.markedness.significance import (headline_comparisons, rate_gap_table, rate_gap_test,
                                            self_similarity_gap_table, self_similarity_gap_test)


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


RACES_IN_ORDER = ["East Asian", "Indian", "Southeast Asian", "Middle Eastern", "Latino_Hispanic", "Black"]


def test_headline_comparisons_are_the_papers():
    # written out by hand from the paper's headline gaps
    expected = [(f"White vs {race}", "race", {"race": "White"}, {"race": race}) for race in RACES_IN_ORDER]
    expected += [("Male vs Female", "gender", {"gender": "Male"}, {"gender": "Female"}),
                 ("30-39 vs more than 70", "age", {"age": "30-39"}, {"age": "more than 70"}),
                 ("40-49 vs 0-2", "age", {"age": "40-49"}, {"age": "0-2"})]
    expected += [(f"White Male vs Black Female ({family})", family, {"race": "White", "gender": "Male"},
                  {"race": "Black", "gender": "Female"}) for family in ("race", "gender", "age")]
    assert sorted(headline_comparisons()) == sorted(expected) and len(headline_comparisons()) == len(expected)


def test_rate_gap_test_sizes_keys_seed_and_default_permutations():
    a, b = np.array([1, 1, 0, 1, 0], bool), np.array([0, 1, 0, 0, 0, 0], bool)
    result = rate_gap_test(a, b)
    assert set(result) == {"n_a", "n_b", "gap", "p_value"} and (result["n_a"], result["n_b"]) == (5, 6)
    # 10,000 permutations by default, seed 0: p = (1 + hits) / 10,001
    assert result["p_value"] * 10_001 == pytest.approx(round(result["p_value"] * 10_001), abs=1e-6)
    assert result == rate_gap_test(a, b, 10_000, 0) and result["p_value"] != rate_gap_test(a, b, seed=1)["p_value"]
    assert rate_gap_test(a[:1], b[:1], permutations=10)["n_a"] == 1  # one image each is enough
    for empty in ((a[:0], b), (a, b[:0])):
        with pytest.raises(ValueError, match="^both groups need at least one image$"):
            rate_gap_test(*empty)


def test_rate_gap_table_passes_seed_and_permutations_on():
    records = pd.DataFrame({"race": ["White"] * 6 + ["Black"] * 6, "gender": ["Male", "Female"] * 6,
                            "age": ["20-29"] * 12})
    flags = pd.DataFrame({family: [1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1] for family in ("race", "gender", "age")},
                         dtype=bool)
    table = rate_gap_table(records, flags, permutations=40, seed=3).set_index("comparison")
    direct = rate_gap_test(flags["race"][:6].to_numpy(), flags["race"][6:].to_numpy(), 40, 3)
    assert table.loc["White vs Black", "p_value"] == direct["p_value"]
    assert table.loc["White vs Black", ["unmarked_A_%", "unmarked_B_%"]].tolist() == pytest.approx([400 / 6, 200 / 6])
    assert table.reset_index().columns.tolist() == ["comparison", "family", "unmarked_A_%", "unmarked_B_%", "n_a",
                                                    "n_b", "gap", "p_value"]
    default = rate_gap_table(records, flags).set_index("comparison").loc["White vs Black", "p_value"]
    assert default == rate_gap_test(flags["race"][:6].to_numpy(), flags["race"][6:].to_numpy(), 10_000, 0)["p_value"]


def exact_self_similarity_gap_p(a, b):
    """P(|s(A') - s(B')| >= |s(A) - s(B)|) over every relabelling of the pooled rows, by enumeration."""
    from itertools import combinations

    pooled = np.concatenate([a, b])
    observed = abs(pairwise_mean_cosine(a) - pairwise_mean_cosine(b))
    gaps = []
    for chosen in combinations(range(len(pooled)), len(a)):
        rest = [i for i in range(len(pooled)) if i not in chosen]
        gaps.append(abs(pairwise_mean_cosine(pooled[list(chosen)]) - pairwise_mean_cosine(pooled[rest])))
    return np.mean(np.array(gaps) >= observed - 1e-9)


def test_self_similarity_gap_p_matches_enumerating_every_relabelling():
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(3, 4)) + [2, 0, 0, 0], rng.normal(size=(4, 4))  # 35 relabellings
    exact = exact_self_similarity_gap_p(a, b)
    assert 0.1 < exact < 0.9
    result = self_similarity_gap_test(a, b, permutations=4000, seed=1)
    assert result["p_value"] == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 4000))
    assert result["gap"] == pytest.approx(pairwise_mean_cosine(a) - pairwise_mean_cosine(b))
    assert set(result) == {"n_a", "n_b", "gap", "p_value"} and (result["n_a"], result["n_b"]) == (3, 4)
    # blocks of 7 permutations draw the same relabellings as one block
    assert self_similarity_gap_test(a, b, 4000, seed=1, block_elements=7 * 7)["p_value"] == result["p_value"]


def test_self_similarity_gap_counts_relabellings_tied_with_the_observed_one():
    # A nearly one direction, B two orthogonal ones: only the observed split and its mirror are as
    # extreme (2 of 6 relabellings); the permuted gaps equal the observed one only up to rounding
    a = np.array([[1.0, 0.0, 0.0], [1.0, 0.01, 0.0]])
    b = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    exact = exact_self_similarity_gap_p(a, b)
    result = self_similarity_gap_test(a, b, permutations=3000, seed=0)
    assert exact == pytest.approx(2 / 6) and result["p_value"] == pytest.approx(exact, abs=0.04)


def test_self_similarity_gap_test_sizes_seed_and_defaults():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 5)), rng.normal(size=(4, 5))
    result = self_similarity_gap_test(a, b)
    assert result["p_value"] * 1001 == pytest.approx(round(result["p_value"] * 1001), abs=1e-6)  # 1,000 by default
    assert result == self_similarity_gap_test(a, b, 1000, 0)
    assert result["p_value"] != self_similarity_gap_test(a, b, seed=1)["p_value"]
    self_similarity_gap_test(a[:2], b[:2], permutations=5)  # two images each are enough
    for small in ((a[:1], b), (a, b[:1])):
        with pytest.raises(ValueError, match="^both groups need at least 2 images$"):
            self_similarity_gap_test(*small, permutations=5)


def test_self_similarity_gap_table_keeps_groups_of_two_lists_each_comparison_once_and_passes_the_seed():
    rng = np.random.default_rng(3)
    races = ["White"] * 4 + ["Black"] * 2 + ["Indian"] * 1 + ["East Asian"] * 3
    genders = ["Male", "Male", "Female", "Female", "Female", "Female", "Male", "Male", "Female", "Male"]
    records = pd.DataFrame({"race": races, "gender": genders, "age": ["20-29"] * 10})
    embeddings = rng.normal(size=(10, 6))
    table = self_similarity_gap_table(records, embeddings, permutations=30, seed=4)
    # Indian has one image (left out); Black Female and White Male have two each (kept, once)
    assert table["comparison"].tolist() == ["White vs East Asian", "White vs Black", "Male vs Female",
                                            "White Male vs Black Female"]
    row = table.set_index("comparison").loc["White vs Black"]
    direct = self_similarity_gap_test(embeddings[4:6], embeddings[:4], 30, 4)
    assert row["p_value"] == direct["p_value"] and row["gap (B − A)"] == pytest.approx(direct["gap"])
    assert (row["n_A"], row["n_B"]) == (4, 2)
    # defaults: the test's own (1,000 permutations, seed 0)
    default = self_similarity_gap_table(records, embeddings).set_index("comparison").loc["White vs Black"]
    assert default["p_value"] == self_similarity_gap_test(embeddings[4:6], embeddings[:4])["p_value"]


def test_self_similarity_gap_p_counts_every_drawn_relabelling():
    # the relabellings are draw_subsets' draws under the seed, all of them: redone with direct cosines
    from vlbias.markedness.self_similarity import draw_subsets

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(4, 3)) + [2, 0, 0], rng.normal(size=(5, 3))
    pooled = np.concatenate([a, b])
    observed = pairwise_mean_cosine(a) - pairwise_mean_cosine(b)
    chosen, left = draw_subsets(np.random.default_rng(2), 9, 4, 300)
    gaps = np.array([pairwise_mean_cosine(pooled[c]) - pairwise_mean_cosine(pooled[r]) for c, r in zip(chosen, left)])
    hits = int(np.sum(np.abs(gaps) >= abs(observed) - 1e-9))
    assert 30 < hits < 270
    assert self_similarity_gap_test(a, b, permutations=300, seed=2)["p_value"] == pytest.approx((1 + hits) / 301)


def test_self_similarity_gap_p_counts_the_last_relabelling_too():
    # 20,000 relabellings drawn as draw_subsets draws them, self-similarities from the Gram matrix
    from vlbias.markedness.self_similarity import draw_subsets

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(4, 3)) + [2, 0, 0], rng.normal(size=(5, 3))
    pooled = np.concatenate([a, b])
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    gram = unit @ unit.T
    chosen, left = draw_subsets(np.random.default_rng(11), 9, 4, 20_000)

    def mean_cosine(index):
        m = index.shape[1]
        return (gram[index[:, :, None], index[:, None, :]].sum(axis=(1, 2)) - m) / (m * (m - 1))

    extreme = np.abs(mean_cosine(chosen) - mean_cosine(left)) >= abs(pairwise_mean_cosine(a) - pairwise_mean_cosine(b)) - 1e-9
    assert extreme[-1]  # the last relabelling is as extreme as the observed one: it must be counted
    p = self_similarity_gap_test(a, b, permutations=20_000, seed=11)["p_value"]
    assert p == pytest.approx((1 + extreme.sum()) / 20_001)
