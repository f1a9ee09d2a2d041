"""Preflight for a profile: ``python -m vlbias plan --profile full [--only NAME]``, offline.

For each notebook it says what the run needs and what it will cost before any GPU time is spent:

- the data sets it reads, found or not (with the download instructions of the loader);
- every model spec resolved: an open_clip architecture and tag (and whether the tag's weights were
  trained with QuickGELU, so the QuickGELU architecture is built), a Hugging Face hub id recorded in
  ``resources/hub_models.json`` (and whether its files are already in the local hub cache), a local
  directory, a package asset or a ``tiny:`` fixture;
- the images and forward passes its part declares (:mod:`vlbias.stages`), GPU-hours at the assumed
  throughputs (``resources/plan_throughputs.json``: estimates, not measurements, and the report says so), disk
  for caches and images, download sizes (estimates from ``resources/hub_models.json``);
- whether the profile's timeout for it covers the estimate.

Anything that would stop the run is collected in an actionable list and the command exits 1.
Nothing is downloaded and no model is built.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .stages import THROUGHPUT_FILE, Context, DataNeed, NotebookDeclaration, resource_json, specs_of, throughputs

HUB_MODELS_FILE = "hub_models.json"
#: a notebook's timeout must exceed its estimate by this factor
TIMEOUT_HEADROOM = 1.5
#: the parts, each declaring its notebooks in ``vlbias.<part>.stages.NOTEBOOKS``
PARTS = ("markedness", "colorfoil", "harms", "t2i")
#: the modules whose ``NOTEBOOKS`` declare the book's notebooks: the parts', and Part V's (the cards
#: and the leaderboard, above the parts)
DECLARING_MODULES = (*(f"vlbias.{part}.stages" for part in PARTS), "vlbias.audit_stages")


def declarations() -> dict[str, NotebookDeclaration]:
    """Every notebook's declaration, from :data:`DECLARING_MODULES`, by notebook name."""
    found: dict[str, NotebookDeclaration] = {}
    for module in DECLARING_MODULES:
        for name, declaration in importlib.import_module(module).NOTEBOOKS.items():
            if name in found:
                raise ValueError(f"notebook {name!r} is declared by two parts")
            found[name] = declaration
    return found


def declaration(name: str) -> NotebookDeclaration:
    """The declaration of notebook ``name``; an undeclared notebook is an error that says what to add."""
    known = declarations()
    if name not in known:
        raise KeyError(f"notebook {name!r} has no declaration: add a NotebookDeclaration for it to its part's "
                       f"stages.py (vlbias.<part>.stages.NOTEBOOKS; see CONTRIBUTING, 'Adding a notebook'). "
                       f"Declared: {sorted(known)}")
    return known[name]


@dataclass
class NotebookPlan:
    name: str
    timeout_s: float
    data: list[dict] = field(default_factory=list)
    models: list[dict] = field(default_factory=list)
    work: list[str] = field(default_factory=list)
    gpu_hours: float = 0.0
    disk_gb: float = 0.0
    problems: list[str] = field(default_factory=list)
    #: the heavy stages as (kind, model spec), from the notebook's declaration; ``python -m vlbias
    #: precompute`` runs those whose declaration gives units
    stages: list[tuple[str, str]] = field(default_factory=list)
    #: the declared power of each contrast the page tests (:class:`vlbias.stages.Power`), as its banner shows it
    power: list = field(default_factory=list)

    @property
    def timeout_ok(self) -> bool:
        return self.gpu_hours * 3600 * TIMEOUT_HEADROOM <= self.timeout_s


# --------------------------------------------------------------------------- models


def hub_models() -> dict[str, dict]:
    """The hub ids the profiles use, with kind and size (``resources/hub_models.json``)."""
    return {key: value for key, value in resource_json(HUB_MODELS_FILE).items() if not key.startswith("_")}


