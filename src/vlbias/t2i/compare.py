"""Part IV's comparisons across samplers and models (``04c_cads``): the CADS noise-scale grid, and
the comparison of text-to-image models with CADS beside the source text's published numbers.

04c's page reads both from the study runs of :mod:`vlbias.t2i.study` (:func:`cads_grid`,
:func:`study_comparison`): at 04b's setting its plain runs are 04b's, so a model has one VRBS on both
pages and on its card (:func:`cads_change` is the card's CADS change). :func:`noise_scale_grid` and
:func:`model_comparison`, which draw into folders of their own, remain for callers that pass loaded
models and jobs."""

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


def _compared(specs, cads_specs, published_names) -> tuple[list, list, dict]:
    """The model comparison's specs, those with CADS and the published names, as lists and a dict; one
    ``ValueError`` naming the argument where none is given or one names a spec that is not compared."""
    specs, cads_specs, published_names = list(specs), list(cads_specs), dict(published_names or {})
    if not specs:
        raise ValueError("specs is empty: name at least one text-to-image model spec (t2i_specs)")
    for argument, named in (("cads_specs", cads_specs), ("published_names", list(published_names))):
        stray = [spec for spec in named if spec not in specs]
        if stray:
            raise ValueError(f"{argument} names {stray}, which are not among the compared specs {specs}: "
                             "add them to the specs (t2i_specs) or remove them")
    return specs, cads_specs, published_names


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

    specs, cads_specs, published_names = _compared(specs, cads_specs, published_names)
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


# --------------------------------------------------------------------------- 04c on the study's setting
# 04c's grid and model comparison read the study runs of vlbias.t2i.study: at 04b's setting, the plain
# run is 04b's (the same images, labels, VRBS and rho), and every CADS run is drawn once per setting.


def _loader(value, load):
    """``value`` (a model, or a function loading one) or ``load``, called once, when first needed."""
    held = {}

    def get():
        if "model" not in held:
            if value is None:
                held["model"] = load()
            else:
                held["model"] = value() if callable(value) and not hasattr(value, "spec") else value
        return held["model"]

    return get


def cads_config(parameters: Mapping, noise_scale: float) -> CADSConfig:
    """The CADS sampler of 04c's ``parameters`` (``tau1``, ``tau2``, ``psi``, ``rescale``, ``schedule``,
    ``cads_branch``) at ``noise_scale``."""
    return CADSConfig(noise_scale=float(noise_scale), tau1=parameters["tau1"], tau2=parameters["tau2"],
                      psi=parameters["psi"], rescale=parameters["rescale"], schedule=parameters["schedule"],
                      branch=parameters["cads_branch"])


def cads_grid(spec: str, parameters: Mapping, noise_scales: Sequence[float], annotator=None, progress: bool = False
              ) -> tuple[pd.DataFrame, dict[float, dict]]:
    """04c's noise-scale grid on ``spec``'s study runs (:func:`vlbias.t2i.study.study_run` at the setting of
    ``parameters``, s = 0 the plain run): per s, VRBS and ρ as cached for that run, the diversity within a
    profession (mean pairwise distance of the annotator's image embeddings, cached by the files' bytes) and
    the share labelled "no person". ``annotator``: the loaded annotator or a function loading it (for the
    embeddings). Returns the grid (index ``s``) and per s the ``run`` (the StudyRun), ``manifest``,
    ``run_dir``, ``table`` (shares beside the reference) and ``diversity`` (per profession)."""
    from ..models import load_image_text_model
    from .study import study_run

    reference = t2i_bias.reference_shares()
    labeller = _loader(annotator, lambda: load_image_text_model(parameters["annotator_spec"], device=parameters["device"],
                                                                half=parameters.get("annotator_half")))
    runs, rows = {}, []
    for s in noise_scales:
        config = cads_config(parameters, s)
        run = study_run(spec, parameters, cads=config, annotator=labeller, progress=progress)
        manifest = run.labels
        images = ImageFiles(manifest.drop(columns=["perceived", "run_dir"]), run.run_dir)
        embeddings = embed_images(labeller(), images, batch_size=int(parameters.get("annotation_batch_size") or 64),
                                  progress=progress)
        diversity = t2i_bias.diversity_by_group(embeddings, manifest.profession)
        runs[s] = dict(run=run, manifest=manifest, run_dir=run.run_dir, diversity=diversity,
                       table=t2i_bias.compare_with_reference(t2i_bias.generated_shares(manifest), reference))
        rows.append({"s": s, "sampler": "plain" if config.is_off else "CADS", **run.row("VRBS"),
                     "spearman_rho": run.scores["spearman_rho"].value, "rho low": run.scores["spearman_rho"].low,
                     "rho high": run.scores["spearman_rho"].high, "diversity": diversity.mean(),
                     "no person": float((manifest.perceived == "no person").mean())})
    return pd.DataFrame(rows).set_index("s"), runs


