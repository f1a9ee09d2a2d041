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


# Measures defined beside their part, found here too so that ``vlbias.metrics`` is the one place
# to look. Resolved lazily (PEP 562): the part modules import this module themselves.
_DEFINED_IN = {
    "self_similarity_table": "markedness", "balanced_moments": "markedness",
    "released_code_moments": "markedness", "released_code_expectation": "markedness",
    "unmarked_table": "markedness", "unmarked_flags": "markedness", "rate_gap_test": "markedness",
    "self_similarity_gap_test": "markedness",
    "f1_from_accuracy": "colorfoil", "detection_auroc": "colorfoil", "correct_at": "colorfoil",
    "colour_confusion": "colorfoil", "per_colour_accuracy": "colorfoil",
    "weat_effect_size": "weat", "weat_p_value": "weat", "weat_test": "weat",
    "amplification_slope": "harms", "erasure_index": "harms", "false_positive_rates": "harms",
    "spearman": "t2i_bias", "bootstrap_bias_scores": "t2i_bias", "mean_pairwise_distance": "t2i_bias",
    "fleiss_kappa": "annotation", "cohen_kappa": "annotation",
}

__all__ = ["self_similarity", "vrbs", *_DEFINED_IN]


def __getattr__(name: str):
    if name in _DEFINED_IN:
        from importlib import import_module

        return getattr(import_module(f"{__package__}.{_DEFINED_IN[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_DEFINED_IN))
