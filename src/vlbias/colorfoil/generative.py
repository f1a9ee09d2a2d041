"""ColorFoil for generative vision-language models (Part II, 02d): caption against foil, asked two ways.

Samin et al. (2024) score a caption and its colour foils with image-text models: an example is right
when the caption outscores every foil (:mod:`vlbias.colorfoil.evaluation`). A generative model
(LLaVA, Qwen2-VL, ...) has no image-text score, but it can be asked in two ways.

**By likelihood** (:func:`likelihood_scores`). ``log P(text | image)`` of the caption and of each foil
(:meth:`~vlbias.models.base.VisionLanguageModel.log_likelihood`) in the place of the image-text score:
the matrix has :func:`~vlbias.colorfoil.evaluation.score_benchmark`'s shape, so every table of 02b
reads it unchanged: :func:`~vlbias.colorfoil.evaluation.evaluation_table` (one row per model, data set
and foil count, accuracy with its Wilson interval: Table 1's shape) and
:func:`~vlbias.colorfoil.evaluation.per_colour_accuracy`. As there, the caption must score strictly
higher: a tie is a failure. ``score="sum"`` is the texts' probability; a foil whose colour word takes
more tokens than the caption's ("turquoise" against "red") is then less likely for its length alone,
so ``score="mean"`` (per token) is offered, and the page should report both.

**As a two-choice question** (:func:`two_choice`). The model is shown the caption and its first foil,
labelled, and asked which describes the image; its choice is the likelier label (``log P("A")``
against ``log P("B")``). Models prefer a position (the first option, or "A") regardless of content, so
each example is asked in both orders. :func:`two_choice_summary` reports the accuracy in each order,
averaged over the orders (chance 50%, as for Table 1's one-foil task), and right in both orders
(MMBench's CircularEval, chance 25%), and the position-bias rate: the share of examples where the same
label wins in both orders, a choice the content did not decide. :func:`two_choice_table` puts several
models side by side, :func:`two_choice_per_colour` splits by the caption's colour word as
:func:`~vlbias.colorfoil.evaluation.per_colour_accuracy` does.

The log-likelihoods are cached per chunk of examples (:func:`vlbias.cache.compute_chunked`), keyed by
the model, the images, the texts and the question.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..cache import cache_key, compute_chunked
from ..embeddings import texts_identity
from ..models.base import VisionLanguageModel, answer_lengths, check_score_mode
from ..stats import wilson_interval
from .construction import BENCHMARK_VERSION
from .evaluation import canonical_colour, candidate_lists

#: the two-choice question; ``{first}`` and ``{second}`` are the texts in the order asked
TWO_CHOICE_TEMPLATE = ("Which caption describes the image? A: {first} B: {second} "
                       "Answer with A or B.")
#: the answers whose likelihoods are compared, for the first and the second text
TWO_CHOICE_LABELS = ("A", "B")
#: the rows of :func:`two_choice_summary`, in order; the last is a rate of position bias, not an accuracy
READINGS = ("caption first", "foil first", "averaged over orders", "both orders",
            "same label in both orders (position bias)")


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


# --------------------------------------------------------------------------- by likelihood


def likelihood_scores(model: VisionLanguageModel, dataset, benchmark: pd.DataFrame, max_foils: int = 4,
                      score: str = "sum", prompt: str | None = None, batch_size: int = 16, chunk_size: int = 128,
                      cache: bool = True, progress: bool = True) -> np.ndarray:
    """(n_rows, 1 + max_foils): column 0 the caption's ``log P(text | image, prompt)``, then the foils';
    NaN where a row has no such foil. ``score="mean"`` divides each text's sum by its token count
    (:meth:`~vlbias.models.base.VisionLanguageModel.answer_token_counts`): a caption and its foil differ
    in one colour word, but the two words may take different numbers of tokens, and under ``"sum"``
    every extra token lowers the probability whatever the image shows. The raw sums are cached, so
    switching ``score`` costs no model call.

    Read it as 02b reads image-text scores: ``evaluation.correct_at`` (right when the caption is
    strictly above every foil, so a tie is a failure), ``evaluation.evaluation_table`` and
    ``evaluation.per_colour_accuracy``."""
    _check_model(model)
    check_score_mode(score)
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
        scores = scores / answer_lengths(model, [text for row in candidates for text in row], prompt).reshape(-1, width)
    n_foils = np.minimum(benchmark["n_foils"].to_numpy(), max_foils)
    scores[np.arange(width)[None, :] > n_foils[:, None]] = np.nan
    return scores


# --------------------------------------------------------------------------- as a two-choice question


def _check_question(template: str, labels: Sequence[str]) -> tuple[str, str]:
    if not isinstance(template, str) or "{first}" not in template or "{second}" not in template:
        raise ValueError(f"template={template!r}: it must hold {{first}} and {{second}}, where the two texts go.")
    try:
        template.format(first="", second="")
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(f"template={template!r}: only {{first}} and {{second}} may be fields ({error!r}); "
                         "write a literal brace as {{ or }}.") from None
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

    ``template`` holds ``{first}`` and ``{second}``; ``labels`` are the answers for the first and the
    second text, whose ``log P(label | image, question)`` are compared. Per benchmark row (the index
    is the benchmark's): ``margin caption first`` and ``margin foil first``, the log-likelihood of the
    caption's label minus the foil's (positive: the caption chosen), when the caption is the first
    text and when it is the second; ``caption chosen`` in each order (a tie is not a choice of the
    caption: a failure, as in 02b), and ``same label``: whether one label strictly won in both
    orders, so the content did not decide. Rows without a foil are left out.
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
        # each row: 2 orders x 2 labels; log_likelihood takes one prompt per call, so one call per question
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
    caption_first = scores[:, 0] - scores[:, 1]   # caption is the first label
    foil_first = scores[:, 3] - scores[:, 2]      # caption is the second label
    first_wins = np.sign(scores[:, 0] - scores[:, 1]), np.sign(scores[:, 2] - scores[:, 3])
    return pd.DataFrame({"caption": rows["caption"].to_numpy(), "foil": [foil for _, foil in pairs],
                         "margin caption first": caption_first, "margin foil first": foil_first,
                         "caption chosen, caption first": caption_first > 0,
                         "caption chosen, foil first": foil_first > 0,
                         "same label": (first_wins[0] == first_wins[1]) & (first_wins[0] != 0)},
                        index=rows.index)


_CHOICE_COLUMNS = ("caption chosen, caption first", "caption chosen, foil first", "same label")


def _per_example(choices: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each reading of :data:`READINGS` per example, in [0, 1]: averaged over orders is 1, 1/2 or 0."""
    missing = [column for column in _CHOICE_COLUMNS if column not in choices.columns]
    if missing:
        raise ValueError(f"choices lacks the columns {missing}: give the table two_choice returns.")
    first = choices["caption chosen, caption first"].to_numpy(bool)
    second = choices["caption chosen, foil first"].to_numpy(bool)
    return dict(zip(READINGS, (first.astype(float), second.astype(float), (first + 0.0 + second) / 2,
                               (first & second).astype(float), choices["same label"].to_numpy(bool).astype(float))))


