"""Markedness flags are scale-free in the text embeddings; every interval follows its ``confidence``."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.markedness import self_similarity_table, unmarked_flags, unmarked_rates, unmarked_table


def test_unmarked_flags_do_not_depend_on_the_text_embeddings_length():
    rng = np.random.default_rng(3)
    prompts = {"colour": {"red": "a red thing", "blue": "a blue thing"}, "size": {"big": "a big thing"}}
    texts = ["a photo of a person", "a red thing", "a blue thing", "a big thing"]
    directions = dict(zip(texts, rng.normal(size=(4, 6))))
    images = rng.normal(size=(200, 6))
    # raw cosines of unit vectors, computed here
    unit_images = images / np.linalg.norm(images, axis=1, keepdims=True)
    cosine = {t: unit_images @ (v / np.linalg.norm(v)) for t, v in directions.items()}
    expected_colour = cosine["a photo of a person"] > np.maximum(cosine["a red thing"], cosine["a blue thing"])
    expected_size = cosine["a photo of a person"] > cosine["a big thing"]
    assert 0.1 < expected_colour.mean() < 0.9 and 0.1 < expected_size.mean() < 0.9
    # the person prompt comes back 5x shorter, the labels up to 7x longer: cosines must not see it
    scale = {"a photo of a person": 0.2, "a red thing": 7.0, "a blue thing": 1.5, "a big thing": 3.0}
    flags = unmarked_flags(images * 4.0, lambda batch: np.stack([scale[t] * directions[t] for t in batch]), prompts)
    assert flags["colour"].tolist() == expected_colour.tolist()
    assert flags["size"].tolist() == expected_size.tolist()


@pytest.fixture
def grouped_flags():
    records = pd.DataFrame({"race": ["White"] * 20 + ["Black"] * 13})
    flags = np.array([1] * 7 + [0] * 13 + [1] * 11 + [0] * 2, bool)
    return records, flags


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_unmarked_rates_and_table_follow_their_confidence(grouped_flags, confidence):
    records, flags = grouped_flags
    expected = {race: stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
                for race, k, n in (("White", 7, 20), ("Black", 11, 13))}
    for table in (unmarked_rates(records, flags, "race", confidence=confidence),
                  unmarked_table(records, flags, "race", confidence=confidence)):
        table = table.set_index("race")
        for race, ci in expected.items():
            assert table.loc[race, "ci_low_%"] == pytest.approx(100 * ci.low)
            assert table.loc[race, "ci_high_%"] == pytest.approx(100 * ci.high)


def test_balanced_unmarked_interval_widens_with_confidence(grouped_flags):
    records, flags = grouped_flags
    # White subsampled to 13 of 20 (7 unmarked): the count is Hypergeom(20, 7, 13); its exact quantiles
    draws = stats.hypergeom(20, 7, 13)
    for confidence in (0.90, 0.99):
        table = unmarked_table(records, flags, "race", balance=True, repetitions=50_000, seed=0,
                               confidence=confidence).set_index("race")
        tail = (1 - confidence) / 2
        assert table.loc["White", "balanced_low_%"] == pytest.approx(100 * draws.ppf(tail) / 13)
        assert table.loc["White", "balanced_high_%"] == pytest.approx(100 * draws.ppf(1 - tail) / 13)


@pytest.mark.parametrize("estimator", ["balanced", "released-code"])
def test_self_similarity_normal_interval_uses_the_confidence_quantile(estimator):
    rng = np.random.default_rng(2)
    records = pd.DataFrame({"gender": ["Male"] * 30 + ["Female"] * 18})
    x = rng.normal(size=(48, 5)) + 0.5
    for confidence in (0.90, 0.99):
        table = self_similarity_table(records, x, "gender", estimator=estimator, interval="normal",
                                      confidence=confidence)
        z = stats.norm.ppf(1 - (1 - confidence) / 2)
        if estimator == "balanced":  # the smallest group is kept whole by every draw: exact, no interval
            whole = table["n"] == table["sample_size"]
            assert whole.sum() == 1 and table.loc[whole, "ci_low"].isna().all()
            table = table[~whole]
        np.testing.assert_allclose(table["ci_high"] - table["exact_mean"], z * table["exact_sd"], rtol=1e-9)
        np.testing.assert_allclose(table["exact_mean"] - table["ci_low"], z * table["exact_sd"], rtol=1e-9)


def test_self_similarity_monte_carlo_interval_is_the_confidence_quantiles_of_the_draws():
    rng = np.random.default_rng(5)
    records = pd.DataFrame({"gender": ["Male"] * 60 + ["Female"] * 25})
    x = rng.normal(size=(85, 6)) + 0.3
    # Male's balanced draws, simulated here: 25 of its 60 unit vectors, mean cosine over distinct pairs
    unit = x[:60] / np.linalg.norm(x[:60], axis=1, keepdims=True)
    chosen = np.argsort(np.random.default_rng(11).random((40_000, 60)), axis=1)[:, :25]
    sums = unit[chosen].sum(axis=1)
    draws = (np.einsum("rd,rd->r", sums, sums) - 25) / (25 * 24)
    for confidence in (0.90, 0.99):
        male = self_similarity_table(records, x, "gender", interval="monte-carlo", repetitions=40_000, seed=1,
                                     confidence=confidence, dtype=np.float64).set_index("gender").loc["Male"]
        tail = (1 - confidence) / 2
        low, high = np.quantile(draws, [tail, 1 - tail])
        assert male["ci_low"] == pytest.approx(low, abs=0.05 * male["exact_sd"])
        assert male["ci_high"] == pytest.approx(high, abs=0.05 * male["exact_sd"])
