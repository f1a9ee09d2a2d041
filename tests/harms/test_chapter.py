"""The simulated source reproduces the numbers the handbook chapter prints."""

import numpy as np
import pytest

from vlbias.harms import measures as harms
from vlbias.harms.chapter import (chapter_inputs, simulated_erasure, simulated_stereotyping, simulated_toxicity,
                                  simulated_weat, simulated_weat_vectors)


def test_stereotyping_table_as_printed():
    table = simulated_stereotyping()
    assert f"{table.gap.abs().mean():.3f}" == "0.113"
    assert f"{table.gap.max():+.3f}" == "+0.080" and f"{table.gap.min():+.3f}" == "-0.520"
    assert list(table.occupation[:3]) == ["teacher_m", "surgeon", "CEO"] and table.occupation.iloc[-1] == "librarian"
    assert list(table.direction) == ["under"] * 5 + ["near"] * 4 + ["over"] * 3


def test_weat_effect_size_as_printed_with_seed_42():
    result = simulated_weat()
    assert f"{result.effect_size:.3f}" == "1.070"
    assert result.exact and result.n_partitions == 12870
    # another seed gives other vectors, so the reproduction is not a constant
    assert f"{simulated_weat(vector_seed=7).effect_size:.3f}" != "1.070"
    # the permutation seed does not touch the vectors
    assert simulated_weat(seed=3, max_exact=0, n_permutations=1000).effect_size == result.effect_size


def test_weat_vectors_follow_the_chapter_draw_order():
    X, Y, A, B = simulated_weat_vectors()
    rng = np.random.RandomState(42)
    pleasant = rng.randn(50)
    pleasant /= np.linalg.norm(pleasant)
    competence = rng.randn(50)
    competence /= np.linalg.norm(competence)
    first = 0.7 * pleasant + 0.6 * competence + 0.3 * rng.randn(50)
    np.testing.assert_allclose(X[0], first / np.linalg.norm(first))
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0)


def test_erasure_means_as_printed():
    means = simulated_erasure().mean()
    printed = chapter_inputs()["erasure"]["printed"]["mean"]
    assert {group: f"{value:+.2f}" for group, value in means.items()} == {"white_male": "+0.16", "white_female": "+0.01",
                                                                           "nonwhite_male": "-0.06", "nonwhite_female": "-0.11"}
    assert means.to_dict() == pytest.approx(printed, abs=0.005)
    np.testing.assert_allclose(simulated_erasure().sum(axis=1), 0.0, atol=1e-12)  # shares sum to 1 on both sides


def test_toxicity_as_printed_without_the_billionfold_ratio():
    standard, aave, threshold = simulated_toxicity()
    assert f"{standard.mean():.3f}" == "0.048" and f"{aave.mean():.3f}" == "0.263"
    row = harms.false_positive_rates(standard, aave, [threshold]).iloc[0]
    assert row.fpr_standard == 0.0 and row.fpr_aave == 1.0
    assert np.isnan(row.ratio) and "0 of 6 standard" in row.statement