def _summary(values: np.ndarray, confidence: float) -> dict[str, float]:
    """n, mean and Wilson interval (percent) of per-example values in [0, 1].

    For 0/1 values this is ``stats.accuracy_summary``. For the average over the two orders (values
    0, 1/2, 1) each example still counts once, with ``sum(values)`` successes: a value in [0, 1] with
    mean p has variance at most p(1 - p), so the interval is conservative, whereas counting the 2n
    answers as independent trials would make it too narrow when a model that knows an example knows
    it in both orders."""
    n = int(values.size)
    low, high = wilson_interval(float(values.sum()), n, confidence)
    return {"n": n, "accuracy_%": 100 * float(values.mean()) if n else float("nan"),
            "ci_low_%": 100 * low, "ci_high_%": 100 * high}


def two_choice_summary(choices: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """One row per reading of :data:`READINGS` (n, ``accuracy_%`` and its Wilson interval):
    accuracy with the caption first, with the foil first, their average (chance 50%, the number to
    set beside Table 1's one-foil accuracy), right in both orders (CircularEval, chance 25%), and the
    position-bias rate: the share of examples where the same label won in both orders. A model that
    always answers "A" scores 100% and 0% in the two orders, 50% averaged, 0% in both, and a
    position bias of 100%: the average alone would hide it, which is why every reading is given."""
    table = pd.DataFrame({reading: _summary(values, confidence) for reading, values in _per_example(choices).items()}).T
    return table.astype({"n": int})


def two_choice_table(choices: Mapping[tuple[str, str], pd.DataFrame], confidence: float = 0.95) -> pd.DataFrame:
    """:func:`two_choice_summary` of every ``{(model, dataset): choices}``, long: columns ``model,
    dataset, foils`` (always 1: the caption against its first foil), ``reading``, ``n``,
    ``accuracy_%``, ``ci_low_%``, ``ci_high_%``, as :func:`~vlbias.colorfoil.evaluation.evaluation_table`
    lays out Table 1."""
    frames = []
    for key, table in choices.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError(f"choices: keys must be (model, dataset) pairs, as evaluation_table's, got {key!r}.")
        summary = two_choice_summary(table, confidence).rename_axis("reading").reset_index()
        frames.append(summary.assign(model=key[0], dataset=key[1], foils=1))
    columns = ["model", "dataset", "foils", "reading", "n", "accuracy_%", "ci_low_%", "ci_high_%"]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def two_choice_per_colour(benchmark: pd.DataFrame, choices: pd.DataFrame, reading: str = "averaged over orders",
                          confidence: float = 0.95) -> pd.DataFrame:
    """One reading of :func:`two_choice_summary` per colour word of the caption, laid out as
    :func:`~vlbias.colorfoil.evaluation.per_colour_accuracy` (``colour, n, accuracy_%, ci_low_%,
    ci_high_%``; a caption with two colours counts for both; most frequent colour first), so the two
    sit side by side. ``benchmark`` is the one ``choices`` was asked of (its ``words`` column names
    the colours)."""
    if reading not in READINGS:
        raise ValueError(f"reading={reading!r}: choose one of {READINGS}.")
    if "words" not in benchmark.columns:
        raise ValueError("benchmark lacks the column 'words': give the table construction.build_benchmark returns.")
    unknown = choices.index.difference(benchmark.index)
    if len(unknown):
        raise ValueError(f"choices has {len(unknown)} rows that benchmark lacks (index {list(unknown[:3])}...): "
                         "give the benchmark two_choice was asked of.")
    values = _per_example(choices)[reading]
    words = benchmark.loc[choices.index, "words"].reset_index(drop=True)
    table = pd.DataFrame({"colour": words.map(lambda ws: sorted({canonical_colour(w) for w in ws})), "value": values})
    table = table.explode("colour").dropna(subset=["colour"])
    rows = [{"colour": colour, **_summary(group["value"].to_numpy(float), confidence)}
            for colour, group in table.groupby("colour")]
    columns = ["colour", "n", "accuracy_%", "ci_low_%", "ci_high_%"]
    if not rows:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(rows)[columns].sort_values(["n", "colour"], ascending=[False, True]).reset_index(drop=True)


# --------------------------------------------------------------------------- every model, both readings


def score_generative_models(model_specs: Sequence[str], datasets: Mapping[str, object],
                            benchmarks: Mapping[str, pd.DataFrame], max_foils: int = 4, prompt: str | None = None,
                            template: str = TWO_CHOICE_TEMPLATE, labels: Sequence[str] = TWO_CHOICE_LABELS,
                            batch_size: int = 16, device=None, half: bool = False,
                            progress: bool = True) -> tuple[dict, dict, pd.DataFrame]:
    """Both readings of 02d for every generative model on every data set.

    Returns ``(scores, choices, failures)``: ``scores[score][(spec, dataset)]``, the
    :func:`likelihood_scores` matrix under ``score`` "sum" and "mean" (one model pass: the mean divides
    the cached sums), which :func:`~vlbias.colorfoil.evaluation.evaluation_table` reads as Table 1;
    ``choices[(spec, dataset)]``, :func:`two_choice`'s table, which :func:`two_choice_table` reads; and
    ``failures``, one row per model that failed to load or run (the others' results stand).
    """
    from ..models import for_each_model
    from ..models.vision_language import load_vision_language_model

    def score_all(spec, model):
        out = {}
        for name, dataset in datasets.items():
            sums = likelihood_scores(model, dataset, benchmarks[name], max_foils=max_foils, prompt=prompt,
                                     batch_size=batch_size, progress=progress)
            means = likelihood_scores(model, dataset, benchmarks[name], max_foils=max_foils, score="mean",
                                      prompt=prompt, batch_size=batch_size, progress=False)
            asked = two_choice(model, dataset, benchmarks[name], template=template, labels=labels,
                               batch_size=batch_size, progress=progress)
            out[name] = (sums, means, asked)
        return out

    results, failures = for_each_model(list(model_specs), score_all, load=load_vision_language_model, device=device,
                                       half=half)
    scores, choices = {"sum": {}, "mean": {}}, {}
    for spec, out in results.items():
        for name, (sums, means, asked) in out.items():
            scores["sum"][spec, name], scores["mean"][spec, name], choices[spec, name] = sums, means, asked
    return scores, choices, failures
