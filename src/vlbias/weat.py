"""Word Embedding Association Test (Caliskan, Bryson and Narayanan, 2017), vectorised.

For target sets X, Y and attribute sets A, B, every target word w gets the association

    s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b),

the test statistic is S(X, Y) = sum_X s - sum_Y s, and the effect size is

    d = (mean_X s - mean_Y s) / std_{X ∪ Y}(s)      (sample standard deviation, ddof = 1).

The one-sided p-value is the share of equal-size re-partitions (X_i, Y_i) of X ∪ Y with
S(X_i, Y_i) >= S(X, Y). All association scores come from one similarity matrix computed once;
since S(X_i, Y_i) = 2 sum_{X_i} s - sum_{X ∪ Y} s, each partition costs one sum of |X| numbers.

Two parts run it, so it lives in the core: Part III on word vectors and sentence encoders
(:mod:`vlbias.harms.weat`), Part I on an image-text model's text encoder
(:func:`vlbias.markedness.controls.text_encoder_weat`). Here too: the word lists of Caliskan et
al.'s ten tests (:func:`caliskan_tests`), a battery of tests as one table
(:func:`run_weat_battery`) and SEAT's template sentences (:func:`sentence_embedder`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .stats import finite_vector, permutation_p_value, unit_rows

MAX_EXACT_PARTITIONS = 1_000_000
MIN_MONTE_CARLO = 100_000


def association_scores(targets, A, B, names: tuple[str, str, str] = ("targets", "A", "B")) -> np.ndarray:
    """s(w, A, B) for every row w of ``targets``: mean cosine with A minus mean cosine with B.

    Every set must be non-empty, finite, free of zero rows and of one dimension (errors name the set).
    """
    t = unit_rows(targets, names[0])
    a = unit_rows(A, names[1], dim=t.shape[1])
    b = unit_rows(B, names[2], dim=t.shape[1])
    return (t @ a.T).mean(axis=1) - (t @ b.T).mean(axis=1)


def effect_size_from_scores(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """Caliskan's d from association scores: difference of means over the pooled sample std."""
    scores_x, scores_y = finite_vector(scores_x, "scores_x"), finite_vector(scores_y, "scores_y")
    pooled = np.concatenate([scores_x, scores_y])
    if pooled.size < 3:
        raise ValueError("the effect size needs at least 3 target words in X and Y together.")
    return float((scores_x.mean() - scores_y.mean()) / pooled.std(ddof=1))


def weat_effect_size(X, Y, A, B) -> float:
    """WEAT effect size d for arrays of vectors X, Y (targets) and A, B (attributes)."""
    return effect_size_from_scores(association_scores(X, A, B, ("X", "A", "B")),
                                   association_scores(Y, A, B, ("Y", "A", "B")))


def partition_count(n_x: int, n_y: int) -> int:
    """Number of ways to choose which |X| of the |X| + |Y| targets form X."""
    return math.comb(n_x + n_y, n_x)


def exact_subset_sums(scores: np.ndarray, size: int, chunk: int = 200_000):
    """Sum of ``scores`` over every subset of ``size`` elements, yielded in chunks."""
    combos = itertools.combinations(range(scores.size), size)
    while True:
        block = np.fromiter(itertools.islice(combos, chunk), dtype=np.dtype((np.intp, size)))
        if block.size == 0:
            return
        yield scores[block].sum(axis=1)


def random_subset_sums(scores: np.ndarray, size: int, n_permutations: int, rng: np.random.Generator,
                       chunk: int = 50_000):
    """Sum of ``scores`` over the first ``size`` elements of ``n_permutations`` random permutations."""
    for start in range(0, n_permutations, chunk):
        rows = min(chunk, n_permutations - start)
        # argsort of uniform keys is a uniform random permutation per row; only the first `size` matter
        keys = rng.random((rows, scores.size))
        chosen = np.argpartition(keys, size - 1, axis=1)[:, :size] if size < scores.size else np.argsort(keys, axis=1)
        yield scores[chosen].sum(axis=1)


