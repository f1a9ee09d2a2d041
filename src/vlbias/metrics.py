"""The measures the book reports: one plain function each, on numpy arrays."""

from __future__ import annotations

import numpy as np


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


def vrbs(model_share, reference_share) -> float:
    """Visual representation bias score: 1 - mean |P_model - P_reference| over professions."""
    p = np.asarray(model_share, dtype=float)
    q = np.asarray(reference_share, dtype=float)
    if p.shape != q.shape or p.size == 0:
        raise ValueError(f"shares must be non-empty and of one shape, got {p.shape} and {q.shape}")
    return float(1.0 - np.mean(np.abs(p - q)))
