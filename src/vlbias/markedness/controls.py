"""Controls for Part I: how much of markedness lives in the text encoder alone.

An image is unmarked when "a photo of a person" beats every label prompt. If, in the text encoder,
"a photo of a person" already sits nearest to one group's prompt ("a photo of a White person"),
images of that group will often be unmarked whatever they show. :func:`text_side_control` measures
that text-only geometry for every prompt prefix; :func:`text_beside_unmarked` puts it beside the
image-based rates of :func:`vlbias.markedness.unmarked.prompt_sensitivity`.

:func:`text_encoder_weat` runs the WEAT that Part III runs (:mod:`vlbias.weat`, same code) on the
image-text model's text encoder, with names and the study's group terms against pleasant and
unpleasant words (:func:`group_term_tests`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .prompts import GENDERS, OLDEST_AGE_WORDINGS, RACE_PHRASES, RACES, prompt_set
from .self_similarity import unit_rows


def text_similarity_to_person(text_embed, prefixes: Sequence[str] = ("a photo of",),
                              oldest_age_wording: str = OLDEST_AGE_WORDINGS["code"],
                              race_phrases: dict[str, str] | None = None,
                              gender_words: dict[str, str] | None = None) -> pd.DataFrame:
    """Cosine of the person prompt's text embedding with each label prompt's, per prefix and family.

    Long table: ``prefix, family, group, cosine, rank`` (1 = the label prompt nearest the person
    prompt within its family) and ``nearest`` (rank 1). ``text_embed(texts) -> (n, dim)``.
    """
    rows = []
    for prefix in prefixes:
        person, prompts = prompt_set(prefix, oldest_age_wording, race_phrases, gender_words)
        texts = [person] + [p for labels in prompts.values() for p in labels.values()]
        vectors = unit_rows(text_embed(texts))
        cosines = dict(zip(texts[1:], vectors[1:] @ vectors[0]))
        for family, labels in prompts.items():
            values = np.array([cosines[p] for p in labels.values()])
            ranks = (-values).argsort(kind="stable").argsort() + 1
            rows += [{"prefix": prefix, "family": family, "group": group, "cosine": float(value), "rank": int(rank),
                      "nearest": bool(rank == 1)}
                     for group, value, rank in zip(labels, values, ranks)]
    return pd.DataFrame(rows)


def text_side_control(text_embed, prefixes: Sequence[str] = ("a photo of",), **prompt_options) -> pd.DataFrame:
    """Per family and group, over the prompt prefixes: mean cosine of the person prompt with the
    group's prompt, and the rate (percent of prefixes) at which that prompt is the nearest one.

    ``prompt_options`` go to :func:`text_similarity_to_person` (oldest-age wording, phrasings).
    """
    long = text_similarity_to_person(text_embed, prefixes, **prompt_options)
    table = (long.groupby(["family", "group"], sort=False)
             .agg(mean_cosine=("cosine", "mean"), nearest_rate=("nearest", "mean"), prefixes=("prefix", "size"))
             .reset_index())
    table["nearest_rate_%"] = 100 * table.pop("nearest_rate")
    return table


def text_beside_unmarked(text_similarity: pd.DataFrame, sensitivity: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The text-only cosine beside the image-based unmarked rate, per prefix, family and group, and
    per family the Spearman correlation between the two across groups (and prefixes).

    ``text_similarity`` from :func:`text_similarity_to_person`; ``sensitivity`` from
    :func:`vlbias.markedness.unmarked.prompt_sensitivity` (its released-code oldest-age wording
    rows are used when it holds both). A correlation near 1 says the group whose prompt the text
    encoder places nearest "a person" is the one most often unmarked: the text side alone would
    predict the ranking. Where either column is constant within a family, its rho is NaN.
    """
    from scipy.stats import spearmanr

    if "oldest_age_wording" in sensitivity and sensitivity["oldest_age_wording"].nunique() > 1:
        sensitivity = sensitivity[sensitivity["oldest_age_wording"] == OLDEST_AGE_WORDINGS["code"]]
    image_side = sensitivity[["prefix", "family", "group", "unmarked_%"]].astype({"group": str})
    merged = text_similarity.astype({"group": str}).merge(image_side, on=["prefix", "family", "group"], how="inner")
    if merged.empty:
        raise ValueError("text_similarity and sensitivity share no (prefix, family, group): compute both with the "
                         "same prompt prefixes")
    rows = []
    for family, part in merged.groupby("family", sort=False):
        # a constant column (e.g. no image unmarked at all) has no rank correlation
        varies = part["cosine"].nunique() > 1 and part["unmarked_%"].nunique() > 1
        rho = spearmanr(part["cosine"], part["unmarked_%"]).statistic if varies else np.nan
        nearest = part[part["nearest"]]
        rows.append({"family": family, "spearman_rho": float(rho), "pairs": len(part),
                     "unmarked_%_of_nearest": float(nearest["unmarked_%"].mean()),
                     "unmarked_%_of_others": float(part.loc[~part["nearest"], "unmarked_%"].mean())})
    return merged, pd.DataFrame(rows)