def comparison_parameters(parameters: Mapping) -> dict:
    """04c's parameters as the model comparison's setting: ``comparison_images_per_profession`` images per
    profession and, where ``comparison_size`` is given, that size (None: each model's own, as the
    pipelines' defaults)."""
    size = parameters.get("comparison_size", "page")
    changes = {"images_per_profession": parameters.get("comparison_images_per_profession",
                                                       parameters["images_per_profession"])}
    if size != "page":
        changes.update(height=size, width=size)
    return {**parameters, **changes}


def study_comparison(specs: Sequence[str], parameters: Mapping, *, cads_specs: Sequence[str] = (),
                     cads: CADSConfig | None = None, published_names: Mapping[str, str] | None = None,
                     annotator=None, progress: bool = False):
    """Text-to-image models compared as the source text compares Stable Diffusion versions, each on its
    study run at the setting of ``parameters`` (:func:`vlbias.t2i.study.study_run`: the same prompts and
    seeds, labelled by the same annotator; where the setting is 04b's, the runs and their VRBS are 04b's),
    those in ``cads_specs`` also with CADS ``cads``. One model that fails to load or run becomes a row of
    ``failures``, the others go on.

    Returns ``(ranking, runs, failures, studies)``: the ranking by VRBS (index ``"<spec> (<sampler>)"``;
    model, sampler, rank, VRBS and its interval, Spearman's ρ, published VRBS), the labelled manifests by
    ``(spec, sampler)``, the failures (model, stage, error) and the StudyRuns by ``(spec, sampler)``."""
    from ..models import load_image_text_model
    from ..models import _train_side_by_side
    from .study import study_run

    specs, cads_specs, published_names = _compared(specs, cads_specs, published_names)
    if cads_specs and (cads is None or cads.is_off):
        raise ValueError(f"cads_specs asks for CADS but the CADS settings switch it off "
                         f"({'none given' if cads is None else cads.label()}): give a noise scale above 0 and tau1 below 1")
    labeller = _loader(annotator, lambda: load_image_text_model(parameters["annotator_spec"], device=parameters["device"],
                                                                half=parameters.get("annotator_half")))
    _train_side_by_side(specs)
    studies, failures = {}, []
    for spec in specs:
        for sampler, config in (("plain", None), *((("CADS", cads),) if spec in cads_specs else ())):
            try:
                studies[spec, sampler] = study_run(spec, parameters, cads=config, annotator=labeller, progress=progress)
            except Exception as error:  # noqa: BLE001 -- reported as a row, never swallowed silently
                first_line = (str(error).strip().splitlines() or [""])[0]
                failures.append({"model": spec, "stage": f"run ({sampler})", "error": f"{type(error).__name__}: {first_line}"})
                break
    failures = pd.DataFrame(failures, columns=["model", "stage", "error"])
    runs = {key: run.labels for key, run in studies.items()}
    if not studies:
        return pd.DataFrame(), runs, failures, studies
    published = t2i_bias.published_scores().query("measure == 'vrbs'").set_index(["model", "sampler"])["value"]
    rows = [{"run": f"{spec} ({sampler})", "model": spec, "sampler": sampler, **run.row("VRBS"),
             "spearman_rho": run.scores["spearman_rho"].value,
             "published VRBS (source)": published.get((published_names[spec], sampler), np.nan)
             if spec in published_names else np.nan} for (spec, sampler), run in studies.items()]
    ranking = pd.DataFrame(rows).sort_values("VRBS", ascending=False, kind="stable").reset_index(drop=True)
    ranking.insert(2, "rank", np.arange(1, len(ranking) + 1))
    return ranking.set_index("run"), runs, failures, studies


def cads_change(spec: str, parameters: Mapping, noise_scale: float | None = None, model=None, annotator=None,
                n_boot: int | None = None, progress: bool = False) -> dict:
    """CADS's paired change of VRBS on ``spec``'s study runs at the setting of 04c's ``parameters`` (the
    model comparison's: :func:`comparison_parameters`), at ``noise_scale`` (default
    ``comparison_noise_scale``): :func:`vlbias.t2i.controls.paired_bias_comparison` of the plain run and the
    CADS run (the same jobs; images paired by profession and seed). The model card's CADS change; the
    summary dict of that function. ``model``/``annotator``: loaded models or functions loading them."""
    from .controls import paired_bias_comparison
    from .study import study_run

    setting = comparison_parameters(parameters)
    config = cads_config(parameters, parameters["comparison_noise_scale"] if noise_scale is None else noise_scale)
    plain = study_run(spec, setting, model=model, annotator=annotator, progress=progress)
    cads = study_run(spec, setting, cads=config, model=model, annotator=annotator, progress=progress)
    summary, _ = paired_bias_comparison(plain.labels, cads.labels, t2i_bias.reference_shares(),
                                        n_boot=int(n_boot or parameters["n_boot"]), seed=int(parameters["seed"]))
    return summary
