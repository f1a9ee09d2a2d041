"""Part I's notebooks declared once: what each reads and embeds (see :mod:`vlbias.stages`)."""

from __future__ import annotations

import inspect

from .. import stages as core

NOTEBOOKS: dict[str, core.NotebookDeclaration] = {}
#: the parameters naming the image-text models whose FairFace embeddings 01a and 01b compute
EMBEDDED = ("model_spec", "model_specs")


def fairface(parameters: core.Parameters) -> list[core.DataNeed]:
    return [core.DataNeed("fairface", parameters["split"], options={"padding": parameters["padding"]})]


def _chunk_size() -> int:
    """Rows per cache chunk of :func:`vlbias.embeddings.embed_images`, as the notebooks' calls use it."""
    from ..embeddings import embed_images

    return inspect.signature(embed_images).parameters["chunk_size"].default


def embedding_estimates(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    """FairFace embedded once per model spec (a spec another notebook embedded is read from its cache)."""
    split = parameters["split"]
    images = context.sizes.get("fairface", core.KNOWN_SIZES.get(("fairface", split), 0))
    rows = []
    for spec in core.specs_of(parameters, EMBEDDED):
        rate = core.image_embedding_rate(spec)
        rows.append(core.Estimate(spec, images, key=("image-embeddings", spec, "fairface", str(split), parameters["padding"]),
                             hours=images / rate / 3600, disk_gb=images * 1024 * core.FLOAT_BYTES / 1e9,
                             line=f"{spec}: {images:,} image embeddings at an assumed {rate:g}/s",
                             cached_line=f"{spec}: {images:,} image embeddings, cached by an earlier notebook"))
    return rows


def embedding_units(parameters: core.Parameters, context: core.Context) -> list[core.Stage]:
    """One stage per spec: ``embed_images(model, fairface, batch_size=...)``, a unit per cache chunk."""
    from ..data import load_dataset

    source = {"name": "fairface", "root": context.folder(parameters["data_root"]), "split": parameters["split"],
              "padding": parameters["padding"]}
    dataset = load_dataset(source["name"], root=source["root"], split=source["split"], padding=source["padding"])
    load = {"device": parameters["device"], "half": bool(parameters["half"])}
    call = {"dataset": source, "dataset_name": "fairface", "identity": dataset.identity,
            "batch_size": int(parameters["batch_size"])}
    return [core.Stage("image-embeddings", spec, [], dict(load), dict(call), len(dataset), _chunk_size(),
                  run_unit=run_embedding_unit, forward="encode_images")
            for spec in core.specs_of(parameters, EMBEDDED)]


def run_embedding_unit(stage: core.Stage, model, index: int, worker) -> int:
    """Chunk ``index`` of the embeddings, through the notebooks' own :func:`~vlbias.embeddings.embed_images`."""
    from ..cache import only_chunks
    from ..embeddings import embed_images

    with only_chunks([index]) as selection:
        embed_images(model, worker.dataset(stage.call["dataset"]), batch_size=stage.call["batch_size"],
                     chunk_size=stage.unit_size, progress=False, decode_workers=worker.threads)
    return stage.unit_items(index) if selection.computed else 0


def _training_estimate(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    return [core.Estimate(None, 0, line=f"mini-CLIPs trained in the book on the planted world ({int(parameters['train_per_kind'])} "
                                   "pictures per kind and condition; CPU minutes); no data set to download")]


def _embeddings() -> core.StageDeclaration:
    return core.StageDeclaration("image-embeddings", EMBEDDED, embedding_estimates,
                            writes="FairFace image embeddings per model (cache: embeddings/)", units=embedding_units)


def generative_estimates(parameters: core.Parameters, context: core.Context) -> list[core.Estimate]:
    """01d per generative model: every sampled face scored against the person prompt and the 18 label
    prompts (cached raw sums), and one description generated per face."""
    from .prompts import label_prompts

    split = parameters["split"]
    images = context.sizes.get("fairface", core.KNOWN_SIZES.get(("fairface", split), 0))
    per_group = parameters.get("images_per_group")
    if per_group is not None:
        images = min(images, int(per_group) * 126)  # at most per_group of each race x gender x age intersection
    texts = 1 + sum(len(labels) for labels in label_prompts().values())
    rates = core.throughputs()
    tokens = images * int(parameters["max_new_tokens"])
    rows = []
    for spec in core.specs_of(parameters, EMBEDDED):
        hours = images * texts / rates["vision-language scored texts/s"] / 3600 + tokens / rates["generated tokens/s"] / 3600
        rows.append(core.Estimate(spec, images * texts, key=("vlm-scoring", spec, "fairface", str(split), per_group),
                                  hours=hours, line=f"{spec}: {images:,} faces x {texts} prompts scored at an assumed "
                                  f"{rates['vision-language scored texts/s']:g}/s, and {tokens:,} description tokens at "
                                  f"{rates['generated tokens/s']:g}/s",
                                  cached_line=f"{spec}: scored and described by an earlier run"))
    return rows


# --------------------------------------------------------------------------- power of the planted contrasts
# Each planted page's box judges the planted model against its control (vlbias.findings). What each page is
# built to detect, at the sample its parameters give, at α = 0.05 (the banner shows it; the tests check the
# closed forms against simulations).

#: the smallest contrast in self-similarity (mean cosine) 01a is built to detect
SELF_SIMILARITY_EFFECT = 0.05
#: the spread assumed for 01a's power: the standard deviation across a group's pictures of a picture's mean
#: cosine to the group's other pictures (a self-similarity over n pictures then has a standard error of about
#: 2 × spread / √n); 01a prints the spread its pictures have beside it
SELF_SIMILARITY_SPREAD = 0.12
#: the smallest contrast in unmarked rates 01b is built to detect (a share: 15 percentage points)
UNMARKED_EFFECT = 0.15
#: the smallest contrast 01d is built to detect: 25 points; its faces are few because each is scored 19 times
#: and described, for two models
GENERATIVE_EFFECT = 0.25
#: 01c: the contrast of unmarked gaps it is built to detect (percentage points): half the 100 points by which a
#: model that always preferred the unnamed colour would separate the widest reporting gap from the control; and
#: the spread of one seed's gap around the mean of its condition assumed for its power (01c prints its seeds' gaps)
REPORTING_EFFECT = 50.0
REPORTING_SEED_SPREAD = 30.0


def _face_counts(parameters: core.Parameters) -> dict[str, int]:
    """Pictures per race, per gender, in the ages 20-59 and in the rest, on the page's face world (its
    ``val_per_cell`` or ``train_per_cell``), or at most ``images_per_group`` of each race × gender × age
    cell; ``{}`` where the data are no generated world (the papers' FairFace: the power is not the demo's)."""
    from ..data.registry import is_world_root, world_options

    root = parameters.get("data_root")
    if not is_world_root(root):
        return {}
    options = world_options("fairface", str(root).partition("?")[2])
    per_cell = options["val_per_cell" if parameters.get("split") == "val" else "train_per_cell"]
    if parameters.get("images_per_group"):
        per_cell = min(per_cell, int(parameters["images_per_group"]))
    return {"race": per_cell * 2 * 9, "gender": per_cell * 7 * 9, "middle": per_cell * 14 * 4, "rest": per_cell * 14 * 5}


def _planted(parameters: core.Parameters) -> bool:
    return str(parameters.get("model_spec", "")).startswith("trained:") and bool(parameters.get("control_specs"))


def rate_power(parameters: core.Parameters, effect: float, why: str = "") -> list[core.Power]:
    """The power of 01b's (or 01d's) three unmarked-rate contrasts, planted minus control, at ``effect``: each
    gap is two rates, each contrast two gaps, every rate's variance taken at its largest (50%), which a paired
    design can only lower."""
    from ..stats import rate_contrast_se

    counts = _face_counts(parameters)
    if not counts or not _planted(parameters):
        return []
    effect_text = f"a contrast of {100 * effect:.0f} percentage points"
    lines = []
    for claim, first, second, unit in (("White left unmarked more often (White minus the highest other race)", "race", "race",
                                        f"{counts['race']:,} pictures per race"),
                                       ("Male left unmarked more often (Male minus Female)", "gender", "gender",
                                        f"{counts['gender']:,} pictures per gender"),
                                       ("the middle-aged left unmarked more often (20-59 minus the rest)", "middle", "rest",
                                        f"{counts['middle']:,} pictures aged 20-59 and {counts['rest']:,} others")):
        se = rate_contrast_se(*[(0.5, counts[first]), (0.5, counts[second])] * 2)
        lines.append(core.power_line(claim, effect, effect_text, counts[first], unit, se,
                                     "closed form, each rate's variance at its largest", why))
    return lines


def self_similarity_power(parameters: core.Parameters) -> list[core.Power]:
    """The power of 01a's contrast of White's self-similarity against the lowest other race's, planted minus
    each control: four self-similarities over a race's pictures, each with a standard error of 2 ×
    :data:`SELF_SIMILARITY_SPREAD` / √n (the pictures of a model and a control on other worlds are independent)."""
    counts = _face_counts(parameters)
    if not counts or not _planted(parameters):
        return []
    se = 4 * SELF_SIMILARITY_SPREAD / counts["race"] ** 0.5
    return [core.power_line("White the least self-similar race (the lowest other race's minus White's), against each "
                            "control", SELF_SIMILARITY_EFFECT,
                            f"a contrast of {SELF_SIMILARITY_EFFECT:g} in mean cosine, with a picture spread of "
                            f"{SELF_SIMILARITY_SPREAD:g} assumed", counts["race"], f"{counts['race']:,} pictures per race",
                            se, "closed form")]


def generative_power(parameters: core.Parameters) -> list[core.Power]:
    """01d: :func:`rate_power` at :data:`GENERATIVE_EFFECT`, for the likelihood and the description claims alike."""
    return rate_power(parameters, GENERATIVE_EFFECT, why="each face is scored against 19 prompts and described, by "
                                                        "two models")


def reporting_power(parameters: core.Parameters) -> list[core.Power]:
    """01c: the widest reporting gap's unmarked gap minus the control's, seed by seed, over ``n_seeds`` seeds:
    the difference of two seeds' gaps spreads by √2 × :data:`REPORTING_SEED_SPREAD`; its t interval over the
    seeds needs t's quantile, not the normal's, which this closed form takes from the normal of the same
    tail (it is the power a large-sample test would have, an upper bound)."""
    import math

    from scipy import stats

    seeds = int(parameters.get("n_seeds") or 0)
    if seeds < 2:
        return []
    spread = math.sqrt(2) * REPORTING_SEED_SPREAD
    t = stats.t.ppf(0.975, seeds - 1)
    se = spread / math.sqrt(seeds)
    power = float(stats.norm.cdf(REPORTING_EFFECT / se - t))
    needed = seeds
    while stats.norm.cdf(REPORTING_EFFECT / (spread / math.sqrt(needed)) - stats.t.ppf(0.975, needed - 1)) < core.REQUIRED_POWER:
        needed += 1
    return [core.Power("red left unmarked more often at the widest reporting gap than under the control (seed by seed)",
                       REPORTING_EFFECT, f"a contrast of {REPORTING_EFFECT:g} points (half what a model that always "
                       f"preferred the unnamed colour would show), with one seed's gap spreading "
                       f"{REPORTING_SEED_SPREAD:g} points around its condition's mean (assumed)", seeds,
                       f"{seeds} seeds per condition", power, "closed form with the t quantile of the seeds",
                       None if power >= core.REQUIRED_POWER else needed,
                       "each seed trains one mini-CLIP per condition: four models" if power < core.REQUIRED_POWER else "")]


core.register(
    NOTEBOOKS,
    core.NotebookDeclaration("01a_self_similarity", datasets=fairface, model_parameters=(*EMBEDDED, "control_specs"),
                             stages=(_embeddings(),), power=self_similarity_power),
    core.NotebookDeclaration("01b_markedness", datasets=fairface, model_parameters=(*EMBEDDED, "control_specs"),
                             stages=(_embeddings(),), power=lambda parameters: rate_power(parameters, UNMARKED_EFFECT)),
    core.NotebookDeclaration("01c_controlled_markedness", stages=(
        core.StageDeclaration("training", (), _training_estimate, writes="trained mini-CLIP checkpoints (cache: trained/)",
                         left="mini-CLIPs trained on the CPU in the notebook"),), power=reporting_power),
    core.NotebookDeclaration("01d_generative_markedness", datasets=fairface, model_parameters=(*EMBEDDED, "control_specs"),
                             power=generative_power, stages=(
        core.StageDeclaration("vlm-scoring", EMBEDDED, generative_estimates,
                              writes="log-likelihoods and descriptions per generative model (cache: "
                                     "vlm-log-likelihoods/, vlm-descriptions/)",
                              left="the notebook scores and describes the faces itself (cached per chunk)"),)),
)