@dataclass(frozen=True)
class WeatResult:
    effect_size: float
    p_value: float
    statistic: float          # S(X, Y) = sum_X s - sum_Y s
    exact: bool               # all partitions enumerated (else Monte Carlo)
    n_partitions: int         # partitions enumerated or permutations drawn
    n_x: int
    n_y: int


def weat_test(X, Y, A, B, n_permutations: int = MIN_MONTE_CARLO, max_exact: int = MAX_EXACT_PARTITIONS,
              seed: int | None = 0) -> WeatResult:
    """Effect size and one-sided permutation p-value (X more associated with A than Y is).

    Exact when there are at most ``max_exact`` partitions: p = #{partitions with S_i >= S} / #partitions
    (the observed one included). Otherwise ``n_permutations`` random ones (at least 100,000 unless
    you lower it on purpose), with p = (#{S_i >= S} + 1) / (n + 1), which is never 0. Both match
    ``scipy.stats.permutation_test(..., permutation_type="independent", alternative="greater")``.
    A tiny relative tolerance counts ties that differ only by float rounding as ties.
    """
    scores_x = association_scores(X, A, B, ("X", "A", "B"))
    scores_y = association_scores(Y, A, B, ("Y", "A", "B"))
    return weat_test_from_scores(scores_x, scores_y, n_permutations, max_exact, seed)


def weat_test_from_scores(scores_x: np.ndarray, scores_y: np.ndarray, n_permutations: int = MIN_MONTE_CARLO,
                          max_exact: int = MAX_EXACT_PARTITIONS, seed: int | None = 0) -> WeatResult:
    """:func:`weat_test` on precomputed association scores."""
    scores_x, scores_y = np.asarray(scores_x, float).ravel(), np.asarray(scores_y, float).ravel()
    n_x, n_y = scores_x.size, scores_y.size
    if n_x == 0 or n_y == 0:
        raise ValueError(f"both target sets need words, got |X|={n_x}, |Y|={n_y}.")
    scores_x, scores_y = finite_vector(scores_x, "scores_x"), finite_vector(scores_y, "scores_y")
    scores = np.concatenate([scores_x, scores_y])
    total = scores.sum()
    statistic = 2 * scores_x.sum() - total
    # compare subset sums of X directly: S_i >= S  <=>  sum_{X_i} s >= sum_X s
    threshold = scores_x.sum() - 1e-12 * max(1.0, np.abs(scores).sum())
    partitions = partition_count(n_x, n_y)
    if partitions <= max_exact:
        extreme = sum(int(np.count_nonzero(sums >= threshold)) for sums in exact_subset_sums(scores, n_x))
        p_value, exact, used = extreme / partitions, True, partitions
    else:
        rng = np.random.default_rng(seed)
        extreme = sum(int(np.count_nonzero(sums >= threshold))
                      for sums in random_subset_sums(scores, n_x, n_permutations, rng))
        p_value, exact, used = permutation_p_value(extreme, n_permutations), False, n_permutations
    return WeatResult(effect_size_from_scores(scores_x, scores_y), float(p_value), float(statistic),
                      exact, used, n_x, n_y)


def weat_p_value(X, Y, A, B, n_permutations: int = MIN_MONTE_CARLO, max_exact: int = MAX_EXACT_PARTITIONS,
                 seed: int | None = 0) -> float:
    """One-sided WEAT permutation p-value (see :func:`weat_test` for exact versus Monte Carlo)."""
    return weat_test(X, Y, A, B, n_permutations, max_exact, seed).p_value


# --------------------------------------------------------------------------- batteries of tests

def caliskan_tests() -> list[dict]:
    """The ten WEATs of Caliskan et al. (2017): dicts with ``id``, ``X``/``Y``/``A``/``B`` word lists and names."""
    import json
    from importlib import resources

    text = resources.files("vlbias").joinpath("resources", "harms", "weat_caliskan2017.json").read_text(encoding="utf-8")
    return json.loads(text)["tests"]


