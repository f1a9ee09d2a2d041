"""``trained:profession-diffusion``: the world-diffusion model trained on Part IV's profession world.

It lives in Part IV because it trains on Part IV's world (:mod:`vlbias.t2i.profession_world`);
:data:`vlbias.models.trained.RECIPE_MODULES` names this module, so the spec resolves wherever it is
used. The trainer is the core's (:func:`vlbias.models.world_diffusion.train_world_diffusion`).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..data.base import sha256_hex
from ..models.trained import register_trained
from ..models.world_diffusion import (WORLD_DIFFUSION_VERSION, DiffusionTrainingConfig, train_world_diffusion,
                                      world_diffusion_pipeline_class)
from ..paths import cache_dir


#: the options of ``trained:profession-diffusion``: the profession world's
#: (:data:`vlbias.t2i.profession_world.PROFESSION_WORLD_DEFAULTS`, without the test split) and the training's.
#: Batches of 32 (half 04e's 64): a step takes about 0.55 of the time, so the demo's two models train
#: in about 47 s side by side against 70 s each, and the planted-signal tests' rho is unchanged within its
#: interval (planted 0.73 [0.42, 0.72] against the control's 0.24 [-0.00, 0.36] when measured; with 64:
#: 0.68 [0.45, 0.72] against 0.21 [-0.05, 0.35])
PROFESSION_DIFFUSION_DEFAULTS = {"share_scale": 1.0, "source_cases": 1, "seed": 0, "steps": 1000, "batch_size": 32,
                                 "learning_rate": 3e-3, "train_per_kind": 60, "image_size": 8,
                                 "prompt_dropout": 0.1, "ema_decay": 0.99}


def _profession_diffusion_recipe(share_scale: float, source_cases: int, seed: int, steps: int, batch_size: int,
                                 learning_rate: float, train_per_kind: int, image_size: int, prompt_dropout: float,
                                 ema_decay: float) -> tuple[dict, DiffusionTrainingConfig, dict, Path]:
    """(world options, training config, ``about``, target directory) of these options."""
    from ..data.registry import world_options
    from . import profession_world  # noqa: F401  (registers the world)

    world = world_options("profession-world", dict(share_scale=share_scale, source_cases=source_cases,
                                                   train_per_kind=train_per_kind, seed=seed))
    config = DiffusionTrainingConfig(steps=steps, batch_size=batch_size, learning_rate=learning_rate,
                                     image_size=image_size, prompt_dropout=prompt_dropout, ema_decay=ema_decay,
                                     seed=seed)
    about = {"version": WORLD_DIFFUSION_VERSION, "world": "profession-world", "world_version":
             profession_world.PROFESSION_WORLD_VERSION, "world_options": world}
    key = sha256_hex(json.dumps({**about, "config": asdict(config)}, sort_keys=True))[:16]
    return world, config, about, cache_dir() / "trained" / f"profession-diffusion-{key}"


def explain_profession_diffusion(share_scale: float, source_cases: int, seed: int, steps: int, batch_size: int,
                                 train_per_kind: int, image_size: int, **_) -> str:
    """One sentence: what ``trained:profession-diffusion?...`` is and which cause its world plants."""
    planted = ("red (playing 'female') planted at each profession's labour-statistics female share"
               if share_scale == 1 else "every profession half red: the uniform control" if share_scale == 0 else
               f"red (playing 'female') planted at 0.5 + {share_scale:g} x (labour share - 0.5)")
    return (f"a diffusion model of {image_size}×{image_size}-pixel pictures trained here ({steps} steps of {batch_size} pictures, seed {seed}) on {train_per_kind} "
            f"pictures per profession, each profession drawn as one shape and captioned with its prompt, never "
            f"the colour; {planted}")


@register_trained("profession-diffusion", "text-to-image", PROFESSION_DIFFUSION_DEFAULTS,
                  pipeline_class=world_diffusion_pipeline_class,
                  target=lambda **options: _profession_diffusion_recipe(**options)[3],
                  explain=explain_profession_diffusion)
def profession_diffusion(**options) -> Path:
    """The world-diffusion model trained on Part IV's profession world: each study profession a
    shape, the share of red (playing "female") planted at ``0.5 + share_scale * (labour share - 0.5)``,
    captions the study's prompts, never naming the colour."""
    from ..data import load_dataset
    from ..data.registry import generated_world_root
    from .profession_world import caption_words

    world, config, about, target = _profession_diffusion_recipe(**options)
    if (target / "training.json").exists():
        return target
    train = load_dataset("profession-world", root=generated_world_root("profession-world", world), split="train")
    return train_world_diffusion(target, train.pixels, list(train.records["kind"]), config, about,
                                 captions=list(train.records["caption"]),
                                 extra_words=caption_words(world["source_cases"]))
