"""Part II's notebooks declared once: what each reads and scores (see :mod:`vlbias.stages`).

``02b_colorfoil_evaluation`` builds its data sets and benchmarks through :func:`evaluation_datasets`
and :func:`foil_benchmarks`, and ``python -m vlbias precompute`` through the same two functions, so
the pairs a worker scores are the pairs the notebook scores.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence

from .. import stages as core

NOTEBOOKS: dict[str, core.NotebookDeclaration] = {}
#: ColorFoil pairs per data set (the paper's counts), before the data are read
COLORFOIL_PAIRS = {"coco": 2_511, "flickr30k": 2_500}
#: the parameters of 02b that decide its benchmarks (names of :func:`foil_benchmarks`' arguments)
BENCHMARK_PARAMETERS = ("foil_type", "construction", "coco_caption_choice", "flickr_caption_choice",
                        "colour_selection", "foil_targets", "seed", "max_pairs", "foil_counts", "confusion_foils")


def data_needs(parameters: core.Parameters) -> list[core.DataNeed]:
    return [core.DataNeed("coco", parameters["coco_split"]), core.DataNeed("flickr30k", parameters["flickr_splits"])]


def evaluation_datasets(data_root, coco_split: str, flickr_splits: Sequence[str]) -> dict:
    """COCO and Flickr30k as 02a and 02b read them."""
    from ..data import load_dataset

    return {"coco": load_dataset("coco", root=data_root, split=coco_split),
            "flickr30k": load_dataset("flickr30k", root=data_root, split=flickr_splits)}


def foil_benchmarks(datasets: dict, benchmark_dir, *, foil_type: str, construction: str, coco_caption_choice: str,
                    flickr_caption_choice: str, colour_selection: str, foil_targets, seed: int, max_pairs,
                    foil_counts: Sequence[int], confusion_foils: int, progress: bool = False):
    """02b's benchmarks: read from ``benchmark_dir`` where 02a saved them, or rebuilt (same seed,
    same foils), with as many foils per caption as the largest of ``foil_counts`` and
    ``confusion_foils``. Returns ``(benchmarks, max_foils)``."""
    from .construction import benchmarks_for

    max_foils = max(list(foil_counts) + [confusion_foils])
    benchmarks = benchmarks_for(datasets, benchmark_dir, foil_type_name=foil_type, construction=construction,
                                caption_choices={"coco": coco_caption_choice, "flickr30k": flickr_caption_choice},
                                colour_selection=colour_selection, targets=foil_targets, max_foils=max_foils,
                                seed=seed, max_pairs=max_pairs, progress=progress)
    return benchmarks, max_foils


def with_controls(model_specs: Sequence[str] | None, controls) -> list[str]:
    """The specs a page scores: ``model_specs`` and each control of ``controls`` (spec -> its control's
    spec) that they lack, each once, in order. A control names a model of ``model_specs``, or the page
    could not judge it; an empty ``controls`` (the full profile) adds nothing."""
    specs = list(dict.fromkeys(model_specs or []))
    if controls is None:
        return specs
    if not isinstance(controls, Mapping):
        raise ValueError(f"controls must map each planted model's spec to its control's spec ({{spec: control}}; "
                         f"{{}} for none), got {controls!r}")
    unknown = [spec for spec in controls if spec not in specs]
    if unknown:
        raise ValueError(f"controls names {unknown}, which model_specs lacks: give each planted model as model_specs "
                         f"spells it ({specs}).")
    for control in controls.values():
        if not isinstance(control, str) or not control:
            raise ValueError(f"controls: each control is a model spec, got {control!r}")
        if control not in specs:
            specs.append(control)
    return specs


def _matcher_family(spec: str) -> str | None:
    lowered = spec.lower()
    if lowered.startswith("trained:caption-matcher"):  # the demo's pairwise matcher is a small ViLT
        return "vilt"
    return next((family for family in ("vilt", "bridgetower") if family in lowered), None)


def score_estimates(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    rates = core.throughputs()
    width = 1 + max(list(parameters["foil_counts"]) + [parameters["confusion_foils"]])
    pairs = sum(COLORFOIL_PAIRS.values())
    rows = []
    for spec in with_controls(core.specs_of(parameters, ("model_specs",)), parameters.get("controls")):
        family = _matcher_family(spec)
        if family:
            rate = rates["pairwise matches/s"][family]
            rows.append(core.Estimate(spec, pairs * width, hours=pairs * width / rate / 3600,
                                 line=f"{spec}: {pairs * width:,} image-text matches at an assumed {rate:g}/s"))
        else:
            hours = pairs / rates["image embeddings/s"]["default"] / 3600 + pairs * width / rates["text embeddings/s"] / 3600
            rows.append(core.Estimate(spec, pairs * width, hours=hours,
                                 line=f"{spec}: {pairs:,} images and up to {pairs * width:,} texts embedded"))
    return rows


def blind_estimates(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    spec = parameters["blind_lm_spec"]
    if not spec:
        return []
    width = 1 + max(list(parameters["foil_counts"]) + [parameters["confusion_foils"]])
    texts = sum(COLORFOIL_PAIRS.values()) * width
    return [core.Estimate(spec, texts, hours=texts / core.throughputs()["text embeddings/s"] / 3600,
                     line=f"{spec}: up to {texts:,} captions and foils scored without the image (blind baseline)")]


def score_units(parameters: core.Parameters, context: core.Context) -> list[core.Stage]:
    """One stage per model and data set: ``score_benchmark`` on the notebook's benchmarks, a unit per
    cache chunk."""
    from .construction import with_foils
    from .evaluation import score_benchmark

    data_root = context.folder(parameters["data_root"])
    splits = {"coco": parameters["coco_split"], "flickr30k": parameters["flickr_splits"]}
    datasets = evaluation_datasets(data_root, splits["coco"], splits["flickr30k"])
    benchmarks, max_foils = foil_benchmarks(datasets, context.folder(parameters["benchmark_dir"]),
                                            **{name: parameters[name] for name in BENCHMARK_PARAMETERS})
    datasets, _ = with_foils(datasets, benchmarks, parameters["foil_type"])
    load = {"device": parameters["device"], "half": bool(parameters["half"])}
    chunk = inspect.signature(score_benchmark).parameters["chunk_size"].default
    return [core.Stage("pair-scores", spec, [], dict(load),
                  {"dataset": {"name": name, "root": data_root, "split": splits[name]}, "dataset_name": name,
                   "identity": f"{dataset.identity}/{len(benchmarks[name])} pairs", "benchmark": benchmarks[name],
                   "max_foils": max_foils, "batch_size": int(parameters["batch_size"])},
                  len(benchmarks[name]), chunk, run_unit=run_score_unit, forward="score_candidates")
            for spec in with_controls(core.specs_of(parameters, ("model_specs",)), parameters.get("controls"))
            for name, dataset in datasets.items()]


def run_score_unit(stage: core.Stage, model, index: int, worker) -> int:
    """Chunk ``index`` of one model's ColorFoil scores, through the notebook's own ``score_benchmark``."""
    from ..cache import only_chunks
    from .evaluation import score_benchmark

    with only_chunks([index]) as selection:
        score_benchmark(model, worker.dataset(stage.call["dataset"]), stage.call["benchmark"],
                        max_foils=stage.call["max_foils"], batch_size=stage.call["batch_size"],
                        chunk_size=stage.unit_size, progress=False)
    return stage.unit_items(index) if selection.computed else 0


def _easy_vqa(parameters: core.Parameters) -> list[core.DataNeed]:
    return [core.DataNeed("easy-vqa", "train+test", root_parameter=None, package="easy_vqa",
                     how="pip install the easy-vqa package (requirements.txt)")]


def _colour_model_estimate(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    return [core.Estimate(None, 1, hours=0.1, line="trains a small CLIP-style model on easy-VQA (minutes)")]


def generative_estimates(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    """02d per generative model: the caption and its foils scored with every pair's image (the
    likelihood reading), and the caption against its first foil asked in both orders, two answers each
    (the two-choice reading)."""
    rates = core.throughputs()
    width = 1 + max(parameters["foil_counts"])
    pairs = sum(COLORFOIL_PAIRS.values())
    texts = pairs * (width + 4)
    return [core.Estimate(spec, texts, hours=texts / rates["vision-language scored texts/s"] / 3600,
                          line=f"{spec}: {texts:,} image-text pairs scored ({pairs:,} captions with {width - 1} foils, "
                               f"and each asked as a two-choice question in both orders) at an assumed "
                               f"{rates['vision-language scored texts/s']:g}/s")
            for spec in with_controls(core.specs_of(parameters, ("model_specs",)), parameters.get("controls"))]


# --------------------------------------------------------------------------- power of the planted contrasts
# 02b, 02c and 02d judge a model trained here against its control on the same pairs: the one-foil accuracy of
# the planted model minus the control's (vlbias.colorfoil.findings). What each page is built to detect, at the
# pairs its parameters give, at α = 0.05 (the banner shows it; tests/colorfoil checks it against a simulation).

#: the contrast in one-foil accuracy (a share) the pages are built to detect: half the 50 points between a model
#: that learned every planted colour word (100%: its caption always beats its foil) and a control at chance (50%)
COLOUR_EFFECT = 0.25
#: the control's one-foil accuracy: chance. The power takes each model's variance at the largest an accuracy can
#: have (that of 50%), the two models' answers independent pair by pair (a control at chance guesses)
CONTROL_ACCURACY = 0.5
_EFFECT_TEXT = ("a contrast of 25 points in one-foil accuracy: half the 50 between a model that learned every "
                "planted colour word (its caption always above its foil) and a control at chance (50%)")
_METHOD = ("closed form, each accuracy's variance at its largest (50%), the two models' answers independent pair "
           "by pair")
#: captions per world picture that each caption choice keeps, with a share ``s`` of captions naming the colour
#: (five captions a picture): the first naming one, if any; caption #0, if it names one; every one naming one
_PER_PICTURE = {"first_with_word": lambda s: 1 - (1 - s) ** 5, "first": lambda s: s, "all": lambda s: 5 * s}


def world_pairs(parameters: core.Parameters) -> dict[str, int]:
    """The benchmark pairs per data set that a caption world gives 02b and 02d at their parameters, expected
    from the world's own: ``eval_images`` pictures in COCO's val2017 and in Flickr30k's val and test together,
    each keeping :data:`_PER_PICTURE` captions of its five (``colour_share`` naming the main colour), at most
    ``max_pairs``. ``{}`` where the data are no caption world (the papers' releases)."""
    from ..data.registry import is_world_root, world_options

    root = parameters.get("data_root")
    if not is_world_root(root):
        return {}
    options = world_options("coco", str(root).partition("?")[2])
    pairs = {}
    for name, choice in (("coco", parameters.get("coco_caption_choice", "first_with_word")),
                         ("flickr30k", parameters.get("flickr_caption_choice", "all"))):
        count = round(options["eval_images"] * _PER_PICTURE[choice](options["colour_share"]))
        pairs[name] = count if parameters.get("max_pairs") is None else min(count, int(parameters["max_pairs"]))
    return pairs


def accuracy_contrast_power(claim: str, n: int, n_text: str, why: str = "") -> core.Power:
    """The power to detect :data:`COLOUR_EFFECT` as planted minus control in one-foil accuracy over ``n``
    shared pairs: closed form (:func:`vlbias.stages.power_line`) with each accuracy's variance at its
    largest, which a paired design with answers that go together can only lower."""
    from ..stats import rate_contrast_se

    se = rate_contrast_se((CONTROL_ACCURACY, n), (CONTROL_ACCURACY, n))
    return core.power_line(claim, COLOUR_EFFECT, _EFFECT_TEXT, n, n_text, se, _METHOD, why)


def _planted_pairs(parameters: core.Parameters) -> list[tuple[str, str]]:
    """The (model, control) pairs of the page's ``controls`` whose model was trained here, the control another."""
    controls = parameters.get("controls") or {}
    return [(spec, control) for spec, control in controls.items()
            if str(spec).startswith("trained:") and control and control != spec]


def evaluation_power(parameters: core.Parameters, claim: str = "a caption told from its colour foil above "
                     "chance, planted minus control (one foil)") -> list[core.Power]:
    """02b's (and 02d's) power: one line per planted model with a control, at the world's pairs
    (:func:`world_pairs`); none for the papers' models on their data (no control, nothing planted)."""
    pairs = world_pairs(parameters)
    planted = _planted_pairs(parameters)
    if not pairs or not planted:
        return []
    n = sum(pairs.values())
    counts = " and ".join(f"{count:,} {'COCO' if name == 'coco' else 'Flickr30k'}" for name, count in pairs.items())
    return [accuracy_contrast_power(claim + (f" ({spec} against {control})" if len(planted) > 1 else ""), n,
                                    f"about {n:,} pairs ({counts}, the world's expected count)")
            for spec, control in planted]


def generative_power(parameters: core.Parameters) -> list[core.Power]:
    """02d: :func:`evaluation_power` by likelihood."""
    return evaluation_power(parameters, "a caption told from its colour foil above chance by likelihood, planted "
                                        "minus control (one foil)")


def colour_model_power(parameters: core.Parameters) -> list[core.Power]:
    """02c's power: the trained network against the same network untrained (or the snapshot
    ``control_epochs`` names), on easy-VQA's test pictures with a known colour (at most ``max_test_images``)."""
    if parameters.get("control_epochs") is None or parameters.get("control_epochs") == parameters.get("epochs"):
        return []
    from .colour_model import easy_vqa_labels

    n = len(easy_vqa_labels("test"))
    if parameters.get("max_test_images") is not None:
        n = min(n, int(parameters["max_test_images"]))
    return [accuracy_contrast_power("a caption told from its colour foil above chance, trained minus control (one "
                                    "foil)", n, f"{n:,} easy-VQA test pictures, one caption each")]


core.register(
    NOTEBOOKS,
    core.NotebookDeclaration("02a_colorfoil_construction", datasets=data_needs),
    core.NotebookDeclaration(
        "02b_colorfoil_evaluation", datasets=data_needs, model_parameters=("model_specs", "blind_lm_spec"),
        power=evaluation_power,
        stages=(core.StageDeclaration("pair-scores", ("model_specs",), score_estimates,
                                 writes="ColorFoil scores per model and data set (cache: colorfoil/)", units=score_units),
                core.StageDeclaration("lm-scoring", ("blind_lm_spec",), blind_estimates,
                                 writes="language-model scores of captions and foils (cache)",
                                 left="the blind baseline's scores; the notebook computes them (cached)"))),
    core.NotebookDeclaration(
        "02d_colorfoil_generative", datasets=data_needs, model_parameters=("model_specs",), power=generative_power,
        stages=(core.StageDeclaration("vlm-scoring", ("model_specs",), generative_estimates,
                                      writes="log-likelihoods of captions, foils and answers per generative model "
                                             "(cache: colorfoil/)",
                                      left="the notebook scores the pairs itself (cached per chunk)"),)),
    core.NotebookDeclaration("02c_colorfoil_colour_model", datasets=_easy_vqa, power=colour_model_power, stages=(
        core.StageDeclaration("training", (), _colour_model_estimate, writes="the easy-VQA colour model (in memory)",
                         left="trained in the notebook"),)),
)
