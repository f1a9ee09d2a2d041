"""Execute the book's notebooks with papermill, then build the Jupyter Book.

Which notebooks run, and with which parameters, is :mod:`vlbias.profiles` (``params/<profile>.yml``,
``--set``, ``--profile``); this module runs the :class:`~vlbias.profiles.RunPlan` it resolves.

Each notebook runs in its own process with a wall-clock limit, so a hung kernel cannot stall
the run; a failing notebook is reported by name and cell and the others still run. It executes
into ``NAME.running.ipynb`` and replaces ``book/generated/NAME.ipynb`` only when it succeeds: a
failed run is kept beside it as ``NAME.failed.ipynb`` and the page keeps the last good run, with
a note saying so when the book is built (the Sphinx hook ``book/_ext/last_good_run.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from . import profiles
from .paths import GENERATED_DIR, NOTEBOOKS_DIR

#: suffixes of a run in progress and of a failed run, kept beside the last good ``NAME.ipynb``
RUNNING_SUFFIX, FAILED_SUFFIX = ".running.ipynb", ".failed.ipynb"


#: ``python -m papermill`` without its slowest import: nbformat's jsonschema imports rfc3987_syntax,
#: which compiles a grammar (about half of papermill's start-up), only to check "iri" formats that the
#: notebook schema never uses; without it jsonschema skips that one check
PAPERMILL_MAIN = ("import sys; sys.modules['rfc3987_syntax'] = None; "
                  "from papermill.cli import papermill; papermill(prog_name='papermill')")


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
    root = profiles.find_project_root(project_dir)
    plan = profiles.plan_run(root, profile, only, assignments, part)
    notebooks = profiles.list_notebooks(root)
    results = []
    for name, parameters in plan.parameters.items():
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(parameters.items()))
        print(f"[vlbias] running {name} ({plan.profile}): {shown}", flush=True)
        result = execute_notebook(notebooks[name], root / GENERATED_DIR / f"{name}.ipynb", parameters,
                                  plan.env, timeout or plan.timeout(name), cwd=root / NOTEBOOKS_DIR)
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
