"""Self-similarity of groups: exact, balanced subsamples, and the released code's estimator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..stats import reproducible_product, self_similarity, unit_rows
from .groups import _in_label_order, group_indices, selected, with_group_label


def self_similarity_by_group(records: pd.DataFrame, embeddings: np.ndarray, by: str | list[str]) -> pd.DataFrame:
    """Self-similarity of every group of ``records[by]`` (groups of one image are left out)."""
    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for group, index in records.groupby(keys).indices.items():
        if len(index) > 1:
            group = group if isinstance(group, tuple) else (group,)
            rows.append({**dict(zip(keys, group)), "n": len(index),
                         "self_similarity": self_similarity(embeddings[index])})
    frame = pd.DataFrame(rows)
    for key in reversed(keys):
        frame = _in_label_order(frame, key)
    return frame


def subset_self_similarity(unit: np.ndarray, chosen: np.ndarray, complement: np.ndarray | None = None) -> np.ndarray:
    """Self-similarity of each subset ``unit[chosen[r]]`` (one row of indices per repetition), O(k·d) each.

    From the sum of the subset's unit vectors S: mean cosine over distinct pairs = (|S|² - m) / (m(m-1)).
    When ``complement`` (the indices left out) is given and shorter, S = total - sum(complement),
    which is cheaper when most of the group is kept.
    """
    chosen = np.atleast_2d(chosen)
    m = chosen.shape[1]
    if m < 2:
        raise ValueError(f"a subset needs at least 2 images for a pairwise mean, got {m}")
    if complement is not None and np.atleast_2d(complement).shape[1] < m:
        sums = unit.sum(axis=0) - _row_sums(unit, np.atleast_2d(complement))
    else:
        sums = _row_sums(unit, chosen)
    squared = np.einsum("rd,rd->r", sums, sums, dtype=np.float64)
    return (squared - m) / (m * (m - 1))


def _row_sums(unit: np.ndarray, index: np.ndarray) -> np.ndarray:
    """sum_j unit[index[r, j]] for every r."""
    if index.shape[1] == 0:
        return np.zeros((index.shape[0], unit.shape[1]), dtype=unit.dtype)
    if index.shape[1] <= 64:  # few rows per draw: gathering them is cheapest
        return unit[index].sum(axis=1)
    # many rows per draw: a 0/1 indicator matrix times the group turns the sums into one BLAS product (on
    # one thread, so that the draws' sums are the same bits on any core count)
    indicator = np.zeros((index.shape[0], unit.shape[0]), dtype=unit.dtype)
    np.put_along_axis(indicator, index, 1.0, axis=1)
    return reproducible_product(indicator, unit)


def draw_subsets(rng: np.random.Generator, n: int, m: int, repetitions: int) -> tuple[np.ndarray, np.ndarray]:
    """``repetitions`` uniform subsets of size m of range(n) without replacement: (chosen, left out)."""
    if not 0 < m <= n:
        raise ValueError(f"subset size must be in 1..{n}, got {m}")
    if m == n:
        return np.broadcast_to(np.arange(n), (repetitions, n)), np.zeros((repetitions, 0), dtype=np.int64)
    # the m smallest of n uniform keys form a uniform m-subset; argpartition finds them in O(n)
    keys = rng.random((repetitions, n))
    order = np.argpartition(keys, m - 1, axis=1) if m < n else np.argsort(keys, axis=1)
    return order[:, :m], order[:, m:]


def balanced_draws(unit: np.ndarray, m: int, repetitions: int, rng: np.random.Generator,
                   block_elements: int = 4_000_000) -> np.ndarray:
    """Self-similarity of ``repetitions`` random m-subsets of one group (rows of ``unit``), vectorised in blocks."""
    n = unit.shape[0]
    if m == n:  # nothing is dropped: every repetition is the whole group
        return np.full(repetitions, subset_self_similarity(unit, np.arange(n)[None])[0])
    # a block's temporaries: n random keys per draw, and k rows of d summed per draw (k = the
    # smaller of kept and left out); bounded so a block stays in cache-friendly memory
    summed = min(m, n - m)
    per_block = max(1, block_elements // max(n, summed * unit.shape[1]))
    values = np.empty(repetitions)
    for start in range(0, repetitions, per_block):
        stop = min(repetitions, start + per_block)
        chosen, left_out = draw_subsets(rng, n, m, stop - start)
        values[start:stop] = subset_self_similarity(unit, chosen, left_out)
    return values


@dataclass(frozen=True)
class GroupMoments:
    """What every exact self-similarity formula needs of a group of unit vectors x_i:
    n, the sum T = sum_i x_i and the second-moment matrix M = sum_i x_i x_iᵀ (float64).

    Moments of disjoint groups add, so a table of any grouping can be assembled from the
    moments of the 126 race×gender×age cells, computed in one O(n·d²) pass (:func:`cell_moments`).
    """

    n: int
    total: np.ndarray
    second: np.ndarray

    def __add__(self, other: "GroupMoments") -> "GroupMoments":
        return GroupMoments(self.n + other.n, self.total + other.total, self.second + other.second)

    @property
    def self_similarity(self) -> float:
        return float((self.total @ self.total - self.n) / (self.n * (self.n - 1)))


def group_moments(vectors: np.ndarray) -> GroupMoments:
    """Moments of the *unit* rows of ``vectors``: self-similarity is defined on directions, so raw
    embeddings are normalised here (already-unit rows are unchanged up to rounding)."""
    x = unit_rows(vectors, name="vectors")
    return GroupMoments(len(x), x.sum(axis=0), x.T @ x)


class CellMoments(dict):
    """:class:`GroupMoments` per cell (key: the labels of ``by``), remembering ``by``."""

    def __init__(self, by: tuple[str, ...], moments: dict[tuple, GroupMoments]):
        super().__init__(moments)
        self.by = tuple(by)


def cell_moments(records: pd.DataFrame, embeddings: np.ndarray,
                 by: tuple[str, ...] = ("race", "gender", "age")) -> CellMoments:
    """:class:`GroupMoments` of every group of ``records[by]`` (the finest cells), one pass over the data."""
    unit = unit_rows(embeddings)
    return CellMoments(by, {key: group_moments(unit[index]) for key, index in group_indices(records, list(by)).items()})


def _as_moments(unit_or_moments) -> GroupMoments:
    """Moments of raw or unit vectors, or checked :class:`GroupMoments` (finite, of unit rows)."""
    if not isinstance(unit_or_moments, GroupMoments):
        return group_moments(unit_or_moments)
    moments = unit_or_moments
    if moments.n < 1:
        raise ValueError("unit_or_moments: the moments of an empty group have no self-similarity")
    if not (np.isfinite(moments.total).all() and np.isfinite(moments.second).all()):
        raise ValueError("unit_or_moments: the moments hold NaN or inf; recompute them from finite embeddings")
    # for unit rows trace(M) = sum |x_i|^2 = n; anything else means raw vectors went in
    if abs(float(np.trace(moments.second)) - moments.n) > 1e-4 * moments.n:
        raise ValueError("unit_or_moments: these moments are not of unit rows; build them with group_moments(vectors)")
    return moments


def balanced_moments(unit_or_moments, m: int) -> tuple[float, float]:
    """Exact mean and standard deviation of the self-similarity of a uniform m-subset (no replacement).

    With h_ij = x_i·x_j, Q = sum over ordered distinct pairs in the subset of h_ij and the pair,
    triple and quadruple inclusion probabilities p2, p3, p4:
    E[Q] = A p2, E[Q²] = 2C p2 + 4(B - C) p3 + (A² - 4B + 2C) p4, where A = sum_{i≠j} h_ij,
    B = sum_i (sum_{j≠i} h_ij)², C = sum_{i≠j} h_ij². From n, T and M (:class:`GroupMoments`):
    A = |T|² - n, B = TᵀMT - 2|T|² + n, C = |M|²_F - n: O(d²) once the moments are known.
    The mean is the whole group's self-similarity: downsampling does not bias it.
    """
    moments = _as_moments(unit_or_moments)
    n, total, second = moments.n, moments.total, moments.second
    if not 2 <= m <= n:
        raise ValueError(f"subset size must be in 2..{n}, got {m}")
    squared_total = float(total @ total)
    a = squared_total - n
    b = float(total @ second @ total) - 2 * squared_total + n
    c = float(np.sum(second * second)) - n

    def inclusion(k: int) -> float:  # P(k given distinct items are all in the subset)
        if k > m:  # also covers groups of fewer than k images, whose terms then vanish
            return 0.0
        return float(np.prod([(m - i) / (n - i) for i in range(k)]))

    p2, p3, p4 = inclusion(2), inclusion(3), inclusion(4)
    mean_q = a * p2
    second_q = 2 * c * p2 + 4 * (b - c) * p3 + (a * a - 4 * b + 2 * c) * p4
    pairs = m * (m - 1)
    variance = max(second_q - mean_q * mean_q, 0.0) / pairs ** 2  # clip rounding below zero
    return float(mean_q / pairs), float(np.sqrt(variance))


def released_code_moments(unit_or_moments, draws: int = 22) -> tuple[float, float]:
    """Exact mean and standard deviation of the released-code estimator (``draws`` iid draws, mean
    cosine over their distinct positions): a U-statistic of iid draws, with kernel h(x, y) = x·y.

    E h = |T|²/n², ζ1 = Var E[h | X] = TᵀMT/n³ - (E h)², ζ2 = Var h = |M|²_F/n² - (E h)², and
    Var U = 2 (2(k-2) ζ1 + ζ2) / (k(k-1)) for k draws (Hoeffding).
    """
    moments = _as_moments(unit_or_moments)
    n, total, second, k = moments.n, moments.total, moments.second, int(draws)
    if k < 2:
        raise ValueError(f"the released-code estimator needs at least 2 draws, got {k}")
    mean_h = float(total @ total) / n ** 2
    zeta1 = float(total @ second @ total) / n ** 3 - mean_h ** 2
    zeta2 = float(np.sum(second * second)) / n ** 2 - mean_h ** 2
    variance = 2 * (2 * (k - 2) * zeta1 + zeta2) / (k * (k - 1))
    return mean_h, float(np.sqrt(max(variance, 0.0)))


def released_code_draws(unit: np.ndarray, draws: int, repetitions: int, rng: np.random.Generator,
                        block_elements: int = 4_000_000) -> np.ndarray:
    """The authors' script: ``draws`` images with replacement, mean of their pairwise cosines, repeated.

    A drawn pair can be the same image twice (cosine 1), which is what biases it upward.
    """
    n, d = unit.shape
    per_block = max(1, block_elements // (draws * d))
    values = np.empty(repetitions)
    for start in range(0, repetitions, per_block):
        stop = min(repetitions, start + per_block)
        index = rng.integers(0, n, size=(stop - start, draws))
        values[start:stop] = subset_self_similarity(unit, index)
    return values


def released_code_expectation(self_similarity: float | np.ndarray, n: int | np.ndarray):
    """Expected value of the released-code estimator for a group of n images with self-similarity s.

    Two draws with replacement are the same image with probability 1/n (cosine 1) and otherwise a
    uniformly random distinct pair (mean s): E = s + (1 - s)/n, whatever the number of draws.
    """
    s = np.asarray(self_similarity, dtype=float)
    n = np.asarray(n, dtype=float)
    return s + (1 - s) / n


def self_similarity_table(records: pd.DataFrame, embeddings: np.ndarray, by: str | list[str],
                          estimator: str = "balanced", repetitions: int = 10_000, seed: int = 0,
                          sample_size: int | None = None, draws: int = 22, confidence: float = 0.95,
                          interval: str = "auto", cells: CellMoments | None = None,
                          monte_carlo_budget: float = 2e8, dtype=np.float32, progress: bool = False) -> pd.DataFrame:
    """Self-similarity of every group of ``records[by]`` with a resampling estimator.

    ``estimator``:
      * ``"balanced"`` (the paper's text): every group downsampled without replacement to the
        smallest group in the comparison (or to ``sample_size`` if smaller), ``repetitions`` times;
      * ``"released-code"`` (the authors' script): ``draws`` images with replacement per group,
        ``repetitions`` times; ``expected`` is its closed form s + (1-s)/n and ``bias`` = (1-s)/n.
    Columns: ``self_similarity`` (exact, all distinct pairs of the group), ``exact_mean`` and
    ``exact_sd`` (exact moments of the estimator, see :func:`balanced_moments` and
    :func:`released_code_moments`), ``mean``, ``ci_low``, ``ci_high`` and ``interval`` (how they
    were obtained):
      * ``interval="monte-carlo"``: mean and percentile interval of ``repetitions`` draws, O(k·d)
        each (k images summed per draw);
      * ``"normal"``: the exact mean ± z·exact sd, no draws (the estimator averages ~m² pair
        cosines, so its distribution is close to normal unless m is tiny);
      * ``"auto"``: Monte Carlo where a group's draws cost at most ``monte_carlo_budget``
        multiply-adds (repetitions·k·d), the normal interval elsewhere.
    ``cells``: :func:`cell_moments` of finer groups (keyed by labels of a superset of ``by``) to
    assemble the exact moments from, instead of a pass over each group's embeddings.
    ``dtype`` float32 halves the time of the Monte Carlo sums; the exact columns are float64.
    """
    from scipy import stats
    from tqdm import tqdm

    if estimator not in ("balanced", "released-code"):
        raise ValueError(f"estimator must be 'balanced' or 'released-code', got {estimator!r}")
    if interval not in ("auto", "monte-carlo", "normal"):
        raise ValueError(f"interval must be 'auto', 'monte-carlo' or 'normal', got {interval!r}")
    if len(records) != len(embeddings):
        raise ValueError(f"{len(records)} records but {len(embeddings)} embeddings")
    keys = [by] if isinstance(by, str) else list(by)
    groups = {key: index for key, index in group_indices(records, keys).items() if len(index) >= 2}
    if not groups:
        raise ValueError(f"no group of {keys} has 2 or more images")
    smallest = min(len(index) for index in groups.values())
    m = smallest if sample_size is None else min(int(sample_size), smallest)
    if estimator == "balanced" and m < 2:
        raise ValueError(f"sample_size must be at least 2 images, got {sample_size}")
    group_cells = _cells_by_group(cells, keys, records, groups) if cells is not None else None
    rng = np.random.default_rng(seed)
    embeddings = np.asarray(embeddings)
    dim = embeddings.shape[1]
    tail = (1 - confidence) / 2
    z = stats.norm.ppf(1 - tail)
    rows = []
    for key, index in tqdm(groups.items(), desc=f"self-similarity by {'×'.join(keys)} ({estimator})",
                           disable=not progress, leave=False):
        moments = group_cells[key] if group_cells is not None else group_moments(embeddings[index])
        n = len(index)
        row = {**dict(zip(keys, key)), "n": n, "self_similarity": moments.self_similarity}
        if estimator == "balanced":
            exact_mean, exact_sd = balanced_moments(moments, m)
            per_draw = min(m, n - m) if m < n else 0
            row["sample_size"] = m
        else:
            exact_mean, exact_sd = released_code_moments(moments, draws)
            per_draw = draws
            row.update(draws=draws, expected=float(released_code_expectation(moments.self_similarity, n)),
                       bias=(1 - moments.self_similarity) / n)
        simulate = interval == "monte-carlo" or (interval == "auto" and repetitions * per_draw * dim <= monte_carlo_budget)
        if estimator == "balanced" and m == n:  # every draw takes the group whole: exact, with no interval
            row.update(mean=moments.self_similarity, ci_low=np.nan, ci_high=np.nan, interval=f"exact: all {n} pictures")
        elif simulate:
            unit = unit_rows(embeddings[index], dtype=dtype)
            values = (balanced_draws(unit, m, repetitions, rng) if estimator == "balanced"
                      else released_code_draws(unit, draws, repetitions, rng))
            row.update(mean=values.mean(), ci_low=np.quantile(values, tail), ci_high=np.quantile(values, 1 - tail),
                       interval=f"monte-carlo ({repetitions:,} draws)")
        else:
            row.update(mean=exact_mean, ci_low=exact_mean - z * exact_sd, ci_high=exact_mean + z * exact_sd,
                       interval="normal (exact moments)")
        row.update(exact_mean=exact_mean, exact_sd=exact_sd)
        rows.append(row)
    return pd.DataFrame(rows)


def _cells_by_group(cells: CellMoments, keys: list[str], records: pd.DataFrame,
                    groups: dict[tuple, np.ndarray]) -> dict[tuple, GroupMoments]:
    """Each group's moments as the sum of the cells it is made of; checks the cells cover the groups."""
    cell_columns = list(cells.by)
    if not set(keys) <= set(cell_columns):
        raise ValueError(f"cells keyed by {cell_columns} cannot be summed into groups of {keys}")
    counts = records.groupby(cell_columns + keys).size()
    result: dict[tuple, GroupMoments] = {}
    for labels, count in counts.items():
        labels = labels if isinstance(labels, tuple) else (labels,)
        cell_key, group_key = labels[: len(cell_columns)], labels[len(cell_columns):]
        cell = cells.get(cell_key)
        if group_key not in groups:
            continue
        if cell is None or cell.n != count:
            raise ValueError(f"the cells do not match these records (cell {cell_key}): pass cells computed "
                             "from the same records, or cells=None")
        result[group_key] = cell if group_key not in result else result[group_key] + cell
    if set(result) != set(groups):
        raise ValueError("the cells do not cover every group: pass cells computed from the same records")
    return result


def extremes(table: pd.DataFrame, column: str = "mean", k: int = 10) -> pd.DataFrame:
    """The k highest and k lowest rows of ``column`` (Table 4), with a ``rank`` (1 = most self-similar)."""
    ranked = table.sort_values(column, ascending=False, ignore_index=True)
    ranked.insert(0, "rank", np.arange(1, len(ranked) + 1))
    top, bottom = ranked.head(k).assign(end="most"), ranked.tail(k).iloc[::-1].assign(end="least")
    return pd.concat([top, bottom], ignore_index=True)


def self_similarity_by(records: pd.DataFrame, embeddings: np.ndarray, by: str | list[str],
                       where: np.ndarray | None = None, **table_options) -> pd.DataFrame:
    """:func:`self_similarity_table` of every group of ``by`` among the records ``where`` selects
    (all by default), with a ``group`` column named as the published file names it.

    Defined for ``01a_self_similarity``, which fixes the estimator settings once
    (``functools.partial``) and asks for one comparison per table or figure; ``table_options``
    go to :func:`self_similarity_table` (``estimator=``, ``repetitions=``, ``cells=``, ...).
    """
    keys = [by] if isinstance(by, str) else list(by)
    mask = selected(records, where)
    table = self_similarity_table(records[mask], embeddings[mask], keys, **table_options)
    return with_group_label(table, keys)


def picture_spread(records: pd.DataFrame, embeddings: np.ndarray, by: str = "race") -> pd.Series:
    """Per group of ``records[by]``, the standard deviation across its pictures of a picture's mean cosine
    to the group's other pictures: the spread that sets a self-similarity's standard error (about
    2 × spread / √n, a U-statistic's), which 01a's power assumes (:data:`vlbias.markedness.stages.SELF_SIMILARITY_SPREAD`)."""
    spreads = {}
    for group, index in records.groupby(by).indices.items():
        if len(index) < 3:
            continue
        unit = unit_rows(embeddings[index])
        means = (unit @ unit.sum(axis=0) - 1.0) / (len(index) - 1)
        spreads[group] = float(means.std(ddof=1))
    return pd.Series(spreads, name="spread").rename_axis(by)
