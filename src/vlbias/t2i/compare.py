"""Part IV's comparisons across samplers: the CADS noise-scale grid (``04c_cads``)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..embeddings import embed_images
from ..models.base import ImageTextModel, TextToImageModel
from . import annotation
from . import bias as t2i_bias
from .cads import CADSConfig, with_cads
from .generation import ImageFiles, generate_to_disk, run_directory


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
        # its own folders: the grid draws fewer images per profession than the main run
        run_dir = run_directory(output_dir, model.spec, "cads-grid_" + ("plain" if config.is_off else config.label()))
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
