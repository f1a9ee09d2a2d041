"""Contrasts with a control and the power to detect them (``vlbias.stats``): the bootstrap of a claim's
statistic on a planted model and its control, paired or apart, and the closed-form power against
simulations."""

import numpy as np
import pytest
from scipy import stats

from vlbias.stats import (bootstrap_contrast, needed_size, normal_power, rate_contrast_se, self_similarity,
                          simulated_power, stratified_weights, weighted_rates, weighted_self_similarity)


def test_stratified_weights_keep_every_stratum_its_size():
    strata = np.repeat(["a", "b", "c"], [5, 3, 1])
    weights = stratified_weights(strata, 200, seed=1)
    assert weights.shape == (200, 9)
    for label, size in (("a", 5), ("b", 3), ("c", 1)):
        assert (weights[:, strata == label].sum(axis=1) == size).all()
    assert (weights[:, strata == "c"] == 1).all()  # a stratum of one is always itself
    # each item of a stratum drawn 5/5 = once on average
    assert weights[:, strata == "a"].mean() == pytest.approx(1.0, abs=0.1)
    with pytest.raises(ValueError, match="one label per item"):
        stratified_weights([], 10)
    with pytest.raises(ValueError, match="n_boot must be at least 1"):
        stratified_weights(strata, 0)


def test_weighted_rates_and_self_similarity_agree_with_direct_computations():
    rng = np.random.default_rng(0)
    hits, members = rng.random(40) < 0.3, rng.random(40) < 0.5
    assert weighted_rates(np.ones((1, 40)), hits, members)[0] == pytest.approx(hits[members].mean())
    # integer weights are the same as repeating the items
    counts = rng.integers(0, 3, size=40)
    repeated = np.repeat(np.arange(40), counts)
    assert weighted_rates(counts[None], hits, members)[0] == pytest.approx(hits[repeated][members[repeated]].mean())
    unit = rng.normal(size=(12, 4))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    assert weighted_self_similarity(np.ones((1, 12)), unit)[0] == pytest.approx(self_similarity(unit))
    # hand-worked: items 0 twice and 1 once: the pairs of distinct items are (0,1) twice each way
    w = np.zeros((1, 12)); w[0, 0], w[0, 1] = 2, 1
    assert weighted_self_similarity(w, unit)[0] == pytest.approx(unit[0] @ unit[1])


def _flags(rng, n, rate_a, rate_b):
    group = np.arange(n) % 2 == 0
    return group, np.where(group, rng.random(n) < rate_a, rng.random(n) < rate_b)


def test_a_paired_bootstrap_cancels_what_the_two_share():
    rng = np.random.default_rng(3)
    group, base = _flags(rng, 600, 0.4, 0.2)
    planted, control = base.copy(), base.copy()
    flip = rng.random(600) < 0.1  # the planted model differs on a tenth of the pictures, in one direction
    planted[flip & group] = True
    gap = lambda flags: (lambda w: weighted_rates(w, flags, group) - weighted_rates(w, flags, ~group))  # noqa: E731
    p, c, paired = bootstrap_contrast(gap(planted), gap(control), group, n_boot=500, seed=0)
    _, _, apart = bootstrap_contrast(gap(planted), gap(control), group, group, n_boot=500, seed=0)
    assert paired.value == pytest.approx(p.value - c.value) == pytest.approx(apart.value)
    assert paired.high - paired.low < 0.5 * (apart.high - apart.low)  # the shared pictures cancel
    assert paired.low > 0 and "paired bootstrap over 600 items" in paired.how and "independent" in apart.how
    # the same flags twice: a contrast of exactly 0 in every resample
    _, _, none = bootstrap_contrast(gap(planted), gap(planted), group, n_boot=100)
    assert none.value == none.low == none.high == 0
    alone = bootstrap_contrast(gap(planted), None, group, n_boot=100)
    assert alone[1] is None and alone[2] is None and alone[0].low < alone[0].value < alone[0].high


