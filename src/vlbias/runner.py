"""Execute the book's notebooks with papermill, then build the Jupyter Book.

Which notebooks run, and with which parameters, is :mod:`vlbias.profiles` (``params/<profile>.yml``,
``--set``, ``--profile``); this module runs the :class:`~vlbias.profiles.RunPlan` it resolves.

Notebooks run side by side, ``--jobs`` at once (default: the machine's cores, capped by free
memory), each given its share of the cores (``VLBIAS_CPUS``, ``OMP_NUM_THREADS``). A notebook that
reads another's outputs (its declaration's ``reads``, :mod:`vlbias.stages`) starts after it has
succeeded; longer notebooks, by the last run's times on this machine (``book/generated/.run_record.json``)
or the measured demo times (``resources/notebook_costs.json``), start first. Two notebooks that
compute one cache entry or checkpoint compute it once, under the cache's locks.

Each notebook runs in its own process with a wall-clock limit, so a hung kernel cannot stall
the run; a failing notebook is reported by name and cell and the others still run, but for its
dependants, which are reported as not run. It executes
into ``NAME.running.ipynb`` and replaces ``book/generated/NAME.ipynb`` only when it succeeds: a
failed run is kept beside it as ``NAME.failed.ipynb`` and the page keeps the last good run, with
a note saying so when the book is built (the Sphinx hook ``book/_ext/last_good_run.py``).

A notebook whose declaration has ``per_spec`` (the model card) runs once per model of its list
parameter, one after another in its slot, each run a page of its own under ``book/generated/NAME/``
(:func:`vlbias.paths.instance_page`) titled with the model's spec.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from . import profiles
from .paths import GENERATED_DIR, NOTEBOOKS_DIR

#: suffixes of a run in progress and of a failed run, kept beside the last good ``NAME.ipynb``
RUNNING_SUFFIX, FAILED_SUFFIX = ".running.ipynb", ".failed.ipynb"


#: ``python -m papermill`` without its slowest import: nbformat's jsonschema imports rfc3987_syntax,
#: which compiles a grammar (about half of papermill's start-up), only to check "iri" formats that the
#: notebook schema never uses; without it jsonschema skips that one check
PAPERMILL_MAIN = ("import sys; sys.modules['rfc3987_syntax'] = None; "
                  "from papermill.cli import papermill; papermill(prog_name='papermill')")


#: the last run's seconds and peak memory per notebook and profile, on this machine (in GENERATED_DIR)
RUN_RECORD = ".run_record.json"
#: the demo notebooks' measured cold seconds and peak memory (``benchmarks/notebook_times.py --record``)
MEASURED_COSTS = Path(__file__).with_name("resources") / "notebook_costs.json"
#: seconds assumed for a notebook never timed, so that timed long ones start before it
UNTIMED_SECONDS = 60.0


@dataclass
class NotebookResult:
    name: str
    status: str  # "ok", "failed", "timeout" or "not run"
    seconds: float
    output: Path
    message: str = ""
    peak_gb: float | None = None  # the notebook's processes' largest resident memory, summed

    def summary(self) -> str:
        peak = f", peak {self.peak_gb:.1f} GB" if self.peak_gb else ""
        line = (f"{self.name}: not run" if self.status == "not run" else
                f"{self.name}: {self.status} ({self.seconds:.0f} s{peak})")
        return line + (f"\n    {self.message}" if self.message else "")


def _failure_from_notebook(output: Path) -> str:
    """Name the cell that failed or was running, from papermill's per-cell metadata."""
    try:
        cells = json.loads(output.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return "no output notebook was written"
    # papermill adds an error banner and an injected-parameters cell; count source cells only
    added = {"injected-parameters", "papermill-error-cell-tag"}
    cells = [c for c in cells if not added & set(c.get("metadata", {}).get("tags", []))]
    for index, cell in enumerate(cells, start=1):
        meta = cell.get("metadata", {}).get("papermill", {})
        if meta.get("exception") or meta.get("status") == "running":
            first_line = "".join(cell.get("source", "")).strip().splitlines()[:1]
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            what = f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else meta.get("status", "")
            return f"cell {index} of the source notebook ({first_line[0] if first_line else 'empty'!r}): {what}"
    return "the failing cell could not be identified"


def sibling(output: Path, suffix: str) -> Path:
    """``book/generated/NAME.ipynb`` -> ``book/generated/NAME<suffix>``."""
    return output.with_name(output.stem + suffix)


def tree_memory_gb(pid: int) -> float:
    """Resident memory of process ``pid`` and all its descendants (papermill, the kernel, its
    workers), in GB; 0 when it is gone. Shared pages count in each process: an upper bound."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e9


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], env: dict[str, str],
                     timeout: float, cwd: Path,
                     started_process: Callable[[subprocess.Popen], None] | None = None,
                     title: str | None = None) -> NotebookResult:
    """Run one notebook in a child process group with a wall-clock limit.

    It executes into ``NAME.running.ipynb``, which replaces ``output`` only on success; a failed
    run is moved to ``NAME.failed.ipynb`` and ``output``, the last good run, stays as it was.
    The result carries the peak resident memory of the notebook's processes, sampled every second.
    ``started_process`` is told the child process (the runner stops it on Ctrl-C). ``title``, where
    given, is added to the page's title (its first ``# `` heading) on success: a notebook run once
    per model gives each page the model's name.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    running, failed = sibling(output, RUNNING_SUFFIX), sibling(output, FAILED_SUFFIX)
    command = [sys.executable, "-c", PAPERMILL_MAIN, str(source), str(running),
               "--cwd", str(cwd), "--no-progress-bar", "-y", json.dumps(parameters)]
    child_env = {**os.environ, **env}
    started = time.monotonic()
    process = subprocess.Popen(command, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    if started_process:
        started_process(process)
    peak, status = 0.0, None
    while status is None:
        try:  # a retried communicate loses no output
            log, _ = process.communicate(timeout=max(0.01, min(1.0, started + timeout - time.monotonic())))
            status = "ok" if process.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            peak = max(peak, tree_memory_gb(process.pid))
            if time.monotonic() - started >= timeout:
                os.killpg(process.pid, signal.SIGKILL)  # the kernel is in the same group
                log, _ = process.communicate()
                status = "timeout"
    seconds = time.monotonic() - started
    peak_gb = round(peak, 2) or None
    if status == "ok":
        if title:
            _add_to_title(running, title)
        os.replace(running, output)
        failed.unlink(missing_ok=True)
        return NotebookResult(source.stem, status, seconds, output, peak_gb=peak_gb)
    if running.exists():
        os.replace(running, failed)
    else:
        failed.unlink(missing_ok=True)  # an older failure would be mistaken for this one
    message = _failure_from_notebook(failed)
    if status == "failed" and message.startswith(("no output", "the failing")):
        message += "\n    " + "\n    ".join((log or "").strip().splitlines()[-15:])
    elif status == "timeout":
        message = f"stopped after {seconds:.0f} s at its limit of {timeout:.0f} s; {message}"
    return NotebookResult(source.stem, status, seconds, failed, f"{message}\n    {_last_good_note(output)}",
                          peak_gb=peak_gb)


def _add_to_title(path: Path, title: str) -> None:
    """``# Model card`` -> ``# Model card: TITLE`` in the first markdown cell that has a ``# `` heading,
    and ``-SLUG`` (:func:`vlbias.paths.spec_slug` of ``title``, lower case) after each figure name
    (``metadata.mystnb.figure.name``), which must be unique in the book, so that one notebook's pages for
    several models name their figures apart."""
    from .paths import spec_slug

    notebook = json.loads(path.read_text(encoding="utf-8"))
    titled = False
    for cell in notebook["cells"]:
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure")
        if isinstance(figure, dict) and figure.get("name"):
            figure["name"] = f"{figure['name']}-{spec_slug(title).lower().replace('_', '-').replace('.', '-')}"
        source = "".join(cell.get("source", "")) if cell.get("cell_type") == "markdown" and not titled else ""
        lines = source.split("\n")
        heading = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
        if heading is not None:
            lines[heading] = f"{lines[heading].rstrip()}: {title}"
            cell["source"] = "\n".join(lines)
            titled = True
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def per_spec_runs(root: Path, name: str, run: profiles.RunPlan) -> list[tuple[str, dict[str, Any], Path]]:
    """A notebook run once per model (its declaration's ``per_spec``): ``(spec, parameters, page)`` for
    each spec of its list parameter, each run's parameters with the one-model parameter set to it.
    Any other notebook: ``[]``. A spec listed twice runs once; an empty list is an error that says
    which parameter to fill."""
    from .paths import instance_page
    from .plan import declarations

    declared = declarations().get(name)
    if declared is None or not declared.per_spec:
        return []
    listed, one = declared.per_spec
    specs = profiles.notebook_parameters(root, name, run).get(listed) or []
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        raise profiles.RunnerError(f"{name} runs once per model of its parameter {listed!r}, which is empty in "
                                   f"profile {run.profile}: list the model specs there (--set {name}.{listed}=[SPEC]).")
    return [(spec, {**run.parameters[name], one: spec}, root / instance_page(name, spec))
            for spec in dict.fromkeys(specs)]


def execute_per_spec(source: Path, runs: list[tuple[str, dict[str, Any], Path]], env: dict[str, str],
                     timeout: float, cwd: Path,
                     started_process: Callable[[subprocess.Popen], None] | None = None) -> NotebookResult:
    """Run a per-model notebook once for each of ``runs`` (:func:`per_spec_runs`), one after another,
    each with the wall-clock limit ``timeout`` and a page of its own; one model's failure leaves the
    others' pages. The result is the notebook's: ok when every run is, else the first failure's status,
    with every failed model named."""
    results = [execute_notebook(source, page, parameters, env, timeout, cwd, started_process, title=spec)
               for spec, parameters, page in runs]
    failed = [(spec, result) for (spec, _, _), result in zip(runs, results) if result.status != "ok"]
    peaks = [result.peak_gb for result in results if result.peak_gb]
    message = "\n    ".join(f"model {spec}: {result.message}" for spec, result in failed)
    return NotebookResult(source.stem, failed[0][1].status if failed else "ok", sum(r.seconds for r in results),
                          runs[0][2].parent, message, peak_gb=max(peaks) if peaks else None)


def _last_good_note(output: Path) -> str:
    """Where the failed run is, and what the page shows instead."""
    failed = sibling(output, FAILED_SUFFIX)
    kept = f"the failed notebook is {failed}" if failed.exists() else "no notebook was written"
    if not output.exists():
        return f"{kept}; there is no good run of {output.stem} yet, so the book has no page for it."
    executed = time.strftime("%Y-%m-%d %H:%M", time.localtime(output.stat().st_mtime))
    return f"{kept}; {output} still holds the last good run ({executed}), and its page says so."


def build_book(root: Path, builder: str = "html") -> int:
    """``jupyter-book build`` on the project root; the HTML lands in ``_build/html``."""
    executable = Path(sys.executable).with_name("jupyter-book")
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(root),
               "--builder", builder]
    print("$ " + " ".join(command), flush=True)
    return subprocess.call(command, cwd=root)


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory_gb() -> float:
    """Memory the machine can give without swapping, in GB."""
    import psutil

    return psutil.virtual_memory().available / 1e9


def gpu_count() -> int:
    """CUDA devices visible to the notebooks (0 without a GPU or without torch's CUDA)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_notebooks(root: Path, plan: profiles.RunPlan) -> set[str]:
    """The notebooks that would run on a GPU: every one whose ``device`` is not "cpu", where there is one."""
    if not gpu_count():
        return set()
    return {name for name in plan.parameters
            if str(profiles.notebook_parameters(root, name, plan).get("device", "auto")).lower() != "cpu"}


def parse_jobs(value: Any) -> int | None:
    """``--jobs``: a whole number of notebooks to run at once, 1 or more; None (not given): the default."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise profiles.RunnerError(
            f"--jobs takes a whole number of notebooks to run at once, 1 or more (1: one after another); got "
            f"{text!r}. Leave it out to run as many as the machine has cores ({usable_cores()} here), capped by "
            "free memory.")
    return jobs


