"""ColorFoil (Samin et al. 2024), evaluation: how models rank a caption against its foils.

:func:`score_benchmark` scores every image against its caption and foils once (chunked and
cached), and the 1/2/4-foil tasks read the first 1, 2, 4 foil columns: the foils are nested.
An example is correct when the caption strictly outscores every foil. The benchmark rows come
from :mod:`vlbias.colorfoil.construction`.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .construction import BENCHMARK_VERSION
from .foils import COLOUR_ALIASES


# --------------------------------------------------------------------------- scoring


def candidate_lists(benchmark: pd.DataFrame, max_foils: int) -> list[list[str]]:
    """``[caption, foil_1, ..., foil_max]`` per row; rows with fewer foils repeat the caption in the
    missing places (their scores are blanked by :func:`score_benchmark`)."""
    return [[caption] + list(foils[:max_foils]) + [caption] * (max_foils - min(len(foils), max_foils))
            for caption, foils in zip(benchmark["caption"], benchmark["foils"])]


def score_benchmark(model, dataset, benchmark: pd.DataFrame, max_foils: int = 4, batch_size: int = 32,
                    chunk_size: int = 256, cache: bool = True, progress: bool = True,
                    exclude_truncated: bool = True) -> np.ndarray:
    """(n_rows, 1 + max_foils) scores: column 0 the caption, then the foils; NaN where a row has no
    such foil, and (``exclude_truncated``) where the model's text truncation makes the foil identical
    to the caption (:func:`truncated_foils`). Dual encoders embed each image and each distinct text once per chunk; matchers score
    the pairs in batches. Chunks are cached, so an interrupted run resumes."""
    from ..cache import cache_key, compute_chunked
    from ..embeddings import texts_identity

    candidates = candidate_lists(benchmark, max_foils)
    positions = benchmark["image_index"].to_numpy()
    images = dataset.images(positions)
    key = cache_key("colorfoil-scores", BENCHMARK_VERSION, model, images=images.identity,
                    candidates=texts_identity([json.dumps(row) for row in candidates]))

    def compute(start: int, stop: int) -> np.ndarray:
        return np.asarray(model.score_candidates(list(images[start:stop]), candidates[start:stop],
                                                 batch_size=batch_size, progress=False), dtype=np.float32)

    scores = compute_chunked(key, len(candidates), compute, chunk_size=chunk_size, progress=progress,
                             cache=cache, kind="colorfoil", desc=f"ColorFoil scores ({model.spec})").astype(np.float64)
    if len(scores) == 0:
        return np.zeros((0, 1 + max_foils))
    n_foils = np.minimum(benchmark["n_foils"].to_numpy(), max_foils)
    scores[np.arange(max_foils + 1)[None, :] > n_foils[:, None]] = np.nan
    if exclude_truncated:
        scores[:, 1:][truncated_foils(model, benchmark, max_foils)] = np.nan
    return scores


def truncated_foils(model, benchmark: pd.DataFrame, max_foils: int = 4) -> np.ndarray:
    """(n_rows, max_foils) bool: the foils that reach the model as the very same tokens as their
    caption, because the colour word lies past the model's text limit (ViLT reads 40 tokens, CLIP
    77). Their caption/foil scores tie and would count as errors; :func:`score_benchmark` leaves
    them out (NaN), so the row drops out of the k-foil tasks that include that foil. A model without
    ``text_token_ids`` is taken to read every text whole."""
    captions = list(benchmark["caption"])
    foils = [list(f[:max_foils]) for f in benchmark["foils"]]
    flags = np.zeros((len(captions), max_foils), dtype=bool)
    if not captions:
        return flags
    distinct = list(dict.fromkeys(captions + [f for row in foils for f in row]))
    try:
        ids = dict(zip(distinct, model.text_token_ids(distinct)))
    except (NotImplementedError, AttributeError):  # a model that does not expose its tokens: taken to read them whole
        return flags
    for row, (caption, row_foils) in enumerate(zip(captions, foils)):
        for j, foil in enumerate(row_foils):
            flags[row, j] = ids[foil] == ids[caption]
    return flags


def score_models(model_specs: Sequence[str], datasets: Mapping[str, object], benchmarks: Mapping[str, pd.DataFrame],
                 max_foils: int = 4, batch_size: int = 32, device=None, half: bool = False,
                 progress: bool = True) -> tuple[dict, dict, pd.DataFrame, pd.DataFrame]:
    """:func:`score_benchmark` for every model on every data set.

    Returns ``(scores, kinds, failures, truncated)``: ``scores[(spec, dataset)]``, ``kinds[spec]``
    (dual or pairwise), ``failures`` (one row per model that failed to load or run, with the reason;
    the others still score) and ``truncated`` (per model and data set, the foils that the model's
    text truncation made identical to their caption, left out of the scores; see
    :func:`truncated_foils`).
    """
    from ..models import for_each_model

    def score_all(spec, model):
        out, cut = {}, {}
        for name, dataset in datasets.items():
            out[name] = score_benchmark(model, dataset, benchmarks[name], max_foils=max_foils,
                                        batch_size=batch_size, progress=progress)
            cut[name] = truncated_foils(model, benchmarks[name], max_foils)
        return model.kind, model.dtype, out, cut

    results, failures = for_each_model(model_specs, score_all, device=device, half=half)
    scores, kinds, truncated = {}, {}, []
    for spec, (kind, dtype, out, cut) in results.items():
        kinds[spec] = kind
        for name in out:
            scores[spec, name] = np.asarray(out[name])
            truncated.append({"model": spec, "dtype": dtype, "dataset": name, "rows": len(out[name]),
                              "rows with a foil identical after truncation": int(cut[name].any(axis=1).sum()),
                              "foils identical after truncation": int(cut[name].sum())})
    truncated = pd.DataFrame(truncated, columns=["model", "dtype", "dataset", "rows",
                                                 "rows with a foil identical after truncation",
                                                 "foils identical after truncation"])
    return scores, kinds, failures, truncated


def correct_at(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows that have k foils, whether the caption strictly beats each of its first k foils there)."""
    scores = np.asarray(scores, dtype=float)
    if not 1 <= k < scores.shape[1]:
        raise ValueError(f"k must be between 1 and {scores.shape[1] - 1}, got {k}")
    usable = ~np.isnan(scores[:, 1:k + 1]).any(axis=1)
    correct = scores[usable, 0] > scores[usable, 1:k + 1].max(axis=1)
    return usable, correct


