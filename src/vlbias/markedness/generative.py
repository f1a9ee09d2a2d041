"""Markedness in generative vision-language models (Part I, 01d): CLIP's test asked of a model that writes.

Wolfe and Caliskan (2022) call an image *unmarked* by a family (race, gender, age) when CLIP ranks
"a photo of a person" above every label prompt of that family ("a photo of a Black person", ...).
A generative model (LLaVA, Qwen2-VL, ...) has no cosine, but it can be asked the same thing in two ways:

**By likelihood** (:func:`likelihood_unmarked_flags`). The model's probability of each prompt as its
answer about the image, ``log P(text | image, prompt)``
(:meth:`~vlbias.models.base.VisionLanguageModel.log_likelihood`), takes the place of the cosine: the
image is unmarked when the person prompt is likelier than every label prompt. The prompts are those of
the CLIP study (:func:`~vlbias.markedness.prompts.label_prompts`), so the two read side by side.

**In free descriptions** (:func:`describe_images`, :func:`mentions`, :func:`mention_rates`). The model
describes each face in its own words and we count the descriptions that name race, gender or age,
from a small word list of ours (``resources/description_lexicon.json``), as captioning studies count
gendered and racial words (Hendricks et al. 2018; Bhargava and Forsyth 2019; Zhao, Wang and
Russakovsky 2021). No label set is imposed; the price is a word list that misses some mentions.

The expensive work (scoring every image against every prompt, generating every description) is cached
on disk per chunk of images, keyed by the model, the images, the texts and the prompt
(:mod:`vlbias.cache`), so a notebook rerun, or a second score mode, reads it back.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Sequence

import numpy as np
import pandas as pd

from ..cache import cache_key, compute_chunked
from ..embeddings import resolve_images, texts_identity
from ..generations import generate_cached
from ..models.base import VisionLanguageModel, answer_lengths, check_score_mode
from ..stats import wilson_interval
from .groups import group_indices
from .prompts import FAMILIES, PERSON_PROMPT, label_prompts
from .unmarked import is_unmarked, unmarked_rates

#: bump when the layout or meaning of the cached log-likelihoods changes
LIKELIHOOD_CACHE_VERSION = 1
#: the question asked for a free description of a FairFace face
DESCRIBE_PROMPT = "Describe this person."
#: the attributes a description lexicon must list words for
MENTION_ATTRIBUTES = ("race", "gender", "age")
LEXICON_FILE = "description_lexicon.json"


# --------------------------------------------------------------------------- images


def _check_model(model) -> None:
    if not isinstance(model, VisionLanguageModel):
        raise TypeError(f"model must be a generative vision-language model (load_vision_language_model(spec)), got "
                        f"{type(model).__name__}; CLIP-like models are measured by unmarked_flags instead.")


# --------------------------------------------------------------------------- markedness by likelihood


def _checked_prompts(prompts: dict[str, dict[str, str]] | None) -> dict[str, dict[str, str]]:
    prompts = label_prompts() if prompts is None else prompts
    if not prompts:
        raise ValueError("prompts is empty: give at least one family of label prompts, e.g. label_prompts() "
                         "({'race': {'White': 'a photo of a White person', ...}, ...}), or None for the paper's.")
    for family, labels in prompts.items():
        if not labels:
            raise ValueError(f"prompts[{family!r}] has no labels: an image cannot be unmarked by an empty family. "
                             f"Drop the family or give its label prompts.")
    return prompts


def caption_log_likelihoods(model: VisionLanguageModel, dataset_or_images, texts: Sequence[str],
                            prompt: str | None = None, batch_size: int = 8, chunk_size: int = 128,
                            cache: bool = True, progress: bool = True,
                            dataset_identity: str | None = None) -> np.ndarray:
    """(n_images, n_texts) float64: ``log P(texts[j] | image i, prompt)``, summed over the text's tokens.

    Every image is scored against every text (each image repeated once per text for
    :meth:`~vlbias.models.base.VisionLanguageModel.log_likelihood`), ``chunk_size`` images at a time.
    The raw sums are cached, keyed by the model, the images (``dataset_or_images`` as
    :func:`vlbias.embeddings.embed_images` takes it), the texts and the prompt; per-token means are a
    division away (:func:`likelihood_unmarked_flags`), so they need no entry of their own.
    """
    _check_model(model)
    texts = [str(text) for text in texts]
    images, identity = resolve_images(dataset_or_images, dataset_identity)
    key = cache_key("vlm-log-likelihoods", LIKELIHOOD_CACHE_VERSION, model, images=identity, n_items=len(images),
                    texts=texts_identity(texts), prompt=prompt)

    def compute(start: int, stop: int) -> np.ndarray:
        chunk = [images[i] for i in range(start, stop)]
        if not chunk or not texts:
            return np.empty((len(chunk), len(texts)), dtype=np.float64)
        repeated = [image for image in chunk for _ in texts]
        sums = model.log_likelihood(repeated, texts * len(chunk), prompt=prompt, batch_size=batch_size, progress=False)
        return np.asarray(sums, dtype=np.float64).reshape(len(chunk), len(texts))

    return compute_chunked(key, len(images), compute, chunk_size=chunk_size, progress=progress, cache=cache,
                           desc=f"log-likelihoods ({model.spec})")


def likelihood_unmarked_flags(model: VisionLanguageModel, dataset_or_images,
                              prompts: dict[str, dict[str, str]] | None = None, person_prompt: str = PERSON_PROMPT,
                              prompt: str | None = None, score: str = "sum", batch_size: int = 8,
                              chunk_size: int = 128, cache: bool = True, progress: bool = True,
                              dataset_identity: str | None = None) -> pd.DataFrame:
    """Per image, per family: is ``person_prompt`` likelier as the model's answer than every label prompt?

    The table has one row per image: a boolean column per family (``race``, ``gender``, ``age``, as
    :func:`~vlbias.markedness.unmarked.unmarked_flags` gives for CLIP, so :func:`unmarked_rates_by_family`,
    :func:`~vlbias.markedness.unmarked.unmarked_table` and ``unmarked_by`` read it alike) and a
    ``<family>_margin`` column: the person prompt's score minus the best label prompt's (positive where
    unmarked). ``prompts`` are the label prompts per family (:func:`label_prompts`, the paper's by
    default); ``prompt`` is the question the texts answer (None: the image alone, so the texts read as
    its caption).

    **The length confound.** A likelihood is not a cosine: every token a text adds multiplies in a
    probability below one. ``score="sum"`` compares ``log P`` of the whole texts, so the longer label
    prompts start behind, and the age prompts ("a photo of a person between 20 and 29 years old")
    *continue* the person prompt: the model scores a text as the answer's beginning (the end-of-turn
    token is not scored), so under the usual tokenizers, where the person prompt's tokens open every
    age prompt's, ``log P(age prompt) = log P(person prompt) + log P(rest) < log P(person prompt)``
    and every image is unmarked by age by construction; the sum's age column measures nothing. Race and
    gender prompts insert one or two words ("a photo of a Black person"), so their sums compare the
    model's next words after "a photo of a" honestly, but with the marked text paying for one more word.
    ``score="mean"`` divides each sum by the text's answer tokens
    (:meth:`~vlbias.models.base.VisionLanguageModel.answer_token_counts`); it removes the per-token
    penalty but is no probability of anything, and it favours a text whose extra tokens are easy to
    predict ("... between 20 and 29 years old" after "between"). Neither is the paper's measure;
    report race and gender under both and trust a gap between groups that survives both, not a level.
    """
    # 1. Check the inputs before any model call
    _check_model(model)
    score = check_score_mode(score)
    prompts = _checked_prompts(prompts)

    # 2. Score every image against the person prompt and every label prompt (cached raw sums)
    texts = list(dict.fromkeys([person_prompt] + [p for labels in prompts.values() for p in labels.values()]))
    column = {text: j for j, text in enumerate(texts)}
    scores = caption_log_likelihoods(model, dataset_or_images, texts, prompt=prompt, batch_size=batch_size,
                                     chunk_size=chunk_size, cache=cache, progress=progress,
                                     dataset_identity=dataset_identity)

    # 3. Per-token means where asked: the counts depend on the texts and the prompt, not on the image
    if score == "mean":
        scores = scores / answer_lengths(model, texts, prompt)

    # 4. Unmarked where the person prompt beats every label of the family, as for CLIP
    person = scores[:, column[person_prompt]]
    table = {}
    for family, labels in prompts.items():
        label_scores = scores[:, [column[p] for p in labels.values()]]
        table[family] = is_unmarked(person, label_scores)
        table[f"{family}_margin"] = person - label_scores.max(axis=1)
    frame = pd.DataFrame(table)
    frame.attrs.update(score=score, prompt=prompt, person_prompt=person_prompt)
    return frame


def _checked_records(records: pd.DataFrame, n_rows: int, what: str) -> None:
    if len(records) != n_rows:
        raise ValueError(f"records has {len(records)} rows but {what} has {n_rows}: give one record (its labels) "
                         "per image, in the order the images were scored.")


def unmarked_rates_by_family(records: pd.DataFrame, flags: pd.DataFrame, families: Sequence[str] | None = None,
                             confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) of each family's flags per group of that family's own labels, with a
    Wilson interval: long table ``family, group, n, unmarked_%, ci_low_%, ci_high_%``.

    Each family's rows are :func:`~vlbias.markedness.unmarked.unmarked_rates` of ``flags[family]`` by
    ``records[family]`` (race flags by race, ...), the comparison Figures 4-6 of the paper draw, in the
    paper's label order. ``flags`` comes from :func:`likelihood_unmarked_flags` (or CLIP's
    ``unmarked_flags``); ``families`` defaults to those of :data:`FAMILIES` it has.
    """
    _checked_records(records, len(flags), "flags")
    families = [f for f in FAMILIES if f in flags.columns] if families is None else list(families)
    if not families:
        raise ValueError(f"flags has none of the family columns {FAMILIES}; give the table "
                         "likelihood_unmarked_flags returned, or name the families to read.")
    frames = []
    for family in families:
        if family not in records.columns or family not in flags.columns:
            where = "records" if family not in records.columns else "flags"
            raise ValueError(f"{where} has no column {family!r}: records need one label column per family "
                             f"(FairFace's race, gender, age), flags one boolean column per family.")
        table = unmarked_rates(records, flags[family].to_numpy(), family, confidence)
        frames.append(table.rename(columns={family: "group"}).assign(family=family))
    columns = ["family", "group", "n", "unmarked_%", "ci_low_%", "ci_high_%"]
    return pd.concat(frames, ignore_index=True)[columns]


