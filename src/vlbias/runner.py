"""Execute the book's notebooks with papermill, then build the Jupyter Book.

Parameters come from ``params/<profile>.yml``::

    env:            # environment for the notebook kernels (the demo profile runs offline)
      HF_HUB_OFFLINE: "1"
    defaults:       # offered to every notebook; a notebook takes those it declares
      seed: 0
    notebooks:      # per-notebook values, override the defaults
      01_markedness:
        model_spec: tiny:clip

``timeouts:`` (seconds per notebook; ``default`` for the rest, else 1800) sets each notebook's
wall-clock limit; ``--timeout`` overrides them all.

``--set key=value`` overrides both (values are parsed as YAML, so ``--set seed=1`` is an int
and ``--set 'models=[tiny:clip, tiny:open-clip]'`` a list). ``--set NOTEBOOK.key=value`` sets
one notebook's parameter only.

Each notebook runs in its own process with a wall-clock limit, so a hung kernel cannot stall
the run; a failing notebook is reported by name and cell and the others still run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

#: seconds a notebook may run when the profile names no timeout for it
DEFAULT_TIMEOUT = 1800

#: where executed notebooks go, relative to the project root; ``_toc.yml`` points here
GENERATED_DIR = Path("book") / "generated"


class RunnerError(RuntimeError):
    """A problem with the run's set-up (unknown notebook, parameter or profile)."""


@dataclass
class NotebookResult:
    name: str
    status: str  # "ok", "failed" or "timeout"
    seconds: float
    output: Path
    message: str = ""

    def summary(self) -> str:
        line = f"{self.name}: {self.status} ({self.seconds:.0f} s)"
        return line + (f"\n    {self.message}" if self.message else "")


@dataclass
class RunPlan:
    profile: str
    env: dict[str, str]
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)  # notebook -> params
    timeouts: dict[str, float] = field(default_factory=dict)  # notebook -> seconds

    def timeout(self, name: str) -> float:
        return float(self.timeouts.get(name, self.timeouts.get("default", DEFAULT_TIMEOUT)))


def find_project_root(start: Path | None = None) -> Path:
    """The nearest folder upwards holding ``_toc.yml`` and ``notebooks/``."""
    start = Path(start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / "_toc.yml").exists() and (folder / "notebooks").is_dir():
            return folder
    raise RunnerError(
        f"No project root (a folder with _toc.yml and notebooks/) at or above {start}. "
        "Run this from the book's repository, or pass --project-dir.")


def list_notebooks(root: Path) -> dict[str, Path]:
    """Source notebooks by name (file stem), in file-name order."""
    return {path.stem: path for path in sorted((root / "notebooks").glob("*.ipynb"))}


def parse_assignment(text: str) -> tuple[str, Any]:
    """``key=value`` → (key, YAML-parsed value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise RunnerError(f"--set takes key=value, got {text!r}.")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError:
        parsed = value
    return key.strip(), parsed


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in the cell tagged ``parameters``."""
    import papermill

    return set(papermill.inspect_notebook(str(notebook)))


def load_profile(root: Path, profile: str) -> dict[str, Any]:
    path = root / "params" / f"{profile}.yml"
    if not path.exists():
        known = sorted(p.stem for p in (root / "params").glob("*.yml"))
        raise RunnerError(f"No parameter file for profile {profile!r} ({path}). Known profiles: {known}.")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = set(data) - {"env", "defaults", "notebooks", "description", "timeouts"}
    if unknown:
        raise RunnerError(f"{path}: unknown top-level keys {sorted(unknown)}.")
    return data


