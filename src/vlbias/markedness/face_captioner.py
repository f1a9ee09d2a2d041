"""``trained:face-captioner``: a small LLaVA trained in the book to caption the face world, from
captions with a planted reporting bias.

The generative counterpart of ``trained:face-clip`` (:mod:`vlbias.models.face_clip`): the same pictures
(the face world's training split, set by the same ``world_*`` options) and the same captions, drawn by
the same code with the same reporting options (:data:`~vlbias.models.face_clip.REPORTING_DEFAULTS`,
:func:`~vlbias.data.face_world.face_captions`). The defaults plant the paper's hypothesis as a cause:
captions name White 10% of the time and every other race 90%, Male 15% and Female 85%, the ages 20-59
15% and the others 85%. A captioner trained so should, writing its own captions, leave White, Male and
middle-aged pictures unnamed; one trained with ``uniform_named`` (the control) should not.

The model is :mod:`vlbias.models.small_llava`'s small LLaVA (transformers' own classes, the
``tiny:llava`` fixture's tokenizer and chat template) at the face world's picture size, trained by
teacher forcing on (picture, caption) pairs laid out exactly as
:class:`~vlbias.models.vision_language.HFVisionLanguageModel` lays out a question and its answer, so
``generate(images, prompt)`` writes captions like the world's and ``log_likelihood`` scores them under
the prompt it was trained with (``prompt``: none by default, the image alone, as for captioning).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..data.base import sha256_hex
from ..data.face_world import FACE_WORLD_DEFAULTS, FACE_WORLD_VERSION, face_captions, reporting_probabilities
from ..data.fairface import GENDERS
from ..models.face_clip import _RATES, REPORTING_DEFAULTS, face_world_plants, reporting_options
from ..models.small_llava import HEADS, TEXT_LAYERS, VISION_LAYERS, WIDTH, describe_size, train_small_llava
from ..models.trained import register_trained
from ..paths import build_once, cache_dir

#: bump when the same options would train different weights
FACE_CAPTIONER_VERSION = 1
TRAINING_DEFAULTS = {"epochs": 6, "batch_size": 32, "learning_rate": 3e-3}
#: the options of ``trained:face-captioner``: the face world's (prefixed ``world_``), the reporting (as
#: ``trained:face-clip``'s), the prompt it is trained under ("" for none: the image alone) and the training
FACE_CAPTIONER_DEFAULTS = {**{f"world_{key}": value for key, value in FACE_WORLD_DEFAULTS.items()},
                           **REPORTING_DEFAULTS, "prompt": "", **TRAINING_DEFAULTS}


def face_captioner_spec(**options) -> str:
    """The ``trained:face-captioner`` spec of ``options`` (only those that differ from the defaults are written)."""
    from urllib.parse import urlencode

    unknown = sorted(set(options) - set(FACE_CAPTIONER_DEFAULTS))
    if unknown:
        raise ValueError(f"face_captioner_spec: unknown options {unknown}; options are {list(FACE_CAPTIONER_DEFAULTS)}")
    given = {key: value for key, value in options.items() if value != FACE_CAPTIONER_DEFAULTS[key]}
    return "trained:face-captioner" + ("?" + urlencode(given) if given else "")


def _recipe(**options) -> tuple[dict, dict, dict, dict, Path]:
    """(world options, reporting rates, training options, what the weights depend on, target directory),
    each option checked: one ``ValueError`` naming the first out of range, before anything is trained."""
    from ..data.registry import world_options

    world = {key.removeprefix("world_"): options[key] for key in options if key.startswith("world_")}
    world_options("fairface", world)
    reporting = reporting_options(options, "face-captioner")
    reporting_probabilities(pd.DataFrame({"race": [], "gender": [], "age": []}), **reporting)  # a bad rate fails here
    training = {key: options[key] for key in TRAINING_DEFAULTS}
    for key, least in (("epochs", 1), ("batch_size", 1)):
        if training[key] < least:
            raise ValueError(f"trained:face-captioner: {key} must be at least {least}, got {training[key]!r}")
    if not training["learning_rate"] > 0:
        raise ValueError(f"trained:face-captioner: learning_rate must be positive, got {training['learning_rate']!r}")
    if world["image_size"] % 4:
        raise ValueError(f"trained:face-captioner: world_image_size must be a multiple of 4 (the vision tower reads "
                         f"a 4 x 4 grid of patches), got {world['image_size']!r}")
    about = {"version": FACE_CAPTIONER_VERSION, "world_version": FACE_WORLD_VERSION, "world": world,
             "reporting": reporting, "prompt": options["prompt"] or None, "training": training,
             "model": {"width": WIDTH, "text_layers": TEXT_LAYERS, "vision_layers": VISION_LAYERS, "heads": HEADS}}
    key = sha256_hex(json.dumps(about, sort_keys=True))[:16]
    return world, reporting, training, about, cache_dir() / "trained" / f"face-captioner-{key}"


def explain_face_captioner(**options) -> str:
    """What ``trained:face-captioner`` with ``options`` is, and the causes its captions plant."""
    world, reporting, training, about, _ = _recipe(**options)
    pictures = world["train_per_cell"] * 126
    if len({reporting[rate] for rate in _RATES}) == 1:
        rates = f"captions name every label {reporting['race_named']:.0%} of the time (the uniform control)"
    else:
        others = " and ".join(g for g in GENDERS if g != reporting["default_gender"])
        rates = (f"captions name {reporting['default_race']} {reporting['default_race_named']:.0%} of the time and "
                 f"every other race {reporting['race_named']:.0%}; {reporting['default_gender']} "
                 f"{reporting['default_gender_named']:.0%} and {others} {reporting['gender_named']:.0%}; the ages "
                 f"{reporting['default_ages'].replace(',', ', ')} {reporting['default_age_named']:.0%} and the others "
                 f"{reporting['age_named']:.0%}")
    prompt = f"asked {about['prompt']!r}" if about["prompt"] else "shown the picture alone"
    return (f"a small LLaVA captioner ({describe_size()}) trained here for "
            f"{training['epochs']} epochs, {prompt}, to write the captions of the face world's {pictures:,} training "
            f"pictures, where {rates}")


@register_trained("face-captioner", "vision-language", FACE_CAPTIONER_DEFAULTS,
                  target=lambda **options: _recipe(**options)[4], explain=explain_face_captioner,
                  plants=face_world_plants)
def face_captioner(**options) -> Path:
    """A small LLaVA trained by teacher forcing to write the face world's planted captions."""
    world, reporting, training, about, target = _recipe(**options)
    return build_once(target, lambda staging: _train(staging, world, reporting, training, about), ".face-captioner-",
                      threads=1)


def _train(directory: Path, world: dict, reporting: dict, training: dict, about: dict) -> None:
    """Train the captioner on the face world's training pictures and their planted captions, drawn as
    ``trained:face-clip`` draws them, and save it in ``directory``."""
    from ..data import load_dataset
    from ..data.registry import generated_world_root

    train = load_dataset("fairface", root=generated_world_root("fairface", world), split="train")
    captions, _ = face_captions(train.records, reporting_probabilities(train.records, **reporting), seed=world["seed"])
    images = [image.convert("RGB") for image in train.images()]
    train_small_llava(directory, images, captions, world["image_size"], training, world["seed"], about,
                      prompt=about["prompt"], name="face-captioner")
