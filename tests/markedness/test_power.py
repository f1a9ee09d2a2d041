"""The power Part I's planted pages declare (``markedness.stages``): each closed form against a simulation
of the study it describes, and the banner's lines from the pages' parameters."""

import numpy as np
import pytest
from scipy import stats

from vlbias.markedness import stages
from vlbias.stats import self_similarity, unit_rows

DEMO = {"data_root": "world?val_per_cell=60", "split": "val", "model_spec": "trained:face-clip",
        "control_specs": ["trained:face-clip?uniform_named=0.5"]}


def test_a_self_similarity_has_the_standard_error_the_power_assumes():
    """The power of 01a takes a self-similarity over n pictures to have a standard error of 2 × spread / √n,
    the spread being the standard deviation of a picture's mean cosine to the others (a U-statistic's first
    term). Simulated: a population of unit vectors around a direction, samples of n drawn from it."""
    rng = np.random.default_rng(0)
    population = unit_rows(np.array([1.0, 0, 0, 0, 0, 0]) + 0.9 * rng.normal(size=(20_000, 6)))
    means = population @ population.mean(axis=0)  # each picture's mean cosine to the population
    spread = means.std()
    n = 400
    draws = [self_similarity(population[rng.choice(len(population), n, replace=False)]) for _ in range(600)]
    assert np.std(draws) == pytest.approx(2 * spread / np.sqrt(n), rel=0.1)


def test_the_pages_declare_their_power_from_their_sample():
    (white,) = stages.self_similarity_power(DEMO)
    se = 4 * stages.SELF_SIMILARITY_SPREAD / np.sqrt(60 * 18)
    assert white.n == 1080 and white.power == pytest.approx(stats.norm.cdf(stages.SELF_SIMILARITY_EFFECT / se - 1.959964))
    assert white.enough and white.needed is None
    rates = stages.rate_power(DEMO, stages.UNMARKED_EFFECT)
    assert [line.n for line in rates] == [1080, 60 * 63, 60 * 56]
    assert all(line.enough for line in rates)
    # fewer pictures: the banner names the size it would need, and that size reaches the power
    small = stages.rate_power({**DEMO, "data_root": "world?val_per_cell=6"}, stages.UNMARKED_EFFECT)[0]
    assert not small.enough and small.needed > 108
    se_needed = np.sqrt(4 * 0.25 / small.needed)
    assert stats.norm.cdf(stages.UNMARKED_EFFECT / se_needed - 1.959964) >= 0.9
    # no power to declare: the papers' FairFace, or a page without a control
    assert stages.rate_power({**DEMO, "data_root": None}, 0.15) == []
    assert stages.self_similarity_power({**DEMO, "control_specs": []}) == []
    generative = stages.generative_power({**DEMO, "images_per_group": 12})
    assert [line.n for line in generative] == [12 * 18, 12 * 63, 12 * 56] and all(line.enough for line in generative)


def test_01c_power_agrees_with_simulated_seeds():
    """01c's power: per-seed differences spread √2 × the seed spread around the contrast, judged by a t
    interval across the seeds; simulated studies of that kind reach it (the closed form bounds it from above,
    the normal approximation of the t test's noncentral distribution)."""
    seeds = 8
    (line,) = stages.reporting_power({"n_seeds": seeds})
    rng = np.random.default_rng(1)
    spread = np.sqrt(2) * stages.REPORTING_SEED_SPREAD
    t = stats.t.ppf(0.975, seeds - 1)
    differences = rng.normal(stages.REPORTING_EFFECT, spread, size=(4000, seeds))
    lows = differences.mean(axis=1) - t * differences.std(axis=1, ddof=1) / np.sqrt(seeds)
    simulated = float((lows > 0).mean())
    assert line.power == pytest.approx(simulated, abs=0.06)
    (three,) = stages.reporting_power({"n_seeds": 3})
    assert not three.enough and three.needed > 3
    assert stages.reporting_power({"n_seeds": three.needed})[0].enough
    assert stages.reporting_power({"n_seeds": 1}) == []