def f1_from_accuracy(accuracy):
    """Table 1's F1 from its accuracy (a fraction): ``2a / (1 + a)``.

    Read each example as a positive ("the caption is the true one"), a correct ranking as a true
    positive and a wrong one as a false negative. There are no negatives, so no false positives:
    precision is 1, recall is the accuracy, and F1 = 2·1·a / (1 + a). It adds nothing to accuracy.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    return 2 * accuracy / (1 + accuracy)


def f1_all_positive(correct) -> float:
    """F1 from its definition for the reading in :func:`f1_from_accuracy` (true label 1 everywhere,
    prediction 1 where the caption won)."""
    correct = np.asarray(correct, dtype=bool)
    true_positive, false_negative, false_positive = correct.sum(), (~correct).sum(), 0
    return float(2 * true_positive / (2 * true_positive + false_positive + false_negative))


def detection_auroc(scores: np.ndarray, k: int) -> float:
    """Caption-versus-foil detection, threshold-free: the probability that a caption, taken at random,
    scores above a foil taken at random from any image (ties count one half), over the rows with k
    foils. Unlike accuracy it compares across images, so it asks whether a score means "true" on
    its own (VALSE's caption/foil detection without a threshold), and is not a function of accuracy."""
    scores = np.asarray(scores, dtype=float)
    usable, _ = correct_at(scores, k)
    captions, foils = scores[usable, 0], scores[usable, 1:k + 1].ravel()
    if len(captions) == 0:
        return float("nan")
    # Mann-Whitney U through average ranks: O(n log n), exact with ties
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([captions, foils]))
    u = ranks[:len(captions)].sum() - len(captions) * (len(captions) + 1) / 2
    return float(u / (len(captions) * len(foils)))


def evaluation_row(scores: np.ndarray, k: int, confidence: float = 0.95) -> dict:
    """n, accuracy with its Wilson interval (percent), F1 as the paper computes it, detection AUROC,
    the mean caption-minus-best-foil margin, and ``ties``: examples whose caption and best foil score
    exactly the same (counted as errors; half precision makes them common, so they are reported)."""
    from ..stats import accuracy_summary

    usable, correct = correct_at(scores, k)
    summary = accuracy_summary(correct, confidence)
    margin = scores[usable, 0] - scores[usable, 1:k + 1].max(axis=1)
    return {**summary, "ties": int((margin == 0).sum()),
            "f1": float(f1_from_accuracy(correct.mean())) if correct.size else float("nan"),
            "detection_auroc": detection_auroc(scores, k),
            "mean_margin": float(margin.mean()) if margin.size else float("nan")}


def evaluation_table(scores: Mapping[tuple[str, str], np.ndarray], foil_counts: Sequence[int] = (1, 2, 4),
                     confidence: float = 0.95) -> pd.DataFrame:
    """One row per (model, dataset, k) from ``{(model, dataset): scores}``."""
    rows = [{"model": model, "dataset": dataset, "foils": k, **evaluation_row(matrix, k, confidence)}
            for (model, dataset), matrix in scores.items() for k in foil_counts if k < matrix.shape[1]]
    return pd.DataFrame(rows)


