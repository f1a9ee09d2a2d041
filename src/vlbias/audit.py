"""``python -m vlbias audit``: one bias card per model, across the book's measures.

The audit finds a model's kind (:func:`vlbias.models.kinds.model_kind`) and runs every measure of the
book that applies to it (:data:`MEASURES`), with the parameters the profile gives the notebook that
measure comes from, through the functions that notebook calls. The embeddings and scores are cached
as the notebooks cache them, so an audit after a book run (or a second audit) mostly reads caches.
Each measure that fails leaves a failure row on the card and the rest of the card standing.

The card (:mod:`vlbias.cards`) is written to ``outputs/<profile>/cards/<spec>.json``; the
leaderboard reads every card in that folder, including cards copied there from other machines. In the
book, ``05a_model_card`` runs :func:`audit_model` once per model (each card a page, with the papers'
published numbers as reference rows and their directional claims judged by the card's intervals,
:func:`card_findings`) and ``05b_leaderboard`` ranks the folder. With ``--ray`` the measures'
heavy stages run first on Ray, through precompute's executor (:func:`precompute_audit`).

What is audited today: image-text models (dual encoders and pairwise matchers) on Part I's
markedness (with race and gender together), self-similarity and the text encoder's WEAT (dual
encoders) and Part II's ColorFoil (with McNemar's test against 02b's first model); generative
vision-language models on 01d's markedness by likelihood and in their own descriptions, and 02d's
ColorFoil by likelihood; text-to-image
pipelines on Part IV's VRBS, Spearman's ρ, amplification, and the paired changes of guidance
(against none) and CADS; language models on Part III's occupational stereotyping (the amplification
slope), erasure (causal models) and WEAT on their own sentence representations (SEAT, where the
backend gives hidden states).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cards import Card, Result, provenance, write_card
from .markedness.findings import MIDDLE_AGES

#: the Wilson interval the book's rates carry
WILSON = "Wilson 95%"


class NotApplicable(Exception):
    """A measure that does not apply to this model (a pairwise matcher has no text encoder of its own
    for WEAT): the card says so among its limits, and it is no failure."""


@dataclass(frozen=True)
class AuditMeasure:
    """One measure of a card: ``name`` (as the card lists it), the book ``part`` it comes from, the
    model ``kind`` it applies to, the ``notebook`` whose profile parameters it runs with, what it
    computes, ``run(spec, parameters, progress) -> (results, data identities)``, and ``limits``: what
    it cannot tell, for the card."""

    name: str
    part: str
    kind: str
    notebook: str
    #: ``run(spec, parameters, progress) -> (results, data identities[, findings])``: the findings are the
    #: rows of the papers' claims, computed by the function the measure's page calls for its own box
    run: Callable[[str, dict[str, Any], bool], tuple]
    limits: str
    #: the papers' published numbers for their models on this measure, as the card's reference rows
    #: (``measure`` spelled as the measure's results are)
    reference: Callable[[], list[dict[str, Any]]] = lambda: []
    #: the notebook's parameters that name the model measured (a spec, or a list of specs): ``audit --ray``
    #: points them at the audited model to precompute its heavy stages as that notebook would
    model_parameters: tuple[str, ...] = ()


def _published_rows(table: str, source: str, measures: dict[str, Callable[[dict], str | None]],
                    model: Callable[[dict], str], scale: float | Callable[[dict], float] = 1.0,
                    keep: Callable[[dict], bool] = lambda row: True, group_of: Callable[[dict], str] | None = None):
    """Reference rows from a shipped published table (``resources/published/<table>.csv``): each row
    whose ``measure`` is a key of ``measures`` becomes the card measure that function names (None:
    left out), with its value times ``scale`` (a number, or a function of the row), its ``model``, its
    group (the table's ``group``, or ``group_of(row)``) and the source with where it is stated."""
    from .book import published

    rows = []
    for row in published(table).to_dict("records"):
        name = measures[row["measure"]](row) if row["measure"] in measures and keep(row) else None
        if name is not None:
            group = group_of(row) if group_of else row.get("group")
            rows.append({"measure": name, "model": model(row), "estimate": float(row["value"]) * (scale(row) if callable(scale) else scale),
                         "group": None if group is None or group != group else str(group),
                         "source": f"{source}, {row['where']}" if isinstance(row.get("where"), str) else source})
    return rows


WOLFE = "Wolfe & Caliskan (2022), published"
PAPER_CLIP = "CLIP ViT-B/32"


def _one_label(row: dict) -> bool:
    """A published row about one group of its family ("White"), not an intersection ("White, Male, 30-39")."""
    return "," not in str(row["group"])


def _markedness_reference():
    return _published_rows("markedness_wolfe2022", WOLFE,
                           {"unmarked_rate": lambda row: f"unmarked rate ({row['family']} labels)"
                            if row["family"] in DEFAULT_GROUPS and _one_label(row) else None},
                           model=lambda row: PAPER_CLIP, scale=0.01)


def _self_similarity_reference():
    return _published_rows("markedness_wolfe2022", WOLFE,
                           {"self_similarity": lambda row: f"self-similarity ({row['family']})"
                            if row["family"] in ("race", "gender") and _one_label(row) else None},
                           model=lambda row: PAPER_CLIP)


def _colorfoil_reference():
    where = lambda row: f"{row['dataset']}, k={row['foils']}"  # noqa: E731
    return _published_rows("colorfoil_table1_samin2024", "Samin et al. (2024), published Table 1",
                           {"accuracy_%": lambda row: f"ColorFoil accuracy ({where(row)})",
                            "f1": lambda row: f"ColorFoil F1 ({where(row)})"},
                           model=lambda row: str(row["model"]),
                           scale=lambda row: 0.01 if row["measure"] == "accuracy_%" else 1.0)  # a percentage; F1 a fraction


def _occupational_reference():
    return _published_rows("t2i_occupational_bias_source", "Part IV source text, published",
                           {"vrbs": lambda row: "VRBS", "spearman_rho": lambda row: "Spearman's rho against labour statistics"},
                           model=lambda row: str(row["model"]),
                           keep=lambda row: row.get("sampler") == "plain")


# --------------------------------------------------------------------------- Part I


#: the groups the markedness paper expects to be left unmarked (its hypothesis), per label family
DEFAULT_GROUPS = {"race": ("White",), "gender": ("Male",), "age": MIDDLE_AGES}


#: the models one audit has loaded, by (kind, spec, device, half): its measures and its card share
#: one load of each (emptied when the audit ends)
_LOADED: dict[tuple, Any] = {}


def _loaded(kind: str, spec: str, device, half):
    """``spec`` loaded through the loader of ``kind``, once per audit."""
    from .models import load_image_text_model, load_language_model, load_text_to_image, load_vision_language_model

    key = (kind, spec, device, half)
    if key not in _LOADED:
        load = {"text-to-image": load_text_to_image, "language": load_language_model,
                "vision-language": load_vision_language_model}.get(kind, load_image_text_model)
        _LOADED[key] = load(spec, device=device, half=half)
    return _LOADED[key]


def _other_controls(spec: str, controls) -> list[str]:
    """A page's ``controls`` without the audited model: a control's own card is judged against the page's other
    controls of its recipe, never against itself (a model minus itself is no contrast)."""
    return [control for control in controls or [] if control and control != spec]


def _face_embeddings(spec: str, p: dict[str, Any], progress: bool):
    from .data import load_dataset
    from .embeddings import embed_images

    dataset = load_dataset("fairface", root=p["data_root"], split=p["split"], padding=p["padding"])
    model = _loaded("image-text", spec, p["device"], p["half"])
    embeddings = embed_images(model, dataset, batch_size=p["batch_size"], decode_workers=p["decode_workers"],
                              progress=progress)
    return dataset, model, embeddings


def _gap_result(measure: str, records, flags, family: str, note: str) -> Result:
    """The default groups' gap of ``family`` (:data:`DEFAULT_GROUPS`) in ``flags`` (one boolean column per
    family: unmarked, or unnamed) as a card's result, with Newcombe's interval."""
    from .markedness import unmarked_gap

    gap, low, high = unmarked_gap(records, flags, family, DEFAULT_GROUPS[family])
    return Result(measure, "markedness", gap, low, high, group=", ".join(DEFAULT_GROUPS[family]),
                  interval="Newcombe 95%", n=len(records), unit="share difference", order="absolute", note=note)


def _markedness(spec: str, p: dict[str, Any], progress: bool):
    """01b's unmarked rates per group of each family, and the paper's headline: how much more often
    the groups it expects unmarked (:data:`DEFAULT_GROUPS`) are left unmarked than the rest."""
    from . import markedness as mk
    from .embeddings import embed_texts

    dataset, model, embeddings = _face_embeddings(spec, p, progress)
    person, prompts = mk.prompt_set(p["prompt_prefix"], p["oldest_age_wording"], p["race_phrases"], p["gender_words"])
    flags = mk.unmarked_flags(embeddings, lambda texts: embed_texts(model, texts, progress=False), prompts, person)
    records, results = dataset.records, []
    for family in mk.FAMILIES:
        for by, measure in ((family, f"unmarked rate ({family} labels)"),
                            (["race", "gender"], f"unmarked rate by race and gender ({family} labels)")):
            for row in mk.unmarked_by(records, flags, family, by).to_dict("records"):
                results.append(Result(measure, "markedness", row["unmarked_%"] / 100, row["ci_low_%"] / 100,
                                      row["ci_high_%"] / 100, group=str(row["group"]), interval=WILSON,
                                      n=int(row["n"]), unit="share"))
        results.append(_gap_result(f"default-group unmarked gap ({family})", records, flags, family,
                                   f"unmarked rate of {', '.join(DEFAULT_GROUPS[family])} minus every other "
                                   f"{family}'s; 0: no group is the default"))
    # the papers' claims as 01b's box judges them, against 01b's controls: one computation for both
    from .markedness import controls as mk_controls, findings as mk_findings

    sample = mk_findings.Sample(records, flags=flags, identity=dataset.identity)
    controls = mk_controls.control_samples(_other_controls(spec, p.get("control_specs")), spec, p["data_root"],
                                           p["split"], p["padding"], lambda control, data: mk_controls.unmarked_sample(
                                               control, data, prompts, person, device=p["device"], half=p["half"],
                                               batch_size=p["batch_size"], decode_workers=p["decode_workers"],
                                               model=_loaded("image-text", control, p["device"], p["half"])))
    found = mk_findings.unmarked_findings(spec, sample, controls, mk.published_as_unmarked(_published_table()),
                                          p.get("model_names") or {}, p["n_boot"], p["seed"])
    return results, {"fairface": dataset.identity}, found


def _self_similarity(spec: str, p: dict[str, Any], progress: bool):
    """01a's self-similarity per race and gender, with its resampling interval."""
    from . import markedness as mk

    dataset, _, embeddings = _face_embeddings(spec, p, progress)
    results = []
    for family in ("race", "gender"):
        table = mk.self_similarity_by(dataset.records, embeddings, family, estimator=p["estimator"],
                                      repetitions=p["repetitions"], seed=p["seed"], sample_size=p["sample_size"],
                                      draws=p["released_code_draws"], interval=p["interval"])
        for row in table.to_dict("records"):
            results.append(Result(f"self-similarity ({family})", "markedness", row["mean"], row["ci_low"], row["ci_high"],
                                  group=str(row["group"]), interval=f"{row.get('interval', 'resampling')} 95%",
                                  unit="mean cosine"))
    # the papers' claims as 01a's box judges them, against 01a's controls
    from .markedness import controls as mk_controls, findings as mk_findings

    sample = mk_findings.Sample(dataset.records, embeddings=embeddings, identity=dataset.identity)
    controls = mk_controls.control_samples(_other_controls(spec, p.get("control_specs")), spec, p["data_root"],
                                           p["split"], p["padding"], lambda control, data: mk_controls.embedding_sample(
                                               control, data, device=p["device"], half=p["half"],
                                               batch_size=p["batch_size"], decode_workers=p["decode_workers"],
                                               model=_loaded("image-text", control, p["device"], p["half"])))
    found = mk_findings.self_similarity_findings(spec, sample, controls, _published_table(), p.get("model_names") or {},
                                                 p["n_boot"], p["seed"])
    return results, {"fairface": dataset.identity}, found


def _published_table():
    """The markedness paper's published numbers, as 01a and 01b read them."""
    from .book import published

    return published("markedness_wolfe2022")


def _text_encoder_weat(spec: str, p: dict[str, Any], progress: bool):
    """01b's WEAT on the text encoder alone (the Caliskan tests with names and the group-term tests, in
    01b's templates): effect size d per test with its permutation p-value, Holm-adjusted over the tests."""
    from .embeddings import embed_texts
    from .markedness import controls as mk_controls
    from .stats import with_holm

    model = _loaded("image-text", spec, p["device"], p["half"])
    if getattr(model, "kind", "dual") != "dual":
        raise NotApplicable(f"{spec} is a {model.kind} model: it scores image and text together and has no text "
                            "encoder of its own to test")
    table = with_holm(mk_controls.text_encoder_weat(
        model, templates=p["text_weat_templates"], n_permutations=p["permutations"], seed=p["seed"],
        encode=lambda texts, progress=False: embed_texts(model, texts, progress=False)))
    results = [Result("text-encoder WEAT effect size", "markedness", row["effect_size"], group=f"{row['test']}: "
                      f"{row['targets']} / {row['attributes']}", n=int(row["n_X"] + row["n_Y"]), unit="Cohen's d",
                      order="absolute", note=f"permutation p = {row['p_value']:.4f}, Holm-adjusted {row['p_holm']:.4f}"
                      + (f"; {row['note']}" if row.get("note") else ""))
               for row in table.to_dict("records")]
    return results, {"WEAT word lists": "vlbias.weat (Caliskan et al. 2017) and markedness.controls.group_term_tests"}


# --------------------------------------------------------------------------- Part II


def _colorfoil_benchmarks(p: dict[str, Any]):
    """(datasets, benchmarks, max_foils) as 02b and 02d build them from their parameters ``p``: the same
    construction, seed and foils, so the audit scores the pairs the pages score."""
    from .colorfoil import construction as cf
    from .colorfoil import stages as cfs

    datasets = cfs.evaluation_datasets(p["data_root"], p["coco_split"], p["flickr_splits"])
    benchmarks, max_foils = cfs.foil_benchmarks(
        datasets, p["benchmark_dir"], foil_type=p["foil_type"], construction=p["construction"],
        coco_caption_choice=p["coco_caption_choice"], flickr_caption_choice=p["flickr_caption_choice"],
        colour_selection=p["colour_selection"], foil_targets=p["foil_targets"], seed=p["seed"],
        max_pairs=p["max_pairs"], foil_counts=p["foil_counts"], confusion_foils=p.get("confusion_foils",
                                                                                     max(p["foil_counts"])))
    datasets, _ = cf.with_foils(datasets, benchmarks, p["foil_type"])
    return datasets, benchmarks, max_foils


def _colorfoil(spec: str, p: dict[str, Any], progress: bool):
    """02b's ColorFoil accuracy (Wilson interval) and F1 at each foil count, on COCO and Flickr30k, and with
    one foil the accuracy difference from 02b's first model (the reference) on the same pairs, with a
    paired bootstrap interval and the exact McNemar test."""
    from .colorfoil import evaluation as cfe

    datasets, benchmarks, max_foils = _colorfoil_benchmarks(p)
    # the reference: the first model of 02b's list (the full profile's: the paper's CLIP ViT-B/32), whose
    # scores 02b cached; the audited model is compared with it pair by pair
    reference = next(iter(p["model_specs"] or []), None)
    control = (p.get("controls") or {}).get(spec)  # 02b's control of this model, scored beside it (its claim's)
    compared = list(dict.fromkeys(item for item in (spec, reference, control) if item))
    scores, kinds, failures, _ = cfe.score_models(compared, datasets, benchmarks, max_foils=max_foils,
                                              batch_size=p["batch_size"], device=p["device"], half=p["half"],
                                              progress=progress)
    own = failures[failures["model"] == spec] if len(failures) else failures
    if len(own):  # the reference failing leaves the model's own results, without the paired comparison
        raise RuntimeError(f"ColorFoil could not score {spec}: {own.iloc[0].to_dict()}")
    # the model's own claim as 02b's box judges it, against 02b's control of it (the box's second claim compares
    # two kinds of model, not this model: it stays on the page)
    from .book import published
    from .colorfoil import findings as cff

    found = [finding for finding in cff.evaluation_findings(spec, scores, kinds, p.get("controls"),
                                                            published("colorfoil_table1_samin2024"),
                                                            p.get("model_labels"), seed=p["seed"])
             if finding.key == "above_chance"]
    results = []
    own_scores = {key: matrix for key, matrix in scores.items() if key[0] == spec}
    for row in cfe.evaluation_table(own_scores, p["foil_counts"]).to_dict("records"):
        where = f"{row['dataset']}, k={row['foils']}"
        results.append(Result(f"ColorFoil accuracy ({where})", "colorfoil", row["accuracy_%"] / 100,
                              row["ci_low_%"] / 100, row["ci_high_%"] / 100, interval=WILSON, n=int(row["n"]),
                              unit="share", order="descending"))
        # F1 = 2a / (1 + a) rises with the accuracy a, so the accuracy's Wilson interval maps onto F1's
        results.append(Result(f"ColorFoil F1 ({where})", "colorfoil", row["f1"],
                              float(cfe.f1_from_accuracy(row["ci_low_%"] / 100)),
                              float(cfe.f1_from_accuracy(row["ci_high_%"] / 100)), interval="Wilson 95%, as 2a/(1+a)",
                              n=int(row["n"]), unit="F1", order="descending",
                              note="the paper's F1 (every pair counted as a positive): 2a/(1+a) of the accuracy a"))
    if reference and reference != spec and all((reference, name) in scores for name in datasets):
        from .colorfoil import controls as cf_controls

        for name in datasets:
            row = cf_controls.paired_model_table({spec: scores[spec, name], reference: scores[reference, name]}, k=1,
                                                 n_bootstrap=p["n_bootstrap"], seed=p["seed"]).iloc[0]
            results.append(Result(f"ColorFoil accuracy minus the reference's ({name}, k=1)", "colorfoil",
                                  row["difference_pp"] / 100, row["low_pp"] / 100, row["high_pp"] / 100,
                                  interval="paired bootstrap 95%", n=int(row["n"]), unit="share difference",
                                  note=f"reference {reference} (02b's first model); exact McNemar p = "
                                       f"{row['p_mcnemar']:.3g} ({int(row['a_only'])} pairs only this model gets "
                                       f"right, {int(row['b_only'])} only the reference)"))
    return results, {name: dataset.identity for name, dataset in datasets.items()}, found


# --------------------------------------------------------------------------- generative vision-language models


#: the card's names of 01d's two default-group gaps (by likelihood, and in the model's own descriptions)
LIKELIHOOD_GAP = "default-group unmarked gap by likelihood ({family})"
DESCRIPTION_GAP = "default-group unnamed gap in descriptions ({family})"


def _generative_markedness(spec: str, p: dict[str, Any], progress: bool):
    """01d's markedness asked of a generative model, on 01d's sample of faces: by likelihood (01d's headline
    ``score``), the unmarked rate per group of each family (Wilson) and the default groups' gap (Newcombe);
    in its own descriptions, the share of each group's faces whose description names its family, and the
    default groups' gap in going unnamed. A family whose summed prompts continue the person prompt (the age
    prompts, under ``score="sum"``) is unmarked by construction: it gets no result, only a limit."""
    import pandas as pd

    from . import markedness as mk
    from .data import load_dataset
    from .markedness import generative as gen

    dataset = load_dataset("fairface", root=p["data_root"], split=p["split"], padding=p["padding"])
    positions = mk.sample_per_group(dataset.records, list(mk.FAMILIES), p["images_per_group"], seed=p["seed"])
    images, records = dataset.images(positions), dataset.records.iloc[positions].reset_index(drop=True)
    model = _loaded("vision-language", spec, p["device"], p["half"])
    person, prompts = mk.prompt_set(p["prompt_prefix"], p["oldest_age_wording"])
    flags = gen.likelihood_unmarked_flags(model, images, prompts, person, prompt=p["likelihood_prompt"],
                                          score=p["score"], batch_size=p["batch_size"], progress=progress)
    continues = gen.continues_person_prompt(prompts, person)
    families = [family for family in mk.FAMILIES if not (p["score"] == "sum" and continues[family])]
    reading = "summed" if p["score"] == "sum" else "per-token"
    results = []
    for row in gen.unmarked_rates_by_family(records, flags, families).to_dict("records"):
        results.append(Result(f"unmarked rate by likelihood ({row['family']} labels)", "markedness",
                              row["unmarked_%"] / 100, row["ci_low_%"] / 100, row["ci_high_%"] / 100,
                              group=str(row["group"]), interval=WILSON, n=int(row["n"]), unit="share",
                              note=f"{reading} log-likelihood"))
    for family in families:
        results.append(_gap_result(LIKELIHOOD_GAP.format(family=family), records, flags, family,
                                   f"{reading} log-likelihood; unmarked rate of {', '.join(DEFAULT_GROUPS[family])} "
                                   f"minus every other {family}'s"))
    descriptions = gen.describe_images(model, images, prompt=p["describe_prompt"], max_new_tokens=p["max_new_tokens"],
                                       batch_size=p["batch_size"], progress=progress)
    mentioned = gen.mentions(descriptions)
    for family, table in gen.mention_tables(records, mentioned).items():
        for row in table.to_dict("records"):
            results.append(Result(f"descriptions naming {family}", "markedness", row["mentioned_%"] / 100,
                                  row["ci_low_%"] / 100, row["ci_high_%"] / 100, group=str(row["group"]),
                                  interval=WILSON, n=int(row["n"]), unit="share"))
        results.append(_gap_result(DESCRIPTION_GAP.format(family=family), records,
                                   pd.DataFrame({family: ~mentioned[family].to_numpy()}), family,
                                   f"share of {', '.join(DEFAULT_GROUPS[family])}'s descriptions not naming {family} "
                                   f"minus every other {family}'s"))
    # the papers' claims as 01d's box judges them, against 01d's controls
    from .markedness import controls as mk_controls, findings as mk_findings

    reading = dict(prompts=prompts, person_prompt=person, score=p["score"], likelihood_prompt=p["likelihood_prompt"],
                   describe_prompt=p["describe_prompt"], max_new_tokens=p["max_new_tokens"], batch_size=p["batch_size"],
                   device=p["device"], half=p["half"])
    likely, described = mk_controls.generative_samples(spec, images, records, mk_controls.faces_identity(
        dataset, p["images_per_group"], p["seed"]), **reading, model=model)
    controls_likely, controls_described = mk_controls.generative_control_samples(
        _other_controls(spec, p.get("control_specs")), spec, p["data_root"], p["split"], p["padding"],
        p["images_per_group"], p["seed"],
        load=lambda control: _loaded("vision-language", control, p["device"], p["half"]), **reading)
    names = p.get("model_names") or {}
    found = (mk_findings.likelihood_findings(spec, likely, controls_likely, mk.published_as_unmarked(_published_table()),
                                             names, score=p["score"], age_continues_person=continues["age"],
                                             n_boot=p["n_boot"], seed=p["seed"])
             + mk_findings.description_findings(spec, described, controls_described, names, p["n_boot"], p["seed"]))
    return results, {"fairface": dataset.identity}, found


def _colorfoil_likelihood(spec: str, p: dict[str, Any], progress: bool):
    """02d's ColorFoil by likelihood: the caption against its foils by ``log P(text | image)`` (02d's
    headline ``score``), accuracy (Wilson) at each foil count, on COCO and Flickr30k."""
    from .colorfoil import evaluation as cfe
    from .colorfoil import generative as cfg

    datasets, benchmarks, _ = _colorfoil_benchmarks(p)
    model = _loaded("vision-language", spec, p["device"], p["half"])
    scores = {(spec, name): cfg.likelihood_scores(model, dataset, benchmarks[name], max_foils=max(p["foil_counts"]),
                                                  score=p["score"], prompt=p["likelihood_prompt"],
                                                  batch_size=p["batch_size"], progress=progress)
              for name, dataset in datasets.items()}
    # 02d's control of this model, read the same way, for its claim as 02d's box judges it
    control = (p.get("controls") or {}).get(spec)
    if control and control != spec:
        other = _loaded("vision-language", control, p["device"], p["half"])
        scores.update({(control, name): cfg.likelihood_scores(other, dataset, benchmarks[name],
                                                              max_foils=max(p["foil_counts"]), score=p["score"],
                                                              prompt=p["likelihood_prompt"], batch_size=p["batch_size"],
                                                              progress=progress)
                       for name, dataset in datasets.items()})
    from .book import published
    from .colorfoil import findings as cff

    found = cff.generative_findings(spec, scores, None, p.get("controls"), published("colorfoil_table1_samin2024"),
                                    p.get("model_labels"), seed=p["seed"])
    own = {key: matrix for key, matrix in scores.items() if key[0] == spec}
    results = []
    for row in cfe.evaluation_table(own, p["foil_counts"]).to_dict("records"):
        results.append(Result(f"ColorFoil accuracy by likelihood ({row['dataset']}, k={row['foils']})", "colorfoil",
                              row["accuracy_%"] / 100, row["ci_low_%"] / 100, row["ci_high_%"] / 100,
                              interval=WILSON, n=int(row["n"]), unit="share", order="descending",
                              note=f"{'summed' if p['score'] == 'sum' else 'per-token'} log-likelihood; a tie is a "
                                   "failure"))
    return results, {name: dataset.identity for name, dataset in datasets.items()}, found


# --------------------------------------------------------------------------- Part III


#: the card's name of 03a's amplification slope
STEREOTYPING_SLOPE = "occupational stereotyping (amplification slope)"


def _stereotyping(spec: str, p: dict[str, Any], progress: bool):
    """03a's occupational stereotyping: the model's female pronoun share P(she | she or he) over the 40
    WinoBias occupations in 03a's templates, against the labour statistics' female share: the
    amplification slope with its t interval, Pearson's r and the mean absolute gap."""
    from .book import published
    from .harms import measures as harms
    from .models import load_language_model

    if p.get("lm_kind"):  # 03a's forced kind (masked or causal) loads its own copy, as 03a does
        model = load_language_model(spec, device=p["device"], kind=p["lm_kind"])
    else:
        model = _loaded("language", spec, p["device"], None)
    occupations = published("winobias_bls_female_share")
    table = harms.stereotyping_table(model, occupations.occupation, occupations.female_percent / 100, p["templates"],
                                     p["pronouns"], scoring=p["scoring"], batch_size=p["batch_size"],
                                     progress=progress, cache=True)
    fit = harms.amplification_slope(table["model female share"], table["real female share"], p["confidence"])
    share = f"{int(round(p['confidence'] * 100))}%"
    from .harms import chapter as harms_chapter, findings as harms_findings

    chapter = harms_chapter.simulated_stereotyping()
    found = harms_findings.stereotyping_findings(  # 03a's box, computed by the function 03a calls
        fit, harms.amplification_slope(chapter["model P(she)"], chapter["BLS female share"]), spec)
    results = [Result(STEREOTYPING_SLOPE, "harms", fit["slope"], fit["slope_low"], fit["slope_high"],
                      interval=f"t {share}", n=fit["n"], unit="slope of P(she) on the labour statistics' share",
                      note="1: the model's pronoun shares copy the labour statistics' differences; above 1: "
                           "it exaggerates them; 0: it ignores them"),
               Result("occupational stereotyping (Pearson's r)", "harms", fit["r"], n=fit["n"], unit="Pearson's r"),
               Result("occupational stereotyping (mean |gap|)", "harms", fit["mean_abs_gap"], n=fit["n"],
                      unit="mean |P(she) - labour-statistics female share|")]
    return results, {"occupations": "published:winobias_bls_female_share",
                     "templates": f"{len(p['templates'])} templates, {p['scoring']} scoring"}, found


def _erasure(spec: str, p: dict[str, Any], progress: bool):
    """03c's erasure: seeded stories per scenario (03c's instructions, sampling settings and seed, from
    its cache), the protagonist's gender read off gendered words, and per scenario the share of women
    among the detected protagonists minus the population's, with its Wilson interval."""
    from .harms import measures as harms

    model = _loaded("language", spec, p["device"], None)
    if getattr(model, "kind", None) != "causal":
        raise NotApplicable(f"{spec} is a {getattr(model, 'kind', 'non-causal')} language model: it does not "
                            "generate stories")
    stories = harms.generate_stories(model, p["scenarios"], p["n_per_scenario"], max_new_tokens=p["max_new_tokens"],
                                     temperature=p["temperature"], top_p=p["top_p"], seed=p["seed"],
                                     batch_size=p["batch_size"], use_chat_template=p["use_chat_template"],
                                     progress=progress)
    measured = harms.erasure_from_texts(stories, p["population_reference"], p["confidence"], rule=p["gender_rule"])
    share = f"Wilson {int(round(p['confidence'] * 100))}%"
    women = measured[measured["group"] == "female"]
    results = [Result("erasure index of women", "harms",
                      row["erasure_index"], row["index_low"], row["index_high"], group=str(row["scenario"]),
                      interval=share, n=int(row["n_detected"]), order="absolute",
                      unit="share of female protagonists minus the population's",
                      note=f"{int(row['n_undetermined'])} stories without a detected protagonist gender")
               for row in women.to_dict("records")]
    from .harms import chapter as harms_chapter, findings as harms_findings

    found = harms_findings.erasure_findings(measured, harms_chapter.simulated_erasure(), spec)  # 03c's box
    return results, {"stories": f"{len(stories)} stories, {len(p['scenarios'])} scenarios, seed {p['seed']}",
                     "population reference": ", ".join(f"{k} {v:g}" for k, v in p["population_reference"].items())}, found


def _language_model_seat(spec: str, p: dict[str, Any], progress: bool):
    """03b's ten Caliskan tests on the language model's own sentence representations (SEAT, May et al.
    2019: each word in 03b's bleached templates, the last layer's hidden state of the first token of a
    masked model and the last of a causal one): effect size d per test with 03b's percentile bootstrap
    interval over words and its permutation p-value (03b's permutations), Holm-adjusted over the tests."""
    from .harms import measures as harms
    from .harms.controls import weat_bootstrap
    from .stats import with_holm
    from .weat import SEAT_TEMPLATES, caliskan_tests, run_weat_battery, seat_sentences, sentence_embedder

    model = _loaded("language", spec, p["device"], None)
    tests = caliskan_tests()
    sentences = list(dict.fromkeys(sentence for test in tests for key in "XYAB"
                                   for sentence in seat_sentences(test[key], SEAT_TEMPLATES)))
    try:
        vectors = harms.cached_sentence_embeddings(model, sentences, batch_size=SEAT_BATCH_SIZE, progress=progress)
    except NotImplementedError as reason:
        raise NotApplicable(f"{spec} gives no sentence embeddings: {reason}") from reason
    row_of = {sentence: i for i, sentence in enumerate(sentences)}  # every test's sentences, embedded once

    def encode(texts, progress=False):
        return vectors[[row_of[text] for text in texts]]

    table = with_holm(run_weat_battery(sentence_embedder(encode, SEAT_TEMPLATES), tests, p["n_permutations"],
                                       p["max_exact"], p["seed"], name=f"{spec} (SEAT)"))
    results = []
    for test, row in zip(tests, table.to_dict("records")):
        # 03b's interval over words: a word's template sentences are drawn together
        interval = weat_bootstrap(*(encode(seat_sentences(test[key], SEAT_TEMPLATES)) for key in "XYAB"),
                                  n_bootstrap=p["n_bootstrap"], seed=p["seed"], per_word=len(SEAT_TEMPLATES))
        results.append(Result(LANGUAGE_SEAT, "harms", row["effect_size"], interval.low, interval.high,
                              group=f"{row['test']}: {row['targets']} / {row['attributes']}",
                              interval="percentile bootstrap over words 95%", n=int(row["n_X"] + row["n_Y"]),
                              unit="Cohen's d over sentences (the model's last hidden state)", order="absolute",
                              note=f"permutation p = {row['p_value']:.4f}, Holm-adjusted {row['p_holm']:.4f}; "
                                   f"{len(SEAT_TEMPLATES)} sentences a word"))
    from .book import published
    from .harms import findings as harms_findings

    found = harms_findings.weat_findings(table, published("weat_caliskan2017_glove"))  # 03b's box
    return results, {"SEAT sentences": f"vlbias.weat: Caliskan et al. (2017)'s ten tests in {len(SEAT_TEMPLATES)} "
                                       f"templates, {len(sentences)} sentences"}, found


#: the card's name of the language model's SEAT effect sizes
LANGUAGE_SEAT = "SEAT effect size"
#: sentences a forward pass (03b has no batch size; SEAT's sentences are a few tokens each)
SEAT_BATCH_SIZE = 64


def _seat_reference():
    from .weat import caliskan_tests

    names = {test["id"]: f"{test['id']}: {test['X_name']} vs {test['Y_name']} / {test['A_name']} vs {test['B_name']}"
             for test in caliskan_tests()}  # as run_weat_battery names a test's targets and attributes
    return _published_rows("weat_caliskan2017_glove", "Caliskan et al. (2017), published Table 1 (word vectors)",
                           {"effect_size": lambda row: LANGUAGE_SEAT}, model=lambda row: "GloVe 840B",
                           group_of=lambda row: names[row["test"]])


# --------------------------------------------------------------------------- Part IV


def _t2i_data(p: dict[str, Any]) -> dict[str, str]:
    """What a text-to-image measure's numbers rest on besides the model: the reference shares and the
    perceived-gender annotator with its prompts."""
    return {"reference shares": "published:winobias_bls_female_share",
            "perceived-gender annotator": f"{p['annotator_spec']} (prompts: {len(p['gender_prompts'])} classes)"}


def _t2i_loaders(spec: str, p: dict[str, Any]):
    """The pipeline and the annotator a Part IV measure may need, as functions that load them once per audit:
    a study already drawn and labelled (a book run's) is read without loading either."""
    return (lambda: _loaded("text-to-image", spec, p["device"], p["half"]),
            lambda: _loaded("image-text", p["annotator_spec"], p["device"], p.get("annotator_half")))


#: the guidance scale that is no guidance (classifier-free guidance's conditional prediction alone)
NO_GUIDANCE = 1.0


def _guidance_change(spec: str, p: dict[str, Any], progress: bool):
    """Classifier-free guidance's paired change: VRBS at 04b's guidance scale minus VRBS without
    guidance (scale 1), on the same jobs (profession, seed), with 04c's paired bootstrap (image pairs
    resampled within each profession; the standard interval): how far guidance moves this model's shares from or
    towards the labour statistics' (04e's guidance grid shows it on a world whose shares are known)."""
    from .t2i.study import guidance_change

    if float(p["guidance_scale"]) <= NO_GUIDANCE:
        raise NotApplicable(f"04b samples without guidance (guidance_scale {p['guidance_scale']:g}): there is no "
                            "guided run to compare")
    model, annotator = _t2i_loaders(spec, p)
    summary = guidance_change(spec, p, NO_GUIDANCE, model=model, annotator=annotator, progress=progress)
    result = Result(f"VRBS change under guidance (scale {p['guidance_scale']:g} vs 1)", "t2i", summary["VRBS change"],
                    summary["change low"], summary["change high"], interval="paired standard bootstrap 95%",
                    n=int(summary["professions"]), unit="VRBS with guidance minus without",
                    note=summary.get("note") or f"same jobs (profession, seed) at guidance {p['guidance_scale']:g} "
                                                f"and 1; without {summary['VRBS plain']:.3f}, with "
                                                f"{summary['VRBS other']:.3f}")
    return [result], _t2i_data(p)


def _occupational_bias(spec: str, p: dict[str, Any], progress: bool):
    """04b's VRBS and Spearman's ρ against the labour statistics, with bootstrap intervals, and the
    share of professions whose generated majority is further from parity than the statistics'
    (amplified), from 04b's study of the model (:func:`vlbias.t2i.study.study_run`: the images 04a and 04b
    draw, labelled and scored once: a book run's are read back); and 04b's claims, judged for a model
    trained here against 04b's control of it, by the function 04b's box calls."""
    from .findings import controls_of
    from .stats import wilson_interval
    from .t2i import bias as t2i_bias
    from .t2i.study import occupational_study

    control = controls_of(spec, _other_controls(spec, [p.get("control_spec")]))  # 04b's control, where it is this model's own
    model, annotator = _t2i_loaders(spec, p)
    run, _, found = occupational_study(spec, {**p, "control_spec": control[0] if control else None}, model=model,
                                       annotator=annotator, progress=progress)
    reference = t2i_bias.reference_shares()
    scored = run.labels[run.labels.profession.isin(reference.index)]
    note = run.note or None
    vrbs, rho = run.scores["VRBS"], run.scores["spearman_rho"]
    results = [Result("VRBS", "t2i", vrbs.value, vrbs.low, vrbs.high, interval="standard bootstrap 95%",
                      n=len(scored), unit="1 - mean |generated - reference female share|", order="descending",
                      note=note),
               Result("Spearman's rho against labour statistics", "t2i", rho.value, rho.low, rho.high,
                      interval="percentile bootstrap 95%", n=len(scored), unit="rank correlation", order="descending",
                      note=note or "ranked by agreement with the labour statistics' order, as VRBS is: a ranking of "
                                   "fidelity to those statistics, not of fairness")]
    table = t2i_bias.compare_with_reference(t2i_bias.generated_shares(run.labels), reference)
    if len(table):
        amplified = int((t2i_bias.classify_gaps(table) == "amplified").sum())
        low, high = wilson_interval(amplified, len(table))
        results.append(Result("professions amplified", "t2i", amplified / len(table), float(low), float(high),
                              interval=WILSON, n=len(table), unit="share of professions", order="ascending",
                              note="generated majority further from parity than the labour statistics'"))
    return results, _t2i_data(p), found


def _cads_change(spec: str, p: dict[str, Any], progress: bool):
    """04c's CADS on shared seeds: VRBS with CADS at the noise scale 04c compares models with
    (``comparison_noise_scale``) minus plain sampling, on the same jobs of 04c's model comparison (its study
    runs: :func:`vlbias.t2i.compare.cads_change`), with 04c's paired bootstrap interval (image pairs resampled
    within each profession)."""
    from .t2i.compare import cads_change

    s = float(p["comparison_noise_scale"])
    model, annotator = _t2i_loaders(spec, p)
    summary = cads_change(spec, p, model=model, annotator=annotator, progress=progress)
    result = Result(f"VRBS change under CADS (s={s:g})", "t2i", summary["VRBS change"], summary["change low"],
                    summary["change high"], interval="paired standard bootstrap 95%", n=int(summary["professions"]),
                    unit="VRBS with CADS minus plain sampling",
                    note=summary.get("note") or f"same jobs (profession, seed) with and without CADS; plain "
                                                f"{summary['VRBS plain']:.3f}, CADS {summary['VRBS other']:.3f}")
    return [result], _t2i_data(p)


#: every measure the audit runs, by kind; a new measure is one entry here
MEASURES: tuple[AuditMeasure, ...] = (
    AuditMeasure("markedness", "markedness", "image-text", "01b_markedness", _markedness,
                 "Markedness compares 'a photo of a person' with labelled prompts on one data set's pictures: it "
                 "shows which labels the model leaves implicit there, not why, and not how it treats real people "
                 "outside that data set.", _markedness_reference, ("model_spec", "model_specs")),
    AuditMeasure("self-similarity", "markedness", "image-text", "01a_self_similarity", _self_similarity,
                 "Self-similarity mixes how varied a group's pictures are with how the model spreads them; on its "
                 "own it cannot tell the two apart.", _self_similarity_reference, ("model_spec", "model_specs")),
    AuditMeasure("text-encoder WEAT", "markedness", "image-text", "01b_markedness", _text_encoder_weat,
                 "WEAT on the text encoder measures how prompts' words sit among pleasant and unpleasant words; it "
                 "says what the prompts could carry into markedness, not what the model does with pictures.",
                 model_parameters=("model_spec", "model_specs")),
    AuditMeasure("colorfoil", "colorfoil", "image-text", "02b_colorfoil_evaluation", _colorfoil,
                 "ColorFoil tests colour words only, on captions that name a colour; it says nothing about other "
                 "attributes or about a model's social biases.", _colorfoil_reference, ("model_specs",)),
    AuditMeasure("generative markedness", "markedness", "vision-language", "01d_generative_markedness",
                 _generative_markedness,
                 "Markedness by likelihood compares log P of 'a photo of a person' with the labelled prompts', which "
                 "differ in length, so a level means little and a gap between groups is the reading; summed, the age "
                 "prompts continue the person prompt and are left out. Descriptions are read by a word list: a word "
                 "it lacks is a mention missed, and greedy descriptions sharpen rates.",
                 _markedness_reference, ("model_spec", "model_specs")),
    AuditMeasure("colorfoil by likelihood", "colorfoil", "vision-language", "02d_colorfoil_generative",
                 _colorfoil_likelihood,
                 "ColorFoil by likelihood asks which text the model would rather write about the image: a colour "
                 "word of more tokens costs more under the sum, and it says nothing about the model's answers to a "
                 "question or its social biases.", model_parameters=("model_specs",)),
    AuditMeasure("occupational stereotyping", "harms", "language", "03a_stereotyping", _stereotyping,
                 "Pronoun probabilities in a few templates measure what the model predicts for 40 U.S. occupations "
                 "against one country's binary labour statistics; they say nothing about the text it generates.",
                 model_parameters=("lm_spec",)),
    AuditMeasure("erasure", "harms", "language", "03c_erasure", _erasure,
                 "The erasure index counts protagonists whose gender gendered words reveal, in a few seeded stories "
                 "per scenario: it is binary by construction and says nothing of who else the stories leave out.",
                 model_parameters=("lm_spec",)),
    AuditMeasure("language-model SEAT", "harms", "language", "03b_weat", _language_model_seat,
                 "SEAT places a word in a few bleached sentences and reads one hidden state per sentence: it says "
                 "how the model's representations of those sentences sit, not what the model writes, and effect "
                 "sizes on sentence units are not comparable with the published word-vector d beside them.",
                 _seat_reference),
    AuditMeasure("occupational bias", "t2i", "text-to-image", "04b_annotation_and_metrics", _occupational_bias,
                 "VRBS and rho compare perceived gender, as a zero-shot annotator labels it, with US labour "
                 "statistics for one prompt per profession: the annotator's errors enter the scores, and matching "
                 "the statistics is not the same as being fair.", _occupational_reference, ("t2i_spec",)),
    AuditMeasure("guidance change", "t2i", "text-to-image", "04b_annotation_and_metrics", _guidance_change,
                 "Guidance's change is VRBS at one guidance scale minus VRBS without guidance, on the same seeds: it "
                 "says how far guidance moves this model's perceived shares from the labour statistics', not how "
                 "faithful or good the images are.", model_parameters=("t2i_spec",)),
    AuditMeasure("CADS change", "t2i", "text-to-image", "04c_cads", _cads_change,
                 "CADS's change is measured at one noise scale and schedule, on the same seeds, by the same zero-shot "
                 "annotator: it says how CADS moves the perceived shares of this model, not whether the images stay "
                 "faithful to their prompts (04c's CLIPScore does).", model_parameters=("t2i_spec",)),
)
PARTS = tuple(dict.fromkeys(measure.part for measure in MEASURES))


def measures_for(kind: str, parts: Sequence[str] | None = None) -> list[AuditMeasure]:
    """The measures that apply to ``kind`` among ``parts`` (all by default). An unknown part raises,
    naming the parts that exist."""
    from .plan import PARTS as BOOK_PARTS

    unknown = sorted(set(parts or ()) - set(BOOK_PARTS))
    if unknown:
        raise ValueError(f"--parts {', '.join(unknown)}: no such part; the parts are {', '.join(sorted(BOOK_PARTS))}")
    return [measure for measure in MEASURES if measure.kind == kind and (not parts or measure.part in parts)]


def applicable(spec: str, kind: str, parts: Sequence[str] | None = None) -> list[AuditMeasure]:
    """:func:`measures_for` ``spec``'s ``kind``; raises, naming the spec, its kind and the kinds the
    audit measures, where none applies."""
    measures = measures_for(kind, parts)
    if not measures:
        kinds = sorted({measure.kind for measure in MEASURES})
        audited = " and ".join(kinds) if len(kinds) < 3 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
        raise ValueError(f"audit: {spec!r} is a {kind} model, and no audit measure applies to it"
                         + (f" among --parts {', '.join(parts)}" if parts else "")
                         + f"; the audit measures {audited} models so far")
    return measures


def card_path(folder: str | Path, spec: str) -> Path:
    """Where the card of ``spec`` is written in ``folder``: ``<spec_slug>.json`` (:func:`vlbias.paths.spec_slug`),
    the name of its page too."""
    from .paths import spec_slug

    return Path(folder) / f"{spec_slug(spec)}.json"


def code_revision(root: Path) -> str | None:
    """The git commit the project folder is at (``-dirty`` when it has uncommitted changes), or None."""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("-dirty" if dirty else "")


def audit_model(spec: str, profile: str = "demo", parts: Sequence[str] | None = None, root: str | Path | None = None,
                out_dir: str | Path | None = None, progress: bool = True) -> tuple[Card, Path]:
    """Audit one model: run every measure of its kind (among ``parts``) with ``profile``'s parameters,
    and write its card to ``out_dir`` (default: ``outputs/<profile>/cards``). Returns the card and its
    path. A spec that does not parse or names no model of a measured kind raises before anything runs."""
    from .models import parse_spec
    from .models.kinds import model_kind
    from .profiles import find_project_root, notebook_parameters, plan_run

    root = Path(root) if root is not None else find_project_root()
    parse_spec(spec)  # a bad spec fails here, with the spec grammar's own error
    kind = model_kind(spec)
    measures = applicable(spec, kind, parts)
    plan = plan_run(root, profile, only=sorted({measure.notebook for measure in measures}))
    from .findings import finding_record

    results, failures, data, limits, reference, identity, findings = [], [], {}, [], [], None, []
    # the profile's environment (offline flags) where not set already, and the notebooks' folder, whose
    # relative paths the parameters name; both as they were afterwards
    with _environment(plan.env), contextlib.chdir(root / "notebooks"), _one_load_each():
        for measure in measures:
            if progress:
                print(f"audit {spec}: {measure.name} ({measure.notebook}'s parameters)", file=sys.stderr, flush=True)
            parameters = notebook_parameters(root, measure.notebook, plan)
            try:
                rows, used, *found = measure.run(spec, parameters, progress)
            except NotApplicable as reason:
                limits.append(f"{measure.name}: not measured: {reason}")
                continue
            except Exception as error:  # one failed measure leaves the rest of the card standing
                failures.append({"measure": measure.name, "error": f"{type(error).__name__}: {error}"})
                continue
            results.extend(rows)
            findings.extend(finding_record(finding) for finding in (found[0] if found else []))
            data.update(used)
            limits.append(measure.limits)
            reference.extend(measure.reference())
            identity = identity or _identity(spec, kind, parameters)
    identity = identity or {"weights": f"spec:{spec}"}
    card = Card(model={"spec": spec, "kind": kind, "weights": identity["weights"], "dtype": identity.get("dtype"),
                       "architecture": identity.get("architecture"), "description": _description(spec)},
                provenance=provenance(profile, data=data, code_revision=code_revision(root)),
                results=results, reference=reference, failures=failures, limits=limits, findings=findings)
    folder = Path(out_dir) if out_dir is not None else card_folder(profile, root)
    return card, write_card(card, card_path(folder, spec))


def card_folder(profile: str, root: str | Path | None = None) -> Path:
    """Where a profile's cards are written and the leaderboard reads them: ``outputs/<profile>/cards``
    under the project root (the folder above, or ``root``)."""
    from .profiles import find_project_root

    return (Path(root) if root is not None else find_project_root()) / "outputs" / profile / "cards"


@contextlib.contextmanager
def _one_load_each():
    try:
        yield
    finally:
        _LOADED.clear()  # the models go when the audit ends


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _identity(spec: str, kind: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """What the loaded weights are (the model layer's identity, of the model the measures loaded)."""
    model = _loaded(kind, spec, parameters.get("device"), parameters.get("half"))
    identity = getattr(model, "identity", None)
    if identity is None:
        return {"weights": f"spec:{spec}"}
    return {"weights": identity.weights, "dtype": identity.dtype, "architecture": identity.architecture}


def _description(spec: str) -> str | None:
    from .models import parse_spec

    parsed = parse_spec(spec)
    if parsed.source == "trained":
        from .models.trained import describe_trained

        return describe_trained(parsed.name)
    return None


def precompute_assignments(spec: str, measures: Sequence[AuditMeasure], root: str | Path) -> tuple[list[str], list[str]]:
    """The notebooks of ``measures`` and the ``--set NOTEBOOK.PARAMETER=VALUE`` assignments that point
    their model parameters at ``spec`` (a list parameter gets ``[spec]``): what ``python -m vlbias
    precompute`` computes for them is then this model's embeddings, scores or images."""
    import json

    from .profiles import parameter_defaults

    notebooks = sorted({measure.notebook for measure in measures})
    assignments = []
    for measure in measures:
        defaults = parameter_defaults(Path(root) / "notebooks" / f"{measure.notebook}.ipynb")
        for name in measure.model_parameters:
            value = [spec] if isinstance(defaults.get(name), list) else spec
            assignments.append(f"{measure.notebook}.{name}={json.dumps(value)}")
    return notebooks, sorted(set(assignments))


def precompute_audit(specs: Sequence[str], profile: str = "demo", parts: Sequence[str] | None = None,
                     root: str | Path | None = None, address: str | None = None,
                     write: Callable[[str], None] = print) -> dict[str, dict]:
    """The heavy stages of every spec's measures (image embeddings, ColorFoil scores, generated images),
    run by precompute's executor on Ray (``python -m vlbias precompute``: a cluster at ``address``,
    else a local instance) into the caches the audit then reads: a lab audits many models on a cluster
    and writes the cards where the caches are. Returns precompute's summary per spec."""
    from . import precompute
    from .models.kinds import model_kind
    from .profiles import find_project_root

    root = Path(root) if root is not None else find_project_root()
    summaries = {}
    with precompute.ray_session(address, write, needed_by="audit --ray"):  # one Ray instance for every model
        for spec in specs:
            notebooks, assignments = precompute_assignments(spec, applicable(spec, model_kind(spec), parts), root)
            write(f"[audit] {spec}: the heavy stages of {', '.join(notebooks)} on Ray")
            summaries[spec] = precompute.precompute(profile, notebooks, root, assignments, write=write)
    return summaries


def main(specs: Sequence[str], profile: str = "demo", parts: Sequence[str] | None = None,
         out_dir: str | Path | None = None, project_dir: str | Path | None = None, ray: str | None = None) -> int:
    """``python -m vlbias audit SPEC [SPEC ...] --profile demo [--parts ...] [--out DIR] [--ray [ADDRESS]]``:
    every spec is checked (kind, parts) before the first is audited, so a typo does not cost an hour's
    audit; with ``ray`` (an address, or "" for a local instance) the heavy stages run on Ray first
    (:func:`precompute_audit`) and a stage that failed there is computed by the audit itself."""
    from .models.kinds import model_kind

    for spec in specs:
        applicable(spec, model_kind(spec), parts)
    if ray is not None:
        summaries = precompute_audit(specs, profile, parts, project_dir, ray)
        failed = {spec: sorted(summary["failures"]) for spec, summary in summaries.items() if summary["failures"]}
        for spec, stages in failed.items():
            print(f"{spec}: {len(stages)} stage(s) failed on Ray ({', '.join(stages)}); the audit computes them here")
    for spec in specs:
        card, path = audit_model(spec, profile, parts, root=project_dir, out_dir=out_dir)
        print(f"{spec}: {len(card.results)} results, {len(card.failures)} failed measure(s) -> {path}")
        for failure in card.failures:
            print(f"  failed: {failure['measure']}: {failure['error']}")
    return 0


# --------------------------------------------------------------------------- a card's findings


def card_findings(card: Card) -> list:
    """The papers' claims that a card speaks to, as the card's measures judged them: each row computed by
    the function the measure's page calls for its own findings box (so a card and a page cannot disagree),
    stored on the card (:func:`vlbias.findings.finding_record`). A card with none gets one "cannot test" row
    saying why (an older card, or no measure with a claim)."""
    from .findings import Finding, finding_from_record

    found = [finding_from_record(row) for row in card.findings]
    if not found:
        why = card.note or ("this card's measures speak to none of the papers' directional claims: "
                            + (", ".join(sorted({result.measure for result in card.results})) or "no results"))
        found.append(Finding("the papers' directional claims", "", why, "cannot test"))
    return found


def board_findings(cards: Sequence[Card], labels: dict[str, str] | None = None) -> list:
    """Every card's :func:`card_findings`, each claim prefixed with the model's name (``labels``:
    spec -> name): the leaderboard's box, the papers' claims model by model, each row as its card has it."""
    from dataclasses import replace

    labels = labels or {}
    return [replace(finding, claim=f"{labels.get(card.model['spec'], card.model['spec'])}: {finding.claim}")
            for card in cards for finding in card_findings(card)]


def planted_pairs(cards: Sequence[Card], labels: dict[str, str] | None = None):
    """For every card of a model trained in the book that was judged against a control, and every claim whose
    cause its world plants: the pair (model, control), the contrast (model minus control) with its interval,
    and whether the pair sits in its planted order beyond the intervals (the contrast's interval above 0:
    "recovered"), read from the cards' findings as the pages computed them. A table, one row per pair and
    claim (empty where no card has a control)."""
    import pandas as pd

    labels = labels or {}
    rows = []
    for card in cards:
        for finding in card_findings(card):
            if not finding.control_spec or finding.verdict not in ("recovered", "not recovered"):
                continue
            contrast = finding.estimates.get("contrast")
            rows.append({"model": labels.get(card.model["spec"], card.model["spec"]),
                         "control": labels.get(finding.control_spec, finding.control_spec), "claim": finding.claim,
                         "model minus control": finding.contrast,
                         "in planted order beyond the intervals": "yes" if finding.verdict == "recovered" else "no",
                         "estimate": None if contrast is None else contrast.value})
    return pd.DataFrame(rows, columns=["model", "control", "claim", "model minus control",
                                       "in planted order beyond the intervals", "estimate"])


def planted_pairs_sentence(pairs) -> str:
    """What :func:`planted_pairs` says, in a sentence: how many pairs and claims sit in their planted order
    beyond the intervals, and which do not."""
    if pairs.empty:
        return ("No card in this folder was judged against a control: a pair of a planted model and its control "
                "exists only among models trained in the book (the demo profile).")
    held = pairs[pairs["in planted order beyond the intervals"] == "yes"]
    missed = pairs[pairs["in planted order beyond the intervals"] == "no"]
    text = (f"{len(held)} of the {len(pairs)} planted claims sit in their planted order beyond the intervals "
            f"(model minus control above 0)")
    if len(missed):
        text += "; not: " + "; ".join(f"{row.model} against {row.control}, {row.claim}" for row in missed.itertuples())
    return text + ". The other cards' claims are the models' own (no cause planted behind them, or no control)."
