"""Markedness (Wolfe & Caliskan 2022): is "a photo of a person" preferred to every label of a family?

Labels and prompts follow the authors' released code; the age template for the oldest group is a
parameter because the paper's text says "more than 70 years old" while the code says
"70 or more years old".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

PERSON_PROMPT = "a photo of a person"

RACES = ("East Asian", "Indian", "Southeast Asian", "White", "Middle Eastern", "Latino_Hispanic", "Black")
GENDERS = ("Female", "Male")
AGES = ("0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70")

RACE_PHRASES = {
    "East Asian": "an East Asian", "Indian": "an Indian", "Southeast Asian": "a Southeast Asian",
    "White": "a White", "Middle Eastern": "a Middle Eastern", "Latino_Hispanic": "a Latino or Hispanic",
    "Black": "a Black",
}


def label_prompts(oldest_age_template: str | None = None, prefix: str = "a photo of",
                  race_phrases: dict[str, str] | None = None,
                  gender_words: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Prompt per label, per family (race, gender, age), as in the released code.

    ``prefix`` opens every prompt ("a photo of" in the paper; vary it to test prompt sensitivity).
    ``oldest_age_template`` is the whole prompt for "more than 70" (default
    "<prefix> a person 70 or more years old", the code's; the paper's text says "more than 70 years old").
    ``race_phrases`` (label -> "a Black", ...) and ``gender_words`` (label -> "female", ...) replace
    the released code's phrasings for the labels they name.
    """
    phrases = {**RACE_PHRASES, **(race_phrases or {})}
    words = {label: label.lower() for label in GENDERS} | dict(gender_words or {})
    race = {label: f"{prefix} {phrases[label]} person" for label in RACES}
    gender = {label: f"{prefix} a {words[label]} person" for label in GENDERS}
    age = {}
    for label in AGES[:-1]:
        low, high = label.split("-")
        age[label] = f"{prefix} a person between {low} and {high} years old"
    age[AGES[-1]] = oldest_age_template or f"{prefix} a person 70 or more years old"
    return {"race": race, "gender": gender, "age": age}


def is_unmarked(person_scores: np.ndarray, label_scores: np.ndarray) -> np.ndarray:
    """True where the person prompt scores strictly above every label prompt.

    ``person_scores``: (n,); ``label_scores``: (n, k) for the k labels of one family.
    """
    person_scores = np.asarray(person_scores)
    label_scores = np.asarray(label_scores)
    if label_scores.ndim != 2 or label_scores.shape[0] != person_scores.shape[0]:
        raise ValueError(f"label_scores must be (n, k) with n={person_scores.shape[0]}, got {label_scores.shape}")
    return person_scores > label_scores.max(axis=1)


