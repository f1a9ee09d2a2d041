"""Intervals, summaries and cosine helpers shared across the book's parts (the public index of the
measures is :mod:`vlbias.metrics`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import stats as _stats

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd


def finite_rows(vectors, name: str, *, min_rows: int = 1, dim: int | None = None, dtype=np.float64) -> np.ndarray:
    """``vectors`` as a 2-D array of finite numbers with at least ``min_rows`` rows (and ``dim``
    columns if given); every failure is a ``ValueError`` that names the argument ``name``."""
    x = np.asarray(vectors, dtype=dtype)
    if x.ndim == 1:  # one vector, or an empty list
        x = x[None] if x.size else x.reshape(0, dim or 0)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one vector per row), got shape {x.shape}")
    if x.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} row(s), got {x.shape[0]} (an empty set? "
                         "check that its words or images were found)")
    if dim is not None and x.shape[1] != dim:
        raise ValueError(f"{name} has vectors of dimension {x.shape[1]}, the others {dim}: "
                         "embed everything with the same model")
    bad = ~np.isfinite(x).all(axis=1)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} row(s) with NaN or inf (first: row {int(np.argmax(bad))}); "
                         "drop or recompute them")
    return x


def finite_vector(values, name: str, min_size: int = 1) -> np.ndarray:
    """A 1-D float64 vector of at least ``min_size`` finite values; errors name the argument."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {x.shape}")
    return finite_rows(x.reshape(-1, 1), name, min_rows=min_size)[:, 0]


def unit_rows(vectors, name: str = "vectors", dtype=np.float64, *, min_rows: int = 1,
              dim: int | None = None) -> np.ndarray:
    """Finite rows (:func:`finite_rows`) scaled to unit length, so cosines become dot products.

    A zero row has no direction and is an error naming ``name``.
    """
    x = finite_rows(vectors, name, min_rows=min_rows, dim=dim, dtype=dtype)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    zero = norms[:, 0] == 0
    if zero.any():
        raise ValueError(f"{name} has {int(zero.sum())} row(s) of zeros (first: row {int(np.argmax(zero))}), "
                         "which have no direction; drop them (often an unknown word or a blank image)")
    return x / norms


def wilson_interval(successes: int | np.ndarray, trials: int | np.ndarray, confidence: float = 0.95):
    """Wilson score interval for a binomial proportion; returns (low, high).

    No trials, no proportion: where ``trials`` is 0 both ends are NaN. Counts must be finite
    whole numbers with 0 <= successes <= trials.
    """
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if not (np.isfinite(k).all() and np.isfinite(n).all()):
        raise ValueError("wilson_interval: successes and trials must be finite counts")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("wilson_interval: successes must lie in 0..trials")
    z = _stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # exact at the edges (rounding would otherwise put the bound a hair inside the estimate)
    low = np.where(n == 0, np.nan, np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0)))
    high = np.where(n == 0, np.nan, np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0)))
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
    x = unit_rows(embeddings, "embeddings", min_rows=2)
    n = x.shape[0]
    total = x.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


# --------------------------------------------------------------------------- paired tests, multiple comparisons
# shared by the parts' controls (Part II's model table, Part III's WEAT battery, Part IV's paired runs)

def mcnemar_exact(correct_a, correct_b) -> dict:
    """Exact (binomial) McNemar test of two classifiers on the same items, two-sided.

    Only discordant items count: b = a right and b wrong, c = the reverse. Under "equally accurate"
    b ~ Binomial(b + c, 1/2), so p = min(1, 2 P(X <= min(b, c))); no discordant items gives p = 1.
    """
    a, b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"correct_a and correct_b must be paired (same shape), got {a.shape} and {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    discordant = only_a + only_b
    p = 1.0 if discordant == 0 else float(min(1.0, 2 * _stats.binom.cdf(min(only_a, only_b), discordant, 0.5)))
    return {"n": int(a.size), "a_only": only_a, "b_only": only_b, "p_mcnemar": p}


