"""ColorFoil for generative vision-language models (Part II, 02d): caption against foil, asked two ways.

Samin et al. (2024) score a caption and its colour foils with image-text models: an example is right
when the caption outscores every foil (:mod:`vlbias.colorfoil.evaluation`). A generative model
(LLaVA, Qwen2-VL, ...) has no image-text score, but it can be asked in two ways.

**By likelihood** (:func:`likelihood_scores`). ``log P(text | image)`` of the caption and of each foil
(:meth:`~vlbias.models.base.VisionLanguageModel.log_likelihood`) in the place of the image-text score:
the matrix has :func:`~vlbias.colorfoil.evaluation.score_benchmark`'s shape, so every table of 02b
(accuracy with Wilson intervals, the k-foil tasks, per-colour accuracy, confusion) reads it unchanged.
``score="sum"`` is the texts' probability; a foil whose colour word takes more tokens than the
caption's ("turquoise" against "red") is then less likely for its length alone, so ``score="mean"``
(per token) is offered, and the page should report both.

**As a two-choice question** (:func:`two_choice`). The model is shown both texts, labelled, and asked
which describes the image; its choice is the likelier label (``log P("A")`` against ``log P("B")``).
Models prefer a position (the first option, or "A") regardless of content, so each example is asked
in both orders: an example is right when the caption is chosen in both (MMBench's CircularEval), and
the share of examples where the same label wins in both orders (a choice that ignores the content) is
reported as position bias.

The log-likelihoods are cached per chunk of examples (:func:`vlbias.cache.compute_chunked`), keyed by
the model, the images, the texts and the question.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import pandas as pd

from ..cache import cache_key, compute_chunked
from ..embeddings import texts_identity
from ..models.base import VisionLanguageModel
from ..stats import accuracy_summary
from .construction import BENCHMARK_VERSION
from .evaluation import candidate_lists

#: how a text's log-likelihood is read: summed over its tokens, or their mean
SCORE_MODES = ("sum", "mean")
#: the two-choice question; ``{first}`` and ``{second}`` are the texts in the order asked
TWO_CHOICE_TEMPLATE = ("Which caption describes the image? A: {first} B: {second} "
                       "Answer with A or B.")
#: the answers whose likelihoods are compared, for the first and the second text
TWO_CHOICE_LABELS = ("A", "B")


def _check_model(model) -> None:
    if not isinstance(model, VisionLanguageModel):
        raise TypeError(f"model must be a generative vision-language model (load_vision_language_model(spec)), got "
                        f"{type(model).__name__}; image-text models are scored by evaluation.score_benchmark.")


def _rows(benchmark: pd.DataFrame, dataset) -> tuple:
    missing = {"caption", "foils", "n_foils", "image_index"} - set(benchmark.columns)
    if missing:
        raise ValueError(f"benchmark lacks the columns {sorted(missing)}: give the table construction.build_benchmark "
                         "returns (or reads back).")
    return dataset.images(benchmark["image_index"].to_numpy())


def likelihood_scores(model: VisionLanguageModel, dataset, benchmark: pd.DataFrame, max_foils: int = 4,
                      score: str = "sum", prompt: str | None = None, batch_size: int = 16, chunk_size: int = 128,
                      cache: bool = True, progress: bool = True) -> np.ndarray:
    """(n_rows, 1 + max_foils): column 0 the caption's ``log P(text | image, prompt)``, then the foils';
    NaN where a row has no such foil. ``score="mean"`` divides each text's sum by its token count
    (:meth:`~vlbias.models.base.VisionLanguageModel.answer_token_counts`). The raw sums are cached, so
    switching ``score`` costs no model call."""
    _check_model(model)
    if score not in SCORE_MODES:
        raise ValueError(f"score={score!r}: choose one of {SCORE_MODES} (a text's log-likelihood summed over its "
                         "tokens, or their mean).")
    if int(max_foils) < 1:
        raise ValueError(f"max_foils must be at least 1, got {max_foils!r}")
    images = _rows(benchmark, dataset)
    candidates = candidate_lists(benchmark, max_foils)
    width = max_foils + 1
    key = cache_key("colorfoil-vlm-log-likelihoods", BENCHMARK_VERSION, model, images=images.identity,
                    candidates=texts_identity([json.dumps(row) for row in candidates]), prompt=prompt)

    def compute(start: int, stop: int) -> np.ndarray:
        pictures = [image for image in images[start:stop] for _ in range(width)]
        texts = [text for row in candidates[start:stop] for text in row]
        sums = model.log_likelihood(pictures, texts, prompt=prompt, batch_size=batch_size, progress=False)
        return np.asarray(sums, dtype=np.float64).reshape(stop - start, width)

    scores = compute_chunked(key, len(candidates), compute, chunk_size=chunk_size, progress=progress, cache=cache,
                             kind="colorfoil", desc=f"ColorFoil log-likelihoods ({model.spec})")
    if len(candidates) == 0:
        return np.zeros((0, width))
    scores = np.array(scores, dtype=np.float64)
    if score == "mean":
        counts = model.answer_token_counts([text for row in candidates for text in row], prompt)
        scores = scores / np.maximum(np.asarray(counts, dtype=np.float64).reshape(-1, width), 1)
    n_foils = np.minimum(benchmark["n_foils"].to_numpy(), max_foils)
    scores[np.arange(width)[None, :] > n_foils[:, None]] = np.nan
    return scores


def _check_question(template: str, labels: Sequence[str]) -> tuple[str, str]:
    if not isinstance(template, str) or "{first}" not in template or "{second}" not in template:
        raise ValueError(f"template={template!r}: it must hold {{first}} and {{second}}, where the two texts go.")
    labels = tuple(labels)
    if len(labels) != 2 or not all(isinstance(label, str) and label.strip() for label in labels):
        raise ValueError(f"labels={labels!r}: give two non-empty answers, for the first and the second text.")
    if labels[0] == labels[1]:
        raise ValueError(f"labels={labels!r}: the two answers must differ, or the choice cannot be read.")
    return labels


def two_choice(model: VisionLanguageModel, dataset, benchmark: pd.DataFrame, template: str = TWO_CHOICE_TEMPLATE,
               labels: Sequence[str] = TWO_CHOICE_LABELS, batch_size: int = 16, chunk_size: int = 128,
               cache: bool = True, progress: bool = True) -> pd.DataFrame:
    """Caption against its first foil as a two-choice question, asked in both orders.

    Per benchmark row: ``margin caption first`` and ``margin foil first``, the log-likelihood of the
    caption's label minus the foil's (positive: the caption chosen), when the caption is the first text
    and when it is the second; ``caption chosen`` in each order (a tie is not a choice of the caption),
    and ``same label``: whether one label won in both orders, so the content did not decide. Rows
    without a foil are left out.
    """
    _check_model(model)
    first_label, second_label = _check_question(template, labels)
    rows = benchmark[benchmark["n_foils"] >= 1]
    images = _rows(rows, dataset)
    pairs = list(zip(rows["caption"], [foils[0] for foils in rows["foils"]]))
    questions = [template.format(first=a, second=b) for caption, foil in pairs for a, b in ((caption, foil),
                                                                                               (foil, caption))]
    key = cache_key("colorfoil-vlm-two-choice", BENCHMARK_VERSION, model, images=images.identity,
                    questions=texts_identity(questions), labels=[first_label, second_label])

    def compute(start: int, stop: int) -> np.ndarray:
        # each row: 2 orders x 2 labels, one question per order (the prompt differs, so one call per question)
        out = np.empty((stop - start, 4), dtype=np.float64)
        for offset, index in enumerate(range(start, stop)):
            image = images[index]
            for order in range(2):
                question = questions[2 * index + order]
                out[offset, 2 * order:2 * order + 2] = model.log_likelihood(
                    [image, image], [first_label, second_label], prompt=question, batch_size=batch_size,
                    progress=False)
        return out

    scores = compute_chunked(key, len(pairs), compute, chunk_size=chunk_size, progress=progress, cache=cache,
                             kind="colorfoil", desc=f"ColorFoil two-choice ({model.spec})")
    scores = np.asarray(scores, dtype=np.float64).reshape(len(pairs), 4)
    caption_first = scores[:, 0] - scores[:, 1]   # caption is A
    foil_first = scores[:, 3] - scores[:, 2]      # caption is B
    first_wins = np.sign(scores[:, 0] - scores[:, 1]), np.sign(scores[:, 2] - scores[:, 3])
    return pd.DataFrame({"caption": rows["caption"].to_numpy(), "foil": [foil for _, foil in pairs],
                         "margin caption first": caption_first, "margin foil first": foil_first,
                         "caption chosen, caption first": caption_first > 0,
                         "caption chosen, foil first": foil_first > 0,
                         "same label": (first_wins[0] == first_wins[1]) & (first_wins[0] != 0)},
                        index=rows.index)


def two_choice_summary(choices: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Accuracy with its Wilson interval in each order, and in both: a row counts as right only when the
    caption is chosen in both orders (MMBench's CircularEval, Liu et al. 2024), so a model that always
    answers "A" scores 0, not the 50% an average over the orders would give it; and the position-bias
    rate (``same label``) with its interval."""
    both = choices["caption chosen, caption first"].to_numpy(bool) & choices["caption chosen, foil first"].to_numpy(bool)
    rows = {"caption first": accuracy_summary(choices["caption chosen, caption first"], confidence),
            "foil first": accuracy_summary(choices["caption chosen, foil first"], confidence),
            "both orders": accuracy_summary(both, confidence),
            "same label in both orders (position bias)": accuracy_summary(choices["same label"], confidence)}
    return pd.DataFrame(rows).T