def _in_label_order(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows in the paper's label order (RACES, GENDERS, AGES), unknown labels last."""
    order = {label: i for i, label in enumerate(RACES + GENDERS + AGES)}
    return frame.sort_values(column, key=lambda c: c.map(order).fillna(len(order)), kind="stable", ignore_index=True)


def self_similarity_by_group(records: pd.DataFrame, embeddings: np.ndarray, by: str | list[str]) -> pd.DataFrame:
    """Self-similarity of every group of ``records[by]`` (groups of one image are left out)."""
    from .metrics import self_similarity

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


def unmarked_rates(records: pd.DataFrame, unmarked: np.ndarray, by: str, confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) per group of ``records[by]``, with a Wilson interval."""
    from .stats import wilson_interval

    flags = pd.Series(np.asarray(unmarked, dtype=bool))
    grouped = flags.groupby(records[by].to_numpy())
    frame = pd.DataFrame({"n": grouped.size(), "unmarked": grouped.sum()}).rename_axis(by).reset_index()
    low, high = wilson_interval(frame["unmarked"].to_numpy(), frame["n"].to_numpy(), confidence)
    frame["unmarked_%"] = 100 * frame["unmarked"] / frame["n"]
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    return _in_label_order(frame.drop(columns="unmarked"), by)


# ------------------------------------------------------------------------------ groups and labels

FAMILIES = ("race", "gender", "age")
LABEL_ORDER = {"race": RACES, "gender": GENDERS, "age": AGES}


def unit_rows(embeddings: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Rows scaled to unit length (cosines become dot products)."""
    x = np.asarray(embeddings, dtype=dtype)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("an embedding of length zero has no direction; drop it before measuring cosines")
    return x / norms


def group_indices(records: pd.DataFrame, by: str | list[str]) -> dict[tuple, np.ndarray]:
    """Record positions of every group of ``records[by]``, keys as tuples, in the paper's label order."""
    keys = [by] if isinstance(by, str) else list(by)
    order = {label: i for i, label in enumerate(RACES + GENDERS + AGES)}
    indices = {(k if isinstance(k, tuple) else (k,)): np.asarray(v) for k, v in records.groupby(keys).indices.items()}
    return dict(sorted(indices.items(), key=lambda item: [order.get(label, len(order)) for label in item[0]]))


# ------------------------------------------------------------------ self-similarity of random subsets


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
    # many rows per draw: a 0/1 indicator matrix times the group turns the sums into one BLAS product
    indicator = np.zeros((index.shape[0], unit.shape[0]), dtype=unit.dtype)
    np.put_along_axis(indicator, index, 1.0, axis=1)
    return indicator @ unit


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


def group_moments(unit: np.ndarray) -> GroupMoments:
    x = np.asarray(unit, dtype=np.float64)
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
    return unit_or_moments if isinstance(unit_or_moments, GroupMoments) else group_moments(unit_or_moments)


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
        moments = group_cells[key] if group_cells is not None else group_moments(unit_rows(embeddings[index]))
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
        if simulate:
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


# ---------------------------------------------------------------------------------- markedness


def unmarked_flags(image_embeddings: np.ndarray, text_embed, prompts: dict[str, dict[str, str]] | None = None,
                   person_prompt: str = PERSON_PROMPT) -> pd.DataFrame:
    """One boolean column per family: is the image unmarked (person prompt beats every label)?

    ``text_embed(texts) -> (len(texts), dim)`` embeds prompts (e.g. ``lambda t: embed_texts(model, t)``);
    scores are raw cosines of the unit image and text embeddings, as in the paper.
    """
    prompts = prompts or label_prompts()
    texts = list(dict.fromkeys([person_prompt] + [p for labels in prompts.values() for p in labels.values()]))
    column = {text: i for i, text in enumerate(texts)}
    cosines = unit_rows(image_embeddings, np.float32) @ unit_rows(text_embed(texts), np.float32).T
    person = cosines[:, column[person_prompt]]
    return pd.DataFrame({family: is_unmarked(person, cosines[:, [column[p] for p in labels.values()]])
                         for family, labels in prompts.items()})


def unmarked_table(records: pd.DataFrame, unmarked: np.ndarray, by: str | list[str], balance: bool = False,
                   repetitions: int = 10_000, seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) per group of ``records[by]`` with a 95% Wilson interval.

    ``balance=True`` also downsamples every group to the smallest one ``repetitions`` times, as the
    paper describes: the number unmarked in a subsample of m of a group's n images, K of them
    unmarked, is hypergeometric, so the draws are exact and O(1) each. Columns ``balanced_%``
    (mean of the draws) and ``balanced_low_%``/``balanced_high_%`` (percentile interval) are added;
    the mean equals the full-group rate in expectation, the interval widens as m shrinks.
    """
    from .stats import wilson_interval

    keys = [by] if isinstance(by, str) else list(by)
    flags = np.asarray(unmarked, dtype=bool)
    if len(flags) != len(records):
        raise ValueError(f"{len(records)} records but {len(flags)} flags")
    groups = group_indices(records, keys)
    n = np.array([len(index) for index in groups.values()])
    k = np.array([int(flags[index].sum()) for index in groups.values()])
    frame = pd.DataFrame([dict(zip(keys, key)) for key in groups])
    frame["n"] = n
    frame["unmarked_%"] = 100 * k / n
    low, high = wilson_interval(k, n, confidence)
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    if balance:
        m = int(n.min())
        rng = np.random.default_rng(seed)
        draws = np.stack([rng.hypergeometric(kk, nn - kk, m, size=repetitions) for kk, nn in zip(k, n)]) / m
        tail = (1 - confidence) / 2
        frame["sample_size"] = m
        frame["balanced_%"] = 100 * draws.mean(axis=1)
        frame["balanced_low_%"] = 100 * np.quantile(draws, tail, axis=1)
        frame["balanced_high_%"] = 100 * np.quantile(draws, 1 - tail, axis=1)
    return frame


def rate_gap_test(flags_a: np.ndarray, flags_b: np.ndarray, permutations: int = 10_000, seed: int = 0) -> dict:
    """Difference of unmarked rates (A − B, percentage points) and its two-sided permutation p-value.

    Shuffling the group labels leaves the pooled count K fixed, so A's count under the null is
    hypergeometric and each permutation is one draw. p uses the (1 + hits)/(1 + permutations) rule.
    """
    a, b = np.asarray(flags_a, bool), np.asarray(flags_b, bool)
    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        raise ValueError("both groups need at least one image")
    pooled = int(a.sum() + b.sum())
    observed = a.mean() - b.mean()
    count_a = np.random.default_rng(seed).hypergeometric(pooled, n_a + n_b - pooled, n_a, size=permutations)
    null = count_a / n_a - (pooled - count_a) / n_b
    hits = np.sum(np.abs(null) >= abs(observed) - 1e-12)
    return {"n_a": n_a, "n_b": n_b, "gap": 100 * observed, "p_value": (1 + hits) / (1 + permutations)}


def self_similarity_gap_test(embeddings_a: np.ndarray, embeddings_b: np.ndarray, permutations: int = 1_000,
                             seed: int = 0, block_elements: int = 4_000_000) -> dict:
    """Difference of self-similarities (A − B) and its two-sided permutation p-value.

    Each permutation relabels the pooled images; A's sum of unit vectors comes from one indicator
    product and B's is the pooled total minus it, so a permutation costs O(n·d).
    """
    from .metrics import self_similarity

    a, b = unit_rows(embeddings_a), unit_rows(embeddings_b)
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        raise ValueError("both groups need at least 2 images")
    observed = self_similarity(a) - self_similarity(b)
    pooled = np.concatenate([a, b])
    total = pooled.sum(axis=0)
    rng = np.random.default_rng(seed)
    per_block = max(1, block_elements // len(pooled))
    null = np.empty(permutations)
    for start in range(0, permutations, per_block):
        stop = min(permutations, start + per_block)
        chosen, _ = draw_subsets(rng, len(pooled), n_a, stop - start)
        sum_a = _row_sums(pooled, chosen)
        sum_b = total - sum_a
        s_a = (np.einsum("rd,rd->r", sum_a, sum_a) - n_a) / (n_a * (n_a - 1))
        s_b = (np.einsum("rd,rd->r", sum_b, sum_b) - n_b) / (n_b * (n_b - 1))
        null[start:stop] = s_a - s_b
    hits = np.sum(np.abs(null) >= abs(observed) - 1e-12)
    return {"n_a": n_a, "n_b": n_b, "gap": observed, "p_value": (1 + hits) / (1 + permutations)}


def family_summary(records: pd.DataFrame, embeddings: np.ndarray, flags: pd.DataFrame) -> pd.DataFrame:
    """Long table: family, group, n, exact self-similarity and unmarked % for every label of every family."""
    from .metrics import self_similarity

    rows = []
    for family in flags.columns:
        for key, index in group_indices(records, family).items():
            rows.append({"family": family, "group": key[0], "n": len(index),
                         "self_similarity": self_similarity(embeddings[index]) if len(index) > 1 else np.nan,
                         "unmarked_%": 100 * flags[family].to_numpy()[index].mean()})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------ beside the paper's numbers


def with_group_label(table: pd.DataFrame, keys: list[str], column: str = "group") -> pd.DataFrame:
    """``table`` with a ``group`` column naming each row as the published file does ("White, Male, 0-2")."""
    result = table.copy()
    result.insert(0, column, result[list(keys)].astype(str).agg(", ".join, axis=1))
    return result


def published_as_unmarked(published: pd.DataFrame) -> pd.DataFrame:
    """The paper states some rates as *marked*; restate them as unmarked (100 − value, bounds flipped)."""
    result = published.copy()
    renames = {"marked_rate": "unmarked_rate", "marked_rate_min": "unmarked_rate_max",
               "marked_rate_max": "unmarked_rate_min"}
    marked = result["measure"].isin(list(renames))
    result.loc[marked, "value"] = 100 - result.loc[marked, "value"]
    result.loc[marked, "where"] = result.loc[marked, "where"] + " (stated as marked %)"
    result["measure"] = result["measure"].replace(renames)
    return result


def bounds_check(ours: pd.DataFrame, published: pd.DataFrame, measure: str, value: str,
                 label: str = "group") -> pd.DataFrame:
    """Rows of ``ours`` the paper bounds (``<measure>_min``/``_max``): the bound, our value, whether it holds."""
    rows = []
    for kind, sign in (("min", "≥"), ("max", "≤")):
        bounds = published[published["measure"] == f"{measure}_{kind}"]
        for _, bound in bounds.iterrows():
            match = ours[ours[label] == bound["group"]]
            if match.empty:
                continue
            ours_value = float(match[value].iloc[0])
            holds = ours_value >= bound["value"] if kind == "min" else ours_value <= bound["value"]
            rows.append({label: bound["group"], "paper says": f"{sign} {bound['value']:g}", "ours": ours_value,
                         "holds": bool(holds), "where": bound["where"]})
    return pd.DataFrame(rows, columns=[label, "paper says", "ours", "holds", "where"])


def table4_counts(extremes_table: pd.DataFrame) -> pd.DataFrame:
    """The counts the paper's text gives about Table 4, computed from :func:`extremes` of race×gender×age."""
    young_or_old = {"0-2", "3-9", "more than 70"}
    under_20, from_60 = {"0-2", "3-9", "10-19"}, {"60-69", "more than 70"}
    mid = {"20-29", "30-39", "40-49", "50-59"}
    least = extremes_table[extremes_table["end"] == "least"]
    most = extremes_table[extremes_table["end"] == "most"]
    counts = {
        "least 10: Male": (least.gender == "Male").sum(),
        "least 10: White": (least.race == "White").sum(),
        "least 10: White and Male": ((least.race == "White") & (least.gender == "Male")).sum(),
        "least 10: races represented": least.race.nunique(),
        "least 10: aged 20-59": least.age.isin(mid).sum(),
        "least 10: aged under 20": least.age.isin(under_20).sum(),
        "least 10: aged 60 or more": least.age.isin(from_60).sum(),
        "most 10: under 10 or more than 70": most.age.isin(young_or_old).sum(),
        "most 10: Female": (most.gender == "Female").sum(),
        "most 10: White": (most.race == "White").sum(),
    }
    return pd.DataFrame({"group": list(counts), "ours": [int(v) for v in counts.values()]})


# ------------------------------------------------------------------------------------- figures


def plot_by_age(table: pd.DataFrame, value: str, low: str, high: str, hue: str | list[str], ax=None,
                title: str = "", ylabel: str = "", published: pd.DataFrame | None = None):
    """One line per ``hue`` group across the nine age groups, with an interval band; published
    values (columns ``group`` and ``value``, group named "<hue labels>, <age>") as black crosses."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    hue = [hue] if isinstance(hue, str) else list(hue)
    positions = {age: i for i, age in enumerate(AGES)}
    marked_published = False
    for key, rows in table.groupby(hue, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        rows = rows.sort_values("age", key=lambda c: c.map(positions))
        x = rows["age"].map(positions).to_numpy()
        name = ", ".join(map(str, key))
        line, = ax.plot(x, rows[value], marker="o", label=name)
        ax.fill_between(x, rows[low], rows[high], color=line.get_color(), alpha=0.2, linewidth=0)
        if published is not None:
            for _, point in published.iterrows():
                parts = point["group"].rsplit(", ", 1)
                if len(parts) == 2 and parts[0] == name and parts[1] in positions:
                    ax.plot(positions[parts[1]], point["value"], "x", color=line.get_color(), markersize=9,
                            markeredgewidth=2)
                    marked_published = True
    if marked_published:
        ax.plot([], [], "x", color="gray", markeredgewidth=2, label="published (paper), line's colour")
    ax.set_xticks(range(len(AGES)), AGES, rotation=45)
    ax.set(title=title, ylabel=ylabel, xlabel="age")
    ax.legend(fontsize="small")
    return ax


def plot_bars(table: pd.DataFrame, key: str, value: str, low: str, high: str, ax=None, title: str = "",
              ylabel: str = "", published: pd.DataFrame | None = None):
    """Bars with interval whiskers per ``key`` label; published values (``group``, ``value``) as crosses."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    labels = table[key].astype(str).tolist()
    # clip: a degenerate interval can sit an ulp inside its own mean
    whiskers = np.clip([table[value] - table[low], table[high] - table[value]], 0, None)
    ax.bar(range(len(labels)), table[value], color="tab:blue", alpha=0.8, yerr=whiskers, capsize=3, label="ours")
    if published is not None:
        points = published[published["group"].isin(labels)]
        if len(points):
            ax.plot([labels.index(g) for g in points["group"]], points["value"], "kx", markersize=9,
                    label="published (paper)")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set(title=title, ylabel=ylabel)
    ax.legend(fontsize="small")
    return ax


# ------------------------------------------------------------------------- beyond the paper


#: the oldest group's age wording: the released code's, and the paper's text
OLDEST_AGE_WORDINGS = {"code": "70 or more years old", "paper": "more than 70 years old"}


def prompt_set(prefix: str = "a photo of", oldest_age_wording: str = OLDEST_AGE_WORDINGS["code"],
               race_phrases: dict[str, str] | None = None, gender_words: dict[str, str] | None = None
               ) -> tuple[str, dict[str, dict[str, str]]]:
    """The person prompt and the label prompts for one prompt prefix ("a photo of" → "a photo of a person")."""
    return f"{prefix} a person", label_prompts(f"{prefix} a person {oldest_age_wording}", prefix=prefix,
                                               race_phrases=race_phrases, gender_words=gender_words)


def select(records: pd.DataFrame, **labels) -> np.ndarray:
    """Boolean mask of the records whose columns equal the given labels (``select(r, race="White")``)."""
    mask = np.ones(len(records), dtype=bool)
    for column, label in labels.items():
        mask &= (records[column] == label).to_numpy()
    return mask


def headline_comparisons() -> list[tuple[str, str, dict, dict]]:
    """(name, family the rate is measured on, labels of group A, labels of group B) of the gaps the paper
    headlines; for self-similarity the family is ignored."""
    comparisons = [(f"White vs {race}", "race", {"race": "White"}, {"race": race}) for race in RACES if race != "White"]
    comparisons += [
        ("Male vs Female", "gender", {"gender": "Male"}, {"gender": "Female"}),
        ("30-39 vs more than 70", "age", {"age": "30-39"}, {"age": "more than 70"}),
        ("40-49 vs 0-2", "age", {"age": "40-49"}, {"age": "0-2"}),
    ]
    comparisons += [(f"White Male vs Black Female ({family})", family, {"race": "White", "gender": "Male"},
                     {"race": "Black", "gender": "Female"}) for family in FAMILIES]
    return comparisons


def rate_gap_table(records: pd.DataFrame, flags: pd.DataFrame, permutations: int = 10_000,
                   seed: int = 0) -> pd.DataFrame:
    """:func:`rate_gap_test` for every :func:`headline_comparisons` gap (A − B, percentage points)."""
    rows = []
    for name, family, labels_a, labels_b in headline_comparisons():
        column = flags[family].to_numpy()
        a, b = column[select(records, **labels_a)], column[select(records, **labels_b)]
        if len(a) and len(b):
            rows.append({"comparison": name, "family": family, "unmarked_A_%": 100 * a.mean(),
                         "unmarked_B_%": 100 * b.mean(), **rate_gap_test(a, b, permutations, seed)})
    return pd.DataFrame(rows)


def self_similarity_gap_table(records: pd.DataFrame, embeddings: np.ndarray, permutations: int = 1_000,
                              seed: int = 0) -> pd.DataFrame:
    """:func:`self_similarity_gap_test` of B − A (the more often marked group's excess, as the paper
    reports it) for the headline comparisons; White Male vs Black Female appears once."""
    from .metrics import self_similarity

    rows, seen = [], set()
    for name, _, labels_a, labels_b in headline_comparisons():
        name = name.split(" (")[0]
        a, b = embeddings[select(records, **labels_a)], embeddings[select(records, **labels_b)]
        if name in seen or len(a) < 2 or len(b) < 2:
            continue
        seen.add(name)
        result = self_similarity_gap_test(b, a, permutations, seed)
        rows.append({"comparison": name, "n_A": len(a), "n_B": len(b), "s_A": self_similarity(a),
                     "s_B": self_similarity(b), "gap (B − A)": result["gap"], "p_value": result["p_value"]})
    return pd.DataFrame(rows)


def model_comparison(model_specs: list[str], dataset, prompts: dict[str, dict[str, str]] | None = None,
                     person_prompt: str = PERSON_PROMPT, device: str = "auto", batch_size: int = 64,
                     decode_workers: int | None = None) -> pd.DataFrame:
    """:func:`family_summary` (self-similarity and unmarked % per label) for every model in the list.

    Any dual encoder spec works; embeddings are cached, so models embedded before cost nothing.
    """
    from .embeddings import embed_images, embed_texts
    from .models import load_image_text_model

    frames = []
    for spec in model_specs:
        model = load_image_text_model(spec, device=device)
        if getattr(model, "kind", "dual") != "dual":
            raise TypeError(f"{spec} is a {model.kind} model; markedness needs a dual encoder (separate embeddings)")
        images = embed_images(model, dataset, batch_size=batch_size, decode_workers=decode_workers)
        flags = unmarked_flags(images, lambda texts: embed_texts(model, texts, progress=False), prompts, person_prompt)
        frames.append(family_summary(dataset.records, images, flags).assign(model=spec))
        model = None  # let it go before the next one loads (GPU memory)
    return pd.concat(frames, ignore_index=True)


def prompt_sensitivity(records: pd.DataFrame, image_embeddings: np.ndarray, text_embed, prefixes: list[str],
                       oldest_age_wordings: list[str] = tuple(OLDEST_AGE_WORDINGS.values()),
                       race_phrases: dict[str, str] | None = None,
                       gender_words: dict[str, str] | None = None) -> pd.DataFrame:
    """Unmarked % per family and label for every prompt prefix × oldest-age wording.

    Long table: prefix, oldest_age_wording, family, group, n, unmarked_%.
    """
    frames = []
    for prefix in prefixes:
        for wording in oldest_age_wordings:
            person, prompts = prompt_set(prefix, wording, race_phrases, gender_words)
            flags = unmarked_flags(image_embeddings, text_embed, prompts, person)
            for family in FAMILIES:
                table = unmarked_rates(records, flags[family].to_numpy(), family)
                frames.append(pd.DataFrame({"prefix": prefix, "oldest_age_wording": wording, "family": family,
                                            "group": table[family], "n": table["n"],
                                            "unmarked_%": table["unmarked_%"]}))
    return pd.concat(frames, ignore_index=True)
