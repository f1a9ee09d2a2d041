"""Controls for Part II: what ColorFoil accuracy means once the image is taken away, and whether
two models differ on the same pairs.

Blind baselines make the caption-versus-foil decision without the image:

- :func:`language_model_scores`: a language model's log-likelihood of caption and foils (VALSE's
  text-only baseline). A caption whose colour is more probable as text ("a yellow banana") is
  found without looking.
- :func:`blind_image_scores`: the image-text model itself, every image replaced by one image that
  shows nothing (:func:`blank_image`) or the average of the data set (:func:`mean_image`).

What a model scores above its blind baseline is what vision adds (:func:`blind_comparison`, per
colour). :func:`paired_model_table` compares models on the same pairs: exact McNemar p-value and a
paired bootstrap interval of the accuracy difference.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from PIL import Image

from ..stats import mcnemar_exact, paired_accuracy_difference  # noqa: F401  (were defined here; shared now)
from .evaluation import candidate_lists, correct_at, per_colour_accuracy


def _blank_missing_foils(scores: np.ndarray, benchmark: pd.DataFrame, max_foils: int) -> np.ndarray:
    """NaN where a row has fewer than ``max_foils`` foils (as :func:`score_benchmark` returns)."""
    n_foils = np.minimum(benchmark["n_foils"].to_numpy(), max_foils)
    scores[np.arange(max_foils + 1)[None, :] > n_foils[:, None]] = np.nan
    return scores


def _scores_by_text(score_texts, benchmark: pd.DataFrame, max_foils: int) -> np.ndarray:
    """Score each distinct candidate text once with ``score_texts(texts) -> (n,)``, laid out per row."""
    candidates = candidate_lists(benchmark, max_foils)
    if not candidates:
        return np.zeros((0, 1 + max_foils))
    distinct = list(dict.fromkeys(itertools.chain.from_iterable(candidates)))
    by_text = dict(zip(distinct, np.asarray(score_texts(distinct), dtype=np.float64)))
    scores = np.array([[by_text[text] for text in row] for row in candidates])
    return _blank_missing_foils(scores, benchmark, max_foils)


# --------------------------------------------------------------------------- blind baselines

def language_model_scores(model, benchmark: pd.DataFrame, max_foils: int = 4, batch_size: int = 16,
                          cache: bool = True, progress: bool = False, threads: int | None = 1) -> np.ndarray:
    """(n_rows, 1 + max_foils) total log-probabilities of caption and foils under a language model
    (``load_language_model(spec)``, any causal LM spec; masked LMs give pseudo-log-likelihoods).

    Laid out like :func:`vlbias.colorfoil.evaluation.score_benchmark`, so :func:`correct_at` and
    the evaluation tables read it unchanged. A foil changes only colour words, so caption and foils
    share every other token; the sum over tokens compares them on the words that differ (and on
    how the rest reads after them). ``threads``: torch threads while scoring (None keeps the current
    setting); one is fastest for short texts on a small shared CPU, as in
    :func:`vlbias.device.torch_threads` (measured here: 10 captions with 4 foils, 5 s with
    one thread, 39 s with two on a busy 2-core machine).
    """
    from ..cache import compute_chunked, model_identity
    from ..embeddings import texts_identity
    from ..device import torch_threads

    def score_texts(texts: list[str]) -> np.ndarray:
        key = {"what": "colorfoil-lm-scores", "model": model_identity(model),
               "kind": getattr(model, "kind", ""), "texts": texts_identity(texts)}

        def compute(start: int, stop: int) -> np.ndarray:
            with torch_threads(threads):
                return np.asarray(model.sequence_logprob(texts[start:stop], batch_size=batch_size, progress=False),
                                  dtype=np.float64)

        return compute_chunked(key, len(texts), compute, chunk_size=256, progress=progress, cache=cache,
                               kind="lm_scores", desc=f"caption log-likelihoods ({model.spec})")

    return _scores_by_text(score_texts, benchmark, max_foils)


def blank_image(size: tuple[int, int] = (224, 224), colour: tuple[int, int, int] = (128, 128, 128)) -> Image.Image:
    """A uniform image (mid grey by default): an input that shows no colour of the caption."""
    return Image.new("RGB", size, colour)


def mean_image(images: Sequence[Image.Image], size: tuple[int, int] = (224, 224)) -> Image.Image:
    """The pixel-wise mean of ``images``, each resized to ``size`` first (bilinear)."""
    if len(images) == 0:
        raise ValueError("mean_image needs at least one image")
    total = np.zeros((size[1], size[0], 3))
    for image in images:
        total += np.asarray(image.convert("RGB").resize(size, Image.BILINEAR), dtype=np.float64)
    return Image.fromarray(np.round(total / len(images)).astype(np.uint8))


def blind_image_scores(model, benchmark: pd.DataFrame, image: Image.Image, max_foils: int = 4,
                       batch_size: int = 32) -> np.ndarray:
    """(n_rows, 1 + max_foils) scores of caption and foils against one ``image`` for every row.

    The image-text model's decision with the image taken away (:func:`blank_image`,
    :func:`mean_image`): whatever accuracy remains comes from the texts alone. Each distinct text
    is scored once.
    """
    return _scores_by_text(lambda texts: model.score([image], texts, batch_size=batch_size, progress=False)[0],
                           benchmark, max_foils)


def blind_comparison(benchmark: pd.DataFrame, scores: Mapping[str, np.ndarray], k: int = 1,
                     confidence: float = 0.95) -> pd.DataFrame:
    """k-foil accuracy (percent) per colour word for each scorer in ``scores`` (a model and its
    blind baselines), with an ``all colours`` row first; ``n`` counts the captions with that colour.

    Each scorer's column is :func:`per_colour_accuracy`'s ``accuracy_%``; the Wilson intervals are
    in ``<name> low`` and ``<name> high``.
    """
    from ..stats import accuracy_summary

    if not scores:
        raise ValueError("scores: give at least one {name: score matrix}")
    columns = {}
    for name, matrix in scores.items():
        if len(matrix) != len(benchmark):
            raise ValueError(f"scores[{name!r}] has {len(matrix)} rows for {len(benchmark)} benchmark rows")
        table = per_colour_accuracy(benchmark, matrix, k, confidence).set_index("colour")
        overall = accuracy_summary(correct_at(matrix, k)[1], confidence)
        table = pd.concat([pd.DataFrame([overall], index=["all colours"]), table])
        columns[name] = table
    first = next(iter(columns.values()))
    out = pd.DataFrame({"n": first["n"]})
    for name, table in columns.items():
        out[name] = table["accuracy_%"]
        out[f"{name} low"], out[f"{name} high"] = table["ci_low_%"], table["ci_high_%"]
    out.index.name = "colour"
    return out


# --------------------------------------------------------------------------- paired comparisons

def paired_model_table(scores: Mapping[str, np.ndarray], k: int = 1, n_bootstrap: int = 2000,
                       confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """One row per pair of models scored on the same benchmark rows: both accuracies (percent), their
    difference with a paired bootstrap interval (percentage points), the discordant counts and the
    exact McNemar p-value. ``paired_matrix`` turns it into a model-by-model table."""
    names = list(scores)
    if len(names) < 2:
        raise ValueError(f"scores: give at least two models to compare, got {names}")
    usable = {name: correct_at(matrix, k) for name, matrix in scores.items()}
    rows = []
    for first, second in itertools.combinations(names, 2):
        rows_a, correct_a = usable[first]
        rows_b, correct_b = usable[second]
        if not np.array_equal(rows_a, rows_b):
            raise ValueError(f"{first} and {second} were not scored on the same rows with {k} foils")
        difference = paired_accuracy_difference(correct_a, correct_b, n_bootstrap, confidence, seed)
        rows.append({"model_a": first, "model_b": second, "accuracy_a_%": 100 * correct_a.mean(),
                     "accuracy_b_%": 100 * correct_b.mean(),
                     **{f"{key}_pp": 100 * value for key, value in difference.items()},
                     **mcnemar_exact(correct_a, correct_b)})
    return pd.DataFrame(rows)


def paired_matrix(table: pd.DataFrame, value: str = "difference_pp") -> pd.DataFrame:
    """Model-by-model matrix of ``value`` from :func:`paired_model_table`: cell (row a, column b)
    is a versus b (differences change sign across the diagonal; p-values are symmetric)."""
    signs = {"difference_pp": -1.0, "p_mcnemar": 1.0}  # b versus a: the difference flips, p does not
    if value not in signs:
        raise ValueError(f"value must be one of {sorted(signs)}, got {value!r}")
    names = list(dict.fromkeys(list(table["model_a"]) + list(table["model_b"])))
    matrix = pd.DataFrame(np.nan, index=names, columns=names)
    sign = signs[value]
    for _, row in table.iterrows():
        matrix.loc[row["model_a"], row["model_b"]] = row[value]
        matrix.loc[row["model_b"], row["model_a"]] = sign * row[value]
    return matrix

