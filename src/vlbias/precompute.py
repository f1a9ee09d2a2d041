"""``python -m vlbias precompute --profile full [--only NAME] [--ray ADDRESS]``: the heavy stages on Ray.

It takes the preflight's plan (:func:`vlbias.plan.make_plan`: the same notebooks, parameters and
stages as ``python -m vlbias plan``), splits each stage into the units the notebooks already cache
in (a cache chunk of image embeddings or ColorFoil scores, a batch of manifest rows of generated
images) and runs the units on Ray actors. Each actor holds one model at a time (a fraction of a GPU
for an image-text model, a whole one for Stable Diffusion, or ``threads`` CPU cores) and calls the
very function a notebook calls (:func:`vlbias.embeddings.embed_images`,
:func:`vlbias.colorfoil.benchmark.score_benchmark`, :func:`vlbias.t2i.generation.generate_to_disk`),
restricted to its unit (:func:`vlbias.cache.only_chunks`, ``generate_to_disk(only=...)``). So it
writes the same checksummed chunks and manifest rows, atomically and under the same locks, and the
notebooks then find them cached.

Ray is the engine: actors are placed and restarted by Ray (``max_restarts``), a unit whose actor
died is retried by Ray (``max_task_retries``) and recomputes only what is not yet whole on disk,
and :class:`ray.util.ActorPool` hands units to idle actors. Ray is imported here only, lazily: the
notebooks and ``make book`` never need it.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: what each kind of stage counts, for the progress lines
ITEM_NAMES = {"image-embeddings": "images", "colorfoil-scores": "pairs", "generation": "images"}
#: generation notebooks whose images precompute draws: the plain run of 04a, which 04b reads too
GENERATION_NOTEBOOKS = ("04a", "04b")
CADS_NOTEBOOKS = ("04c",)
EXTENSION_NOTEBOOKS = ("04d",)
#: image-text models share a GPU by default (four actors per GPU); Stable Diffusion takes a whole one
DEFAULT_GPU_FRACTION = 0.25
#: a unit whose actor died is retried this many times (Ray restarts the actor for it)
RETRIES = 3
#: test hook: a file naming ``kind:index``; the worker computing that unit exits mid-forward, once
CRASH_ONCE_ENV = "VLBIAS_PRECOMPUTE_CRASH_ONCE"
#: passed to the workers, so that every node reads and writes the same folders and stays offline
PASSED_ENV = ("VLBIAS_CACHE_DIR", "VLBIAS_DATA_DIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE",
              "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", CRASH_ONCE_ENV)


class PrecomputeError(RuntimeError):
    """The plan cannot be precomputed as asked (missing data, bad arguments)."""


@dataclass
class Stage:
    """One heavy stage: a kind, a model and what its notebook's call needs (plain, picklable values)."""

    kind: str
    spec: str
    notebooks: list[str]
    load: dict[str, Any]        # keyword arguments of the model loader (device, half)
    call: dict[str, Any]        # what the cached call needs: data set, batch size, jobs, ...
    n_items: int
    unit_size: int              # rows per cache chunk, or jobs per generation batch

    @property
    def label(self) -> str:
        where = self.call.get("dataset_name") or self.call.get("run_dir", "")
        return f"{self.kind} {self.spec} ({where})"

    @property
    def n_units(self) -> int:
        return math.ceil(self.n_items / self.unit_size)

    def unit_items(self, index: int) -> int:
        return min(self.n_items, (index + 1) * self.unit_size) - index * self.unit_size


@dataclass
class Work:
    """The stages to run, their units still to do, and what is left to the notebooks."""

    stages: list[Stage] = field(default_factory=list)
    units: list[tuple[int, int]] = field(default_factory=list)   # (stage position, unit index)
    finished: int = 0                                            # generation batches already on disk
    left: list[str] = field(default_factory=list)                # stages the notebooks run themselves


# --------------------------------------------------------------------------- the plan


