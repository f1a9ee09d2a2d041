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

``--profile`` is a name from ``params/`` (``demo``, ``full``) or an explicit path to a YAML file.

Each notebook runs in its own process with a wall-clock limit, so a hung kernel cannot stall
the run; a failing notebook is reported by name and cell and the others still run. It executes
into ``NAME.running.ipynb`` and replaces ``book/generated/NAME.ipynb`` only when it succeeds: a
failed run is kept beside it as ``NAME.failed.ipynb`` and the page keeps the last good run, with
a note saying so when the book is built (this module is also the Sphinx extension adding it).
"""

from __future__ import annotations

import ast
import json
import os
import re
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
#: suffixes of a run in progress and of a failed run, kept beside the last good ``NAME.ipynb``
RUNNING_SUFFIX, FAILED_SUFFIX = ".running.ipynb", ".failed.ipynb"


#: ``python -m papermill`` without its slowest import: nbformat's jsonschema imports rfc3987_syntax,
#: which compiles a grammar (about half of papermill's start-up), only to check "iri" formats that the
#: notebook schema never uses; without it jsonschema skips that one check
PAPERMILL_MAIN = ("import sys; sys.modules['rfc3987_syntax'] = None; "
                  "from papermill.cli import papermill; papermill(prog_name='papermill')")


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


def _parameter_assignments(notebook: Path) -> list:
    """The top-level assignments of the cell tagged ``parameters``, as ``(name, value node)``.

    Read with Python's own parser: papermill's line reader skips any line with a second ``=``
    (``spec = "trained:world-clip?seed=1"``), and importing papermill here would cost the runner
    seconds at every start.
    """
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c.get("source", "")) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not sources:
        return []
    found = []
    for statement in ast.parse(sources[0]).body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        found += [(target.id, statement.value) for target in targets if isinstance(target, ast.Name)]
    return found


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned at the top level of the cell tagged ``parameters``."""
    return {name for name, _ in _parameter_assignments(notebook)}


def parameter_defaults(notebook: Path) -> dict[str, Any]:
    """The parameters cell's values that are literals (``"a"``, ``[1, 2]``, ``{"k": 1.0}``); a name
    given by an expression is left out: only a profile or ``--set`` can give it from outside."""
    defaults = {}
    for name, value in _parameter_assignments(notebook):
        if value is None:  # a bare annotation, ``n: int``: no value to take
            continue
        try:
            defaults[name] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError):
            defaults.pop(name, None)  # a later expression replaces an earlier literal
    return defaults


def resolve_profile(root: Path, profile: str) -> tuple[str, Path]:
    """(name, file) of a profile: a plain name from ``params/``, or an explicit path to a YAML file.

    Nothing in between: a name never carries a folder, and a path is read as given, never under
    ``params/``.
    """
    text = str(profile)
    if "/" in text or os.sep in text or text.endswith((".yml", ".yaml")):
        path = Path(text).expanduser()
        if not path.is_file():
            raise RunnerError(f"--profile {text}: no such file. Give a profile name from {root / 'params'} "
                              "or the path of a YAML file.")
        return path.stem, path
    known = sorted(p.stem for p in (root / "params").glob("*.yml"))
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", text) or text not in known:
        raise RunnerError(f"No parameter file for profile {text!r} in {root / 'params'}. Known profiles: {known}; "
                          "or give the path of a YAML file.")
    return text, root / "params" / f"{text}.yml"


