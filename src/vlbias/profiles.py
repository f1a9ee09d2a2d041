"""Profiles and parameters: which notebooks run, and with which values.

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

A notebook declares its parameters, with their defaults, in its cell tagged ``parameters``
(papermill's convention); :func:`notebook_parameters` is what it runs with: those defaults,
overridden by the profile's values. The runner (:mod:`vlbias.runner`) executes a
:class:`RunPlan`; ``plan``, ``precompute``, ``open`` and the Colab cell read the same one.
"""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from .paths import NOTEBOOKS_DIR

#: seconds a notebook may run when the profile names no timeout for it
DEFAULT_TIMEOUT = 1800


class RunnerError(RuntimeError):
    """A problem with the run's set-up (unknown notebook, parameter or profile)."""


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
        if (folder / "_toc.yml").exists() and (folder / NOTEBOOKS_DIR).is_dir():
            return folder
    raise RunnerError(
        f"No project root (a folder with _toc.yml and notebooks/) at or above {start}. "
        "Run this from the book's repository, or pass --project-dir.")


def list_notebooks(root: Path) -> dict[str, Path]:
    """Source notebooks by name (file stem), in file-name order."""
    return {path.stem: path for path in sorted((root / NOTEBOOKS_DIR).glob("*.ipynb"))}


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
    return [(name, statement.value) for name, statement in cell_assignments(sources[0])] if sources else []


def cell_assignments(source: str) -> list:
    """The top-level assignments of a parameters cell's ``source``, as ``(name, statement)`` (an
    ``ast.Assign`` or ``ast.AnnAssign``), in order; the book's parameters table reads them too."""
    found = []
    for statement in ast.parse(source).body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        found += [(target.id, statement) for target in targets if isinstance(target, ast.Name)]
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


def load_profile(root: Path, profile: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The profile's contents; a file that is not valid YAML is named with its line and column.

    A profile may say ``extends: BASE``: it is then the base profile with its own ``env``, ``timeouts``,
    ``defaults`` and per-notebook values laid over the base's, key by key (the rehearsal is the full
    profile with sizes overlaid)."""
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
    unknown = set(data) - {"env", "defaults", "notebooks", "description", "timeouts", "extends"}
    if unknown:
        raise RunnerError(f"{path}: unknown top-level keys {sorted(unknown)}.")
    for section in ("env", "defaults", "notebooks", "timeouts"):
        if not isinstance(data.get(section) or {}, dict):
            raise RunnerError(f"{path}: {section} must be a mapping, got {type(data[section]).__name__}.")
    for name, values in (data.get("notebooks") or {}).items():
        if not isinstance(values or {}, dict):
            raise RunnerError(f"{path}: notebooks: {name} must be a mapping of parameters, got {values!r}.")
    base_name = data.pop("extends", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or "/" in base_name or base_name.endswith((".yml", ".yaml")):
        raise RunnerError(f"{path}: extends must name a profile in {root / 'params'} (e.g. full), got {base_name!r}.")
    if base_name in _seen or base_name == path.stem:
        raise RunnerError(f"{path}: extends {base_name!r} makes a loop ({' -> '.join(_seen + (path.stem, base_name))}).")
    base = load_profile(root, base_name, _seen + (path.stem,))
    merged = {"description": data.get("description", base.get("description", ""))}
    for section in ("env", "defaults", "timeouts"):
        merged[section] = {**(base.get(section) or {}), **(data.get(section) or {})}
    notebooks = {name: dict(values or {}) for name, values in (base.get("notebooks") or {}).items()}
    for name, values in (data.get("notebooks") or {}).items():
        notebooks[name] = {**notebooks.get(name, {}), **(values or {})}
    merged["notebooks"] = notebooks
    return merged


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


def notebook_parameters(root: Path, name: str, run: RunPlan) -> dict[str, Any]:
    """What notebook ``name`` runs with in ``run``: its parameters cell's literal defaults
    (:func:`parameter_defaults`), overridden by the profile's and ``--set`` values.

    ``run.parameters`` holds only what the profile gives; ``plan`` and ``precompute`` need every
    value the notebook will see, so that their keys, jobs and settings equal the notebook's, and
    read them here rather than restating a default.
    """
    if name not in run.parameters:
        raise RunnerError(f"notebook_parameters: {name!r} is not in this run (profile {run.profile}); "
                          f"it runs {sorted(run.parameters)}. Pass a notebook that plan_run selected.")
    return {**parameter_defaults(Path(root) / NOTEBOOKS_DIR / f"{name}.ipynb"), **run.parameters[name]}


def profile_parameters(root: Path, profile: str):
    """``read(name)``: what notebook ``name`` runs with under ``profile`` alone (its defaults and the
    profile's values, without a run's ``--set``), as a model card's audit reads the notebooks whose
    measures it runs (:func:`vlbias.audit.audit_model`); each notebook is read once."""
    from functools import cache

    @cache
    def read(name: str) -> dict[str, Any]:
        return notebook_parameters(root, name, plan_run(root, profile, [name]))

    return read
