"""The image runs Part IV draws: their job lists and folder names, each built in one place.

A notebook's calls (:func:`vlbias.t2i.study.study_run`, behind 04b's study and 04c's grid and model
comparison; the controls' baselines of ``04c_cads``) and the declarations that ``python -m vlbias precompute``
reads (:mod:`vlbias.t2i.stages`) both take their jobs and folders from here, so a run drawn ahead
of the notebook lands where the notebook looks for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .cads import CADSConfig
from .controls import intervened_jobs
from .generation import prompt_jobs

#: folder of the plain run of ``04a_generation`` (read by ``04b_annotation_and_metrics`` too)
PLAIN_FOLDER = "plain"
#: folder of ``04d_extensions``' images
EXTENSION_FOLDER = "competent"


def study_jobs(template: str, per_profession: int, seed: int = 0, include_source_cases: bool = True,
               articles: str = "follow") -> pd.DataFrame:
    """``per_profession`` jobs for each of the study's professions (:func:`vlbias.t2i.bias.study_professions`)."""
    from .bias import study_professions

    professions = study_professions(include_source_cases=include_source_cases)
    return prompt_jobs(list(professions.profession), template, per_profession, seed=seed, articles=articles)


def study_folder(jobs: pd.DataFrame, settings: Mapping, config: CADSConfig | None = None) -> str:
    """The folder of a run of the study's ``jobs`` with the pipeline ``settings``, plain (``config`` None or
    off) or with CADS: ``plain`` or the CADS label, the images per profession, and a digest of the jobs
    (profession, prompt, seed) and settings. Every page that draws the same jobs the same way (04a, 04b,
    04c's grid and model comparison, the model card) finds the same images there; another job list never
    lands in a folder holding this one's (which :func:`~vlbias.t2i.generation.generate_to_disk` refuses)."""
    import hashlib
    import json

    per = int(jobs.groupby("profession", sort=False).size().max()) if len(jobs) else 0
    recipe = jobs[["profession", "prompt", "seed"]].to_csv(index=False) + json.dumps(
        {name: settings[name] for name in sorted(settings)}, default=str)
    name = "plain" if config is None or config.is_off else config.label()
    return f"{name}_{per}-per-profession_{hashlib.sha256(recipe.encode()).hexdigest()[:8]}"


def named_folder(name: str, jobs: pd.DataFrame, settings: Mapping) -> str:
    """The folder of a run named ``name`` (04c's baselines, ``intervention=...`` and ``negative=...``; 04d's
    :data:`EXTENSION_FOLDER`) on ``jobs`` with ``settings``: the name, the images per profession and a
    digest of both, as :func:`study_folder` (a longer job list is another folder, never a clash)."""
    return name + study_folder(jobs, settings).removeprefix("plain")


def grid_folder(config: CADSConfig) -> str:
    """The folder of one noise scale of 04c's grid: its own, since the grid draws fewer images per
    profession than the main run."""
    return "cads-grid_" + ("plain" if config.is_off else config.label())


def comparison_folder(config: CADSConfig | None) -> str:
    """The folder of one sampler of 04c's model comparison (``None``: plain sampling)."""
    return "model-comparison_" + ("plain" if config is None else config.label())


def control_jobs(jobs: pd.DataFrame, control_professions: int | None) -> tuple[list[str], pd.DataFrame]:
    """The professions the controls' baselines use (the first ``control_professions``, or all) and
    their rows of ``jobs`` (the same seeds)."""
    names = list(dict.fromkeys(jobs.profession))
    chosen = names[:control_professions] if control_professions else names
    return chosen, jobs[jobs.profession.isin(chosen)].reset_index(drop=True)


def control_baselines(jobs: pd.DataFrame, intervention_suffix: str,
                      negative_prompt: str | None) -> dict[str, tuple[pd.DataFrame, dict, str]]:
    """04c's baselines on the controls' ``jobs``: ``{name: (jobs, extra settings, folder)}``, the
    prompt intervention always (an empty suffix is an error), the negative prompt when given."""
    baselines = {"prompt intervention": (intervened_jobs(jobs, intervention_suffix), {},
                                         f"intervention={intervention_suffix}")}
    if negative_prompt:
        baselines["negative prompt"] = (jobs, {"negative_prompt": negative_prompt}, f"negative={negative_prompt}")
    return baselines


def comparison_samplers(spec: str, cads_specs: Sequence[str], cads: Mapping | None) -> list[tuple[str, CADSConfig | None]]:
    """The samplers 04c's model comparison draws ``spec`` with: ``("plain", None)``, and
    ``("CADS", config)`` when ``spec`` is among ``cads_specs``."""
    config = CADSConfig(**dict(cads or {}))
    return [("plain", None)] + ([("CADS", config)] if spec in cads_specs else [])
