"""The image runs Part IV draws: their job lists and folder names, each built in one place.

A notebook's calls (:func:`vlbias.t2i.compare.noise_scale_grid`, :func:`~vlbias.t2i.compare.model_comparison`,
the controls' baselines of ``04c_cads``) and the declarations that ``python -m vlbias precompute``
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