def published_f1_check(published_table: pd.DataFrame) -> pd.DataFrame:
    """Every published (model, dataset, foils): its accuracy, its printed F1, ``2a/(1+a)`` from the
    printed accuracy, and whether the two agree at the printed two decimals."""
    wide = published_table.pivot_table(index=["model", "dataset", "foils"], columns="measure", values="value")
    wide = wide.reset_index().rename(columns={"accuracy_%": "published accuracy_%", "f1": "published F1"})
    wide["2a/(1+a)"] = f1_from_accuracy(wide["published accuracy_%"] / 100)
    # half-up rounding at two decimals, as a table prints; a tiny epsilon absorbs binary fractions
    wide["agrees at 2 decimals"] = np.floor(wide["2a/(1+a)"] * 100 + 0.5 + 1e-9) / 100 == wide["published F1"]
    return wide


# --------------------------------------------------------------------------- errors, confusions


def wrong_examples(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 1, n: int = 5,
                   seed: int = 0) -> pd.DataFrame:
    """Up to ``n`` rows (seeded sample) where a foil scored at least as high as the caption: the
    caption, the foil that won, and the two scores (Table 2)."""
    usable, correct = correct_at(scores, k)
    rows = np.flatnonzero(usable)[~correct]
    if len(rows) > n:
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=n, replace=False))
    out = []
    for row in rows:
        best = int(np.nanargmax(scores[row, 1:k + 1]))
        out.append({"image_id": benchmark["image_id"].iat[row], "caption": benchmark["caption"].iat[row],
                    "foil": benchmark["foils"].iat[row][best], "caption score": scores[row, 0],
                    "foil score": scores[row, 1 + best]})
    return pd.DataFrame(out, columns=["image_id", "caption", "foil", "caption score", "foil score"])


def canonical_colour(word: str) -> str:
    """The colour a word names, aliases folded (``gray`` is ``grey``): how per-colour tables group words."""
    return COLOUR_ALIASES.get(word, word)


def foil_comparisons(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 4,
                     single_word_only: bool = True) -> pd.DataFrame:
    """One row per (caption, foil) comparison among the first ``k`` foils: ``original``, ``foil``
    colour and whether the foil scored at least as high as the caption (``error``).

    With ``single_word_only`` only captions with one colour word count, so each error belongs to
    one (original, foil) pair; otherwise every replacement of a foil shares its error."""
    rows = []
    for row, replacements in enumerate(benchmark["replacements"]):
        if single_word_only and len(benchmark["words"].iat[row]) != 1:
            continue
        for j, text in enumerate(replacements[:k]):
            if np.isnan(scores[row, 1 + j]):
                continue
            error = bool(scores[row, 1 + j] >= scores[row, 0])
            for pair in text.split("; "):
                original, _, foil = pair.partition("->")
                rows.append({"row": row, "original": canonical_colour(original), "foil": canonical_colour(foil),
                             "error": error})
    return pd.DataFrame(rows, columns=["row", "original", "foil", "error"])


def colour_confusion(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 4, single_word_only: bool = True,
                     min_count: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(error rate, count) matrices, original colour (rows) x foil colour (columns): how often a
    foil naming that colour scored at least as high as the caption. Cells with fewer than
    ``min_count`` comparisons are NaN in the rate matrix."""
    pairs = foil_comparisons(benchmark, scores, k, single_word_only)
    counts = pairs.pivot_table(index="original", columns="foil", values="error", aggfunc="size", fill_value=0)
    rates = pairs.pivot_table(index="original", columns="foil", values="error", aggfunc="mean")
    rates = rates.reindex_like(counts).where(counts >= min_count)
    return rates, counts


def per_colour_accuracy(benchmark: pd.DataFrame, scores: np.ndarray, k: int = 1,
                        confidence: float = 0.95) -> pd.DataFrame:
    """k-foil accuracy (Wilson interval) of the captions holding each colour word (a caption with
    two colours counts for both), most frequent colour first."""
    from ..stats import accuracy_summary

    usable, correct = correct_at(scores, k)
    words = benchmark["words"][usable].reset_index(drop=True)
    table = pd.DataFrame({"colour": words.map(lambda ws: sorted({canonical_colour(w) for w in ws})), "correct": correct})
    table = table.explode("colour")
    rows = [{"colour": colour, **accuracy_summary(group["correct"].to_numpy(), confidence)}
            for colour, group in table.groupby("colour")]
    return pd.DataFrame(rows).sort_values(["n", "colour"], ascending=[False, True]).reset_index(drop=True)