# --------------------------------------------------------------------------- WEAT on the text encoder

#: nouns that turn a group word into a target term ("a White man", "a female person")
GROUP_NOUNS = ("person", "man", "woman", "child", "family", "student")


def group_term_tests(attributes_from: str = "WEAT3", nouns: Sequence[str] = GROUP_NOUNS,
                     reference_race: str = "White") -> list[dict]:
    """WEAT tests whose targets are the markedness study's group terms against the pleasant and
    unpleasant words of Caliskan's ``attributes_from`` test: ``reference_race`` against every
    other race ("a White man" vs "a Black man", one term per noun) and female against male.

    Gendered nouns (man, woman) are left out of the gender test, whose terms would otherwise
    contradict themselves ("a female man").
    """
    from ..weat import caliskan_tests

    source = next((t for t in caliskan_tests() if t["id"] == attributes_from), None)
    if source is None:
        raise ValueError(f"attributes_from must name a Caliskan test (WEAT1..WEAT10), got {attributes_from!r}")
    if reference_race not in RACES:
        raise ValueError(f"reference_race must be one of {RACES}, got {reference_race!r}")
    attributes = {"A": source["A"], "B": source["B"], "A_name": source["A_name"], "B_name": source["B_name"]}

    def terms(phrase: str, kinds=nouns):
        return [f"{phrase} {noun}" for noun in kinds]

    tests = [{"id": f"{reference_race} vs {race}", "X": terms(RACE_PHRASES[reference_race]),
              "Y": terms(RACE_PHRASES[race]), "X_name": reference_race, "Y_name": race, **attributes}
             for race in RACES if race != reference_race]
    neutral = [noun for noun in nouns if noun not in ("man", "woman")]
    female, male = (f"a {g.lower()}" for g in GENDERS)
    tests.append({"id": "Female vs Male", "X": terms(female, neutral), "Y": terms(male, neutral),
                  "X_name": "Female", "Y_name": "Male", **attributes})
    return tests


def unseen_words_note(model_spec: str, tests: list[dict] | None = None, texts: Sequence[str] | None = None,
                      what: str = "these tests", reading: str = "effect sizes") -> str:
    """A sentence for a text-side measure on a model trained in the book: how many of the words of
    ``tests`` (WEAT tests; default: those :func:`text_encoder_weat` runs) or of ``texts`` its
    training captions held. A text encoder that never met a word spells it from untrained pieces,
    so what it gives for that word is not learned. Empty when at least 90% were seen, and for any
    model whose training captions are not known (hub and open_clip models: their training saw
    these words)."""
    import re

    from ..models.mini_clip import trained_words
    from ..models.spec import parse_spec
    from ..models.trained import trained_checkpoint
    from ..weat import caliskan_tests

    parsed = parse_spec(model_spec)
    if parsed.source != "trained":
        return ""
    seen = trained_words(trained_checkpoint(parsed.name))
    if seen is None:
        return ""
    if texts is None:
        if tests is None:
            tests = [t for t in caliskan_tests() if t["id"] in ("WEAT3", "WEAT4", "WEAT5", "WEAT10")] + group_term_tests()
        texts = [term for t in tests for key in ("X", "Y", "A", "B") for term in t[key]]
    words = {word for text in texts for word in re.findall(r"[a-z]+", text.lower())}
    known = words & seen
    if len(known) >= 0.9 * len(words):
        return ""
    return (f"**Read these {reading} as noise.** `{model_spec}` was trained here on captions holding "
            f"{len(known)} of the {len(words)} words {what} use ({', '.join(sorted(known)) or 'none'}); every "
            "other word reaches its text encoder as pieces it never learned, so what it gives for them is an "
            "accident of untrained weights, not something the model learned. These numbers mean something for "
            "models trained on text that holds these words (the full profile's).")


