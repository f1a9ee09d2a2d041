"""Permutation tests of the gaps the paper headlines."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats import permutation_p_value, unit_rows
from .groups import select
from .prompts import FAMILIES, RACES
from .self_similarity import _row_sums, draw_subsets


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
    return {"n_a": n_a, "n_b": n_b, "gap": 100 * observed, "p_value": permutation_p_value(hits, permutations)}


def self_similarity_gap_test(embeddings_a: np.ndarray, embeddings_b: np.ndarray, permutations: int = 1_000,
                             seed: int = 0, block_elements: int = 4_000_000) -> dict:
    """Difference of self-similarities (A − B) and its two-sided permutation p-value.

    Each permutation relabels the pooled images; A's sum of unit vectors comes from one indicator
    product and B's is the pooled total minus it, so a permutation costs O(n·d).
    """
    from ..stats import self_similarity

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
    return {"n_a": n_a, "n_b": n_b, "gap": observed, "p_value": permutation_p_value(hits, permutations)}


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
    from ..stats import self_similarity

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