def notebook_dependencies(names: Iterable[str]) -> dict[str, set[str]]:
    """For each notebook, the notebooks among ``names`` whose outputs it reads (the declarations'
    ``reads``, :mod:`vlbias.stages`); a notebook without a declaration depends on none."""
    from .plan import declarations

    names = list(names)
    declared = declarations()
    return {name: set(declared[name].reads) & set(names) if name in declared else set() for name in names}


def _declared_memory_gb(names: Iterable[str]) -> dict[str, float]:
    from .plan import declarations

    declared = declarations()
    return {name: declared[name].memory_gb for name in names if name in declared}


#: what a notebook holds beside its largest model's weights (Python, torch, its data and figures)
NOTEBOOK_OVERHEAD_GB = 1.0


def model_memory_gb(root: Path, plan: profiles.RunPlan) -> dict[str, float]:
    """Per notebook, the memory its largest model's weights take once loaded in float32
    (:func:`vlbias.models.footprint.weights_gb`, counted from the files on this machine) plus
    :data:`NOTEBOOK_OVERHEAD_GB`; notebooks whose models' files are not here are left out. float32,
    the larger figure, because a notebook may load some models in half precision and others not (04b's
    annotators take ``annotator_half``, its Stable Diffusion ``half``). A first run
    of the full profile has no measured peak yet, and the declarations' figures are the demo's: this
    keeps two notebooks from loading two large models beside each other on a CPU machine (the dress
    rehearsal's 04b held Qwen2-VL-2B in float32 while 04c was to load SD 3: 13.8 and 15 GB)."""
    from .models.footprint import weights_gb
    from .plan import declarations

    declared, found = declarations(), {}
    for name in plan.parameters:
        if name not in declared:
            continue
        sizes = []
        for spec in declared[name].specs(profiles.notebook_parameters(root, name, plan)):
            try:
                size = weights_gb(spec)
            except (OSError, ValueError):  # an unreadable file: the notebook's loader says what is wrong
                size = None
            if size is not None:
                sizes.append(size)
        if sizes:
            found[name] = max(sizes) + NOTEBOOK_OVERHEAD_GB
    return found


