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


def accuracy_summary(correct, confidence: float = 0.95) -> dict[str, float]:
    """n, accuracy and its Wilson interval, in percent, for an array of booleans."""
    correct = np.asarray(correct, dtype=bool)
    low, high = wilson_interval(int(correct.sum()), correct.size, confidence)
    return {"n": int(correct.size), "accuracy_%": 100 * float(correct.mean()) if correct.size else float("nan"),
            "ci_low_%": 100 * low, "ci_high_%": 100 * high}


def unit_rows(vectors, dtype=np.float64) -> np.ndarray:
    """Rows of ``vectors`` (one vector becomes one row) scaled to unit length, so that cosines become
    dot products. A zero row is an error: its cosine is undefined (often an unknown word or a blank
    image); drop it first."""
    x = np.atleast_2d(np.asarray(vectors, dtype=dtype))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a vector of zeros has no direction, so its cosine is undefined; drop it "
                         "(often an unknown word or a blank embedding) before measuring cosines.")
    return x / norms


def permutation_p_value(hits: int, permutations: int) -> float:
    """Monte Carlo permutation p-value (1 + hits) / (1 + permutations), never 0.

    ``hits`` counts random permutations at least as extreme as the observed statistic; the observed
    labelling counts as one more (Phipson and Smyth 2010). This is what
    ``scipy.stats.permutation_test`` reports for randomised tests.
    """
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}.")
    if not 0 <= hits <= permutations:
        raise ValueError(f"hits must lie between 0 and permutations={permutations}, got {hits}.")
    return (1 + hits) / (1 + permutations)


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
