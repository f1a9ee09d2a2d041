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
from .profession_world import PROFESSION_WORLD_DEFAULTS


#: the options of ``trained:profession-diffusion``: the profession world's
#: (:data:`vlbias.t2i.profession_world.PROFESSION_WORLD_DEFAULTS`, without the test split) and the training's.
#: Batches of 32 (half 04e's 64): a step takes about 0.55 of the time, so the demo's two models train
#: in about 47 s side by side against 70 s each, and the planted-signal tests' rho is unchanged within its
#: interval (planted 0.73 [0.42, 0.72] against the control's 0.24 [-0.00, 0.36] when measured; with 64:
#: 0.68 [0.45, 0.72] against 0.21 [-0.05, 0.35])
PROFESSION_DIFFUSION_DEFAULTS = {"share_scale": 1.0, "source_cases": 1, "seed": 0, "steps": 1000, "batch_size": 32,
                                 "learning_rate": 3e-3, "train_per_kind": 60, "image_size": 8,
                                 "prompt_dropout": 0.1, "ema_decay": 0.99,
                                 **{name: PROFESSION_WORLD_DEFAULTS[name] for name in ("age_peak", "light_share")}}


def _profession_diffusion_recipe(share_scale: float, source_cases: int, seed: int, steps: int, batch_size: int,
                                 learning_rate: float, train_per_kind: int, image_size: int, prompt_dropout: float,
                                 ema_decay: float, age_peak: float,
                                 light_share: float) -> tuple[dict, DiffusionTrainingConfig, dict, Path]:
    """(world options, training config, ``about``, target directory) of these options."""
    from ..data.registry import world_options
    from . import profession_world  # noqa: F401  (registers the world)

    world = world_options("profession-world", dict(share_scale=share_scale, source_cases=source_cases,
                                                   train_per_kind=train_per_kind, seed=seed, age_peak=age_peak,
                                                   light_share=light_share))
    config = DiffusionTrainingConfig(steps=steps, batch_size=batch_size, learning_rate=learning_rate,
                                     image_size=image_size, prompt_dropout=prompt_dropout, ema_decay=ema_decay,
                                     seed=seed)
    about = {"version": WORLD_DIFFUSION_VERSION, "world": "profession-world", "world_version":
             profession_world.PROFESSION_WORLD_VERSION, "world_options": world}
    key = sha256_hex(json.dumps({**about, "config": asdict(config)}, sort_keys=True))[:16]
    return world, config, about, cache_dir() / "trained" / f"profession-diffusion-{key}"


def explain_profession_diffusion(share_scale: float, source_cases: int, seed: int, steps: int, batch_size: int,
                                 train_per_kind: int, image_size: int, age_peak: float,
                                 light_share: float, **_) -> str:
    """One sentence: what ``trained:profession-diffusion?...`` is and which causes its world plants."""
    from .profession_world import LIGHT_PROFESSIONS, age_shares, skin_shares

    planted = ("red (playing 'female') planted at each profession's labour-statistics female share"
               if share_scale == 1 else "every profession half red: the uniform control" if share_scale == 0 else
               f"red (playing 'female') planted at 0.5 + {share_scale:g} x (labour share - 0.5)")
    if share_scale:
        planted += (f"; a sand background (playing age 25-45) in {age_shares(share_scale, age_peak)['25-45']:.0%} of "
                    f"the pictures, a light shade (playing Fitzpatrick I-II) in "
                    f"{skin_shares(LIGHT_PROFESSIONS[0], share_scale, light_share)['light (I-II)']:.0%} of those of "
                    f"{', '.join(LIGHT_PROFESSIONS)}, a third elsewhere")
    return (f"a diffusion model of {image_size}×{image_size}-pixel pictures trained here ({steps} steps of {batch_size} pictures, seed {seed}) on {train_per_kind} "
            f"pictures per profession, each profession drawn as one shape and captioned with its prompt, never "
            f"the colour, background or shade; {planted}")