def abbreviated_missing(missing: str, per_set: int = 4) -> str:
    """A battery row's ``missing`` ("X: a, b, c; A: d") with at most ``per_set`` words of each set shown
    and the rest counted ("X: a, b, … (+12)"), so that a table of many tests stays readable."""
    if per_set < 1:
        raise ValueError(f"per_set={per_set!r}: show at least one word of each set.")
    parts = []
    for part in filter(None, (piece.strip() for piece in str(missing or "").split(";"))):
        key, _, words = part.partition(":")
        words = [word.strip() for word in words.split(",") if word.strip()]
        shown = ", ".join(words[:per_set]) + (f", … (+{len(words) - per_set})" if len(words) > per_set else "")
        parts.append(f"{key.strip()}: {shown}")
    return "; ".join(parts)


def run_weat_battery(embed, tests: list[dict], n_permutations: int = MIN_MONTE_CARLO,
                     max_exact: int = MAX_EXACT_PARTITIONS, seed: int = 0, name: str = "",
                     min_found_share: float = 1.0):
    """One row per test: effect size, p-value, set sizes and the words ``embed`` could not find.

    ``embed(words) -> (vectors, found, missing)`` (e.g. :meth:`WordVectors.lookup`). A test whose
    target or attribute set is left empty gets NaN and says why in ``note``. ``words_missing``
    counts the words lost to the vocabulary, ``found_share`` is the smallest share of a set that
    was found, and ``complete`` is ``found_share >= min_found_share`` (by default: nothing lost):
    an incomplete test measured other word sets than the published one and is not comparable with
    it as an equal.
    """
    import pandas as pd

    if not 0 < min_found_share <= 1:
        raise ValueError(f"min_found_share must be in (0, 1], got {min_found_share}")
    rows = []
    for test in tests:
        looked_up = {key: embed(test[key]) for key in "XYAB"}
        missing = {key: looked_up[key][2] for key in "XYAB"}
        found_share = min(len(looked_up[key][1]) / max(1, len(looked_up[key][1]) + len(missing[key])) for key in "XYAB")
        row = {"embeddings": name, "test": test["id"],
               "targets": f"{test['X_name']} vs {test['Y_name']}",
               "attributes": f"{test['A_name']} vs {test['B_name']}",
               **{f"n_{key}": len(looked_up[key][1]) for key in "XYAB"},
               "missing": "; ".join(f"{key}: {', '.join(words)}" for key, words in missing.items() if words),
               "words_missing": sum(len(words) for words in missing.values()),
               "found_share": found_share, "complete": found_share >= min_found_share}
        empty = [key for key in "XYAB" if len(looked_up[key][1]) == 0 or (key in "XY" and len(looked_up["X"][1]) + len(looked_up["Y"][1]) < 3)]
        if empty:
            row.update(effect_size=np.nan, p_value=np.nan, exact=None, complete=False,
                       note=f"not computed: too few words found in {', '.join(sorted(set(empty)))}")
        else:
            result = weat_test(*(looked_up[key][0] for key in "XYAB"), n_permutations=n_permutations,
                               max_exact=max_exact, seed=seed)
            note = "" if row["complete"] else f"incomplete: {row['words_missing']} word(s) not in the vocabulary"
            row.update(effect_size=result.effect_size, p_value=result.p_value, exact=result.exact, note=note)
        rows.append(row)
    return pd.DataFrame(rows)


# bleached templates that read for names and bare nouns alike (SEAT uses more, split by word type)
SEAT_TEMPLATES = ("This is {}.", "That is {}.", "There is {}.", "Here is {}.", "{} is here.", "{} is there.")


def seat_sentences(words, templates=SEAT_TEMPLATES) -> list[str]:
    """SEAT-style semantically bleached sentences (May et al., 2019): each word in each template."""
    return [template.format(word) for word in words for template in templates]


def sentence_embedder(encode, templates=SEAT_TEMPLATES):
    """An ``embed(words)`` for :func:`run_weat_battery` whose units are template sentences.

    Each word becomes ``len(templates)`` sentences (the units the permutation test shuffles, as in
    SEAT); sentence encoders know every word, so nothing is ever missing.
    """
    memo: dict[tuple, np.ndarray] = {}  # attribute sets recur across tests: encode each set once

    def embed(words):
        sentences = seat_sentences(words, templates)
        if tuple(sentences) not in memo:
            memo[tuple(sentences)] = encode(sentences, progress=False)
        return memo[tuple(sentences)], sentences, []
    return embed
