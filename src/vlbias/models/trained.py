"""``trained:`` models: small models trained in the book on generated data, built once into the cache.

A spec names a registered recipe and its options as a query string::

    trained:world-clip?red_named=0.1&blue_named=0.9&seed=0

Options not given take the recipe's defaults; each is cast to its default's type. The recipe
trains (or finds in the cache) a checkpoint directory keyed by every option, deterministic under
its ``seed``, which then loads through the same code as any saved checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qsl

import pandas as pd


@dataclass(frozen=True)
class TrainedRecipe:
    name: str
    kind: str  # "image-text", ...
    defaults: dict
    build: Callable[..., Path]  # build(**options) -> checkpoint directory
    description: str
    #: for a text-to-image recipe: () -> the diffusers pipeline class that loads its directory
    pipeline_class: Callable[[], type] | None = None
    #: target(**options) -> the directory ``build`` trains into (cheap: no training, no data), which
    #: holds ``training.json`` once trained
    target: Callable[..., Path] | None = None
    #: explain(**options) -> one sentence saying what the model is and which causes its world plants
    explain: Callable[..., str] | None = None
    #: plants(**options) -> {cause key: the cause in words}: the causes behind the papers' claims that this
    #: recipe's world or training plants, in the vocabulary the parts' claims name (``vlbias.findings.Claim``)
    plants: Callable[..., dict[str, str]] | None = None


TRAINED_RECIPES: dict[str, TrainedRecipe] = {}


def register_trained(name: str, kind: str, defaults: dict, description: str = "",
                     pipeline_class: Callable[[], type] | None = None, target: Callable[..., Path] | None = None,
                     explain: Callable[..., str] | None = None, plants: Callable[..., dict[str, str]] | None = None):
    """Decorator registering ``build(**options) -> directory`` as the recipe of ``trained:<name>``."""

    def decorator(build: Callable[..., Path]) -> Callable[..., Path]:
        TRAINED_RECIPES[name] = TrainedRecipe(name, kind, dict(defaults), build,
                                              description or (build.__doc__ or "").strip(), pipeline_class, target,
                                              explain, plants)
        return build

    return decorator


def save_trained(directory: Path, model, processor, record: dict) -> None:
    """Save a model trained by a recipe as any checkpoint (in eval mode, ``save_pretrained``, its processor
    beside it) and ``training.json`` last: the file whose presence says the directory is complete."""
    model.eval()
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    (Path(directory) / "training.json").write_text(json.dumps(record, indent=1))


#: the modules that register ``trained:`` recipes, imported on first use of a spec. A recipe that trains a
#: part's own model lives in that part and is named here, so the core never imports a part: it only
#: looks its recipes up (``tests/core/test_layout.py`` checks that each is where it belongs).
RECIPE_MODULES = ("vlbias.models.world_clip", "vlbias.models.world_diffusion", "vlbias.models.face_clip",
                  "vlbias.models.caption_world_models", "vlbias.colorfoil.trained_models", "vlbias.t2i.trained_models",
                  "vlbias.markedness.face_captioner")


def _load_recipes() -> None:
    import importlib

    for module in RECIPE_MODULES:
        importlib.import_module(module)


def trained_options(body: str) -> tuple[TrainedRecipe, dict]:
    """The recipe and the full, typed options of ``"<name>?key=value&..."`` (the part after ``trained:``)."""
    _load_recipes()
    name, _, query = body.partition("?")
    if name not in TRAINED_RECIPES:
        raise KeyError(f"Unknown trained model 'trained:{name}'. Known: {', '.join(sorted(TRAINED_RECIPES))}.")
    recipe = TRAINED_RECIPES[name]
    options = dict(recipe.defaults)
    for key, text in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in recipe.defaults:
            raise ValueError(f"'trained:{body}': {name} has no option {key!r}; its options (and defaults) are "
                             f"{', '.join(f'{k}={v}' for k, v in recipe.defaults.items())}.")
        kind = type(recipe.defaults[key])
        try:
            options[key] = kind(float(text)) if kind is int and float(text).is_integer() else kind(text)
        except ValueError:
            raise ValueError(f"'trained:{body}': option {key}={text!r} is not a {kind.__name__} "
                             f"(default {recipe.defaults[key]!r}).") from None
    return recipe, options


def describe_trained(body: str) -> str:
    """What ``trained:<body>`` is, in one sentence: its recipe's ``explain`` of its options, else the
    recipe's description (nothing is trained)."""
    recipe, options = trained_options(body)
    if recipe.explain is not None:
        return recipe.explain(**options)
    return recipe.description.split("\n")[0]


def planted_causes(spec) -> dict[str, str]:
    """The causes behind the papers' claims that the model ``spec`` names was trained with, ``{key: the
    cause in words}`` (its recipe's ``plants``): empty for a recipe that plants none, and for any model not
    trained here (the papers' own, a real model), whose world nobody planted."""
    text = str(spec or "")
    if not text.startswith("trained:"):
        return {}
    recipe, options = trained_options(text.partition(":")[2])
    return {} if recipe.plants is None else dict(recipe.plants(**options))