def test_the_bootstrap_interval_covers_a_known_difference():
    # two independent samples with a known difference of rates: the 95% interval holds it about 95% of the time
    rng, held = np.random.default_rng(11), 0
    truth = 0.15
    for trial in range(60):
        group_a, a = _flags(rng, 300, 0.45, 0.30)
        group_b, b = _flags(rng, 300, 0.30, 0.30)
        gap = lambda flags, g: (lambda w: weighted_rates(w, flags, g) - weighted_rates(w, flags, ~g))  # noqa: E731
        _, _, contrast = bootstrap_contrast(gap(a, group_a), gap(b, group_b), group_a, group_b, n_boot=300, seed=trial)
        held += contrast.low <= truth <= contrast.high
    assert held / 60 > 0.85


def test_normal_power_is_the_closed_form_and_agrees_with_a_simulation():
    assert normal_power(0.0, 1.0) == pytest.approx(stats.norm.cdf(-1.959964), abs=1e-6)
    assert normal_power(2.8016, 1.0) == pytest.approx(0.8, abs=1e-3)  # z = 1.96 + 0.8416
    assert normal_power(-0.3, 0.1) == normal_power(0.3, 0.1)
    # simulated: a normal statistic with mean 0.2 and SE 0.08, its interval beyond 0 on the planted side
    simulated = simulated_power(lambda rng: (lambda x: (x - 1.96 * 0.08, x + 1.96 * 0.08))(rng.normal(0.2, 0.08)),
                                n_sim=4000, seed=2)
    assert simulated == pytest.approx(normal_power(0.2, 0.08), abs=0.02)
    with pytest.raises(ValueError, match="se must be positive"):
        normal_power(0.1, 0.0)


def test_the_power_of_a_rate_contrast_agrees_with_simulated_studies():
    # the closed form behind the markedness pages' power: a difference of two gaps of rates, each rate's
    # variance at its largest; simulated studies of binomial counts, each judged by its normal interval
    n, effect = 300, 0.15
    se = rate_contrast_se(*[(0.5, n)] * 4)
    assert se == pytest.approx(np.sqrt(4 * 0.25 / n))

    def study(rng):
        # the planted model's gap is +effect/2, the control's -effect/2: their contrast is effect
        rates = rng.binomial(n, [0.5 + effect / 2, 0.5, 0.5 - effect / 2, 0.5]) / n
        estimate = (rates[0] - rates[1]) - (rates[2] - rates[3])
        return estimate - 1.96 * se, estimate + 1.96 * se

    simulated = simulated_power(study, n_sim=3000, seed=5)
    # rates away from 50% have a smaller variance: the closed form is the lower bound, and close
    assert normal_power(effect, se) <= simulated + 0.02
    assert simulated - normal_power(effect, se) < 0.05


def test_needed_size_reaches_the_power():
    se, size = 0.1, 100
    needed = needed_size(0.2, se, size, power=0.9)
    assert normal_power(0.2, se * np.sqrt(size / needed)) >= 0.9 > normal_power(0.2, se * np.sqrt(size / (needed - 1)))
    with pytest.raises(ValueError, match="effect must not be 0"):
        needed_size(0.0, se, size)
    with pytest.raises(ValueError, match="rate in \\[0, 1\\]"):
        rate_contrast_se((1.5, 10))


def test_weighted_self_similarity_is_the_same_bits_on_one_core_or_two():
    """The bootstrap replicates of a self-similarity contrast do not depend on BLAS's thread count (a card
    recomputed on another machine matches its page to the last digit)."""
    from threadpoolctl import threadpool_limits

    unit = np.random.default_rng(3).normal(size=(2_000, 64))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    weights = stratified_weights(np.repeat(np.arange(10), 200), 300, seed=0)
    with threadpool_limits(1):
        one = weighted_self_similarity(weights, unit)
    with threadpool_limits(2):
        two = weighted_self_similarity(weights, unit)
    assert np.array_equal(one, two)
