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