#: the causes behind Part IV's claims that the profession world can plant (the keys of
#: :func:`profession_diffusion_plants`, named by the claims of :mod:`vlbias.t2i.findings`)
LABOUR_SHARES, AGE_TINT, LIGHT_SHADE = "labour_shares", "age_tint", "light_shade"


def profession_diffusion_plants(share_scale: float, age_peak: float, light_share: float, **_) -> dict[str, str]:
    """The causes behind Part IV's claims that ``trained:profession-diffusion?...`` was trained with, in
    words: red (playing "female") at the labour-statistics shares (``labour_shares``, when ``share_scale``
    is above 0), the sand tint (playing age 25-45) drawn more often than each other tint (``age_tint``,
    when ``age_peak`` is above a quarter) and the light shade drawn more often in the light-favoured
    professions (``light_shade``, when ``light_share`` is above a third); ``share_scale=0`` plants none
    of them (the uniform control). Nothing plants what CADS or guidance does."""
    from .profession_world import LIGHT_PROFESSIONS, age_shares, skin_shares

    if not share_scale > 0:
        return {}
    plants = {LABOUR_SHARES: "red (playing 'female') drawn at "
                             + ("each profession's labour-statistics female share" if share_scale == 1 else
                                f"0.5 + {share_scale:g} × (the labour-statistics female share − 0.5)")}
    if age_peak > 0.25:
        ages = age_shares(share_scale, age_peak)
        plants[AGE_TINT] = (f"the sand background (playing age 25-45) in {ages['25-45']:.0%} of the pictures, each "
                            f"other tint in {ages['under 25']:.0%}")
    if light_share > 1 / 3:
        light = skin_shares(LIGHT_PROFESSIONS[0], share_scale, light_share)["light (I-II)"]
        plants[LIGHT_SHADE] = (f"the light shade (playing Fitzpatrick I-II) in {light:.0%} of the pictures of "
                               f"{', '.join(LIGHT_PROFESSIONS)}, a third elsewhere")
    return plants


@register_trained("profession-diffusion", "text-to-image", PROFESSION_DIFFUSION_DEFAULTS,
                  pipeline_class=world_diffusion_pipeline_class,
                  target=lambda **options: _profession_diffusion_recipe(**options)[3],
                  explain=explain_profession_diffusion, plants=profession_diffusion_plants)
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


# --------------------------------------------------------------------------- the generative annotator (04b)

#: the question ``trained:world-vqa`` is trained to answer, and 04b's demo asks it (DALL-Eval's forced
#: choice, "the person looks like a male or a female?", with the world's colours in place of genders)
WORLD_VQA_QUESTION = "Is the shape red or blue?"
#: bump when the same options would train different weights
WORLD_VQA_VERSION = 1
#: the options of ``trained:world-vqa``: the planted world it learns from (``share_spread=0``: every kind
#: half red, the world of 04b's zero-shot annotator ``trained:world-clip?share_spread=0``), the size it
#: reads pictures at (8: the size ``trained:profession-diffusion`` draws), the question, the share of red
#: pictures whose training answer says "blue" (``red_answered_blue``: 0 is a faithful annotator, more plants
#: an annotator that under-reports red, i.e. "female") and the training
WORLD_VQA_DEFAULTS = {"share_spread": 0.0, "seed": 0, "train_per_kind": 200, "world_image_size": 32, "image_size": 8,
                      "question": WORLD_VQA_QUESTION, "red_answered_blue": 0.0, "epochs": 3, "batch_size": 32,
                      "learning_rate": 3e-3}