def load_costs(root: Path, profile: str) -> dict[str, dict[str, float]]:
    """Per notebook, ``seconds`` and ``peak_gb`` as last measured: this machine's last run of
    ``profile`` where there is one, else (the demo profile) the committed measurement."""
    costs: dict[str, dict[str, float]] = {}
    if profile == "demo":
        try:
            costs.update(json.loads(MEASURED_COSTS.read_text(encoding="utf-8"))["notebooks"])
        except (OSError, ValueError, KeyError):
            pass
    try:
        record = json.loads((root / GENERATED_DIR / RUN_RECORD).read_text(encoding="utf-8"))
        for name, values in record.get(profile, {}).items():
            costs[name] = {**costs.get(name, {}), **values}
    except (OSError, ValueError, AttributeError):
        pass
    return costs


def _record_costs(root: Path, profile: str, results: list[NotebookResult]) -> None:
    """Keep this run's times and peaks (of notebooks that succeeded) for the next run's schedule."""
    from .cache import write_atomically

    path = root / GENERATED_DIR / RUN_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict):
        record = {}
    entries = record.setdefault(profile, {})
    for result in results:
        if result.status == "ok":
            entries[result.name] = {"seconds": round(result.seconds, 1),
                                    **({"peak_gb": result.peak_gb} if result.peak_gb else {})}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(record, indent=1, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def default_jobs(count: int, memory_gb: Iterable[float], cores: int | None = None,
                 free_gb: float | None = None) -> int:
    """Notebooks to run at once: the cores, capped by free memory over the largest notebook's
    memory figure, and by the ``count`` of notebooks; at least 1."""
    cores = usable_cores() if cores is None else cores
    free_gb = available_memory_gb() if free_gb is None else free_gb
    largest = max(memory_gb, default=1.0)
    return max(1, min(cores, count, int(free_gb // max(largest, 0.1))))


def schedule_priority(names: list[str], depends: dict[str, set[str]], seconds: dict[str, float]) -> dict[str, float]:
    """Each notebook's seconds plus those of its longest chain of dependants: the longest chains start first."""
    dependants = {name: [other for other in names if name in depends.get(other, ())] for name in names}
    priority: dict[str, float] = {}

    def chain(name: str, seen: tuple[str, ...] = ()) -> float:
        if name not in priority:
            if name in seen:
                raise profiles.RunnerError(f"the notebooks' declared reads form a cycle: {' -> '.join(seen + (name,))}")
            priority[name] = seconds.get(name, UNTIMED_SECONDS) + max(
                (chain(other, seen + (name,)) for other in dependants[name]), default=0.0)
        return priority[name]

    for name in names:
        chain(name)
    return priority


def run(profile: str = "demo", only: Iterable[str] = (), assignments: Iterable[str] = (),
        project_dir: Path | None = None, timeout: float | None = None, build: bool = True,
        part: int | None = None, jobs: int | None = None) -> int:
    """Execute the selected notebooks, ``jobs`` at once, then build the book; return a process exit code.

    ``timeout`` (seconds) overrides the profile's per-notebook ``timeouts`` for every notebook.
    ``jobs`` (default :func:`default_jobs`) notebooks run at once, each given ``cores // jobs``
    cores; a notebook starts once the notebooks it reads (:func:`notebook_dependencies`) have
    succeeded, and is not run when one of them failed."""
    jobs = parse_jobs(jobs)
    root = profiles.find_project_root(project_dir)
    plan = profiles.plan_run(root, profile, only, assignments, part)
    notebooks = profiles.list_notebooks(root)
    names = list(plan.parameters)
    depends = notebook_dependencies(names) if len(names) > 1 else {name: set() for name in names}
    costs = load_costs(root, plan.profile)
    declared_memory = _declared_memory_gb(names)
    models = model_memory_gb(root, plan)
    memory = {name: max(float(costs.get(name, {}).get("peak_gb") or declared_memory.get(name, 1.5)),
                        models.get(name, 0.0)) for name in names}
    cores = usable_cores()
    chosen = jobs
    jobs = min(jobs, len(names)) if jobs else default_jobs(len(names), memory.values(), cores)
    # without --jobs, one notebook per GPU at a time: the full profile's models fill a GPU's memory
    on_gpu = gpu_notebooks(root, plan) if not chosen and jobs > 1 else set()
    gpu_slots = gpu_count() if on_gpu else len(names)
    share = max(1, cores // max(jobs, 1))
    priority = schedule_priority(names, depends, {n: float(costs[n]["seconds"]) for n in names
                                                  if costs.get(n, {}).get("seconds")})
    env = {**plan.env, "VLBIAS_CPUS": str(share)}
    if jobs > 1:  # one process's threads per core it is given: side by side they would oversubscribe
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env.setdefault(variable, os.environ.get(variable) or str(share))
    memory_budget = available_memory_gb()
    print(f"[vlbias] {len(names)} notebook(s), {jobs} at once on {cores} core(s) ({share} each; "
          f"{memory_budget:.1f} GB free{f'; at most {gpu_slots} on the GPU at a time' if on_gpu else ''})"
          f"{'' if len(names) < 2 else '; --jobs N to change'}", flush=True)

    pending = sorted(names, key=lambda name: -priority[name])
    finished: dict[str, NotebookResult] = {}
    done: queue.Queue = queue.Queue()
    processes: dict[str, subprocess.Popen] = {}
    running: dict[str, float] = {}
    started_all = time.monotonic()

    instances = {name: per_spec_runs(root, name, plan) for name in names}  # a bad list fails before any runs

    def execute(name: str) -> None:
        started = lambda process: processes.__setitem__(name, process)  # noqa: E731
        try:
            if instances[name]:
                result = execute_per_spec(notebooks[name], instances[name], env, timeout or plan.timeout(name),
                                          cwd=root / NOTEBOOKS_DIR, started_process=started)
            else:
                result = execute_notebook(notebooks[name], root / GENERATED_DIR / f"{name}.ipynb",
                                          plan.parameters[name], env, timeout or plan.timeout(name),
                                          cwd=root / NOTEBOOKS_DIR, started_process=started)
        except BaseException as error:  # noqa: BLE001 (reported as this notebook's failure, never lost)
            result = NotebookResult(name, "failed", time.monotonic() - running[name],
                                    root / GENERATED_DIR / f"{name}.ipynb", f"the runner failed: {error!r}")
        done.put(result)

    try:
        while pending or running:
            for name in list(pending):
                if len(running) >= jobs:
                    break
                blocked = [d for d in depends[name] if d in finished and finished[d].status != "ok"]
                if blocked:
                    pending.remove(name)
                    finished[name] = NotebookResult(
                        name, "not run", 0.0, root / GENERATED_DIR / f"{name}.ipynb",
                        f"needs {blocked[0]}, which " + ("failed" if finished[blocked[0]].status != "not run"
                                                         else "was not run") + "; " +
                        _last_good_note(root / GENERATED_DIR / f"{name}.ipynb"))
                    print(f"[vlbias] {finished[name].summary()}", flush=True)
                    continue
                if depends[name] - set(finished):
                    continue  # waits for what it reads
                if running and sum(memory[r] for r in running) + memory[name] > memory_budget:
                    break  # would not fit beside the running ones: wait for one to end
                if name in on_gpu and sum(r in on_gpu for r in running) >= gpu_slots:
                    continue  # the GPUs are taken: a CPU notebook may start instead
                pending.remove(name)
                running[name] = time.monotonic()
                shown = ", ".join(f"{k}={v!r}" for k, v in sorted(plan.parameters[name].items()))
                each = (f"; once for each of {len(instances[name])} model(s): "
                        f"{', '.join(spec for spec, _, _ in instances[name])}" if instances[name] else "")
                print(f"[vlbias] started {name} ({plan.profile}): {shown}{each}", flush=True)
                threading.Thread(target=execute, args=(name,), name=f"notebook-{name}", daemon=True).start()
            if not running:
                if pending and not any(depends[n] <= set(finished) for n in pending):
                    raise profiles.RunnerError(f"no notebook can start: {pending} wait for each other")
                continue  # the next pass starts or reports the rest
            result = done.get()
            running.pop(result.name, None)
            processes.pop(result.name, None)
            finished[result.name] = result
            print(f"[vlbias] {result.summary()}  [{len(finished)} of {len(names)} done, {len(running)} running, "
                  f"{time.monotonic() - started_all:.0f} s]", flush=True)
    except KeyboardInterrupt:
        for process in processes.values():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
        print("\n[vlbias] interrupted: the running notebooks were stopped; pages already finished are kept.",
              flush=True)
        raise
    wall = time.monotonic() - started_all
    results = [finished[name] for name in names]
    _record_costs(root, plan.profile, results)

    build_code = build_book(root) if build else 0
    failed = [r for r in results if r.status != "ok"]
    print("\n[vlbias] summary")
    for result in results:
        print("  " + result.summary())
    timed = sorted((r for r in results if r.status != "not run"), key=lambda r: -r.seconds)
    if len(timed) > 1:
        print(f"  longest: {', '.join(f'{r.name} {r.seconds:.0f} s' for r in timed[:3])}; the notebooks took "
              f"{sum(r.seconds for r in timed):.0f} s in all, {wall:.0f} s of wall time with {jobs} at once")
    if build:
        print(f"  book: {'built in ' + str(root / '_build' / 'html') if build_code == 0 else 'build failed'}")
        kept = [r.name for r in failed if (root / GENERATED_DIR / f"{r.name}.ipynb").exists()]
        if kept:
            print(f"  pages showing their last good run, with a note saying so: {', '.join(kept)}")
    return 1 if failed or build_code else 0