#: files whose presence in the local hub cache means a checkpoint was downloaded: a transformers or
#: diffusers config, or open_clip's weights (open_clip downloads the weights file alone)
HUB_CACHE_MARKERS = ("config.json", "model_index.json", "open_clip_config.json", "open_clip_model.safetensors",
                     "open_clip_pytorch_model.bin")


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    from .models.identity import hub_cache_dir

    cache = str(hub_cache_dir())  # read now, as the identity module reads it, not when huggingface_hub was imported
    return any(isinstance(try_to_load_from_cache(repo_id, name, cache_dir=cache), str) for name in HUB_CACHE_MARKERS)


def resolve_model(spec: str) -> dict:
    """What a spec names and whether it can load: ``{spec, resolved, weights, problem}``."""
    from .models.spec import parse_spec

    row = {"spec": spec, "resolved": "", "weights": "", "problem": ""}
    try:
        parsed = parse_spec(spec)
    except (ValueError, FileNotFoundError) as error:
        row["problem"] = f"{spec}: {error}"
        return row
    if parsed.source == "asset":
        from .assets import locate_asset

        try:
            row.update(resolved=f"package asset at {locate_asset(parsed.name)}", weights="installed")
        except Exception as error:  # noqa: BLE001 -- reported as the row's problem
            row.update(resolved="package asset", problem=f"{spec}: {error}")
    elif parsed.source == "tiny":
        row.update(resolved="tiny random fixture", weights="built locally")
    elif parsed.source == "trained":
        from .models.trained import trained_options

        try:
            recipe, _ = trained_options(parsed.name)
            row.update(resolved=f"trained in the book ({recipe.kind})", weights="trained locally on first use")
        except (KeyError, ValueError) as error:
            row["problem"] = f"{spec}: {error}"
    elif parsed.source == "local":
        row.update(resolved=f"local directory {parsed.name}", weights="local")
    elif parsed.source == "open_clip":
        row.update(_resolve_open_clip(parsed.name, parsed.tag))
    else:
        from .models.spec import hub_location

        location = hub_location(parsed.name)  # a moved repository's new id, unless its old copy is here
        known = hub_models().get(parsed.name) or hub_models().get(location)
        if known is None:
            row.update(resolved="hub id (not recorded)", problem=(
                f"{spec}: not a hub id recorded in src/vlbias/resources/hub_models.json. Check the spelling; "
                "if it is right, add it there with its kind and size, or pass a local directory."))
        else:
            row["resolved"] = f"hub id, {known['kind']} ({known['architecture']})"
            if location != parsed.name:
                row["resolved"] += f", moved to {location}"
            row["weights"] = "in the local hub cache" if _in_hub_cache(location) else \
                f"to download once (~{known['download_gb']} GB, estimate: resources/{HUB_MODELS_FILE})"
    return row


def _resolve_open_clip(name: str, tag: str | None) -> dict:
    import open_clip

    from .models.image_text import open_clip_architecture

    if name not in open_clip.list_models():
        return {"resolved": "open_clip", "problem": f"{name}/{tag}: {name!r} is not an open_clip architecture."}
    tags = open_clip.list_pretrained_tags_by_model(name.removesuffix("-quickgelu")) + \
        open_clip.list_pretrained_tags_by_model(name)
    if tag and tag not in tags and not Path(tag).is_file():
        return {"resolved": "open_clip", "problem": f"{name}/{tag}: unknown tag; known: {', '.join(sorted(set(tags)))}."}
    try:
        architecture, forced = open_clip_architecture(name, tag)
    except ValueError as error:
        return {"resolved": "open_clip", "problem": str(error)}
    quick = architecture.endswith("-quickgelu") or forced
    config = open_clip.get_pretrained_cfg(name, tag) or {}
    hub = config.get("hf_hub", "").rstrip("/")
    cached = bool(hub) and _in_hub_cache(hub)
    return {"resolved": f"open_clip {architecture}/{tag}" + (" (QuickGELU, as the weights were trained)" if quick else
                                                              " (GELU)"),
            "weights": "in the local hub cache" if cached else "to download once"}