def text_encoder_weat(model, tests: list[dict] | None = None, templates: Sequence[str] = ("a photo of {}.",),
                      n_permutations: int = 100_000, max_exact: int = 1_000_000, seed: int = 0,
                      name: str | None = None, encode=None) -> pd.DataFrame:
    """:func:`vlbias.weat.run_weat_battery` on an image-text model's text encoder.

    Every word is put into each of ``templates`` (SEAT-style; "a photo of {}." is how the model met
    text in training) and embedded with ``model.encode_texts``, or ``encode(texts, progress)`` where
    given (the audit passes the cached :func:`vlbias.embeddings.embed_texts`). ``tests`` default to the
    Caliskan tests with names (WEAT3-5, 10) plus :func:`group_term_tests`.
    """
    from ..weat import caliskan_tests, run_weat_battery, sentence_embedder

    if getattr(model, "kind", "dual") != "dual":
        raise TypeError(f"{model.spec} is a {model.kind} model without a text encoder; use a dual encoder")
    if tests is None:
        tests = [t for t in caliskan_tests() if t["id"] in ("WEAT3", "WEAT4", "WEAT5", "WEAT10")] + group_term_tests()
    encode = encode or (lambda texts, progress=False: model.encode_texts(texts, progress=progress))
    embed = sentence_embedder(encode, templates)
    return run_weat_battery(embed, tests, n_permutations, max_exact, seed, name=name or str(model.spec))



# --------------------------------------------------------------------------- the planted models' controls
# On the demo's face world a planted cause counts only against a control: the same recipe without that cause
# (vlbias.findings). A control trained on captions of other reporting shares the page's pictures; one trained
# on a world that draws its pictures otherwise (White pictures no more varied than the rest) is measured on
# that world's held-out pictures, drawn at the page's sizes.

#: the face world's options that set how many pictures it holds, not how it draws them
_SIZES = ("train_per_cell", "val_per_cell")


def control_data_root(data_root, model_spec: str, control_spec: str):
    """The pictures ``control_spec`` is measured on beside ``model_spec``: the page's (``data_root``), unless
    both are face-world recipes and the control's world draws otherwise (its ``world_*`` options differ,
    sizes aside): then that world, at the page's sizes (``"world?val_per_cell=40&varied_race_variety=0.2"``)."""
    from urllib.parse import parse_qsl, urlencode

    from ..data.registry import is_world_root
    from ..models.trained import trained_options

    if not (is_world_root(data_root) and str(model_spec).startswith("trained:")
            and str(control_spec).startswith("trained:")):
        return data_root
    _, model = trained_options(str(model_spec).partition(":")[2])
    _, control = trained_options(str(control_spec).partition(":")[2])
    drawn = {key.removeprefix("world_"): value for key, value in control.items()
             if key.startswith("world_") and key.removeprefix("world_") not in _SIZES and model.get(key) != value}
    if not drawn:
        return data_root
    query = dict(parse_qsl(str(data_root).partition("?")[2]))
    query.update({key: str(value) for key, value in drawn.items()})
    return "world?" + urlencode(query)


def control_samples(control_specs, model_spec: str, data_root, split, padding, measure) -> dict:
    """Each control's :class:`~vlbias.markedness.findings.Sample`: ``measure(spec, dataset)`` on the pictures
    :func:`control_data_root` gives it (``split`` and ``padding`` as the page's), by spec, for the controls that
    are the model's own (:func:`vlbias.findings.controls_of`: none for a model not trained here). A control
    equal to the model is kept (the box then says there is no contrast)."""
    from ..data import load_dataset
    from ..findings import controls_of

    found = {}
    for spec in controls_of(model_spec, control_specs):
        dataset = load_dataset("fairface", root=control_data_root(data_root, model_spec, spec), split=split,
                               padding=padding)
        found[spec] = measure(spec, dataset)
    return found


