"""``python -m vlbias precompute --profile full [--only NAME] [--ray ADDRESS]``: the heavy stages on Ray.

It takes the preflight's plan (:func:`vlbias.plan.make_plan`: the same notebooks, parameters and
stages as ``python -m vlbias plan``) and, for each notebook, the stages its part declares
(:mod:`vlbias.stages`; ``vlbias.<part>.stages``), cut into the units the notebooks already cache in
(a cache chunk of image embeddings or ColorFoil scores, a batch of manifest rows of generated
images), and runs the units on Ray actors: this module is the executor, and knows no notebook. Each actor holds one model at a time (a fraction of a GPU
for an image-text model, a whole one for Stable Diffusion, or ``threads`` CPU cores) and calls the
very function a notebook calls (:func:`vlbias.embeddings.embed_images`,
:func:`vlbias.colorfoil.evaluation.score_benchmark`, :func:`vlbias.t2i.generation.generate_to_disk`),
through the stage's ``run_unit``, restricted to its unit (:func:`vlbias.cache.only_chunks`, ``generate_to_disk(only=...)``). So it
writes the same checksummed chunks and manifest rows, atomically and under the same locks, and the
notebooks then find them cached.

Ray is the engine: actors are placed and restarted by Ray (``max_restarts``), a unit whose actor
died is retried by Ray (``max_task_retries``) and recomputes only what is not yet whole on disk,
and :class:`ray.util.ActorPool` hands units to idle actors. Ray is imported here only, lazily: the
notebooks and ``make book`` never need it.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .stages import KINDS, Context, Stage

#: image-text models share a GPU by default (four actors per GPU); Stable Diffusion takes a whole one
DEFAULT_GPU_FRACTION = 0.25
#: a unit whose actor died is retried this many times (Ray restarts the actor for it)
RETRIES = 3
#: what a CPU actor holds beside its model's weights (Python, torch, a batch's activations at the CPU's
#: sizes): the dress rehearsal's SD 3 actor held 14.44 GB for 14.02 GB of float32 weights (issue 24)
ACTOR_OVERHEAD_GB = 1.0
#: test hook: a file naming ``kind:index``; the worker computing that unit exits mid-forward, once
CRASH_ONCE_ENV = "VLBIAS_PRECOMPUTE_CRASH_ONCE"
#: passed to the workers, so that every node reads and writes the same folders and stays offline
PASSED_ENV = ("VLBIAS_CACHE_DIR", "VLBIAS_DATA_DIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE",
              "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", CRASH_ONCE_ENV)


class PrecomputeError(RuntimeError):
    """The plan cannot be precomputed as asked (missing data, bad arguments)."""


@dataclass
class Work:
    """The stages to run, their units still to do, and what is left to the notebooks."""

    stages: list[Stage] = field(default_factory=list)
    units: list[tuple[int, int]] = field(default_factory=list)   # (stage position, unit index)
    finished: int = 0                                            # generation batches already on disk
    left: list[str] = field(default_factory=list)                # stages the notebooks run themselves


# --------------------------------------------------------------------------- the plan


def build_work(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
               assignments: Iterable[str] = (), run=None) -> Work:
    """The declared stages of the preflight's notebooks, split into units not yet done (``run``: the
    :class:`~vlbias.profiles.RunPlan` of these arguments, when the caller has it)."""
    from . import plan as preflight
    from . import profiles

    root = profiles.find_project_root(project_dir)
    run = run or profiles.plan_run(root, profile, only, assignments)
    plans = preflight.make_plan(profile, only, root, assignments, run=run)
    blocking = [f"[{p.name}] {problem}" for p in plans for problem in p.problems
                if not problem.startswith("timeout ")]  # precompute is how a short timeout is met
    if blocking:
        raise PrecomputeError("the preflight found problems to fix first (python -m vlbias plan "
                              f"--profile {profile} says more):\n  " + "\n  ".join(blocking))
    context = Context(root / "notebooks", parameters_of=profiles.profile_parameters(root, profile))
    work, seen = Work(), {}
    for notebook_plan in plans:
        name = notebook_plan.name
        declared = preflight.declaration(name)
        parameters = profiles.notebook_parameters(root, name, run)
        for stage_declaration in declared.stages:
            if stage_declaration.units is None:
                specs = ", ".join(declared.specs({key: parameters.get(key) for key in stage_declaration.models}))
                work.left.append(f"{name}: {stage_declaration.kind}{f' with {specs}' if specs else ''} "
                                 f"({stage_declaration.left})")
                continue
            for stage in stage_declaration.units(parameters, context):
                stage.notebooks = [name]
                stage.spec = _as_notebook_resolves(stage.spec, context)
                if stage.key in seen:
                    seen[stage.key].notebooks.append(name)
                else:
                    seen[stage.key] = stage
                    work.stages.append(stage)
    for position, stage in enumerate(work.stages):
        done = _finished_batches(stage) if stage.kind == "generation" else set()
        work.finished += len(done)
        work.units += [(position, index) for index in range(stage.n_units) if index not in done]
    return work


def _as_notebook_resolves(spec: str, context: Context) -> str:
    """A spec as the notebook, whose working directory is ``notebooks/``, resolves it: a relative local
    directory becomes absolute, so a worker anywhere loads the same checkpoint."""
    from .models.spec import parse_spec

    parsed = parse_spec(spec, base=context.notebooks_dir)
    return parsed.canonical if parsed.source == "local" else spec  # a directory's options kept


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

    setattr(model, stage.forward, crash)


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
        key = (stage.loader, stage.spec, repr(sorted(stage.load.items())))
        if key in self.unloadable:
            raise self.unloadable[key]
        if key != self.model_key:
            self.model, self.model_key = None, None  # release the old one before loading (GPU memory)
            _release_gpu_memory()
            from .models import load_image_text_model, load_text_to_image

            load = {"image-text": load_image_text_model, "text-to-image": load_text_to_image}[stage.loader]
            try:
                self.model, self.model_key = load(stage.spec, **stage.load), key
            except Exception as error:
                self.unloadable[key] = error
                raise
        return self.model

    def dataset(self, source: dict):
        """``load_dataset(**source)``, opened once per worker."""
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
            result["computed"] = stage.run_unit(stage, model, index, self)
        except Exception as error:  # noqa: BLE001 -- the driver reports it and carries on with the others
            first = (str(error).strip().splitlines() or [""])[0]
            result["error"] = f"{type(error).__name__}: {first}\n{traceback.format_exc(limit=4)}"
        result["seconds"] = time.monotonic() - started
        return result


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
        self.items = {kind: 0 for kind in KINDS}               # computed now
        self.busy = {kind: 0.0 for kind in KINDS}              # worker-seconds spent computing them
        self.remaining = {kind: 0 for kind in KINDS}
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
        rates = ", ".join(f"{self.rate(k):.1f} {KINDS[k]}/s ({k})" for k in KINDS if self.items[k])
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


def stage_memory_gb(stage: Stage) -> float | None:
    """The memory an actor running ``stage`` needs: its model's weights at the precision it is loaded
    in, counted from the files (:func:`vlbias.models.footprint.weights_gb`), plus
    :data:`ACTOR_OVERHEAD_GB`; None where the files are not on this machine."""
    from .models.footprint import weights_gb

    try:
        weights = weights_gb(stage.spec, bool(stage.load.get("half")))
    except (OSError, ValueError) as error:  # an unreadable file: the loader will say what is wrong with it
        print(f"[precompute] {stage.spec}: its weights could not be counted ({error}); its actors are not "
              "limited by memory", file=sys.stderr)
        return None
    return None if weights is None else weights + ACTOR_OVERHEAD_GB


def memory_fit(need_gb: float | None, nodes_gb: Iterable[float]) -> int | None:
    """How many actors needing ``need_gb`` each the nodes hold, given each node's free memory; None
    when the need is unknown."""
    if need_gb is None:
        return None
    return sum(int(free // need_gb) for free in nodes_gb)


def pools(units: list[tuple[int, int]], shares: dict[int, float], needs: dict[int, float | None],
          nodes_gb: list[float], most: int) -> list[tuple[float, int | None, list[tuple[int, int]]]]:
    """``units`` (stage position, unit index) as the pools that run one after another, each
    ``(GPU share, room, units)``: units of one GPU share and, on CPUs, whose stage leaves ``room``
    for fewer than the ``most`` actors a CPU pool may have (:func:`memory_fit` of the stage's
    ``needs``); room None: not limited by memory (or the need is unknown). The unlimited pools come
    first, then the ones with room for the most actors."""
    groups: dict[tuple[float, int | None], list[tuple[int, int]]] = {}
    for position, index in units:
        share = shares[position]
        room = None if share else memory_fit(needs.get(position), nodes_gb)
        groups.setdefault((share, None if room is None or room >= most else room), []).append((position, index))
    return [(share, room, members) for (share, room), members in
            sorted(groups.items(), key=lambda group: -math.inf if group[0][1] is None else -group[0][1])]


def actor_count(n_units: int, workers: int | None, fit: int, room: int | None) -> int:
    """The actors of one pool: ``workers`` (default: as many as ``fit`` the CPUs or GPUs), no more than
    fit (an actor that cannot be placed would hold its units), than its units, or than its memory
    ``room`` (None: not limited); at least one."""
    count = min(n_units, workers or fit, fit)
    if room is not None:
        count = min(count, room)
    return max(1, count)


def _nodes_memory_gb(ray) -> list[float]:
    """Each live node's memory for tasks when Ray started there: its ``memory`` resource and its object
    store's (the store holds only the stages' small descriptions here), in GB."""
    return [(node["Resources"].get("memory", 0.0) + node["Resources"].get("object_store_memory", 0.0)) / 1e9
            for node in ray.nodes() if node.get("Alive")]


def execute(work: Work, workers: int | None = None, threads: int | None = None,
            gpu_fraction: float = DEFAULT_GPU_FRACTION, profile_env: dict[str, str] | None = None,
            write: Callable[[str], None] = print, progress_every_s: float = 5.0) -> dict[str, Any]:
    """Run ``work``'s units on the Ray instance this process is connected to.

    Units that need the same GPU share (all of them on CPUs; image-text models and Stable Diffusion
    apart on GPUs) go to one pool of actors, ``workers`` of them (default: as many as fit), each
    with ``threads`` CPU threads (default: the CPUs shared out among the pool's actors). On CPUs the
    actors' models share the nodes' memory: units whose model leaves room for fewer actors
    (:func:`stage_memory_gb`, :func:`memory_fit`) go to a pool of that many, after the others.
    Returns ``{"units", "computed", "failures", "seconds", "processes"}``: ``computed`` items (not
    found cached), ``failures`` the stages whose model failed to load or run, with the reason (the
    other stages still run), ``processes`` the (node, pid) of every actor that finished a unit.
    """
    import ray
    from ray.exceptions import OutOfMemoryError, RayActorError
    from ray.util import ActorPool

    resources = ray.cluster_resources()
    use_gpu, cpus = resources.get("GPU", 0) > 0, max(1, int(resources.get("CPU", 1)))
    started, failures, computed, processes = time.monotonic(), {}, 0, set()
    nodes_gb = _nodes_memory_gb(ray)
    shares = {position: _gpu_share(stage, use_gpu, gpu_fraction) for position, stage in enumerate(work.stages)}
    needs = {position: None if shares[position] else stage_memory_gb(stage)  # a GPU actor's model is in its GPU
             for position, stage in enumerate(work.stages)}
    actor_class = ray.remote(Worker)
    stage_refs = {position: ray.put(stage) for position, stage in enumerate(work.stages)}
    cpu_fit = max(1, cpus // (threads or 1))
    for share, room, units in pools(work.units, shares, needs, nodes_gb, min(workers or cpu_fit, cpu_fit)):
        fit = max(1, int(resources["GPU"] / share if share else cpus // (threads or 1)))
        if workers and workers > fit:
            write(f"[precompute] --workers {workers}: only {fit} fit in this Ray instance's "
                  + ("GPUs" if share else "CPUs") + f"; using {fit}")
        count = actor_count(len(units), workers, fit, room)
        wanted = actor_count(len(units), workers, fit, None)
        if count < wanted:
            positions = {position for position, _ in units}
            largest = max(positions, key=lambda position: needs[position] or 0.0)
            write(f"[precompute] {count} actor(s), not {wanted}, for {len(positions)} stage(s): "
                  f"{work.stages[largest].spec} needs about {needs[largest]:.1f} GB in an actor (its weights, "
                  f"counted from its files, and {ACTOR_OVERHEAD_GB:g} GB beside them), and the node(s) had "
                  f"{', '.join(f'{free:.1f}' for free in nodes_gb)} GB free when Ray started"
                  + ("; one actor tries it" if room < 1 else ""))
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
        except OutOfMemoryError as error:
            first = (str(error).strip().splitlines() or [""])[0]
            raise PrecomputeError(f"Ray's memory monitor killed a worker: the machine ran out of memory ({first}). "
                                  "Finished chunks and images are kept: rerun with --workers 1 (one model in "
                                  "memory at a time), or stop what else is using the memory, and only the rest is "
                                  "computed.") from error
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
        lines.append(f"  {stage.label}: {stage.n_items:,} {KINDS[stage.kind]} in {stage.n_units} chunk(s), "
                     f"{todo} to run (for {', '.join(stage.notebooks)})")
    if work.finished:
        lines.append(f"  {work.finished} generation batch(es) already on disk: skipped")
    lines += [f"  left to the notebook: {text}" for text in work.left]
    return "\n".join(lines)


@contextlib.contextmanager
def ray_session(address: str | None = None, write: Callable[[str], None] = print, needed_by: str = "precompute"):
    """Ray for the block: the cluster at ``address``, else the instance this process already started,
    else a local one, stopped when the block ends (an instance that was running before is left
    running). Without Ray installed, one error that says how to install it."""
    try:
        import ray
    except ImportError as error:
        raise PrecomputeError(f"{needed_by} needs Ray: pip install the ray version pinned in requirements.txt") from error
    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # an offline book: nothing reported anywhere
        # a cluster's nodes read the same folders; a local instance gets this machine's CPUs and GPUs
        ray.init(address=address or None, include_dashboard=False, log_to_driver=True)
    elif address:
        write(f"[{needed_by}] already connected to Ray: --ray is ignored")
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def precompute(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
               assignments: Iterable[str] = (), address: str | None = None, workers: int | None = None,
               threads: int | None = None, gpu_fraction: float = DEFAULT_GPU_FRACTION,
               write: Callable[[str], None] = print, progress_every_s: float = 5.0,
               part: int | None = None) -> dict[str, Any]:
    """Plan, then run the heavy stages on Ray; see the module docstring. Joins the cluster at
    ``address``, else uses the Ray instance this process already started, else starts a local one
    (and stops it afterwards). ``part``: only the notebooks of that part (``0<part>*``), as ``run --part``."""
    if workers is not None and workers < 1:
        raise PrecomputeError(f"--workers must be at least 1, got {workers}.")
    if not 0 < gpu_fraction <= 1:
        raise PrecomputeError(f"--gpu-fraction must be in (0, 1], got {gpu_fraction}.")
    from . import profiles

    root = profiles.find_project_root(project_dir)
    run = profiles.plan_run(root, profile, only, assignments, part)  # once: the plan, the stages, the workers' env
    work = build_work(profile, only, root, assignments, run=run)
    write(f"[precompute] {len(work.stages)} stage(s), {len(work.units)} chunk(s) to run:\n{describe(work)}")
    if not work.units:
        return {"units": 0, "computed": 0, "failures": {}, "seconds": 0.0, "processes": []}
    with ray_session(address, write):
        summary = execute(work, workers, threads, gpu_fraction, run.env, write, progress_every_s)
    for label, error in summary["failures"].items():
        write(f"[precompute] FAILED {label}: {error.splitlines()[0]}")
    write(f"[precompute] {summary['units']} chunk(s) in {_duration(summary['seconds'])}; "
          f"{summary['computed']:,} items computed now"
          + (f"; {len(summary['failures'])} stage(s) failed (the notebooks will list them)" if summary["failures"] else ""))
    return summary


def main(profile: str, only: Iterable[str] = (), project_dir: Path | None = None, assignments: Iterable[str] = (),
         address: str | None = None, workers: int | None = None, threads: int | None = None,
         gpu_fraction: float = DEFAULT_GPU_FRACTION, part: int | None = None) -> int:
    try:
        summary = precompute(profile, only, project_dir, assignments, address, workers, threads, gpu_fraction,
                             write=lambda text: print(text, flush=True), part=part)
    except PrecomputeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 1 if summary["failures"] else 0