def notebook_parameters(notebook: Path, given: dict[str, Any]) -> dict[str, Any]:
    """The notebook's parameter defaults (its ``parameters`` cell), overridden by ``given``: what the
    notebook will run with, so that keys, jobs and settings here equal the notebook's."""
    from .runner import parameter_defaults

    return {**parameter_defaults(notebook), **given}


def _from_notebooks(folder, notebooks_dir: Path):
    """A notebook resolves a relative folder against notebooks/ (its working directory)."""
    if folder in (None, "fixture"):
        return folder
    return str((notebooks_dir / Path(folder).expanduser()).resolve())


def _default(function: Callable, name: str):
    """A parameter's default: the chunk sizes of the notebooks' cache entries are those of their calls."""
    import inspect

    return inspect.signature(function).parameters[name].default


def build_work(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
               assignments: Iterable[str] = ()) -> Work:
    """The stages of the preflight's plan that precompute runs, split into units not yet done."""
    from . import plan as preflight
    from . import runner

    root = runner.find_project_root(project_dir)
    run = runner.plan_run(root, profile, only, assignments)
    plans = preflight.make_plan(profile, only, root, assignments)
    blocking = [f"[{p.name}] {problem}" for p in plans for problem in p.problems
                if not problem.startswith("timeout ")]  # precompute is how a short timeout is met
    if blocking:
        raise PrecomputeError("the preflight found problems to fix first (python -m vlbias plan "
                              f"--profile {profile} says more):\n  " + "\n  ".join(blocking))
    notebooks = runner.list_notebooks(root)
    work, seen = Work(), {}
    for notebook_plan in plans:
        name = notebook_plan.name
        parameters = notebook_parameters(notebooks[name], run.parameters[name])
        for kind, spec in notebook_plan.stages:
            for stage in _stages(kind, spec, name, parameters, root / "notebooks", work):
                key = (stage.kind, stage.spec, repr(sorted(stage.load.items())), stage.call.get("identity"))
                if key in seen:
                    seen[key].notebooks.append(name)
                else:
                    seen[key] = stage
                    work.stages.append(stage)
    for position, stage in enumerate(work.stages):
        done = _finished_batches(stage) if stage.kind == "generation" else set()
        work.finished += len(done)
        work.units += [(position, index) for index in range(stage.n_units) if index not in done]
    return work


def _stages(kind: str, spec: str, notebook: str, parameters: dict, notebooks_dir: Path, work: Work) -> list[Stage]:
    data_root = _from_notebooks(parameters.get("data_root"), notebooks_dir)
    load = {"device": parameters.get("device", "auto"), "half": bool(parameters.get("half", False))}
    if kind == "image-embeddings":
        from .data import load_dataset
        from .embeddings import embed_images

        source = {"name": "fairface", "root": data_root, "split": parameters.get("split", "train"),
                  "padding": parameters.get("padding", "1.25")}
        dataset = load_dataset(source["name"], root=source["root"], split=source["split"], padding=source["padding"])
        call = {"dataset": source, "dataset_name": "fairface", "identity": dataset.identity,
                "batch_size": int(parameters.get("batch_size", 32))}
        return [Stage(kind, spec, [notebook], load, call, len(dataset), _default(embed_images, "chunk_size"))]
    if kind == "colorfoil-scores":
        return _colorfoil_stages(spec, notebook, parameters, data_root, load, notebooks_dir)
    if kind == "generation" and notebook.startswith(GENERATION_NOTEBOOKS):
        return [_generation_stage(spec, notebook, parameters, notebooks_dir)]
    if kind == "generation" and notebook.startswith(CADS_NOTEBOOKS):
        return _cads_notebook_stages(spec, notebook, parameters, notebooks_dir)
    if kind == "generation" and notebook.startswith(EXTENSION_NOTEBOOKS):
        return [_extension_stage(spec, notebook, parameters, notebooks_dir)]
    why = {"annotation": "zero-shot labels are not cached; the notebook computes them",
           "generation": "its own sampler or prompts; the notebook draws them, resumably"}.get(kind, "not covered")
    work.left.append(f"{notebook}: {kind} with {spec} ({why})")
    return []


