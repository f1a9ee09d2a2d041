"""Preflight for a profile: ``python -m vlbias plan --profile full [--only NAME]``, offline.

For each notebook it says what the run needs and what it will cost before any GPU time is spent:

- the data sets it reads, found or not (with the download instructions of the loader);
- every model spec resolved: an open_clip architecture and tag (and whether the tag's weights were
  trained with QuickGELU, so the QuickGELU architecture is built), a Hugging Face hub id recorded in
  ``resources/hub_models.json`` (and whether its files are already in the local hub cache), a local
  directory, a package asset or a ``tiny:`` fixture;
- the images and forward passes it will run, GPU-hours at the throughputs in :data:`THROUGHPUT`
  (``resources/plan_throughputs.json``: estimates, not measurements, and the report says so), disk
  for caches and images, download sizes (estimates from ``resources/hub_models.json``);
- whether the profile's timeout for it covers the estimate.

Anything that would stop the run is collected in an actionable list and the command exits 1.
Nothing is downloaded and no model is built.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

#: Throughputs the estimates assume (``resources/plan_throughputs.json``, whose ``_source`` says where
#: they come from: assumptions, not measurements). A slower GPU scales every GPU-hour figure alike.
THROUGHPUT_FILE = "plan_throughputs.json"
HUB_MODELS_FILE = "hub_models.json"


def _resource_json(name: str) -> dict:
    return json.loads(resources.files("vlbias").joinpath("resources", name).read_text(encoding="utf-8"))


THROUGHPUT = {key: value for key, value in _resource_json(THROUGHPUT_FILE).items() if not key.startswith("_")}
#: decoded image sizes and cache footprints used for the disk column
BYTES_PER_PNG = 450_000
FLOAT_BYTES = 4
#: a notebook's timeout must exceed its estimate by this factor
TIMEOUT_HEADROOM = 1.5
#: image counts of the full data sets, used when the data are not on this machine
KNOWN_SIZES = {("fairface", "train"): 86_744, ("fairface", "val"): 10_954, ("coco", "val2017"): 5_000,
               ("flickr30k", "val"): 1_000, ("flickr30k", "test"): 1_000}
#: ColorFoil pairs per data set (the paper's counts), before the data are read
COLORFOIL_PAIRS = {"coco": 2_511, "flickr30k": 2_500}

SPEC_KEYS = ("model_spec", "model_specs", "annotator_spec", "second_annotator_spec", "face_annotator_spec", "t2i_spec",
             "t2i_specs", "cads_t2i_specs", "diffusion_spec", "lm_spec", "generator_spec", "classifier_spec",
             "sentence_encoder_spec", "blind_lm_spec")


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
    #: the heavy stages as (kind, model spec): "image-embeddings", "colorfoil-scores", "generation",
    #: "annotation"; ``python -m vlbias precompute`` runs them from this same plan
    stages: list[tuple[str, str]] = field(default_factory=list)

    @property
    def timeout_ok(self) -> bool:
        return self.gpu_hours * 3600 * TIMEOUT_HEADROOM <= self.timeout_s


# --------------------------------------------------------------------------- models


def hub_models() -> dict[str, dict]:
    """The hub ids the profiles use, with kind and size (``resources/hub_models.json``)."""
    return {key: value for key, value in _resource_json(HUB_MODELS_FILE).items() if not key.startswith("_")}


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return any(isinstance(try_to_load_from_cache(repo_id, name), str)
               for name in ("config.json", "model_index.json", "open_clip_config.json"))


def resolve_model(spec: str) -> dict:
    """What a spec names and whether it can load: ``{spec, resolved, weights, problem}``."""
    from .models.spec import parse_spec

    row = {"spec": spec, "resolved": "", "weights": "", "problem": ""}
    if spec == "profanity-check":  # Part III's offline classifier, a package rather than a checkpoint
        from importlib.util import find_spec

        row.update(resolved="the alt-profanity-check package's linear classifier")
        if find_spec("profanity_check") is None:
            row["problem"] = f"{spec}: not installed; pip install alt-profanity-check==1.9.1"
        else:
            row["weights"] = "installed"
        return row
    if spec.startswith("asset:"):
        from .assets import locate_asset

        try:
            row.update(resolved=f"package asset at {locate_asset(spec.removeprefix('asset:'))}", weights="installed")
        except Exception as error:  # noqa: BLE001 -- reported as the row's problem
            row.update(resolved="package asset", problem=f"{spec}: {error}")
        return row
    try:
        parsed = parse_spec(spec)
    except (ValueError, FileNotFoundError) as error:
        row["problem"] = f"{spec}: {error}"
        return row
    if parsed.source == "tiny":
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
        known = hub_models().get(parsed.name)
        if known is None:
            row.update(resolved="hub id (not recorded)", problem=(
                f"{spec}: not a hub id recorded in src/vlbias/resources/hub_models.json. Check the spelling; "
                "if it is right, add it there with its kind and size, or pass a local directory."))
        else:
            row["resolved"] = f"hub id, {known['kind']} ({known['architecture']})"
            row["weights"] = "in the local hub cache" if _in_hub_cache(parsed.name) else \
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


def _specs(parameters: dict) -> list[str]:
    found = []
    for key in SPEC_KEYS:
        value = parameters.get(key)
        for spec in ([value] if isinstance(value, str) else value or []):
            if spec not in found:
                found.append(spec)
    return found


def _architecture(spec: str) -> str:
    for name in ("ViT-L-14", "ViT-B-16", "ViT-B-32"):
        if spec.startswith(name):
            return name
    return "default"


def _matcher_family(spec: str) -> str | None:
    lowered = spec.lower()
    return next((family for family in ("vilt", "bridgetower") if family in lowered), None)


# --------------------------------------------------------------------------- data


def _check_dataset(name: str, root, split) -> dict:
    """``{dataset, split, present, images, how}``: the real loader decides, offline."""
    from .data import load_dataset
    from .data.base import DatasetNotFoundError

    splits = split if isinstance(split, (list, tuple)) else [split]
    known = sum(KNOWN_SIZES.get((name, s), 0) for s in splits)
    row = {"dataset": name, "split": "+".join(map(str, splits)), "present": False, "images": known, "how": ""}
    try:
        dataset = load_dataset(name, root=root, split=split)
    except DatasetNotFoundError as error:
        row["how"] = str(error)
        return row
    except Exception as error:  # noqa: BLE001 -- a broken copy is reported, not raised
        row["how"] = f"{type(error).__name__}: {error}"
        return row
    row.update(present=True, images=len(dataset))
    return row


def study_profession_count() -> int:
    """The professions Part IV generates: the WinoBias/BLS table and the source text's named cases."""
    published = resources.files("vlbias").joinpath("resources", "published")

    def rows(name: str) -> list[dict]:
        text = published.joinpath(name).read_text(encoding="utf-8")
        return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))

    names = {row["occupation"] for row in rows("winobias_bls_female_share.csv")}
    names |= {row["profession"] for row in rows("t2i_occupational_bias_source.csv") if row["profession"]}
    return len(names)


