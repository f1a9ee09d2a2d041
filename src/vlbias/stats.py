"""Intervals, summaries and cosine helpers shared across the book's parts (the public index of the
measures is :mod:`vlbias.metrics`)."""

from __future__ import annotations

import numpy as np
from scipy import stats as _stats


def wilson_interval(successes: int | np.ndarray, trials: int | np.ndarray, confidence: float = 0.95):
    """Wilson score interval for a binomial proportion; returns (low, high)."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = _stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # exact at the edges (rounding would otherwise put the bound a hair inside the estimate)
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return (float(low), float(high)) if low.ndim == 0 else (low, high)


def rate_difference_interval(k1, n1, k2, n2, confidence: float = 0.95) -> tuple[float, float, float]:
    """Difference of two proportions ``k1/n1 - k2/n2`` with Newcombe's (1998) hybrid score interval.

    The interval combines the two Wilson intervals (Newcombe's method 10), so it stays inside
    [-1, 1] and keeps its coverage near 0 and 1, where the Wald interval does not.
    """
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson_interval(k1, n1, confidence), wilson_interval(k2, n2, confidence)
    difference = p1 - p2
    return (float(difference), float(difference - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            float(difference + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)))


def accuracy_summary(correct, confidence: float = 0.95) -> dict[str, float]:
    """n, accuracy and its Wilson interval, in percent, for an array of booleans."""
    correct = np.asarray(correct, dtype=bool)
    low, high = wilson_interval(int(correct.sum()), correct.size, confidence)
    return {"n": int(correct.size), "accuracy_%": 100 * float(correct.mean()) if correct.size else float("nan"),
            "ci_low_%": 100 * low, "ci_high_%": 100 * high}


def self_similarity(embeddings: np.ndarray) -> float:
    """Mean pairwise cosine similarity over distinct pairs, in O(n·d).

    With unit rows x_i and S = sum_i x_i: sum_{i != j} x_i·x_j = |S|^2 - n, so the mean over the
    n(n-1) ordered pairs is (|S|^2 - n) / (n(n-1)). Rows are normalised here, so raw embeddings
    are fine.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"self-similarity needs at least 2 embeddings, got {n}")
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    total = x.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))