def _colorfoil_stages(spec: str, notebook: str, parameters: dict, data_root, load: dict,
                      notebooks_dir: Path) -> list[Stage]:
    """One stage per data set, with the benchmark rebuilt exactly as the notebook rebuilds it."""
    from .colorfoil import benchmark as cf
    from .data import load_dataset

    splits = {"coco": parameters.get("coco_split", "val2017"), "flickr30k": parameters.get("flickr_splits", ["val", "test"])}
    datasets = {name: load_dataset(name, root=data_root, split=split) for name, split in splits.items()}
    max_foils = max(list(parameters.get("foil_counts", [1, 2, 4])) + [parameters.get("confusion_foils", 4)])
    benchmark_dir = _from_notebooks(parameters.get("benchmark_dir"), notebooks_dir)
    benchmarks = cf.benchmarks_for(
        datasets, benchmark_dir, foil_type_name=parameters.get("foil_type", "colour"),
        construction=parameters.get("construction", "ours"),
        caption_choices={"coco": parameters.get("coco_caption_choice", "first_with_word"),
                         "flickr30k": parameters.get("flickr_caption_choice", "all")},
        colour_selection=parameters.get("colour_selection", "css3"), targets=parameters.get("foil_targets"),
        max_foils=max_foils, seed=parameters.get("seed", 0), max_pairs=parameters.get("max_pairs"), progress=False)
    datasets, _ = cf.with_foils(datasets, benchmarks, parameters.get("foil_type", "colour"))
    stages = []
    for name, dataset in datasets.items():
        call = {"dataset": {"name": name, "root": data_root, "split": splits[name]}, "dataset_name": name,
                "identity": f"{dataset.identity}/{len(benchmarks[name])} pairs", "benchmark": benchmarks[name],
                "max_foils": max_foils, "batch_size": int(parameters.get("batch_size", 32))}
        stages.append(Stage("colorfoil-scores", spec, [notebook], load, call, len(benchmarks[name]),
                            _default(cf.score_benchmark, "chunk_size")))
    return stages


def _pipeline_settings(parameters: dict) -> dict:
    return {name: parameters[name] for name in ("num_inference_steps", "guidance_scale", "height", "width")
            if name in parameters}


def _image_stage(spec: str, notebook: str, parameters: dict, notebooks_dir: Path, jobs, folder: str,
                 settings: dict | None = None, cads=None) -> Stage:
    """A generation stage: ``jobs`` drawn by ``spec`` into ``output_dir/<spec>/<folder>`` (the notebook's
    :func:`vlbias.t2i.generation.run_directory`), with the notebook's pipeline settings unless
    ``settings`` are given, sampling with CADS when ``cads`` (a :class:`CADSConfig`) is given."""
    from .t2i.generation import run_directory

    run_dir = run_directory(notebooks_dir / parameters.get("output_dir", "../outputs/full/text_to_image"),
                            spec, folder).resolve()
    batch_size = int(parameters.get("batch_size", 8))
    call = {"jobs": jobs, "run_dir": str(run_dir), "identity": str(run_dir), "batch_size": batch_size,
            "settings": _pipeline_settings(parameters) if settings is None else settings,
            "cads": None if cads is None else cads.as_dict()}
    return Stage("generation", spec, [notebook], {"device": parameters.get("device", "auto")}, call, len(jobs),
                 batch_size)


