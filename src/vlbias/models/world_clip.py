"""``trained:world-clip``: the mini-CLIP trained on a planted world (:mod:`vlbias.data.planted_world`).

The spec sets how often captions name each colour (``red_named``, ``blue_named``), how far the
share of red per kind spreads around 50% (``share_spread``: 0.8 is the 10%-90% table, 0 makes
every kind half red), the seed and the training length; ``attributes=1`` trains it on the world
whose pictures also vary in background tint and shade, named in every caption (Part IV's annotator of the
stand-ins for age and skin tone, 04d).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..data.base import sha256_hex
from ..data.planted_world import COLOURS, spread_shares, world_defaults, world_parameters, world_root
from ..paths import cache_dir
from .mini_clip import MiniClipConfig, TrainingExamples, train_mini_clip
from .trained import register_trained

#: bump when the same options would train different weights
WORLD_CLIP_VERSION = 2  # 2: trained on one torch thread

#: the options of ``trained:world-clip`` and their defaults: the world's, read from where they are
#: defined (:func:`vlbias.data.planted_world.world_defaults`), and this recipe's training (shorter and
#: smaller batches than :class:`~vlbias.models.mini_clip.MiniClipConfig`'s defaults)
WORLD_CLIP_DEFAULTS = {**{f"{colour}_named": world_defaults()["named"][colour] for colour in COLOURS},
                       "share_spread": world_defaults()["share_spread"], "seed": world_defaults()["seed"], "epochs": 8,
                       "batch_size": 64, "learning_rate": 1e-3, "train_per_kind": world_defaults()["train_per_kind"],
                       "image_size": world_defaults()["image_size"], "attributes": 0}


def _world_clip_recipe(share_spread: float, seed: int, epochs: int, batch_size: int, learning_rate: float,
                       train_per_kind: int, image_size: int, attributes: int = 0,
                       **named) -> tuple[dict, MiniClipConfig, dict, Path]:
    """(world parameters, training config, ``about``, target directory) of these options."""
    world = dict(shares=spread_shares(share_spread), named={key.removesuffix("_named"): value for key, value in named.items()},
                 train_per_kind=train_per_kind, image_size=image_size, seed=seed, attributes=attributes)
    config = MiniClipConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, width=64, layers=2, heads=2,
                            patch_size=image_size // 4, projection_dim=32, seed=seed)
    about = {"version": WORLD_CLIP_VERSION, "world": world_parameters(**world)}
    key = sha256_hex(json.dumps({**about, "config": config.__dict__}, sort_keys=True))[:16]
    return world, config, about, cache_dir() / "trained" / f"world-clip-{key}"


def explain_world_clip(share_spread: float, seed: int, epochs: int, train_per_kind: int, attributes: int = 0,
                       **named) -> str:
    """One sentence: what ``trained:world-clip?...`` is and which causes its world plants."""
    rates = ", ".join(f"{key.removesuffix('_named')} {value:.0%}" for key, value in named.items()
                      if key.endswith("_named"))
    low, high = 50 * (1 - share_spread), 50 * (1 + share_spread)
    shares = ("every kind half red" if share_spread == 0 else f"red's share per kind from {low:.0f}% to {high:.0f}%")
    return (f"a mini-CLIP trained here ({epochs} epochs, seed {seed}) on {train_per_kind} pictures per kind of the "
            f"planted world, {shares}, captions naming each colour this often: {rates}"
            + ("; every picture on one of four background tints in one of three shades, both named in its caption" if attributes else ""))


def world_clip_plants(red_named: float, blue_named: float, **options) -> dict[str, str]:
    """The cause behind 01c's claims that ``trained:world-clip`` plants: captions that name red, the
    default, less often than blue (``red_unnamed``); equal naming plants none."""
    if red_named < blue_named:
        return {"red_unnamed": f"captions that name red {red_named:.0%} of the time and blue {blue_named:.0%}"}
    return {}


@register_trained("world-clip", "image-text", WORLD_CLIP_DEFAULTS, target=lambda **options: _world_clip_recipe(**options)[3],
                  explain=explain_world_clip, plants=world_clip_plants)
def world_clip(**options) -> Path:
    """A mini-CLIP trained contrastively on a planted world's captions; captions with the same text are positives."""
    from ..data import load_dataset

    world, config, about, target = _world_clip_recipe(**options)

    def examples() -> TrainingExamples:
        train = load_dataset("planted-world", root=world_root(**world), split="train")
        captions = train.records["caption"]
        return TrainingExamples(images=list(train.images()), captions=[[c] for c in captions],
                                classes=pd.factorize(captions)[0])

    return train_mini_clip(target, examples, config, progress=False,
                           about=about, description="training world-clip")