# --------------------------------------------------------------------------- data


def check_dataset(need: DataNeed, root) -> dict:
    """``{dataset, split, present, images, how}`` of ``need`` under ``root`` (as the notebook resolves
    its ``data_root``): the real loader (or the package) decides, offline."""
    from .data import load_dataset
    from .data.base import DatasetNotFoundError
    from .stages import KNOWN_SIZES

    split = need.split
    splits = split if isinstance(split, (list, tuple)) else [split]
    known = sum(KNOWN_SIZES.get((need.name, s), 0) for s in splits)
    row = {"dataset": need.name, "split": "+".join(map(str, splits)), "present": False, "images": known, "how": ""}
    if need.package:
        present = importlib.util.find_spec(need.package) is not None
        row.update(present=present, images=0, how="" if present else need.how)
        return row
    try:
        dataset = load_dataset(need.name, root=root, split=split, **dict(need.options))
    except DatasetNotFoundError as error:
        row["how"] = str(error)
        return row
    except Exception as error:  # noqa: BLE001 -- a broken copy is reported, not raised
        row["how"] = f"{type(error).__name__}: {error}"
        return row
    row.update(present=True, images=len(dataset))
    return row


# --------------------------------------------------------------------------- per notebook


def plan_notebook(declared: NotebookDeclaration, parameters: dict, timeout_s: float, notebooks_dir: Path,
                  seen: set, parameters_of=None) -> NotebookPlan:
    """The plan of one notebook from its declaration and the parameters it runs with; ``seen`` holds
    the keys earlier notebooks compute (their results are read from the cache, not computed again);
    ``parameters_of(name)``: what another notebook runs with under the same profile (the model cards'
    stages read their measures' notebooks)."""
    plan = NotebookPlan(declared.name, timeout_s)
    specs = declared.specs(parameters)
    plan.models = [resolve_model(spec) for spec in specs]
    plan.problems += [row["problem"] for row in plan.models if row["problem"]]
    plan.models += [{"spec": spec, "resolved": "word vectors (Part III resolves files by name or path)", "weights": "",
                     "problem": ""} for spec in specs_of(parameters, declared.resource_parameters)]
    folders = Context(notebooks_dir)
    plan.data = [check_dataset(need, folders.folder(parameters[need.root_parameter]) if need.root_parameter else None)
                 for need in declared.datasets(parameters)]
    context = Context(notebooks_dir, {row["dataset"]: row["images"] for row in plan.data}, parameters_of)
    for stage in declared.stages:
        for estimate in stage.estimate(parameters, context):
            if estimate.key is not None and estimate.key in seen:
                plan.work.append(estimate.cached_line or estimate.line)
                continue
            if estimate.key is not None:
                seen.add(estimate.key)
            plan.gpu_hours += estimate.hours
            plan.disk_gb += estimate.disk_gb
            plan.work.append(estimate.line)
            if stage.units is not None and estimate.spec is not None:
                plan.stages.append((stage.kind, estimate.spec))
    if declared.power is not None:
        try:
            plan.power = declared.power(parameters)
        except Exception as error:  # noqa: BLE001 -- a power that cannot be computed is a problem, not a crash
            plan.problems.append(f"its power could not be computed: {type(error).__name__}: {error}")
    for row in plan.data:
        if not row["present"]:
            plan.problems.append(f"{row['dataset']} ({row['split']}) is missing. {row['how']}")
    if not plan.timeout_ok:
        plan.problems.append(
            f"timeout {timeout_s / 3600:.1f} h is under {TIMEOUT_HEADROOM} x the estimated {plan.gpu_hours:.1f} GPU-hours: "
            f"raise timeouts: {declared.name}: in params/<profile>.yml, or pass --timeout.")
    return plan