# --------------------------------------------------------------------------- free descriptions


def describe_images(model: VisionLanguageModel, dataset_or_images, prompt: str | None = DESCRIBE_PROMPT,
                    max_new_tokens: int = 60, batch_size: int = 8, chunk_size: int = 256, cache: bool = True,
                    progress: bool = True, dataset_identity: str | None = None, threads: int | None = 1) -> list[str]:
    """One description per image: the model's greedy answer to ``prompt`` (:meth:`generate`), cached.

    ``prompt=None`` shows the image alone, as a captioner is asked (the demo's ``trained:face-captioner``
    was trained so). Generation is the slowest step of the notebook, so it is cached per chunk of
    ``chunk_size`` images (:func:`vlbias.generations.generate_cached`: keyed by the model, the images,
    the prompt and ``max_new_tokens``; a killed run resumes at the first missing chunk). ``cache=False``
    writes nothing. ``threads``: torch threads while decoding (:func:`vlbias.device.torch_threads`; small
    models decode token by token fastest on one; None keeps the current setting; on a GPU it does not matter).
    """
    from ..device import torch_threads

    _check_model(model)
    if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
        raise ValueError(f"prompt={prompt!r}: give the question the model answers, e.g. {DESCRIBE_PROMPT!r}, "
                         "or None for the image alone (a captioner).")
    images, identity = resolve_images(dataset_or_images, dataset_identity)
    with torch_threads(threads):
        return generate_cached(model, len(images), lambda start, stop: [images[i] for i in range(start, stop)],
                               identity, prompt, max_new_tokens, what="vlm-descriptions", batch_size=batch_size,
                               chunk_size=chunk_size, cache=cache, progress=progress,
                               desc=f"descriptions ({model.spec})")