def trained_checkpoint(body: str) -> Path:
    """The directory of ``trained:<body>``, training it on first use."""
    recipe, options = trained_options(body)
    return Path(recipe.build(**options))


def trained_pipeline(body: str) -> tuple[Path, type]:
    """The directory of the text-to-image model ``trained:<body>`` (trained on first use) and the
    diffusers pipeline class that loads it."""
    recipe, options = trained_options(body)
    if recipe.pipeline_class is None:
        raise ValueError(f"'trained:{body}' is a {recipe.kind} model, not a text-to-image one; text-to-image "
                         f"recipes: {', '.join(sorted(n for n, r in TRAINED_RECIPES.items() if r.pipeline_class))}.")
    return Path(recipe.build(**options)), recipe.pipeline_class()


def training_summary(specs) -> pd.DataFrame:
    """Per ``trained:`` spec: epochs (or steps), the last loss and the training time (training those not yet built)."""
    from .spec import parse_spec

    rows = []
    for spec in specs:
        parsed = parse_spec(spec)
        if parsed.source != "trained":
            raise ValueError(f"training_summary reads trained: specs only, got {spec!r} (a {parsed.source} spec).")
        record = json.loads((trained_checkpoint(parsed.name) / "training.json").read_text())
        length = {"steps": record["history"][-1]["step"]} if "step" in record["history"][-1] else {
            "epochs": len(record["history"])}
        rows.append({"spec": spec, **length, "final_loss": record["history"][-1]["loss"],
                     "train_images": record["train_images"], "seconds": record["seconds"]})
    return pd.DataFrame(rows)


def _train_one(body: str) -> tuple[str, list[tuple[str, str, str, int]]]:
    """In a worker process: train ``trained:<body>``; its directory and the warnings it raised, to show
    in the caller (a worker's own stderr does not reach a notebook's page)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        directory = trained_checkpoint(body)
    return str(directory), [(str(w.message), w.category.__module__, w.category.__qualname__, w.lineno)
                            for w in caught]


def build_trained(specs, workers: int | None = None, progress: bool = False) -> dict[str, Path]:
    """The directories of the ``trained:`` models among ``specs`` (other specs are left to their
    loaders), training those not yet built up to ``workers`` at once, each in its own process.

    Every recipe trains on one torch thread, in its own process here exactly as when it trains in
    the caller's, so the weights are bit for bit those of training them one after another (tested).
    ``workers`` defaults to the cores this process is given (:func:`vlbias.device.cpu_budget`: the
    runner divides the machine among the notebooks it runs at once); with one worker, or one model
    to train, they train here, one after another. With more, this process is one of the ``workers``:
    it trains every ``workers``-th model itself while ``workers - 1`` spawned processes train the
    rest, so its core is not idle while theirs import torch. Specs naming the same options train once;
    a model another process is training is waited for (:func:`vlbias.paths.one_builder`), not trained
    twice. Warnings raised while training are raised again here.
    """
    import warnings
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from ..device import cpu_budget
    from .spec import parse_spec

    named = {spec: parse_spec(spec) for spec in ([specs] if isinstance(specs, str) else specs)}
    bodies = {spec: parsed.name for spec, parsed in named.items() if parsed.source == "trained"}
    distinct = list({_options_key(body): body for body in bodies.values()}.values())
    missing = [body for body in distinct if not _is_built(body)]
    workers = max(1, int(workers or cpu_budget()))
    if workers > 1 and len(missing) > 1:
        from tqdm import tqdm

        lanes = min(workers, len(missing))
        here = missing[lanes - 1::lanes]  # this process's share; the spawned ones take the rest
        # spawn, not fork: a notebook's kernel holds threads (torch's, the decoders') a fork would copy mid-state
        with ProcessPoolExecutor(lanes - 1, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_train_one, body) for body in missing if body not in here]
            for body in tqdm(here, desc="training models here", disable=not progress):
                trained_checkpoint(body)
            for future in tqdm(as_completed(futures), total=len(futures), desc="training models", disable=not progress):
                for message, module, category, lineno in future.result()[1]:
                    warnings.warn_explicit(message, _warning_class(module, category), "vlbias training worker", lineno)
    return {spec: trained_checkpoint(body) for spec, body in bodies.items()}


def _options_key(body: str) -> str:
    recipe, options = trained_options(body)
    return json.dumps([recipe.name, options], sort_keys=True)


def _is_built(body: str) -> bool:
    """Whether ``trained:<body>`` is trained already (False when its recipe cannot tell without training)."""
    recipe, options = trained_options(body)
    return recipe.target is not None and (Path(recipe.target(**options)) / "training.json").exists()


def _warning_class(module: str, qualname: str) -> type:
    """The warning class a worker raised, by name; ``UserWarning`` when it cannot be found here."""
    import importlib

    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return UserWarning
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning
