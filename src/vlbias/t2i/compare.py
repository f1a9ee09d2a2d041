"""Part IV's comparisons across samplers and models (``04c_cads``): the CADS noise-scale grid, and
the comparison of text-to-image models with CADS beside the source text's published numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..embeddings import embed_images
from ..models.base import ImageTextModel, TextToImageModel
from . import annotation
from . import bias as t2i_bias
from .cads import CADSConfig, with_cads
from .generation import ImageFiles, generate_to_disk, run_directory
from .runs import comparison_folder, comparison_samplers, grid_folder


def noise_scale_grid(model: TextToImageModel, annotator: ImageTextModel, jobs: pd.DataFrame,
                     noise_scales: Sequence[float], output_dir: str | Path,
                     gender_prompts: Mapping[str, str | Sequence[str]], reference: pd.Series, *,
                     cads: Mapping | None = None, generation: Mapping | None = None, batch_size: int = 8,
                     annotation_batch_size: int = 64, n_boot: int = 1000, seed: int = 0
                     ) -> tuple[pd.DataFrame, dict[float, dict]]:
    """Bias and diversity of ``model``'s images at each CADS noise scale s (0 is plain sampling).

    For each s, in order: 1. generate ``jobs`` (resumable, in a folder of its own under
    ``output_dir``); 2. label the perceived gender zero-shot with ``annotator`` and
    ``gender_prompts``; 3. embed the images with ``annotator`` (cached) for the diversity within a
    profession; 4. bootstrap VRBS and Spearman's rho against ``reference`` (``n_boot`` resamples).
    ``cads`` holds the other :class:`CADSConfig` fields (``tau1``, ``tau2``, ``psi``, ``rescale``,
    ``schedule``); ``generation`` the pipeline settings (``num_inference_steps``, ``height``, ...).

    Returns the grid (index ``s``: sampler, VRBS and rho with their 95% bootstrap bounds, mean
    diversity, share labelled "no person") and per s the ``manifest``, ``run_dir``, ``table`` (shares
    beside the reference) and ``diversity`` (per profession). Defined for ``04c_cads``.
    """
    runs, rows = {}, []
    for s in noise_scales:
        config = CADSConfig(noise_scale=s, **dict(cads or {}))
        sampler = model if config.is_off else with_cads(model, config)
        run_dir = run_directory(output_dir, model.spec, grid_folder(config))
        manifest = generate_to_disk(sampler, jobs, run_dir, batch_size=batch_size, **dict(generation or {}))
        manifest["perceived"] = annotation.label_image_files(annotator, [run_dir / f for f in manifest.file],
                                                              gender_prompts, batch_size=annotation_batch_size)
        embeddings = embed_images(annotator, ImageFiles(manifest, run_dir), batch_size=annotation_batch_size)
        diversity = t2i_bias.diversity_by_group(embeddings, manifest.profession)
        table = t2i_bias.compare_with_reference(t2i_bias.generated_shares(manifest), reference)
        boot = t2i_bias.bootstrap_bias_scores(manifest, reference, n_boot=n_boot, seed=seed)
        runs[s] = dict(manifest=manifest, run_dir=run_dir, table=table, diversity=diversity)
        rows.append({"s": s, "sampler": "plain" if config.is_off else "CADS",
                     "VRBS": boot.loc["VRBS", "estimate"], "VRBS low": boot.loc["VRBS", "ci_low"],
                     "VRBS high": boot.loc["VRBS", "ci_high"], "spearman_rho": boot.loc["spearman_rho", "estimate"],
                     "rho low": boot.loc["spearman_rho", "ci_low"], "rho high": boot.loc["spearman_rho", "ci_high"],
                     "diversity": diversity.mean(), "no person": float((manifest.perceived == "no person").mean())})
    return pd.DataFrame(rows).set_index("s"), runs


# --------------------------------------------------------------------------- model comparison (04c)

def model_comparison(specs: Sequence[str], annotator: ImageTextModel, jobs: pd.DataFrame, output_dir: str | Path,
                     gender_prompts: Mapping[str, str | Sequence[str]], reference: pd.Series, *,
                     cads_specs: Sequence[str] = (), cads: Mapping | None = None,
                     published_names: Mapping[str, str] | None = None, generation: Mapping | None = None,
                     batch_size: int = 8, annotation_batch_size: int = 64, n_boot: int = 1000, seed: int = 0,
                     device=None, half: bool | None = None
                     ) -> tuple[pd.DataFrame, dict[tuple[str, str], pd.DataFrame], pd.DataFrame]:
    """Text-to-image models compared as the source text compares Stable Diffusion versions: the same
    ``jobs`` (prompts and seeds) drawn by every spec in ``specs`` with plain sampling, and by those in
    ``cads_specs`` also with CADS (``cads``: :class:`CADSConfig` fields), each run labelled zero-shot
    by ``annotator`` and ranked by VRBS with a bootstrap interval.

    ``published_names[spec]`` is the source text's name for that model (``"SD 1.4"``): its published
    VRBS for the same sampler is put beside ours. ``generation`` holds the pipeline settings; a height or
    width of None lets each model draw at its own native size; ``device`` and ``half`` (fp16 on a GPU)
    go to the loader. Models load one at a time through
    :func:`vlbias.models.for_each_model`: one that fails to load or run becomes a row of ``failures``.

    Returns ``(ranking, runs, failures)``: the ranking (index ``"<spec> (<sampler>)"``; columns model,
    sampler, rank, VRBS and its interval, Spearman's ρ, published VRBS), the labelled manifests by
    ``(spec, sampler)`` and the failures. Defined for ``04c_cads``.
    """
    from ..models import for_each_model, load_text_to_image
    from .controls import model_ranking

    specs, cads_specs, published_names = list(specs), list(cads_specs), dict(published_names or {})
    if not specs:
        raise ValueError("specs is empty: name at least one text-to-image model spec (t2i_specs)")
    for argument, named in (("cads_specs", cads_specs), ("published_names", list(published_names))):
        stray = [spec for spec in named if spec not in specs]
        if stray:
            raise ValueError(f"{argument} names {stray}, which are not among the compared specs {specs}: "
                             "add them to the specs (t2i_specs) or remove them")
    config = CADSConfig(**dict(cads or {}))
    if cads_specs and config.is_off:
        raise ValueError(f"cads_specs asks for CADS but the CADS settings switch it off ({config.label()}): "
                         "give a noise scale above 0 and tau1 below 1")

    def run(spec, model):
        manifests = {}
        for sampler, sampler_config in comparison_samplers(spec, cads_specs, cads):
            sampling = model if sampler_config is None else with_cads(model, sampler_config)
            run_dir = run_directory(output_dir, spec, comparison_folder(sampler_config))
            manifest = generate_to_disk(sampling, jobs, run_dir, batch_size=batch_size, **dict(generation or {}))
            manifest["perceived"] = annotation.label_image_files(annotator, [run_dir / f for f in manifest.file],
                                                                  gender_prompts, batch_size=annotation_batch_size)
            manifests[sampler] = manifest.assign(run_dir=str(run_dir))
        return manifests

    results, failures = for_each_model(specs, run, load=load_text_to_image, device=device, half=half)
    runs = {(spec, sampler): manifest for spec, manifests in results.items() for sampler, manifest in manifests.items()}
    names = {key: f"{key[0]} ({key[1]})" for key in runs}
    published_as = {names[key]: (published_names[key[0]], key[1]) for key in runs if key[0] in published_names}
    if not runs:
        return pd.DataFrame(), runs, failures
    ranking = model_ranking({names[key]: manifest for key, manifest in runs.items()}, reference,
                            published_as=published_as, n_boot=n_boot, seed=seed)
    by_name = {name: key for key, name in names.items()}
    ranking.insert(0, "sampler", [by_name[name][1] for name in ranking.index])
    ranking.insert(0, "model", [by_name[name][0] for name in ranking.index])
    return ranking, runs, failures


def cads_beside_published(runs: Mapping[tuple[str, str], pd.DataFrame], reference: pd.Series,
                          published_names: Mapping[str, str] | None = None, n_boot: int = 1000,
                          seed: int = 0) -> pd.DataFrame:
    """For every model run both plain and with CADS (``runs`` from :func:`model_comparison`): VRBS of
    each, the change with a paired bootstrap interval (same seeds, images paired by profession and
    seed), and the source text's published VRBS plain and with CADS where ``published_names`` names
    the model. One row per model. Defined for ``04c_cads``."""
    from .bias import published_scores
    from .controls import paired_bias_comparison

    published = published_scores().query("measure == 'vrbs'").set_index(["model", "sampler"])["value"]
    rows = []
    for spec in dict.fromkeys(spec for spec, _ in runs):
        if (spec, "plain") not in runs or (spec, "CADS") not in runs:
            continue
        summary, _ = paired_bias_comparison(runs[spec, "plain"], runs[spec, "CADS"], reference, n_boot=n_boot, seed=seed)
        name = (published_names or {}).get(spec)
        rows.append({"model": spec, "source name": name or "", "VRBS plain": summary["VRBS plain"],
                     "VRBS CADS": summary["VRBS other"], "change": summary["VRBS change"],
                     "change low": summary["change low"], "change high": summary["change high"],
                     "published VRBS plain (source)": published.get((name, "plain"), np.nan) if name else np.nan,
                     "published VRBS CADS (source)": published.get((name, "CADS"), np.nan) if name else np.nan,
                     "note": summary.get("note", "")})
    columns = ["model", "source name", "VRBS plain", "VRBS CADS", "change", "change low", "change high",
               "published VRBS plain (source)", "published VRBS CADS (source)", "note"]
    table = pd.DataFrame(rows, columns=columns).set_index("model")
    table["published change (source)"] = table["published VRBS CADS (source)"] - table["published VRBS plain (source)"]
    if not table["note"].astype(bool).any():
        table = table.drop(columns="note")  # every change defined: no empty column on the page
    return table