def paired_accuracy_difference(correct_a, correct_b, n_bootstrap: int = 2000, confidence: float = 0.95,
                               seed: int | None = 0) -> dict:
    """Accuracy of a minus accuracy of b on the same items, with a percentile bootstrap interval
    that resamples items (both models' answers on an item stay together)."""
    a, b = np.asarray(correct_a, dtype=float), np.asarray(correct_b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"correct_a and correct_b must be paired 1-d arrays, got {a.shape} and {b.shape}")
    if a.size == 0:
        return {"difference": np.nan, "low": np.nan, "high": np.nan}
    per_item = a - b
    rng = np.random.default_rng(seed)
    means = per_item[rng.integers(0, a.size, (n_bootstrap, a.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return {"difference": float(per_item.mean()), "low": float(low), "high": float(high)}


def holm_adjust(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order.

    With the m p-values sorted ascending, p_(1) <= ... <= p_(m), the adjusted value of the i-th is
    max_{j <= i} min(1, (m - j + 1) p_(j)); reject at level alpha where it is <= alpha. NaN entries
    (tests not run) stay NaN and do not count towards m.
    """
    p = np.asarray(p_values, dtype=float)
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"p_values must lie in [0, 1], got {p[(p < 0) | (p > 1)][:3]}")
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    order = present[np.argsort(p[present], kind="stable")]
    m = order.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def with_holm(table: pd.DataFrame, p_column: str = "p_value", by: str | None = "embeddings",
              alpha: float = 0.05) -> pd.DataFrame:
    """``table`` plus ``p_holm`` (:func:`holm_adjust` within each ``by`` group, e.g. one set of
    embeddings across WEAT 1-10) and whether the raw and the adjusted p-values are below ``alpha``.

    Parts I and III both adjust their WEAT batteries this way (notebooks ``01b_markedness``,
    ``03b_weat``). ``by=None`` adjusts the whole table as one family.
    """
    if p_column not in table:
        raise ValueError(f"table has no column {p_column!r}; name the p-value column with p_column=")
    out = table.copy()
    groups = [np.arange(len(out))] if by is None else list(out.groupby(by, sort=False).indices.values())
    adjusted = np.full(len(out), np.nan)
    for rows in groups:
        adjusted[rows] = holm_adjust(out[p_column].to_numpy(dtype=float)[rows])
    out["p_holm"] = adjusted
    out[f"p < {alpha}"] = out[p_column] < alpha
    out[f"p_holm < {alpha}"] = out["p_holm"] < alpha
    return out


def standard_interval(replicates, estimate: float, confidence: float = 0.95,
                      bounds: tuple[float, float] = (-np.inf, np.inf)) -> tuple[float, float]:
    """The standard bootstrap interval: ``estimate`` ± z times the replicates' standard deviation, kept
    within ``bounds`` (NaN without two finite replicates). It holds its estimate by construction."""
    values = np.asarray(replicates, float)
    values = values[np.isfinite(values)]
    if values.size < 2 or not np.isfinite(estimate):
        return np.nan, np.nan
    half = _stats.norm.ppf(0.5 + confidence / 2) * values.std(ddof=1)
    return float(max(bounds[0], estimate - half)), float(min(bounds[1], estimate + half))


def cohen_kappa(first: Sequence, second: Sequence) -> float:
    """Cohen's kappa between two label sequences over the same items (NaN where both are one and the
    same constant label: no agreement beyond chance can be measured)."""
    import pandas as pd

    a, b = pd.Series(list(first), dtype=object), pd.Series(list(second), dtype=object)
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"need two equally long, non-empty label sequences, got {len(a)} and {len(b)}")
    observed = float((a.to_numpy() == b.to_numpy()).mean())
    categories = sorted(set(a) | set(b), key=str)
    pa = a.value_counts(normalize=True).reindex(categories, fill_value=0)
    pb = b.value_counts(normalize=True).reindex(categories, fill_value=0)
    expected = float((pa * pb).sum())
    return float("nan") if expected == 1.0 else (observed - expected) / (1.0 - expected)