def make_plan(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
              assignments: Iterable[str] = (), run=None) -> list[NotebookPlan]:
    """One :class:`NotebookPlan` per selected notebook, in run order (``run``: a
    :class:`~vlbias.profiles.RunPlan` already resolved for these arguments)."""
    from . import profiles

    root = profiles.find_project_root(project_dir)
    run = run or profiles.plan_run(root, profile, only, assignments)
    seen: set = set()
    parameters_of = profiles.profile_parameters(root, profile)
    return [plan_notebook(declaration(name), profiles.notebook_parameters(root, name, run), run.timeout(name),
                          root / "notebooks", seen, parameters_of)
            for name in run.parameters]


def report(plans: list[NotebookPlan]) -> str:
    lines = [f"GPU-hours, disk and download sizes below are ESTIMATES. Throughputs assumed (src/vlbias/resources/"
             f"{THROUGHPUT_FILE}: {resource_json(THROUGHPUT_FILE)['_source']}): "
             + "; ".join(f"{k} {v if not isinstance(v, dict) else ', '.join(f'{a} {b:g}' for a, b in v.items())}"
                         for k, v in throughputs().items()),
             f"Download sizes: src/vlbias/resources/{HUB_MODELS_FILE} ({resource_json(HUB_MODELS_FILE)['_download_gb_source']})",
             ""]
    for plan in plans:
        lines.append(f"== {plan.name}: ~{plan.gpu_hours:.2f} GPU-hours (estimate), ~{plan.disk_gb:.1f} GB of "
                     f"caches/images (estimate), timeout {plan.timeout_s / 3600:.1f} h "
                     f"({'enough' if plan.timeout_ok else 'TOO SHORT'} for the estimate x {TIMEOUT_HEADROOM})")
        for row in plan.data:
            lines.append(f"   data  {row['dataset']} ({row['split']}): "
                         + (f"present, {row['images']:,} images" if row["present"] else "MISSING"))
        for row in plan.models:
            lines.append(f"   model {row['spec']}: {row['resolved']}" + (f"; weights {row['weights']}" if row["weights"] else "")
                         + (" -- PROBLEM" if row["problem"] else ""))
        lines += [f"   work  {item}" for item in plan.work]
        lines += [f"   power {line.power:.2f} to detect {line.effect_text} at {line.n_text}: {line.claim}"
                  + (f" (below 0.9: needs {line.needed:,})" if line.needed else "") for line in plan.power]
    problems, seen = [], set()
    for plan in plans:  # a missing data set is explained once, at the first notebook that needs it
        for problem in plan.problems:
            problems.append((plan.name, problem if problem not in seen else problem.split(". ")[0] + " (see above)."))
            seen.add(problem)
    lines.append("")
    if problems:
        lines.append(f"{len(problems)} problem(s) to fix before the run:")
        lines += [f"  [{name}] {problem}" for name, problem in problems]
    else:
        lines.append(f"Ready: an estimated {sum(p.gpu_hours for p in plans):.1f} GPU-hours in all, "
                     f"{sum(p.disk_gb for p in plans):.1f} GB of disk.")
    return "\n".join(lines)


def main(profile: str, only: Iterable[str] = (), project_dir: Path | None = None,
         assignments: Iterable[str] = (), part: int | None = None) -> int:
    from . import profiles

    root = profiles.find_project_root(project_dir)
    plans = make_plan(profile, only, root, assignments, run=profiles.plan_run(root, profile, only, assignments, part))
    print(report(plans))
    return 1 if any(plan.problems for plan in plans) else 0


def as_records(plans: list[NotebookPlan]) -> list[dict[str, Any]]:
    """Plain rows (one per notebook) for tables and tests."""
    return [{"notebook": p.name, "gpu_hours": p.gpu_hours, "disk_gb": p.disk_gb, "timeout_s": p.timeout_s,
             "timeout_ok": p.timeout_ok, "problems": len(p.problems)} for p in plans]
