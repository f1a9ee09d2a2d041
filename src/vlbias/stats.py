"""Intervals, summaries and cosine helpers shared across the book's parts (the public index of the
measures is :mod:`vlbias.metrics`)."""

from __future__ import annotations

import math
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


# --------------------------------------------------------------------------- contrasts with a control, and power
# A planted cause counts only against its control (vlbias.findings): a claim's statistic on the planted model
# and on its control, resampled together where they share their items (the same pictures or prompts), apart
# where they do not, and the power to detect a planted effect of a given size.

def stratified_weights(strata, n_boot: int, seed: int | None = 0) -> np.ndarray:
    """``(n_boot, n)`` bootstrap counts: each replicate resamples every stratum's items with replacement,
    keeping the stratum's size (``strata``: one label per item; the groups a design fixes, such as the
    race × gender × age cells of a data set, stay the size they are). Row sums equal ``n``. The counts are
    whole numbers held as float32, exact up to 2**24, so that a statistic's products with them run on BLAS."""
    labels = np.asarray(strata)
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"strata must give one label per item (a 1-D array of at least one), got shape {labels.shape}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    _, codes = np.unique(labels, return_inverse=True)
    rng = np.random.default_rng(seed)
    weights = np.zeros((n_boot, labels.size), dtype=np.float32)
    for code in range(codes.max() + 1):
        items = np.flatnonzero(codes == code)
        weights[:, items] = rng.multinomial(items.size, np.full(items.size, 1.0 / items.size), size=n_boot)
    return weights


_BLAS = None


def reproducible_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ right`` on one BLAS thread. A float product's rounding depends on how many threads share
    it, so a page, its card and a rerun on a machine with another core count would otherwise draw numbers
    that differ in their last digits; one thread gives the same bits on every core count."""
    global _BLAS
    from threadpoolctl import ThreadpoolController

    if _BLAS is None:
        _BLAS = ThreadpoolController()
    with _BLAS.limit(limits=1, user_api="blas"):
        return left @ right


def _percentile(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    values = np.asarray(replicates, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return float("nan"), float("nan")
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_contrast(planted, control=None, strata=None, control_strata=None, n_boot: int = 1000,
                       confidence: float = 0.95, seed: int | None = 0, items: str = "items", weights=None,
                       control_weights=None):
    """A claim's statistic on a planted model and on its control, and their difference, with percentile
    bootstrap intervals: ``(planted, control, contrast)`` as :class:`vlbias.findings.Estimate` s (the last two
    ``None`` without ``control``).

    ``planted`` and ``control`` are functions of a ``(B, n)`` matrix of item weights returning ``B`` values
    (the statistic computed with each item counted that often; one row of ones is the sample itself).
    ``strata`` labels the planted model's items for :func:`stratified_weights`. With ``control_strata``
    None the two share their items (the same pictures, in the same order) and each replicate weights both
    alike: a **paired** bootstrap, in which what the items share cancels from the difference. Given
    ``control_strata``, the control's items are others (another world's pictures) and are resampled
    apart: an **independent** bootstrap. ``items`` names the items for the intervals' description.
    ``weights`` and ``control_weights``: the :func:`stratified_weights` of ``strata`` and ``control_strata``
    at ``n_boot`` and ``seed`` (and ``seed + 1``), where a caller judging several claims on the same items
    made them once."""
    from .findings import Estimate

    strata = np.asarray(strata)
    n = strata.size
    own = stratified_weights(strata, n_boot, seed) if weights is None else weights
    point = lambda statistic, size: float(np.asarray(statistic(np.ones((1, size), dtype=np.float32)))[0])  # noqa: E731
    planted_values = np.asarray(planted(own), dtype=float)
    paired = control_strata is None
    kind = "paired" if paired else "independent"
    how = f"{kind} bootstrap over {n:,} {items}" + ("" if paired else f" and the control's {np.asarray(control_strata).size:,}") \
        + f", {n_boot:,} draws, {confidence:.0%}"
    estimate = Estimate(point(planted, n), *_percentile(planted_values, confidence), how=how)
    if control is None:
        return estimate, None, None
    if paired:
        control_values, size = np.asarray(control(own), dtype=float), n
    else:
        size = np.asarray(control_strata).size
        if control_weights is None:
            control_weights = stratified_weights(control_strata, n_boot, None if seed is None else seed + 1)
        control_values = np.asarray(control(control_weights), dtype=float)
    control_estimate = Estimate(point(control, size), *_percentile(control_values, confidence), how=how)
    difference = Estimate(estimate.value - control_estimate.value,
                          *_percentile(planted_values - control_values, confidence), how=how)
    return estimate, control_estimate, difference


def weighted_rates(weights: np.ndarray, hits, members) -> np.ndarray:
    """Per replicate (a row of ``weights``), the share of ``hits`` among the items ``members`` selects:
    the rate of a group under bootstrap weights (NaN where the group has no weight)."""
    weights = np.asarray(weights)
    kind = weights.dtype if weights.dtype.kind == "f" else np.float64  # the weights' own precision: no copy of them
    hits, members = np.asarray(hits, dtype=kind), np.asarray(members, dtype=kind)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ (hits * members)).astype(float) / (weights @ members).astype(float)


def weighted_self_similarity(weights: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Per replicate, the mean cosine over pairs of distinct items of ``unit`` (rows of unit length), each
    item counted as often as its weight: ``(|Σ w_i x_i|² − Σ w_i²) / ((Σ w_i)² − Σ w_i²)``. With every
    weight 1 it is :func:`self_similarity`; an item drawn twice is never paired with itself."""
    weights = np.asarray(weights, dtype=float)
    total = reproducible_product(weights, unit)
    squares = (weights ** 2).sum(axis=1)
    size = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.einsum("bd,bd->b", total, total) - squares) / (size ** 2 - squares)