def plan_run(root: Path, profile: str, only: Iterable[str] = (), assignments: Iterable[str] = (),
             part: int | None = None) -> RunPlan:
    """Resolve which notebooks run and with which parameters (``part``: only notebooks ``0<part>*``)."""
    notebooks = list_notebooks(root)
    selected = list(only) or list(notebooks)
    if part is not None:
        selected = [name for name in selected if name.startswith(f"{int(part):02d}")]
        if not selected:
            raise RunnerError(f"No notebook of part {part} (file names {int(part):02d}*). Known: {list(notebooks)}.")
    missing = [name for name in selected if name not in notebooks]
    if missing:
        raise RunnerError(f"Unknown notebook(s) {missing}. Known: {list(notebooks)}.")

    config = load_profile(root, profile)
    defaults = dict(config.get("defaults") or {})
    per_notebook = {name: dict(values or {}) for name, values in (config.get("notebooks") or {}).items()}
    stray = set(per_notebook) - set(notebooks)
    if stray:
        raise RunnerError(f"params/{profile}.yml names notebooks that do not exist: {sorted(stray)}.")

    global_overrides: dict[str, Any] = {}
    for text in assignments:
        key, value = parse_assignment(text)
        notebook, dot, name = key.partition(".")
        if dot and notebook in notebooks:
            per_notebook.setdefault(notebook, {})[name] = value
        else:
            global_overrides[key] = value

    plan = RunPlan(profile=profile, env={k: str(v) for k, v in (config.get("env") or {}).items()},
                   timeouts={k: float(v) for k, v in (config.get("timeouts") or {}).items()})
    used_overrides: set[str] = set()
    for name in selected:
        declared = declared_parameters(notebooks[name])
        if not declared:
            raise RunnerError(f"{name}: no cell tagged 'parameters'.")
        values = {k: v for k, v in defaults.items() if k in declared}
        undeclared = set(per_notebook.get(name, {})) - declared
        if undeclared:
            raise RunnerError(f"{name} declares no parameter(s) {sorted(undeclared)}; it declares {sorted(declared)}.")
        values.update(per_notebook.get(name, {}))
        for key, value in global_overrides.items():
            if key in declared:
                values[key] = value
                used_overrides.add(key)
        if "profile" in declared:
            values["profile"] = profile
        plan.parameters[name] = values
    unused = set(global_overrides) - used_overrides
    if unused:
        raise RunnerError(f"--set {sorted(unused)}: no selected notebook declares such a parameter.")
    return plan


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


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], env: dict[str, str],
                     timeout: float, cwd: Path) -> NotebookResult:
    """Run one notebook in a child process group with a wall-clock limit."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "papermill", str(source), str(output),
               "--cwd", str(cwd), "--no-progress-bar", "-y", json.dumps(parameters)]
    child_env = {**os.environ, **env}
    started = time.monotonic()
    process = subprocess.Popen(command, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        log, _ = process.communicate(timeout=timeout)
        status = "ok" if process.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the kernel is in the same group
        log, _ = process.communicate()
        status = "timeout"
    seconds = time.monotonic() - started
    message = ""
    if status == "failed":
        message = _failure_from_notebook(output)
        if message.startswith(("no output", "the failing")):
            message += "\n    " + "\n    ".join((log or "").strip().splitlines()[-15:])
    elif status == "timeout":
        message = f"stopped after {timeout:.0f} s; {_failure_from_notebook(output)}"
    return NotebookResult(source.stem, status, seconds, output, message)


def build_book(root: Path, builder: str = "html") -> int:
    """``jupyter-book build`` on the project root; the HTML lands in ``_build/html``."""
    executable = Path(sys.executable).with_name("jupyter-book")
    command = [str(executable) if executable.exists() else "jupyter-book", "build", str(root),
               "--builder", builder]
    print("$ " + " ".join(command), flush=True)
    return subprocess.call(command, cwd=root)


def run(profile: str = "demo", only: Iterable[str] = (), assignments: Iterable[str] = (),
        project_dir: Path | None = None, timeout: float | None = None, build: bool = True,
        part: int | None = None) -> int:
    """Execute the selected notebooks, then build the book; return a process exit code.

    ``timeout`` (seconds) overrides the profile's per-notebook ``timeouts`` for every notebook."""
    root = find_project_root(project_dir)
    plan = plan_run(root, profile, only, assignments, part)
    notebooks = list_notebooks(root)
    results = []
    for name, parameters in plan.parameters.items():
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(parameters.items()))
        print(f"[vlbias] running {name} ({plan.profile}): {shown}", flush=True)
        result = execute_notebook(notebooks[name], root / GENERATED_DIR / f"{name}.ipynb", parameters,
                                  plan.env, timeout or plan.timeout(name), cwd=root / "notebooks")
        print(f"[vlbias] {result.summary()}", flush=True)
        results.append(result)

    build_code = build_book(root) if build else 0
    failed = [r for r in results if r.status != "ok"]
    print("\n[vlbias] summary")
    for result in results:
        print("  " + result.summary())
    if build:
        print(f"  book: {'built in ' + str(root / '_build' / 'html') if build_code == 0 else 'build failed'}")
    return 1 if failed or build_code else 0
