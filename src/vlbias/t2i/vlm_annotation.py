"""A generative vision-language model as the perceived-gender annotator, asked a question about each
image as DALL-Eval asks it (Cho, Zala & Bansal 2023, ICCV), beside the CLIP zero-shot annotator of
:mod:`vlbias.t2i.annotation`.

**What DALL-Eval did.** Its social-bias code (github.com/j-min/DallEval, ``biases/BLIP2/src/main.py``
and ``biases/compute_mad.py`` at commit ``36b273b``) asks BLIP-2 (FlanT5-XXL, through LAVIS)
``"Question: the person looks like a male or a female? Answer:"`` about every image, *generates* a free
answer, lower-cases it and reads its first word after ``"the person looks like"`` and an optional
``"a"``: ``male``/``man`` and ``female``/``woman`` count, any other answer is left out of the shares.
The question offers no "no person" option; an image without one simply drops out if the answer is
neither word. (The paper's first arXiv version labelled gender with CLIP instead, as
:mod:`~vlbias.t2i.annotation` does.)

**What this module does.** Two ways to read the same question:

- :func:`vlm_labels` (the default way): *closed-form choice by likelihood*. Each label has one or
  more answer phrasings (:data:`GENDER_ANSWERS`); each is scored by ``log P(answer | image,
  question)`` (:meth:`~vlbias.models.base.VisionLanguageModel.log_likelihood`) and the best label wins.
  Every image then gets a label of the label set, the same vocabulary as
  :data:`~vlbias.t2i.annotation.GENDER_PROMPTS` (``female``, ``male``, ``no person``), so the labels go
  straight into :func:`vlbias.t2i.controls.annotator_robustness` beside the CLIP annotator's. Free text
  has no such guarantee, and how it is parsed becomes part of the measurement.
- :func:`vlm_free_labels`: DALL-Eval's reading. The model answers freely (greedy decoding); whole words
  (:data:`FREE_ANSWER_WORDS`) map the answer to a label; an answer that names no label, or more than one,
  gets ``None``, which ``annotator_robustness`` treats as "not labelled", as DALL-Eval left such images out.
  How many were matched, unmatched and ambiguous is returned with the labels.

Both cache what the model computed (scores, or answers) keyed by the model's identity, the question,
the answer phrasings and the images' identity, so a page rerun reads them back.

Labels are *perceived* attributes (what an image looks like to a model), never a person's identity.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
from PIL import Image

from ..cache import cache_key, compute_chunked
from ..generations import generate_cached
from ..embeddings import files_identity, images_identity
from ..models.base import VisionLanguageModel, answer_lengths, check_score_mode
from ..models.vision_language import check_image
from .bias import NO_PERSON

#: bump when what is cached under these keys changes meaning
VLM_ANNOTATION_CACHE_VERSION = 1

#: the question DALL-Eval asked BLIP-2 (wrap it as ``f"Question: {DALLEVAL_QUESTION} Answer:"`` for a
#: BLIP-2 checkpoint, whose prompt is read as given; chat models get it inside their chat template)
DALLEVAL_QUESTION = "the person looks like a male or a female?"

#: the default question: DALL-Eval's, with the no-person option the closed-form choice needs, and the
#: answers spelled out, so that the phrasings scored below are the answers the model is led to write
GENDER_QUESTION = ("Does the person in the image look like a woman or a man? "
                   "Answer with one of: a woman, a man, no person.")

#: answer phrasings per label, the labels of :data:`vlbias.t2i.annotation.GENDER_PROMPTS`. Each label has
#: the same two-word answer in lower case and capitalised: the two are different beginnings of an
#: answer (disjoint events, so their probabilities add), and every label's answer is two words (see
#: :func:`vlm_labels` on the length confound; tokens are the tokenizer's: check them with
#: ``model.answer_token_counts``, the tiny fixtures' tokenizers split words into many)
GENDER_ANSWERS: dict[str, list[str]] = {
    "female": ["a woman", "A woman"],
    "male": ["a man", "A man"],
    NO_PERSON: ["no person", "No person"],
}

#: whole words (or phrases) that name each label in a free answer, lower case
FREE_ANSWER_WORDS: dict[str, list[str]] = {
    "female": ["woman", "women", "female", "girl", "lady"],
    "male": ["man", "men", "male", "boy", "gentleman"],
    NO_PERSON: ["no person", "no people", "no one", "nobody", "no human", "no humans"],
}

COMBINES = ("logsumexp", "max")


class VLMAnnotation(NamedTuple):
    """What :func:`vlm_labels` returns: unpack it as ``labels, scores, phrasings = ...``."""

    #: (n_images,) object array: the label with the highest score for each image
    labels: np.ndarray
    #: (n_images, n_labels): each label's score, its phrasings' scores combined
    scores: pd.DataFrame
    #: (n_images, n_phrasings), columns (label, phrasing): each phrasing's score (summed or per token)
    phrasings: pd.DataFrame


class FreeAnswers(NamedTuple):
    """What :func:`vlm_free_labels` returns."""

    #: (n_images,) object array: a label, or None where the answer named no label or several
    labels: np.ndarray
    #: the model's answers as written (stripped), one per image
    answers: list[str]
    #: ``{"matched": n, "unmatched": n, "ambiguous": n}``
    counts: dict[str, int]
    #: answers whose tokens reached ``max_new_tokens``: generation may have stopped them mid-word ("blu"), so
    #: raise ``max_new_tokens`` until this is 0 (re-tokenised under the question: a close count, not the
    #: generation's own)
    at_limit: int


# --------------------------------------------------------------------------- checking the inputs

def _check_question(question) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"question must be a non-empty string (what the model is asked about each image, e.g. "
                         f"GENDER_QUESTION), got {question!r}")
    return question


def _answer_lists(answers) -> dict[str, list[str]]:
    """``answers`` as {label: [phrasing, ...]}, refused where a phrasing would be meaningless or counted twice."""
    if not isinstance(answers, Mapping) or not answers:
        raise ValueError(f"answers must map each label to its answer phrasings, e.g. GENDER_ANSWERS "
                         f"({{'female': ['a woman'], ...}}), got {answers!r}")
    lists = {}
    for label, value in answers.items():
        phrasings = [value] if isinstance(value, str) else list(value)
        if not phrasings:
            raise ValueError(f"answers[{label!r}] has no phrasing: give the label at least one answer text, "
                             "or leave the label out")
        for phrasing in phrasings:
            if not isinstance(phrasing, str) or not phrasing.strip():
                # an empty answer has no tokens: log P = 0 (probability 1) would win every image
                raise ValueError(f"answers[{label!r}] holds {phrasing!r}: every phrasing must be a non-empty "
                                 "string (an empty answer has probability 1 and would win every image)")
        lists[str(label)] = phrasings
    seen: dict[str, str] = {}
    for label, phrasings in lists.items():
        for phrasing in phrasings:
            if phrasing in seen:
                raise ValueError(f"answers: {phrasing!r} is a phrasing of both {seen[phrasing]!r} and {label!r}; "
                                 "each phrasing must belong to one label")
            seen[phrasing] = label
    return lists


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _overlapping_phrasings(lists: dict[str, list[str]]) -> None:
    """Under log-sum-exp, two phrasings of one label where one begins the other count the same answers
    twice: ``log_likelihood`` scores a text as the answer's *beginning*, so P("a woman") already holds
    every answer that begins "a woman." as well."""
    for label, phrasings in lists.items():
        for short in phrasings:
            for long in phrasings:
                if short != long and long.startswith(short):
                    raise ValueError(f"answers[{label!r}]: {short!r} begins {long!r}, and a phrasing's score is that "
                                     f"of every answer beginning with it, so log-sum-exp would count the answers "
                                     f"beginning {long!r} twice. Drop one, or pass combine='max'.")


class _Images:
    """The images to annotate, opened on demand, and what names them in cache keys.

    Three forms: PIL images (checked to be RGB now, named by their pixels); file paths (opened and
    converted to RGB chunk by chunk, as :func:`vlbias.t2i.annotation.label_image_files` opens them,
    so both annotators read the same pixels; named by the files' bytes); or a lazy sequence that
    carries its own ``identity`` (:class:`vlbias.t2i.generation.ImageFiles`, a data set's images),
    whose items are checked to be RGB as they are read.
    """

    def __init__(self, images, identity: str | None):
        if isinstance(images, (Image.Image, str, Path)):
            raise ValueError("images must be a sequence of images or paths, got a single one; wrap it in a list")
        own = getattr(images, "identity", None)
        self.lazy = own is not None
        self.items = images if self.lazy else list(images)
        self.files = False
        if not self.lazy:
            paths = [isinstance(item, (str, Path)) for item in self.items]
            if any(paths) and not all(paths):
                raise ValueError("images mixes file paths and other objects: give all PIL images or all paths")
            self.files = bool(paths) and all(paths)
            if not self.files:
                for index, image in enumerate(self.items):
                    check_image(image, index)
        if identity is not None:
            self.identity = str(identity)
        elif self.lazy:
            self.identity = str(own)
        elif self.files:
            self.identity = files_identity(self.items)
        else:
            self.identity = images_identity(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def load(self, start: int, stop: int) -> list[Image.Image]:
        if self.files:
            opened = []
            for path in self.items[start:stop]:
                with Image.open(path) as image:
                    opened.append(image.convert("RGB"))
            return opened
        return [check_image(self.items[index], index) for index in range(start, stop)]


# --------------------------------------------------------------------------- closed-form choice

def answer_scores(model: VisionLanguageModel, images, phrasings: Sequence[str], question: str = GENDER_QUESTION,
                  identity: str | None = None, batch_size: int = 8, chunk_size: int = 64, cache: bool = True,
                  progress: bool = True) -> np.ndarray:
    """(n_images, n_phrasings) float64: ``log P(phrasing | image, question)`` summed over the phrasing's
    tokens, chunked and cached.

    The key names the model (:func:`vlbias.cache.model_identity`: weights, dtype, preprocessing and chat
    template), the question, the phrasings in order and the images (``identity``, else as
    :class:`_Images` names them). The labels and how phrasings are combined are not in it: they are
    applied afterwards, so one entry serves every choice of ``score`` and ``combine``.
    Each image is scored against every phrasing: ``n_phrasings`` forward passes per image.
    """
    question = _check_question(question)
    if isinstance(phrasings, str) or not all(isinstance(text, str) and text for text in phrasings):
        raise ValueError(f"phrasings must be a list of non-empty strings, got {phrasings!r}")
    texts = list(phrasings)
    source = images if isinstance(images, _Images) else _Images(images, identity)
    key = cache_key("vlm-answer-scores", VLM_ANNOTATION_CACHE_VERSION, model, question=question,
                    phrasings=texts, images=source.identity, n_items=len(source))

    def compute(start: int, stop: int) -> np.ndarray:
        batch = source.load(start, stop)
        if not batch:
            return np.zeros((0, len(texts)), dtype=np.float64)
        repeated = [image for image in batch for _ in texts]  # image i against every phrasing, in order
        scores = np.asarray(model.log_likelihood(repeated, texts * len(batch), prompt=question,
                                                 batch_size=batch_size, progress=False), dtype=np.float64)
        if scores.shape != (len(repeated),):
            raise RuntimeError(f"{model.spec!r}.log_likelihood returned shape {scores.shape} for {len(repeated)} "
                               "image-text pairs; it must return one score per pair")
        return scores.reshape(len(batch), len(texts))

    return compute_chunked(key, len(source), compute, chunk_size=chunk_size, progress=progress, cache=cache,
                           kind="vlm_annotation", desc=f"VLM answer scores ({model.spec})")


def vlm_labels(model: VisionLanguageModel, images, question: str = GENDER_QUESTION,
               answers: Mapping[str, str | Sequence[str]] = GENDER_ANSWERS, score: str = "sum",
               combine: str = "logsumexp", identity: str | None = None, batch_size: int = 8, chunk_size: int = 64,
               cache: bool = True, progress: bool = True) -> VLMAnnotation:
    """Perceived labels by closed-form choice: the label whose answers the model finds most likely.

    ``images`` are PIL images (RGB; another mode is refused, as the model refuses it), image file paths
    (converted to RGB on opening, as the CLIP annotator opens them), or a lazy sequence with an
    ``identity`` (:class:`~vlbias.t2i.generation.ImageFiles`). ``answers`` maps each label to one or more
    phrasings; each is scored by ``log P(phrasing | image, question)`` (:func:`answer_scores`).

    ``score``: ``"sum"`` (default) keeps each phrasing's log-probability, ``"mean"`` divides it by its
    number of tokens (:meth:`~vlbias.models.base.VisionLanguageModel.answer_token_counts`). **Length
    confound**: a sum falls with every token, so a longer phrasing loses for being long; a mean rewards
    long phrasings whose later tokens follow from the first (after "no", "person" is nearly certain), so it
    favours them instead. Neither removes the confound; phrasings of equally many tokens across labels do
    (then both rank alike), which is why :data:`GENDER_ANSWERS` gives every label a two-word answer (how many
    tokens that is depends on the tokenizer: ``model.answer_token_counts`` says for the model at hand).

    ``combine``: ``"logsumexp"`` (default) adds the phrasings' probabilities: with ``score="sum"``, a label's
    score is the log-probability that the answer begins with any of its phrasings, provided no phrasing of
    a label begins another (refused: those answers would count twice). It gives a label with more
    phrasings more chances, by at most ``log k``: give every label as many. ``"max"`` takes the best
    phrasing, which neither counts near-duplicates twice nor rewards a label for having more of them, but
    ignores the rest of the probability. After ``score="mean"``, log-sum-exp of per-token means is no
    probability; ``"max"`` is the clearer reading there.

    Ties go to the label listed first. Returns ``(labels, scores, phrasings)`` (:class:`VLMAnnotation`); the
    labels feed :func:`vlbias.t2i.controls.annotator_robustness` beside another annotator's.
    """
    # 1. check everything before computing anything
    question = _check_question(question)
    lists = _answer_lists(answers)
    check_score_mode(score)
    _check_choice("combine", combine, COMBINES)
    if combine == "logsumexp":
        _overlapping_phrasings(lists)
    texts = [phrasing for phrasings in lists.values() for phrasing in phrasings]
    counts = answer_lengths(model, texts, question)
    source = images if isinstance(images, _Images) else _Images(images, identity)

    # 2. one log-likelihood per image and phrasing (cached)
    raw = answer_scores(model, source, texts, question, batch_size=batch_size, chunk_size=chunk_size, cache=cache,
                        progress=progress).reshape(len(source), len(texts))
    per_phrasing = raw / counts if score == "mean" else raw

    # 3. phrasings combined into one score per label, and the best label
    columns, start = {}, 0
    for label, phrasings in lists.items():
        block = per_phrasing[:, start:start + len(phrasings)]
        columns[label] = np.logaddexp.reduce(block, axis=1) if combine == "logsumexp" else block.max(axis=1)
        start += len(phrasings)
    scores = pd.DataFrame(columns, columns=list(lists))
    labels = np.array(list(lists), dtype=object)[scores.to_numpy().argmax(axis=1)] if len(source) else \
        np.array([], dtype=object)
    phrasing_columns = pd.MultiIndex.from_tuples([(label, text) for label, phrasings in lists.items()
                                                  for text in phrasings], names=["label", "phrasing"])
    return VLMAnnotation(labels, scores, pd.DataFrame(per_phrasing, columns=phrasing_columns))


# --------------------------------------------------------------------------- free answers (DALL-Eval's reading)

def _patterns(words: Mapping[str, Sequence[str]]) -> dict[str, re.Pattern]:
    if not isinstance(words, Mapping) or not words:
        raise ValueError(f"words must map each label to the words that name it, e.g. FREE_ANSWER_WORDS, got {words!r}")
    patterns = {}
    for label, value in words.items():
        listed = [value] if isinstance(value, str) else list(value)
        if not listed or not all(isinstance(word, str) and word.strip() for word in listed):
            raise ValueError(f"words[{label!r}] must be one or more non-empty strings, got {value!r}")
        alternatives = "|".join(r"\s+".join(map(re.escape, word.lower().split())) for word in listed)
        patterns[str(label)] = re.compile(rf"\b(?:{alternatives})\b")
    return patterns


def _matched_labels(answer: str, patterns: dict[str, re.Pattern]) -> list[str]:
    text = answer.lower()
    return [label for label, pattern in patterns.items() if pattern.search(text)]


def free_answer_label(answer: str, words: Mapping[str, Sequence[str]] = FREE_ANSWER_WORDS) -> str | None:
    """The label a free answer names, by whole words (case-insensitive): "A woman." is female, and
    "woman" is not "man". None where it names no label ("a cat") or several ("a man and a woman").

    Word matching reads no negation: "not a man" names male. DALL-Eval's own rule read only the first
    word after "the person looks like (a)", which misses "The person in the image is a man" altogether.
    """
    found = _matched_labels(str(answer), _patterns(words))
    return found[0] if len(found) == 1 else None


def vlm_free_labels(model: VisionLanguageModel, images, question: str = GENDER_QUESTION,
                    words: Mapping[str, Sequence[str]] = FREE_ANSWER_WORDS, max_new_tokens: int = 16,
                    identity: str | None = None, batch_size: int = 8, chunk_size: int = 64, cache: bool = True,
                    progress: bool = True) -> FreeAnswers:
    """Perceived labels read from free answers, DALL-Eval's way: the model answers ``question`` about each
    image (greedy decoding, :meth:`~vlbias.models.base.VisionLanguageModel.generate`) and
    :func:`free_answer_label` maps each answer to a label by whole words, or to None.

    ``images`` as for :func:`vlm_labels`. The answers are cached by model, question, ``max_new_tokens`` and
    images. Returns ``(labels, answers, counts, at_limit)`` (:class:`FreeAnswers`); ``counts`` says how many
    answers named one label (matched), none (unmatched) or several (ambiguous); ``at_limit`` how many reached
    ``max_new_tokens`` and may be cut short, which would leave them unmatched for want of tokens. None labels
    are "not labelled" for :func:`vlbias.t2i.controls.annotator_robustness`, as DALL-Eval left such images
    out of its shares.
    """
    question = _check_question(question)
    patterns = _patterns(words)
    if int(chunk_size) < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size!r}")
    if int(max_new_tokens) < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens!r}")
    source = images if isinstance(images, _Images) else _Images(images, identity)
    answers = generate_cached(model, len(source), source.load, source.identity, question, max_new_tokens,
                              what="vlm-free-answers", batch_size=batch_size, chunk_size=chunk_size, cache=cache,
                              progress=progress, desc=f"VLM free answers ({model.spec})")
    found = [_matched_labels(answer, patterns) for answer in answers]
    labels = np.array([names[0] if len(names) == 1 else None for names in found], dtype=object)
    counts = {"matched": sum(len(names) == 1 for names in found), "unmatched": sum(not names for names in found),
              "ambiguous": sum(len(names) > 1 for names in found)}
    return FreeAnswers(labels, answers, counts, _at_limit(model, answers, question, int(max_new_tokens)))


def _at_limit(model: VisionLanguageModel, answers: Sequence[str], question: str, max_new_tokens: int) -> int:
    """How many ``answers`` have at least ``max_new_tokens`` tokens as the model scores them after
    ``question`` (an answer the tokenizer cannot split from the question, e.g. one that begins with
    punctuation, is counted by its tokens alone)."""
    reached = 0
    for answer in answers:
        try:
            tokens = int(model.answer_token_counts([answer], question)[0]) if answer else 0
        except ValueError:
            tokenizer = getattr(model, "tokenizer", None)  # a backend without one: the answer is not counted
            tokens = len(tokenizer(answer, add_special_tokens=False)["input_ids"]) if tokenizer is not None else 0
        reached += tokens >= max_new_tokens
    return reached


# --------------------------------------------------------------------------- beside the zero-shot annotator (04b)

#: the two readings of one generative annotator, as :func:`compare_with_annotator` names them
READINGS = {"choice": "closed-form choice", "free": "free answer (DALL-Eval's reading)"}


class VLMReadings(NamedTuple):
    """What one generative annotator said about the images, read both ways."""

    #: the closed-form choice (:func:`vlm_labels`)
    choice: VLMAnnotation
    #: the free answers and their labels (:func:`vlm_free_labels`)
    free: FreeAnswers


def annotate_with_vlms(specs: Sequence[str], images, question: str = GENDER_QUESTION,
                       answers: Mapping[str, str | Sequence[str]] = GENDER_ANSWERS,
                       words: Mapping[str, Sequence[str]] = FREE_ANSWER_WORDS, max_new_tokens: int = 12,
                       identity: str | None = None, device=None, half: bool = False, batch_size: int = 8,
                       progress: bool = True) -> tuple[dict[str, VLMReadings], pd.DataFrame]:
    """Each generative model of ``specs`` asks ``question`` about every image and is read both ways:
    by closed-form choice among ``answers`` (:func:`vlm_labels`) and by its free answer, matched to
    ``words`` (:func:`vlm_free_labels`, DALL-Eval's reading). Both are cached per model.

    Returns ``(readings, failures)``: :class:`VLMReadings` per spec that ran, and one row per spec that
    failed to load or run (:func:`vlbias.models.for_each_model`), for :func:`vlbias.book.failures_box`.
    Everything is checked before any model loads: a bad ``question``, ``answers`` or ``words`` is one
    ``ValueError`` naming it.
    """
    from ..models import for_each_model, load_vision_language_model

    if isinstance(specs, str):
        raise ValueError(f"specs must be a list of model specs, got the string {specs!r}; wrap it in a list")
    _check_question(question)
    _answer_lists(answers)
    _patterns(words)
    source = images if isinstance(images, _Images) else _Images(images, identity)

    def work(spec: str, model: VisionLanguageModel) -> VLMReadings:
        return VLMReadings(vlm_labels(model, source, question, answers, batch_size=batch_size, progress=progress),
                           vlm_free_labels(model, source, question, words, max_new_tokens=max_new_tokens,
                                           batch_size=batch_size, progress=progress))

    return for_each_model(list(specs), work, load=load_vision_language_model, device=device, half=half)


def compare_with_annotator(manifest: pd.DataFrame, labels: Sequence, name: str, readings: Mapping[str, VLMReadings],
                           reference: pd.Series, target: str = "female", n_boot: int = 1000,
                           confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Each generative annotator's two readings beside another annotator (``labels``, one per row of
    ``manifest``, named ``name``: 04b's zero-shot CLIP labels), one row per (model, reading).

    Columns: ``labelled`` (images the reading gave a label; a free answer naming no label or several
    gives none), ``both labelled``, ``agreement`` and ``cohen_kappa`` on those, the VRBS under each
    annotator on the same images and the change when the generative one annotates instead, with its
    paired bootstrap interval (``ci_low``, ``ci_high``; :func:`vlbias.t2i.controls.annotator_robustness`), and for the free
    reading the counts of matched, unmatched and ambiguous answers, and of answers that reached the token limit.
    """
    from .controls import annotator_robustness

    rows = []
    for spec, reading in readings.items():
        for key, values, counts in (("choice", reading.choice.labels, None),
                                    ("free", reading.free.labels, reading.free.counts)):
            per_annotator, pair = annotator_robustness(manifest, {name: labels, spec: values}, reference,
                                                       target=target, n_boot=n_boot, confidence=confidence,
                                                       seed=seed)
            rows.append({"model": spec, "reading": READINGS[key],
                         "labelled": int(per_annotator.loc[spec, "labelled"]),
                         "both labelled": pair["both labelled"], "agreement": pair["agreement"],
                         "cohen_kappa": pair["cohen_kappa"], f"VRBS ({name})": per_annotator.loc[name, "VRBS"],
                         "VRBS (generative)": per_annotator.loc[spec, "VRBS"], "VRBS change": pair["VRBS change"],
                         "ci_low": pair["change low"], "ci_high": pair["change high"],
                         **({f"answers {kind}": counts[kind] for kind in ("matched", "unmatched", "ambiguous")}
                            | {"answers at the token limit": reading.free.at_limit} if counts else {})})
    return pd.DataFrame(rows).set_index(["model", "reading"])


def comparison_sentences(table: pd.DataFrame, name: str, images: int,
                         readings: Mapping[str, VLMReadings] | None = None) -> str:
    """What :func:`compare_with_annotator`'s table says, in sentences computed from it: each reading's
    agreement with ``name`` (Cohen's kappa, or why it is undefined), how far VRBS moves when the
    generative model annotates instead and whether its interval holds 0 (or why it is undefined), how
    many free answers named no label or several or reached the token limit; and what the comparison rules
    out. With ``readings``, a model whose two readings label every image alike gets one sentence for both."""
    from .bias import interval_phrase, kappa_phrase

    if table.empty:
        return "No generative annotator ran, so there is nothing to compare."
    parts = []
    for spec, rows in table.groupby(level="model", sort=False):
        rows = rows.droplevel("model")
        reading = (readings or {}).get(spec)
        alike = reading is not None and len(rows) == 2 and all(
            a == b for a, b in zip(reading.choice.labels, reading.free.labels))
        for label, row in rows.iterrows():
            if alike and label == READINGS["choice"]:
                continue  # said once, with the free reading's answer counts
            how = "by closed-form choice and by free answer alike (the two readings label every image the same)" \
                if alike else f"by {label}"
            if not row["both labelled"]:
                parts.append(f"Read {how}, {spec} labelled none of the {images} images {name} labelled, so nothing "
                             "can be compared.")
                continue
            low, high = row["ci_low"], row["ci_high"]
            defined = np.isfinite(low) and np.isfinite(high) and high - low > 1e-9
            verdict = ("" if not defined else " (its interval excludes 0: an annotator effect)" if low > 0 or high < 0
                       else " (its interval holds 0: no change detected)")
            change = interval_phrase(row["VRBS change"], low, high)
            moves = (f"the change in VRBS when it annotates instead is {change}" if change.startswith("undefined")
                     else f"when it annotates instead, VRBS moves by {change}{verdict}")
            text = (f"Read {how}, {spec} agrees with {name} on {row['agreement']:.0%} of the "
                    f"{int(row['both labelled'])} images both labelled ({kappa_phrase(row['cohen_kappa'])}); {moves}")
            if "answers unmatched" in row and pd.notna(row.get("answers unmatched")):
                left = int(row["answers unmatched"]) + int(row["answers ambiguous"])
                text += (f"; {left} of its {images} free answers named no label or several and are left out, as "
                         "DALL-Eval left them out" if left else
                         f"; every one of its {images} free answers named exactly one label")
                if row["answers at the token limit"]:
                    text += (f" ({int(row['answers at the token limit'])} answers reached the limit of new tokens and "
                             "may be cut short: raise vlm_max_new_tokens until none does)")
            parts.append(text + ".")
    return (" ".join(parts) + " What this rules out: a change whose interval holds 0 says the choice of annotator "
            "does not move VRBS detectably on these images, though the two may still disagree on single images whose "
            "errors cancel across professions; a change that excludes 0 is an annotator effect, which a difference "
            "between two models' VRBS must exceed before it ranks the models rather than their annotators.")