def normal_power(effect: float, se: float, alpha: float = 0.05) -> float:
    """The power of a two-sided test at level ``alpha`` of a statistic whose sampling distribution is
    normal with standard error ``se``, when its true value is ``effect``: the chance its 1 − ``alpha``
    interval lies beyond 0 on ``effect``'s side (the other side, vanishingly rare, is not counted)."""
    if not se > 0:
        raise ValueError(f"se must be positive, got {se!r}")
    z = _stats.norm.ppf(1 - alpha / 2)
    return float(_stats.norm.cdf(abs(effect) / se - z))


def needed_size(effect: float, se: float, size: int, power: float = 0.9, alpha: float = 0.05) -> int:
    """The sample size at which a standard error of ``se`` at ``size`` (shrinking as 1/√n) gives
    :func:`normal_power` ``power`` against ``effect``."""
    if not effect:
        raise ValueError("effect must not be 0: no sample size detects no effect")
    z = _stats.norm.ppf(1 - alpha / 2) + _stats.norm.ppf(power)
    return int(math.ceil(size * (se * z / abs(effect)) ** 2))


def rate_contrast_se(*groups: tuple[float, float]) -> float:
    """The standard error of a sum or difference of independent proportions, each ``(rate, n)``:
    ``√Σ p(1 − p)/n``. A contrast of two models' gaps on the same items is no less precise than this
    when their answers on an item go together, so it is the conservative choice for a paired design."""
    total = 0.0
    for rate, size in groups:
        if not 0 <= rate <= 1 or size <= 0:
            raise ValueError(f"each group is (rate in [0, 1], size > 0), got {(rate, size)}")
        total += rate * (1 - rate) / size
    return math.sqrt(total)


def simulated_power(simulate, n_sim: int = 1000, seed: int | None = 0) -> float:
    """The share of ``n_sim`` simulated studies whose interval excludes 0 on the planted side:
    ``simulate(rng) -> (low, high)`` runs one study from the world's parameters and returns its
    interval for the planted effect (positive when recovered)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sim):
        low, _ = simulate(rng)
        hits += bool(low > 0)
    return hits / n_sim
