"""``python -m vlbias open NAME --profile demo``: a notebook with a profile's parameters already
injected (papermill's prepare-only mode), opened in JupyterLab.

The prepared copy is written to ``work/NAME.PROFILE.ipynb`` under the project root (git-ignored),
one folder below the root like ``notebooks/``, so the notebooks' relative paths (``../outputs``)
point where they do in a run. The source notebook is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from . import profiles

#: where prepared notebooks go, relative to the project root
WORK_DIR = Path("work")


def prepare_notebook(root: Path, name: str, profile: str = "demo", assignments: Iterable[str] = ()) -> Path:
    """Write ``work/NAME.PROFILE.ipynb``: the source notebook with the profile's (and ``--set``'s)
    parameters injected after its ``parameters`` cell, not executed. Returns its path."""
    import papermill

    plan = profiles.plan_run(root, profile, [name], assignments)
    source = profiles.list_notebooks(root)[name]
    target = root / WORK_DIR / f"{name}.{profile}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(source), str(target), parameters=plan.parameters[name],
                               prepare_only=True, progress_bar=False)
    return target


def lab_command(notebook: Path, root: Path) -> list[str]:
    """JupyterLab serving the project root, opened on ``notebook``."""
    return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}",
            str(notebook.relative_to(root))]


def open_notebook(name: str, profile: str = "demo", assignments: Iterable[str] = (),
                  project_dir: Path | None = None, launch: bool = True) -> int:
    """Prepare the notebook and, unless ``launch`` is false, start JupyterLab on it (the profile's
    ``env``, e.g. offline hubs for the demo, is set for its kernels)."""
    root = profiles.find_project_root(project_dir)
    notebook = prepare_notebook(root, name, profile, assignments)
    print(f"[vlbias] prepared {notebook} ({profile} parameters injected)", flush=True)
    if not launch:
        return 0
    env = {**os.environ, **profiles.load_profile(root, profile).get("env", {})}
    return subprocess.call(lab_command(notebook, root), cwd=root, env={k: str(v) for k, v in env.items()})