def _generation_stage(spec: str, notebook: str, parameters: dict, notebooks_dir: Path) -> Stage:
    """The plain run of Part IV, with the jobs, folder and settings of 04a's cell."""
    from .t2i.bias import study_professions
    from .t2i.generation import prompt_jobs

    professions = study_professions(include_source_cases=parameters.get("include_source_cases", True))
    jobs = prompt_jobs(list(professions.profession), parameters.get("prompt_template", "A photo of a {profession}"),
                       int(parameters.get("images_per_profession", 100)), seed=parameters.get("seed", 0),
                       articles=parameters.get("prompt_articles", "follow"))
    return _image_stage(spec, notebook, parameters, notebooks_dir, jobs, "plain")


def _extension_stage(spec: str, notebook: str, parameters: dict, notebooks_dir: Path) -> Stage:
    """04d's images: its own professions and prompt template, in its folder ``competent``."""
    from .t2i.generation import prompt_jobs

    jobs = prompt_jobs(list(parameters["professions"]), parameters.get("prompt_template", "A competent {profession}"),
                       int(parameters.get("images_per_profession", 50)), seed=parameters.get("seed", 0))
    return _image_stage(spec, notebook, parameters, notebooks_dir, jobs, "competent")


def _cads_notebook_stages(spec: str, notebook: str, parameters: dict, notebooks_dir: Path) -> list[Stage]:
    """04c's generation, one stage per folder, with the jobs, folders, samplers and settings of its cells:
    the noise-scale grid (:func:`vlbias.t2i.compare.noise_scale_grid`, one folder per CADS s), the
    controls' baselines (prompt intervention, negative prompt) and the model comparison
    (:func:`vlbias.t2i.compare.model_comparison`: every spec plain, and with CADS where asked)."""
    from .t2i.bias import study_professions
    from .t2i.cads import CADSConfig
    from .t2i.controls import intervened_jobs
    from .t2i.generation import prompt_jobs

    professions = list(study_professions(include_source_cases=False).profession)
    template, seed = parameters.get("prompt_template", "A photo of a {profession}"), parameters.get("seed", 0)
    jobs = prompt_jobs(professions, template, int(parameters.get("images_per_profession", 25)), seed=seed)
    cads = {name: parameters[name] for name in ("tau1", "tau2", "psi", "rescale", "schedule") if name in parameters}
    if "cads_branch" in parameters:
        cads["branch"] = parameters["cads_branch"]

    def stage(model_spec, stage_jobs, folder, settings=None, config=None):
        return _image_stage(model_spec, notebook, parameters, notebooks_dir, stage_jobs, folder, settings, config)

    stages = []
    for noise_scale in parameters.get("noise_scales") or [0.0]:  # the grid
        config = CADSConfig(noise_scale=noise_scale, **cads)
        plain = config.is_off
        stages.append(stage(spec, jobs, "cads-grid_" + ("plain" if plain else config.label()),
                            config=None if plain else config))
    chosen = parameters.get("control_professions")  # the controls' baselines, on the grid's jobs
    control_jobs = jobs[jobs.profession.isin(professions[:chosen] if chosen else professions)].reset_index(drop=True)
    suffix, negative = parameters.get("intervention_suffix", ", regardless of gender"), parameters.get("negative_prompt")
    if suffix:  # (an empty suffix fails in the notebook, with its own message)
        stages.append(stage(spec, intervened_jobs(control_jobs, suffix), f"intervention={suffix}"))
    if negative:
        stages.append(stage(spec, control_jobs, f"negative={negative}",
                            {**_pipeline_settings(parameters), "negative_prompt": negative}))
    compared = list(parameters.get("t2i_specs") or [])  # the model comparison
    if compared:
        comparison_jobs = prompt_jobs(professions, template, int(parameters.get("comparison_images_per_profession", 25)),
                                      seed=seed)
        size = parameters.get("comparison_size")
        comparison_settings = {"num_inference_steps": parameters.get("num_inference_steps", 50),
                               "guidance_scale": parameters.get("guidance_scale", 7.5), "height": size, "width": size}
        config = CADSConfig(noise_scale=parameters.get("comparison_noise_scale", 0.25), **cads)
        for model_spec in compared:
            stages.append(stage(model_spec, comparison_jobs, "model-comparison_plain", comparison_settings))
            if model_spec in (parameters.get("cads_t2i_specs") or []) and not config.is_off:
                stages.append(stage(model_spec, comparison_jobs, "model-comparison_" + config.label(),
                                    comparison_settings, config))
    return stages


