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


TRAINED_RECIPES: dict[str, TrainedRecipe] = {}


def register_trained(name: str, kind: str, defaults: dict, description: str = ""):
    """Decorator registering ``build(**options) -> directory`` as the recipe of ``trained:<name>``."""

    def decorator(build: Callable[..., Path]) -> Callable[..., Path]:
        TRAINED_RECIPES[name] = TrainedRecipe(name, kind, dict(defaults), build,
                                              description or (build.__doc__ or "").strip())
        return build

    return decorator


def _load_recipes() -> None:
    from . import world_clip  # noqa: F401  (registers trained:world-clip)


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


def trained_checkpoint(body: str) -> Path:
    """The directory of ``trained:<body>``, training it on first use."""
    recipe, options = trained_options(body)
    return Path(recipe.build(**options))


def training_summary(specs) -> pd.DataFrame:
    """Per ``trained:`` spec: epochs, the last epoch's loss and the training time (training those not yet built)."""
    rows = []
    for spec in specs:
        record = json.loads((trained_checkpoint(str(spec).removeprefix("trained:")) / "training.json").read_text())
        rows.append({"spec": spec, "epochs": len(record["history"]), "final_loss": record["history"][-1]["loss"],
                     "train_images": record["train_images"], "seconds": record["seconds"]})
    return pd.DataFrame(rows)