# --------------------------------------------------------------------------- per notebook


def _plan_notebook(name: str, parameters: dict, timeout_s: float, embedded: set) -> NotebookPlan:
    plan = NotebookPlan(name, timeout_s)
    root = parameters.get("data_root")
    plan.models = [resolve_model(spec) for spec in _specs(parameters)]
    plan.problems += [row["problem"] for row in plan.models if row["problem"]]
    hours = 0.0
    if name.startswith("01") and "train_per_kind" in parameters:  # the planted world: generated, on the CPU
        plan.work.append(f"mini-CLIPs trained in the book on the planted world ({int(parameters['train_per_kind'])} "
                         "pictures per kind and condition; CPU minutes); no data set to download")
    elif name.startswith("01"):
        data = _check_dataset("fairface", root, parameters.get("split", "train"))
        plan.data.append(data)
        for spec in _specs(parameters):
            if (spec, "fairface") in embedded:
                plan.work.append(f"{spec}: {data['images']:,} image embeddings, cached by an earlier notebook")
                continue
            embedded.add((spec, "fairface"))
            rate = THROUGHPUT["image embeddings/s"].get(_architecture(spec), THROUGHPUT["image embeddings/s"]["default"])
            hours += data["images"] / rate / 3600
            plan.disk_gb += data["images"] * 1024 * FLOAT_BYTES / 1e9
            plan.work.append(f"{spec}: {data['images']:,} image embeddings at an assumed {rate:g}/s")
            plan.stages.append(("image-embeddings", spec))
    elif name.startswith(("02a", "02b")):
        splits = {"coco": parameters.get("coco_split", "val2017"),
                  "flickr30k": parameters.get("flickr_splits", ["val", "test"])}
        plan.data += [_check_dataset(dataset, root, split) for dataset, split in splits.items()]
        if name.startswith("02b"):
            width = 1 + max(list(parameters.get("foil_counts", [1, 2, 4])) + [parameters.get("confusion_foils", 4)])
            pairs = sum(COLORFOIL_PAIRS.values())
            for spec in parameters.get("model_specs") or []:
                plan.stages.append(("colorfoil-scores", spec))
                family = _matcher_family(spec)
                if family:
                    rate = THROUGHPUT["pairwise matches/s"][family]
                    hours += pairs * width / rate / 3600
                    plan.work.append(f"{spec}: {pairs * width:,} image-text matches at an assumed {rate:g}/s")
                else:
                    rate = THROUGHPUT["image embeddings/s"]["default"]
                    hours += pairs / rate / 3600 + pairs * width / THROUGHPUT["text embeddings/s"] / 3600
                    plan.work.append(f"{spec}: {pairs:,} images and up to {pairs * width:,} texts embedded")
            if parameters.get("blind_lm_spec"):
                hours += pairs * width / THROUGHPUT["text embeddings/s"] / 3600
                plan.work.append(f"{parameters['blind_lm_spec']}: up to {pairs * width:,} captions and foils scored "
                                 "without the image (blind baseline)")
    elif name.startswith("02c"):
        present = importlib.util.find_spec("easy_vqa") is not None
        plan.data.append({"dataset": "easy-vqa", "split": "train+test", "present": present, "images": 0,
                          "how": "" if present else "pip install the easy-vqa package (requirements.txt)"})
        hours += 0.1
        plan.work.append("trains a small CLIP-style model on easy-VQA (minutes)")
    elif name.startswith("03"):
        prompts = int(parameters.get("n_per_scenario", 0) or 0)
        tokens = prompts * int(parameters.get("max_new_tokens", 0) or 0) * 10  # up to ten scenarios
        hours += tokens / THROUGHPUT["generated tokens/s"] / 3600 + 0.05
        plan.work.append(f"language-model scoring{f' and up to {tokens:,} generated tokens' if tokens else ''}")
        for key in ("word_vector_specs",):
            for spec in parameters.get(key) or []:
                plan.models.append({"spec": spec, "resolved": "word vectors (Part III resolves files by name or path)",
                                    "weights": "", "problem": ""})
    elif name.startswith("04") and "images_per_kind" in parameters:  # the planted world: small, on the CPU
        runs = len(set(parameters.get("guidance_scales") or [])) + len(parameters.get("noise_scales") or []) - 1
        plan.work.append(f"up to {12 * int(parameters['images_per_kind']) * max(runs, 1):,} small images of the "
                         "planted world, generated and labelled by models trained in the book (CPU minutes)")
    elif name.startswith("04"):
        listed = list(parameters.get("professions") or [])  # 04d names its own; the others use the study's
        professions = len(listed) or study_profession_count()
        per_profession = int(parameters.get("images_per_profession", 0) or 0)
        runs = len(parameters.get("noise_scales") or [None])
        images = professions * per_profession * runs
        steps = int(parameters.get("num_inference_steps", 50))
        # the same images only when model, count, steps, prompt and professions all agree (04b reads 04a's)
        key = (parameters.get("t2i_spec"), per_profession, steps, parameters.get("prompt_template"), tuple(listed))
        if key in embedded and runs == 1:
            plan.work.append(f"{images:,} images at {steps} steps, generated by an earlier notebook (resumed)")
        else:
            embedded.add(key)
            hours += images * steps / THROUGHPUT["diffusion steps/s (512 px, fp16)"] / 3600
            plan.disk_gb += images * BYTES_PER_PNG / 1e9
            plan.stages.append(("generation", parameters.get("t2i_spec")))
            plan.work.append(f"{images:,} images ({professions} professions x {per_profession}"
                             f"{f' x {runs} noise scales' if runs > 1 else ''}) at {steps} steps, an assumed "
                             f"{THROUGHPUT['diffusion steps/s (512 px, fp16)']:g} steps/s")
        if parameters.get("annotator_spec"):
            rate = THROUGHPUT["image embeddings/s"][_architecture(parameters["annotator_spec"])]
            hours += images / rate / 3600
            plan.work.append(f"{images:,} zero-shot annotations with {parameters['annotator_spec']} at an assumed {rate:g}/s")
            plan.stages.append(("annotation", parameters["annotator_spec"]))
        compared = list(parameters.get("t2i_specs") or []) + list(parameters.get("cads_t2i_specs") or [])
        if compared:  # 04c's model comparison: each listed model plain, and CADS on cads_t2i_specs
            per_model = professions * int(parameters.get("comparison_images_per_profession", per_profession) or 0)
            hours += len(compared) * per_model * steps / THROUGHPUT["diffusion steps/s (512 px, fp16)"] / 3600
            plan.disk_gb += len(compared) * per_model * BYTES_PER_PNG / 1e9
            plan.work.append(f"model comparison: {len(compared) * per_model:,} images ({len(compared)} runs x "
                             f"{per_model:,}) at {steps} steps, at SD 1.x's assumed rate (SDXL and SD 3 are slower)")
    plan.gpu_hours = hours
    for row in plan.data:
        if not row["present"]:
            plan.problems.append(f"{row['dataset']} ({row['split']}) is missing. {row['how']}")
    if not plan.timeout_ok:
        plan.problems.append(
            f"timeout {timeout_s / 3600:.1f} h is under {TIMEOUT_HEADROOM} x the estimated {plan.gpu_hours:.1f} GPU-hours: "
            f"raise timeouts: {name}: in params/<profile>.yml, or pass --timeout.")
    return plan