def _finished_batches(stage: Stage) -> set[int]:
    """Generation batches whose every image is in the manifest and on disk (nothing to redo)."""
    import warnings

    from .t2i.generation import read_manifest

    run_dir = Path(stage.call["run_dir"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut-off line is reported by the worker that resumes it
        manifest = read_manifest(run_dir)
    done = {int(job) for job, name in zip(manifest["job_id"], manifest["file"]) if (run_dir / name).exists()}
    return {index for index in range(stage.n_units)
            if all(job in done for job in range(index * stage.unit_size, index * stage.unit_size + stage.unit_items(index)))}


# --------------------------------------------------------------------------- the worker


def _crash_if_asked(stage: Stage, index: int, model) -> None:
    """Fault injection for the tests: exit in the middle of this unit's forward pass, once."""
    marker = os.environ.get(CRASH_ONCE_ENV)
    if not marker or not Path(marker).exists() or Path(marker).read_text().strip() != f"{stage.kind}:{index}":
        return

    def crash(*args, **kwargs):
        Path(marker).unlink(missing_ok=True)
        os._exit(1)

    forward = {"image-embeddings": "encode_images", "colorfoil-scores": "score_candidates", "generation": "generate"}
    setattr(model, forward[stage.kind], crash)


def _release_gpu_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Worker:
    """A Ray actor's state: one model at a time (the last stage's), data sets opened once."""

    def __init__(self, threads: int, env: dict[str, str]):
        os.environ.update(env)
        import torch

        torch.set_num_threads(max(1, threads))
        self.threads = max(1, threads)
        self.model_key, self.model = None, None
        self.datasets: dict[str, Any] = {}
        self.unloadable: dict[tuple, Exception] = {}  # a model that failed to load fails its other units at once

    def _model(self, stage: Stage):
        key = (stage.kind == "generation", stage.spec, repr(sorted(stage.load.items())))
        if key in self.unloadable:
            raise self.unloadable[key]
        if key != self.model_key:
            self.model, self.model_key = None, None  # release the old one before loading (GPU memory)
            _release_gpu_memory()
            from .models import load_image_text_model, load_text_to_image

            load = load_text_to_image if stage.kind == "generation" else load_image_text_model
            try:
                self.model, self.model_key = load(stage.spec, **stage.load), key
            except Exception as error:
                self.unloadable[key] = error
                raise
        return self.model

    def _dataset(self, source: dict):
        key = repr(sorted(source.items()))
        if key not in self.datasets:
            from .data import load_dataset

            self.datasets[key] = load_dataset(source["name"], root=source["root"], split=source["split"],
                                              **({"padding": source["padding"]} if "padding" in source else {}))
        return self.datasets[key]

    def run(self, stage: Stage, position: int, index: int) -> dict[str, Any]:
        """Unit ``index`` of ``stage``: ``{position, index, computed, items, seconds, error}``."""
        started = time.monotonic()
        result = {"position": position, "index": index, "computed": 0, "items": stage.unit_items(index),
                  "error": None, "node": os.uname().nodename, "pid": os.getpid()}
        try:
            model = self._model(stage)
            _crash_if_asked(stage, index, model)
            result["computed"] = getattr(self, f"_run_{stage.kind.replace('-', '_')}")(stage, model, index)
        except Exception as error:  # noqa: BLE001 -- the driver reports it and carries on with the others
            first = (str(error).strip().splitlines() or [""])[0]
            result["error"] = f"{type(error).__name__}: {first}\n{traceback.format_exc(limit=4)}"
        result["seconds"] = time.monotonic() - started
        return result

    def _run_image_embeddings(self, stage: Stage, model, index: int) -> int:
        from .cache import only_chunks
        from .embeddings import embed_images

        with only_chunks([index]) as selection:
            embed_images(model, self._dataset(stage.call["dataset"]), batch_size=stage.call["batch_size"],
                         chunk_size=stage.unit_size, progress=False, decode_workers=self.threads)
        return stage.unit_items(index) if selection.computed else 0

    def _run_colorfoil_scores(self, stage: Stage, model, index: int) -> int:
        from .cache import only_chunks
        from .colorfoil.benchmark import score_benchmark

        with only_chunks([index]) as selection:
            score_benchmark(model, self._dataset(stage.call["dataset"]), stage.call["benchmark"],
                            max_foils=stage.call["max_foils"], batch_size=stage.call["batch_size"],
                            chunk_size=stage.unit_size, progress=False)
        return stage.unit_items(index) if selection.computed else 0

    def _run_generation(self, stage: Stage, model, index: int) -> int:
        from .t2i.generation import generate_to_disk, read_manifest

        run_dir = Path(stage.call["run_dir"])
        if stage.call.get("cads"):  # 04c: the same model, sampling with CADS (a wrapper; the model is unchanged)
            from .t2i.cads import CADSConfig, with_cads

            model = with_cads(model, CADSConfig(**stage.call["cads"]))
        batch = range(index * stage.unit_size, index * stage.unit_size + stage.unit_items(index))
        before = set(read_manifest(run_dir)["job_id"].astype(int)) if (run_dir / "manifest.csv").exists() else set()
        generate_to_disk(model, stage.call["jobs"], run_dir, batch_size=stage.call["batch_size"], progress=False,
                         only=batch, **stage.call["settings"])
        return sum(job not in before for job in batch)


# --------------------------------------------------------------------------- progress


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Progress:
    """Units done, items per second, and the time left at each kind's measured rate."""

    def __init__(self, work: Work, workers: int, write: Callable[[str], None], every_s: float = 5.0):
        self.work, self.workers, self.write, self.every_s = work, max(1, workers), write, every_s
        self.started = self.last = time.monotonic()
        self.done = 0
        self.items = {kind: 0 for kind in ITEM_NAMES}          # computed now
        self.busy = {kind: 0.0 for kind in ITEM_NAMES}         # worker-seconds spent computing them
        self.remaining = {kind: 0 for kind in ITEM_NAMES}
        for position, index in work.units:
            stage = work.stages[position]
            self.remaining[stage.kind] += stage.unit_items(index)

    def update(self, result: dict, final: bool = False) -> None:
        stage = self.work.stages[result["position"]]
        self.done += 1
        self.remaining[stage.kind] -= result["items"]
        if result["computed"]:
            self.items[stage.kind] += result["computed"]
            self.busy[stage.kind] += result["seconds"]
        now = time.monotonic()
        if final or now - self.last >= self.every_s:
            self.last = now
            self.write(self.line())

    def rate(self, kind: str) -> float:
        """Items per second of all workers together, at the rate each reached on ``kind``."""
        return self.items[kind] / max(self.busy[kind], 1e-9) * self.workers

    def eta_s(self) -> float | None:
        """Seconds left: each kind's remaining items at its per-worker rate times the workers; None
        while a kind with work left has no measured rate yet."""
        total = 0.0
        for kind, left in self.remaining.items():
            if left <= 0:
                continue
            if not self.items[kind]:
                return None
            total += left / self.rate(kind)
        return total

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        rates = ", ".join(f"{self.rate(k):.1f} {ITEM_NAMES[k]}/s ({k})" for k in ITEM_NAMES if self.items[k])
        eta = self.eta_s()
        return (f"[precompute] {self.done}/{len(self.work.units)} chunks done, {_duration(elapsed)} elapsed"
                + (f"; {rates}" if rates else "; nothing computed yet (all cached so far)")
                + f"; ETA {_duration(eta) if eta is not None else 'unknown (a kind has no rate yet)'}")


# --------------------------------------------------------------------------- running on Ray


def _worker_env(threads: int, profile_env: dict[str, str]) -> dict[str, str]:
    from .paths import cache_dir, data_dir

    env = {**profile_env, **{name: os.environ[name] for name in PASSED_ENV if name in os.environ}}
    env.update(VLBIAS_CACHE_DIR=str(cache_dir().resolve()), VLBIAS_DATA_DIR=str(data_dir().expanduser().resolve()),
               OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false",
               VLBIAS_PROGRESS_BARS="off")
    return env


def _gpu_share(stage: Stage, use_gpu: bool, gpu_fraction: float) -> float:
    """The GPU share of an actor running ``stage``: 0 on CPUs, a whole GPU for Stable Diffusion."""
    if not use_gpu or stage.load.get("device") == "cpu":
        return 0.0
    return 1.0 if stage.kind == "generation" else gpu_fraction


def execute(work: Work, workers: int | None = None, threads: int | None = None,
            gpu_fraction: float = DEFAULT_GPU_FRACTION, profile_env: dict[str, str] | None = None,
            write: Callable[[str], None] = print, progress_every_s: float = 5.0) -> dict[str, Any]:
    """Run ``work``'s units on the Ray instance this process is connected to.

    Units that need the same GPU share (all of them on CPUs; image-text models and Stable Diffusion
    apart on GPUs) go to one pool of actors, ``workers`` of them (default: as many as fit), each
    with ``threads`` CPU threads (default: the CPUs shared out among the pool's actors).
    Returns ``{"units", "computed", "failures", "seconds", "processes"}``: ``computed`` items (not
    found cached), ``failures`` the stages whose model failed to load or run, with the reason (the
    other stages still run), ``processes`` the (node, pid) of every actor that finished a unit.
    """
    import ray
    from ray.exceptions import RayActorError
    from ray.util import ActorPool

    resources = ray.cluster_resources()
    use_gpu, cpus = resources.get("GPU", 0) > 0, max(1, int(resources.get("CPU", 1)))
    started, failures, computed, processes = time.monotonic(), {}, 0, set()
    groups: dict[float, list[tuple[int, int]]] = {}
    for position, index in work.units:
        groups.setdefault(_gpu_share(work.stages[position], use_gpu, gpu_fraction), []).append((position, index))
    actor_class = ray.remote(Worker)
    stage_refs = {position: ray.put(stage) for position, stage in enumerate(work.stages)}
    for share, units in groups.items():
        fit = max(1, int(resources["GPU"] / share if share else cpus // (threads or 1)))
        count = max(1, min(len(units), workers or fit, fit))  # an actor that cannot be placed would hold its units
        if workers and workers > fit:
            write(f"[precompute] --workers {workers}: only {fit} fit in this Ray instance's "
                  + ("GPUs" if share else "CPUs") + f"; using {fit}")
        actor_threads = max(1, threads or cpus // count)
        write(f"[precompute] {len(units)} chunks on {count} Ray actor(s), each with "
              + (f"{share:g} GPU and " if share else "") + f"{actor_threads} CPU thread(s)")
        options = {"num_cpus": actor_threads, "num_gpus": share, "max_restarts": RETRIES,
                   "max_task_retries": RETRIES}
        env = _worker_env(actor_threads, profile_env or {})
        actors = [actor_class.options(**options).remote(actor_threads, env) for _ in range(count)]
        pool, meter = ActorPool(actors), Progress(Work(work.stages, units), count, write, progress_every_s)
        for position, index in units:
            pool.submit(lambda actor, unit: actor.run.remote(stage_refs[unit[0]], *unit), (position, index))
        try:
            while pool.has_next():
                result = pool.get_next_unordered()
                stage = work.stages[result["position"]]
                if result["error"]:
                    failures.setdefault(stage.label, result["error"])
                computed += result["computed"]
                processes.add((result["node"], result["pid"]))
                meter.update(result, final=not pool.has_next())
        except RayActorError as error:
            raise PrecomputeError(f"a Ray worker died {RETRIES + 1} times on one chunk ({error}). Rerun the command: "
                                  "finished chunks and images are kept, and only the rest is computed.") from error
        finally:
            for actor in actors:
                ray.kill(actor)
    return {"units": len(work.units), "computed": computed, "failures": failures,
            "seconds": time.monotonic() - started, "processes": sorted(processes)}


def describe(work: Work) -> str:
    lines = []
    for position, stage in enumerate(work.stages):
        todo = sum(1 for p, _ in work.units if p == position)
        lines.append(f"  {stage.label}: {stage.n_items:,} {ITEM_NAMES[stage.kind]} in {stage.n_units} chunk(s), "
                     f"{todo} to run (for {', '.join(stage.notebooks)})")
    if work.finished:
        lines.append(f"  {work.finished} generation batch(es) already on disk: skipped")
    lines += [f"  left to the notebook: {text}" for text in work.left]
    return "\n".join(lines)


def precompute(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
               assignments: Iterable[str] = (), address: str | None = None, workers: int | None = None,
               threads: int | None = None, gpu_fraction: float = DEFAULT_GPU_FRACTION,
               write: Callable[[str], None] = print, progress_every_s: float = 5.0) -> dict[str, Any]:
    """Plan, then run the heavy stages on Ray; see the module docstring. Joins the cluster at
    ``address``, else uses the Ray instance this process already started, else starts a local one
    (and stops it afterwards)."""
    from . import runner

    if workers is not None and workers < 1:
        raise PrecomputeError(f"--workers must be at least 1, got {workers}.")
    if not 0 < gpu_fraction <= 1:
        raise PrecomputeError(f"--gpu-fraction must be in (0, 1], got {gpu_fraction}.")
    work = build_work(profile, only, project_dir, assignments)
    write(f"[precompute] {len(work.stages)} stage(s), {len(work.units)} chunk(s) to run:\n{describe(work)}")
    if not work.units:
        return {"units": 0, "computed": 0, "failures": {}, "seconds": 0.0, "processes": []}
    try:
        import ray
    except ImportError as error:
        raise PrecomputeError("precompute needs Ray: pip install the ray version pinned in requirements.txt") from error
    profile_env = runner.plan_run(runner.find_project_root(project_dir), profile, only, assignments).env
    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # an offline book: nothing reported anywhere
        # a cluster's nodes read the same folders; a local instance gets this machine's CPUs and GPUs
        ray.init(address=address, include_dashboard=False, log_to_driver=True)
    elif address:
        write("[precompute] already connected to Ray: --ray is ignored")
    try:
        summary = execute(work, workers, threads, gpu_fraction, profile_env, write, progress_every_s)
    finally:
        if started_here:
            ray.shutdown()
    for label, error in summary["failures"].items():
        write(f"[precompute] FAILED {label}: {error.splitlines()[0]}")
    write(f"[precompute] {summary['units']} chunk(s) in {_duration(summary['seconds'])}; "
          f"{summary['computed']:,} items computed now"
          + (f"; {len(summary['failures'])} stage(s) failed (the notebooks will list them)" if summary["failures"] else ""))
    return summary


def main(profile: str, only: Iterable[str] = (), project_dir: Path | None = None, assignments: Iterable[str] = (),
         address: str | None = None, workers: int | None = None, threads: int | None = None,
         gpu_fraction: float = DEFAULT_GPU_FRACTION) -> int:
    try:
        summary = precompute(profile, only, project_dir, assignments, address, workers, threads, gpu_fraction,
                             write=lambda text: print(text, flush=True))
    except PrecomputeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 1 if summary["failures"] else 0