@lru_cache(maxsize=1)
def _packaged_lexicon() -> str:
    return resources.files("vlbias").joinpath("resources", LEXICON_FILE).read_text(encoding="utf-8")


def description_lexicon() -> dict[str, tuple[str, ...]]:
    """The words that count as naming race, gender or age in a description (``resources/description_lexicon.json``).

    Ours, not a published instrument: its ``source``, ``citation`` and ``caveats`` fields say what it
    draws on and what it misses (colour words count as race only before a person noun; pronouns
    count as gender). Pass your own dict of word lists to :func:`mentions` to count otherwise.
    """
    return {attribute: tuple(words) for attribute, words in json.loads(_packaged_lexicon())["terms"].items()}


@lru_cache(maxsize=64)
def _pattern(terms: tuple[str, ...]) -> re.Pattern:
    """One case-insensitive pattern for whole-word matches of any of ``terms``: nothing word-like may
    touch a match ("male" is not in "female"), and a space in a term matches any whitespace."""
    alternatives = sorted({r"\s+".join(map(re.escape, term.split())) for term in terms if term.strip()},
                          key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def _checked_lexicon(lexicon) -> dict[str, tuple[str, ...]]:
    lexicon = description_lexicon() if lexicon is None else lexicon
    missing = [attribute for attribute in MENTION_ATTRIBUTES if attribute not in lexicon]
    if missing:
        raise ValueError(f"lexicon has no word list for {', '.join(map(repr, missing))}: give a dict with "
                         f"{', '.join(map(repr, MENTION_ATTRIBUTES))} (each a list of words or phrases), or None "
                         f"for description_lexicon().")
    checked = {}
    for attribute, words in lexicon.items():
        if isinstance(words, str) or not any(str(word).strip() for word in words):
            raise ValueError(f"lexicon[{attribute!r}] must be a non-empty list of words or phrases, got {words!r}.")
        checked[attribute] = tuple(str(word) for word in words)
    return checked


def mentions(texts: Sequence[str], lexicon: dict[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Per text, whether it names each attribute: one boolean column per attribute of ``lexicon``
    (race, gender, age, in that order, then any others), one row per text.

    A text names an attribute when any of its words or phrases occurs as whole words, ignoring case
    (:func:`description_lexicon` by default; see its caveats).
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of descriptions, got a single string; wrap it in a list.")
    lexicon = _checked_lexicon(lexicon)
    texts = ["" if text is None else str(text) for text in texts]
    order = list(MENTION_ATTRIBUTES) + [a for a in lexicon if a not in MENTION_ATTRIBUTES]
    return pd.DataFrame({attribute: np.array([_pattern(lexicon[attribute]).search(text) is not None for text in texts],
                                             dtype=bool) for attribute in order})


def mention_rates(records: pd.DataFrame, mentioned: pd.DataFrame, by: str | list[str],
                  confidence: float = 0.95) -> pd.DataFrame:
    """Share (percent) of each group's descriptions that name each attribute, with a Wilson interval.

    Long table: the ``by`` column(s), ``attribute``, ``n``, ``mentioned_%``, ``ci_low_%``, ``ci_high_%``,
    groups in the paper's label order. ``mentioned`` is :func:`mentions` of the descriptions, row i
    describing the image of ``records`` row i. A group whose descriptions name its race more often
    than another's is marked by race in the model's own words.
    """
    _checked_records(records, len(mentioned), "mentioned")
    keys = [by] if isinstance(by, str) else list(by)
    absent = [key for key in keys if key not in records.columns]
    if absent:
        raise ValueError(f"records has no column {', '.join(map(repr, absent))} to group by; it has "
                         f"{', '.join(map(str, records.columns))}.")
    groups = group_indices(records.reset_index(drop=True), keys)
    rows = []
    for attribute in mentioned.columns:
        flags = mentioned[attribute].to_numpy().astype(bool)
        for labels, index in groups.items():
            rows.append(dict(zip(keys, labels), attribute=attribute, n=len(index), k=int(flags[index].sum())))
    frame = pd.DataFrame(rows, columns=keys + ["attribute", "n", "k"])
    low, high = wilson_interval(frame["k"].to_numpy(), frame["n"].to_numpy(), confidence)
    frame["mentioned_%"] = 100 * frame["k"] / frame["n"]
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    return frame.drop(columns="k")


def mention_tables(records: pd.DataFrame, mentioned: pd.DataFrame, families: Sequence[str] = MENTION_ATTRIBUTES,
                   confidence: float = 0.95) -> dict[str, pd.DataFrame]:
    """Per family, how often each of its groups' descriptions name that family: ``{"race": table, ...}``,
    each table ``group, n, mentioned_%, ci_low_%, ci_high_%`` (Wilson) in the paper's label order.

    The words' counterpart of :func:`unmarked_rates_by_family`: race mentions per race, gender mentions
    per gender, age mentions per age, the comparison the markedness hypothesis predicts (the default
    goes unnamed). The tables read like Figures 4-6's, so :func:`~vlbias.markedness.plots.plot_family_bars`
    draws them.
    """
    tables = {}
    for family in families:
        if family not in mentioned.columns:
            raise ValueError(f"mentioned has no column {family!r}: give mentions(descriptions), whose columns are "
                             f"{', '.join(MENTION_ATTRIBUTES)}.")
        table = mention_rates(records, mentioned[[family]], family, confidence)
        tables[family] = table.drop(columns="attribute").rename(columns={family: "group"})
    return tables


def rate_tables(long: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`unmarked_rates_by_family`'s long table as one table per family (``{"race": table, ...}``),
    the shape :func:`mention_tables` gives and the markedness plots and findings read."""
    return {family: part.drop(columns="family").reset_index(drop=True)
            for family, part in long.groupby("family", sort=False)}


def markedness_comparison(model_specs: Sequence[str], images, records: pd.DataFrame, prompts: dict[str, dict[str, str]] | None = None,
                          person_prompt: str = PERSON_PROMPT, score: str = "mean", describe_prompt: str | None = DESCRIBE_PROMPT,
                          likelihood_prompt: str | None = None, max_new_tokens: int = 60, batch_size: int = 8,
                          names: dict[str, str] | None = None, device: str = "auto", half: bool = False,
                          progress: bool = True) -> pd.DataFrame:
    """Both of the page's measures for every generative model of ``model_specs``, in one long table.

    Rows: ``model`` (its name in ``names``, else the spec), ``measure`` ("likelihood": unmarked by the
    family's label prompts, :func:`likelihood_unmarked_flags` under ``score``; "description": the
    descriptions do *not* name the family, 100 minus :func:`mention_tables`' rate, so both read as
    "left unmarked" and higher means the group is the default), ``family``, ``group``, ``n``,
    ``unmarked_%``, ``ci_low_%``, ``ci_high_%``. ``images`` are the pictures (a data set, or its
    ``images(positions)``), ``records`` their labels (race, gender and age columns), row i for image i.
    Each model's work is cached, so a model the page measured before costs nothing; a model that fails to load or run
    leaves a row in ``result.attrs["failures"]`` and the others' rows stand.
    """
    from ..models import for_each_model
    from ..models.vision_language import load_vision_language_model

    score = check_score_mode(score)
    records = records.reset_index(drop=True)

    def measure(spec, model):
        flags = likelihood_unmarked_flags(model, images, prompts, person_prompt, prompt=likelihood_prompt,
                                          score=score, batch_size=batch_size, progress=progress)
        likelihood = unmarked_rates_by_family(records, flags).assign(measure="likelihood")
        descriptions = describe_images(model, images, prompt=describe_prompt, max_new_tokens=max_new_tokens,
                                       batch_size=batch_size, progress=progress)
        words = []
        for family, table in mention_tables(records, mentions(descriptions)).items():
            words.append(table.assign(family=family, measure="description", **{
                "unmarked_%": 100 - table["mentioned_%"], "ci_low_%": 100 - table["ci_high_%"],
                "ci_high_%": 100 - table["ci_low_%"]}).drop(columns="mentioned_%"))
        return pd.concat([likelihood, *words], ignore_index=True).assign(model=(names or {}).get(spec, spec))

    frames, failures = for_each_model(list(model_specs), measure, load=load_vision_language_model, device=device,
                                      half=half)
    columns = ["model", "measure", "family", "group", "n", "unmarked_%", "ci_low_%", "ci_high_%"]
    result = (pd.concat(list(frames.values()), ignore_index=True)[columns] if frames
              else pd.DataFrame(columns=columns))
    result.attrs.update(failures=failures, score=score)
    return result


def continues_person_prompt(prompts: dict[str, dict[str, str]] | None = None,
                            person_prompt: str = PERSON_PROMPT) -> dict[str, bool]:
    """Per family: does every label prompt begin with the person prompt (the age prompts "a photo of a
    person between 20 and 29 years old" do)? Where it does, summed log-likelihood leaves every image
    unmarked by that family by construction (:func:`likelihood_unmarked_flags`), and the page says so
    instead of reading the 100%."""
    prompts = _checked_prompts(prompts)
    return {family: all(text.startswith(person_prompt + " ") for text in labels.values())
            for family, labels in prompts.items()}


def readings_agreement(flags: pd.DataFrame, mentioned: pd.DataFrame,
                       families: Sequence[str] = MENTION_ATTRIBUTES) -> pd.DataFrame:
    """Do the two readings leave the same images unmarked? Per family, over the images: the share
    unmarked by likelihood (``flags``: :func:`likelihood_unmarked_flags`), the share whose description
    does not name the family (``mentioned``: :func:`mentions`), the share where the two agree, and
    Cohen's kappa (agreement beyond what the two shares give by chance: 0 where one reading is
    constant, NaN where both are the same constant). Columns ``family, n, unmarked_likelihood_%,
    unnamed_description_%, agree_%, kappa``."""
    from ..stats import cohen_kappa

    if len(flags) != len(mentioned):
        raise ValueError(f"flags has {len(flags)} rows and mentioned {len(mentioned)}: give both for the same images, "
                         "in the same order.")
    rows = []
    for family in families:
        by_likelihood = flags[family].to_numpy().astype(bool)
        by_words = ~mentioned[family].to_numpy().astype(bool)
        rows.append({"family": family, "n": len(flags), "unmarked_likelihood_%": 100 * by_likelihood.mean(),
                     "unnamed_description_%": 100 * by_words.mean(),
                     "agree_%": 100 * (by_likelihood == by_words).mean(),
                     "kappa": cohen_kappa(by_likelihood, by_words)})
    return pd.DataFrame(rows)