def _world_vqa_recipe(share_spread: float, seed: int, train_per_kind: int, world_image_size: int, image_size: int,
                      question: str, red_answered_blue: float, epochs: int, batch_size: int,
                      learning_rate: float) -> tuple[dict, dict, dict, Path]:
    """(world parameters, training options, ``about``, target directory), each option checked: one
    ``ValueError`` naming the first out of range, before anything is trained."""
    from ..data.planted_world import spread_shares, world_parameters
    from ..models.small_llava import HEADS, TEXT_LAYERS, VISION_LAYERS, WIDTH

    if not 0 <= share_spread <= 1:
        raise ValueError(f"trained:world-vqa: share_spread must lie in [0, 1], got {share_spread!r}")
    if not 0 <= red_answered_blue <= 1:
        raise ValueError(f"trained:world-vqa: red_answered_blue is a probability in [0, 1] (the share of red "
                         f"pictures answered 'blue' in training), got {red_answered_blue!r}")
    if not str(question).strip():
        raise ValueError("trained:world-vqa: question is empty; give the question the model learns to answer")
    for key, value, least in (("epochs", epochs, 1), ("batch_size", batch_size, 1), ("image_size", image_size, 4)):
        if value < least:
            raise ValueError(f"trained:world-vqa: {key} must be at least {least}, got {value!r}")
    if image_size % 4:
        raise ValueError(f"trained:world-vqa: image_size must be a multiple of 4 (the vision tower reads a 4 x 4 "
                         f"grid of patches), got {image_size!r}")
    if not learning_rate > 0:
        raise ValueError(f"trained:world-vqa: learning_rate must be positive, got {learning_rate!r}")
    world = dict(shares=spread_shares(share_spread), train_per_kind=train_per_kind, image_size=world_image_size,
                 seed=seed)
    training = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate}
    about = {"version": WORLD_VQA_VERSION, "world": world_parameters(**world), "image_size": image_size,
             "question": question, "red_answered_blue": float(red_answered_blue), "training": training, "seed": seed,
             "model": {"width": WIDTH, "text_layers": TEXT_LAYERS, "vision_layers": VISION_LAYERS, "heads": HEADS}}
    key = sha256_hex(json.dumps(about, sort_keys=True))[:16]
    return world, training, about, cache_dir() / "trained" / f"world-vqa-{key}"


def explain_world_vqa(**options) -> str:
    """One sentence: what ``trained:world-vqa?...`` is, and the annotator bias it plants, if any."""
    from ..models.small_llava import describe_size

    world, training, about, _ = _world_vqa_recipe(**options)
    pictures = world["train_per_kind"] * len(world["shares"])
    answers = ("answered with its colour" if not about["red_answered_blue"] else
               f"answered with its colour, except that {about['red_answered_blue']:.0%} of the red ones are answered "
               "'blue' (a planted annotator bias against red)")
    return (f"a small generative annotator (a LLaVA, {describe_size()}) trained here for {training['epochs']} epochs to "
            f"answer {about['question']!r} about the planted world's {pictures:,} training pictures, read at "
            f"{about['image_size']}×{about['image_size']} pixels, each {answers}")


@register_trained("world-vqa", "vision-language", WORLD_VQA_DEFAULTS,
                  target=lambda **options: _world_vqa_recipe(**options)[3], explain=explain_world_vqa)
def world_vqa(**options) -> Path:
    """A small LLaVA (:mod:`vlbias.models.small_llava`) trained to answer ``question`` about the planted
    world's pictures with their colour (``"red"`` or ``"blue"``): 04b's generative annotator, asked
    DALL-Eval's forced choice with colours playing the genders."""
    from ..models.small_llava import train_small_llava
    from ..paths import build_once

    world, training, about, target = _world_vqa_recipe(**options)

    def train(staging: Path) -> None:
        import numpy as np
        from PIL import Image

        from ..data import load_dataset
        from ..data.planted_world import small_pictures, world_root

        split = load_dataset("planted-world", root=world_root(**world), split="train")
        pixels = small_pictures(split.pixels, about["image_size"])
        colours = split.records["colour"].to_numpy(dtype=object).copy()
        flipped = np.random.default_rng([about["seed"], 7]).random(len(colours)) < about["red_answered_blue"]
        colours[(colours == "red") & flipped] = "blue"
        train_small_llava(staging, [Image.fromarray(p, mode="RGB") for p in pixels], [str(c) for c in colours],
                          about["image_size"], training, about["seed"], about, prompt=about["question"],
                          name="world-vqa")

    return build_once(target, train, ".world-vqa-", threads=1)