def embedding_sample(spec: str, dataset, device=None, half: bool = False, batch_size: int = 128,
                     decode_workers=None, progress: bool = False, model=None):
    """``spec``'s image embeddings of ``dataset`` (cached, :func:`vlbias.embeddings.embed_images`) as a
    :class:`~vlbias.markedness.findings.Sample` (01a's claims); ``model``: ``spec`` already loaded."""
    from ..embeddings import embed_images
    from ..models import load_image_text_model
    from .findings import Sample

    model = model if model is not None else load_image_text_model(spec, device=device, half=half)
    embeddings = embed_images(model, dataset, batch_size=batch_size, decode_workers=decode_workers, progress=progress)
    return Sample(dataset.records, embeddings=embeddings, identity=dataset.identity)


def unmarked_sample(spec: str, dataset, prompts, person_prompt: str, device=None, half: bool = False,
                    batch_size: int = 128, decode_workers=None, progress: bool = False, model=None):
    """``spec``'s unmarked flags on ``dataset`` (:func:`vlbias.markedness.unmarked.unmarked_flags` of its cached
    embeddings) as a :class:`~vlbias.markedness.findings.Sample` (01b's claims); ``model``: ``spec`` already
    loaded."""
    from ..embeddings import embed_images, embed_texts
    from ..models import load_image_text_model
    from .findings import Sample
    from .unmarked import unmarked_flags

    model = model if model is not None else load_image_text_model(spec, device=device, half=half)
    embeddings = embed_images(model, dataset, batch_size=batch_size, decode_workers=decode_workers, progress=progress)
    flags = unmarked_flags(embeddings, lambda texts: embed_texts(model, texts, progress=False), prompts, person_prompt)
    return Sample(dataset.records, flags=flags, identity=dataset.identity)


def generative_samples(spec: str, images, records: pd.DataFrame, identity: str, prompts, person_prompt: str,
                       score: str = "sum", likelihood_prompt: str | None = None, describe_prompt: str | None = None,
                       max_new_tokens: int = 60, batch_size: int = 8, device=None, half: bool = False,
                       progress: bool = False, model=None) -> tuple:
    """01d's two readings of a generative model ``spec`` on the faces ``images`` (labels ``records``): the
    :class:`~vlbias.markedness.findings.Sample` of its likelihood flags under ``score`` and that of the faces
    whose description leaves each family unnamed, both named by ``identity`` (the same faces in the same
    order: a control read on them is compared face by face). Cached as the page's own calls are; ``model``:
    an already loaded model of ``spec``."""
    from ..models.vision_language import load_vision_language_model
    from .findings import Sample
    from .generative import describe_images, likelihood_unmarked_flags, mentions

    model = model if model is not None else load_vision_language_model(spec, device=device, half=half)
    flags = likelihood_unmarked_flags(model, images, prompts, person_prompt, prompt=likelihood_prompt, score=score,
                                      batch_size=batch_size, progress=progress)
    descriptions = describe_images(model, images, prompt=describe_prompt, max_new_tokens=max_new_tokens,
                                   batch_size=batch_size, progress=progress)
    unnamed = ~mentions(descriptions)[["race", "gender", "age"]]
    records = records.reset_index(drop=True)
    return (Sample(records, flags=flags.reset_index(drop=True), identity=identity),
            Sample(records, flags=unnamed.reset_index(drop=True), identity=identity))


def generative_control_samples(control_specs, model_spec: str, data_root, split, padding, images_per_group, seed: int,
                               load=None, **reading) -> tuple[dict, dict]:
    """Each control's :func:`generative_samples` on 01d's faces (the same ``images_per_group`` drawn with
    ``seed`` from the pictures :func:`control_data_root` gives it): ``(likelihood samples, description
    samples)``, each by spec; ``load(spec)``: a model loader (the audit's, which loads each model once)."""
    from ..data import load_dataset
    from .groups import sample_per_group
    from .prompts import FAMILIES

    from ..findings import controls_of

    likely, described = {}, {}
    for spec in controls_of(model_spec, control_specs):
        dataset = load_dataset("fairface", root=control_data_root(data_root, model_spec, spec), split=split,
                               padding=padding)
        positions = sample_per_group(dataset.records, list(FAMILIES), images_per_group, seed=seed)
        likely[spec], described[spec] = generative_samples(
            spec, dataset.images(positions), dataset.records.iloc[positions], faces_identity(dataset, images_per_group, seed),
            **reading, model=None if load is None else load(spec))
    return likely, described


def faces_identity(dataset, images_per_group, seed: int) -> str:
    """What names 01d's faces: the data set and how they were drawn from it."""
    return f"{dataset.identity}|{images_per_group}|{seed}"