def make_plan(profile: str = "full", only: Iterable[str] = (), project_dir: Path | None = None,
              assignments: Iterable[str] = ()) -> list[NotebookPlan]:
    """One :class:`NotebookPlan` per selected notebook, in run order."""
    from . import runner

    root = runner.find_project_root(project_dir)
    run = runner.plan_run(root, profile, only, assignments)
    notebooks, embedded = runner.list_notebooks(root), set()
    # what each notebook runs with: its parameters cell, then the profile's values
    return [_plan_notebook(name, {**runner.parameter_defaults(notebooks[name]), **parameters}, run.timeout(name),
                           embedded)
            for name, parameters in run.parameters.items()]


def report(plans: list[NotebookPlan]) -> str:
    lines = [f"GPU-hours, disk and download sizes below are ESTIMATES. Throughputs assumed (src/vlbias/resources/"
             f"{THROUGHPUT_FILE}: {_resource_json(THROUGHPUT_FILE)['_source']}): "
             + "; ".join(f"{k} {v if not isinstance(v, dict) else ', '.join(f'{a} {b:g}' for a, b in v.items())}"
                         for k, v in THROUGHPUT.items()),
             f"Download sizes: src/vlbias/resources/{HUB_MODELS_FILE} ({_resource_json(HUB_MODELS_FILE)['_download_gb_source']})",
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
         assignments: Iterable[str] = ()) -> int:
    plans = make_plan(profile, only, project_dir, assignments)
    print(report(plans))
    return 1 if any(plan.problems for plan in plans) else 0


def as_records(plans: list[NotebookPlan]) -> list[dict[str, Any]]:
    """Plain rows (one per notebook) for tables and tests."""
    return [{"notebook": p.name, "gpu_hours": p.gpu_hours, "disk_gb": p.disk_gb, "timeout_s": p.timeout_s,
             "timeout_ok": p.timeout_ok, "problems": len(p.problems)} for p in plans]
