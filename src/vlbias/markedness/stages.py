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


core.register(
    NOTEBOOKS,
    core.NotebookDeclaration("01a_self_similarity", datasets=fairface, model_parameters=EMBEDDED, stages=(_embeddings(),)),
    core.NotebookDeclaration("01b_markedness", datasets=fairface, model_parameters=EMBEDDED, stages=(_embeddings(),)),
    core.NotebookDeclaration("01c_controlled_markedness", stages=(
        core.StageDeclaration("training", (), _training_estimate, writes="trained mini-CLIP checkpoints (cache: trained/)",
                         left="mini-CLIPs trained on the CPU in the notebook"),)),
    core.NotebookDeclaration("01d_generative_markedness", datasets=fairface, model_parameters=EMBEDDED, stages=(
        core.StageDeclaration("vlm-scoring", EMBEDDED, generative_estimates,
                              writes="log-likelihoods and descriptions per generative model (cache: "
                                     "vlm-log-likelihoods/, vlm-descriptions/)",
                              left="the notebook scores and describes the faces itself (cached per chunk)"),)),
)