def load_profile(root: Path, profile: str) -> dict[str, Any]:
    """The profile's contents; a file that is not valid YAML is named with its line and column."""
    _, path = resolve_profile(root, profile)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = " ".join(str(part) for part in (getattr(error, "context", None), getattr(error, "problem", None)) if part)
        raise RunnerError(f"{where}: not valid YAML: {what or error}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise RunnerError(f"{path}: expected a mapping with env, defaults and notebooks, got {type(data).__name__}.")
    unknown = set(data) - {"env", "defaults", "notebooks", "description", "timeouts"}
    if unknown:
        raise RunnerError(f"{path}: unknown top-level keys {sorted(unknown)}.")
    for section in ("env", "defaults", "notebooks"):
        if not isinstance(data.get(section) or {}, dict):
            raise RunnerError(f"{path}: {section} must be a mapping, got {type(data[section]).__name__}.")
    for name, values in (data.get("notebooks") or {}).items():
        if not isinstance(values or {}, dict):
            raise RunnerError(f"{path}: notebooks: {name} must be a mapping of parameters, got {values!r}.")
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

    profile, profile_file = resolve_profile(root, profile)
    config = load_profile(root, str(profile_file))
    defaults = dict(config.get("defaults") or {})
    per_notebook = {name: dict(values or {}) for name, values in (config.get("notebooks") or {}).items()}
    stray = set(per_notebook) - set(notebooks)
    if stray:
        raise RunnerError(f"{profile_file} names notebooks that do not exist: {sorted(stray)}.")

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


def sibling(output: Path, suffix: str) -> Path:
    """``book/generated/NAME.ipynb`` -> ``book/generated/NAME<suffix>``."""
    return output.with_name(output.stem + suffix)


def execute_notebook(source: Path, output: Path, parameters: dict[str, Any], env: dict[str, str],
                     timeout: float, cwd: Path) -> NotebookResult:
    """Run one notebook in a child process group with a wall-clock limit.

    It executes into ``NAME.running.ipynb``, which replaces ``output`` only on success; a failed
    run is moved to ``NAME.failed.ipynb`` and ``output``, the last good run, stays as it was.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    running, failed = sibling(output, RUNNING_SUFFIX), sibling(output, FAILED_SUFFIX)
    command = [sys.executable, "-c", PAPERMILL_MAIN, str(source), str(running),
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
    if status == "ok":
        os.replace(running, output)
        failed.unlink(missing_ok=True)
        return NotebookResult(source.stem, status, seconds, output)
    if running.exists():
        os.replace(running, failed)
    else:
        failed.unlink(missing_ok=True)  # an older failure would be mistaken for this one
    message = _failure_from_notebook(failed)
    if status == "failed" and message.startswith(("no output", "the failing")):
        message += "\n    " + "\n    ".join((log or "").strip().splitlines()[-15:])
    elif status == "timeout":
        message = f"stopped after {timeout:.0f} s; {message}"
    return NotebookResult(source.stem, status, seconds, failed, f"{message}\n    {_last_good_note(output)}")


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
        kept = [r.name for r in failed if (root / GENERATED_DIR / f"{r.name}.ipynb").exists()]
        if kept:
            print(f"  pages showing their last good run, with a note saying so: {', '.join(kept)}")
    return 1 if failed or build_code else 0


# --------------------------------------------------------------------------- Sphinx extension


def last_good_run_note(notebook: Path) -> str | None:
    """The note a page gets when its latest run failed and it shows the last good one; else None."""
    failed = sibling(notebook, FAILED_SUFFIX)
    if notebook.suffix != ".ipynb" or not failed.exists():
        return None
    executed = time.strftime("%Y-%m-%d %H:%M", time.localtime(notebook.stat().st_mtime))
    attempted = time.strftime("%Y-%m-%d %H:%M", time.localtime(failed.stat().st_mtime))
    return (f"```{{warning}}\nThis page shows the last good run of `{notebook.stem}`, executed {executed}. "
            f"A later run ({attempted}) failed; it is kept as `{GENERATED_DIR / failed.name}` for reading.\n```")


def _add_last_good_run_note(app, docname: str, source: list[str]) -> None:
    """``source-read``: put the note at the top of the page's notebook (in memory only)."""
    noted = app.env.__dict__.setdefault("vlbias_noted_pages", set())
    note = last_good_run_note(Path(app.env.doc2path(docname)))
    if note is None:
        noted.discard(docname)
        return
    notebook = json.loads(source[0])
    notebook["cells"].insert(0, {"cell_type": "markdown", "id": "vlbias-last-good-run", "metadata": {}, "source": note})
    source[0] = json.dumps(notebook)
    noted.add(docname)


def _pages_whose_note_changed(app, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: reread pages that gain or lose the note although their notebook did not change."""
    noted = env.__dict__.get("vlbias_noted_pages", set())
    return [doc for doc in env.found_docs
            if (doc in noted) != (last_good_run_note(Path(env.doc2path(doc))) is not None)]


def setup(app) -> dict[str, Any]:
    """Sphinx extension (``_config.yml``): pages of failed notebooks say they show the last good run."""
    app.connect("source-read", _add_last_good_run_note)
    app.connect("env-get-outdated", _pages_whose_note_changed)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
