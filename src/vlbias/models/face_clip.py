"""``trained:face-clip``: a mini-CLIP trained on the face world, from captions with a planted reporting bias.

Part I's demo model. The pictures are the face world's training split
(:mod:`vlbias.data.face_world`, the same world ``load_dataset("fairface", root="world")`` reads, set
by the same options); the captions are drawn here, in the paper's prompt forms, naming each
picture's race, gender and age each with its own probability (:func:`~vlbias.data.face_world.face_captions`).
The defaults plant the paper's hypothesis as a cause: captions name White 10% of the time and every
other race 90%; Male 15% and Female 85%; the ages 20-59 15% and the others 85%. A model trained so
should leave White, Male and middle-aged pictures *unmarked*; one trained with every rate equal
(the control) should not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..data.base import sha256_hex
from ..data.face_world import FACE_WORLD_DEFAULTS, FACE_WORLD_VERSION, face_captions, reporting_probabilities
from ..data.fairface import GENDERS
from ..paths import cache_dir
from .mini_clip import MiniClipConfig, TrainingExamples, train_mini_clip
from .trained import register_trained

#: bump when the same options would train different weights
FACE_CLIP_VERSION = 2  # 2: caption words lower-cased into the vocabulary
#: tokens per text: the longest caption, "[CLS] a photo of a latino or hispanic female person between 30 and 39
#: years old [SEP]", is 17
MAX_TOKENS = 24
#: whole-word tokens for the numbers of the age prompts and the words of the other prompt prefixes
EXTRA_WORDS = {"0", "2", "3", "9", "10", "19", "20", "29", "30", "39", "40", "49", "50", "59", "60", "69", "70", "more",
               "than", "picture", "image", "an", "close", "up", "portrait"}

REPORTING_DEFAULTS = {"race_named": 0.9, "default_race": "White", "default_race_named": 0.1,
                      "gender_named": 0.85, "default_gender": "Male", "default_gender_named": 0.15,
                      "age_named": 0.85, "default_ages": "20-29,30-39,40-49,50-59", "default_age_named": 0.15,
                      "uniform_named": -1.0}
#: the rates that ``uniform_named`` (the control: every label named equally often) replaces
_RATES = ("race_named", "default_race_named", "gender_named", "default_gender_named", "age_named", "default_age_named")
TRAINING_DEFAULTS = {"epochs": 30, "batch_size": 64, "learning_rate": 2e-3}
#: the options of ``trained:face-clip``: the face world's (prefixed ``world_``), the reporting and the training
FACE_CLIP_DEFAULTS = {**{f"world_{key}": value for key, value in FACE_WORLD_DEFAULTS.items()}, **REPORTING_DEFAULTS,
                      **TRAINING_DEFAULTS}


def face_clip_spec(**options) -> str:
    """The ``trained:face-clip`` spec of ``options`` (only those that differ from the defaults are written)."""
    unknown = sorted(set(options) - set(FACE_CLIP_DEFAULTS))
    if unknown:
        raise ValueError(f"face_clip_spec: unknown options {unknown}; options are {list(FACE_CLIP_DEFAULTS)}")
    given = {key: value for key, value in options.items() if value != FACE_CLIP_DEFAULTS[key]}
    return "trained:face-clip" + ("?" + "&".join(f"{key}={value}" for key, value in given.items()) if given else "")


def reporting_options(options: dict, recipe: str) -> dict:
    """The reporting rates of a face-world recipe's ``options`` (:data:`REPORTING_DEFAULTS`'s keys), with
    ``uniform_named`` (the control), when on, replacing every rate; ``recipe`` names the spec in errors."""
    reporting = {key: options[key] for key in REPORTING_DEFAULTS if key != "uniform_named"}
    uniform = options["uniform_named"]
    if uniform != -1.0:
        if not 0 <= uniform <= 1:
            raise ValueError(f"trained:{recipe}: uniform_named is the probability that a caption names any label "
                             f"(the control); it must lie in [0, 1], or be -1 (off), got {uniform!r}")
        reporting.update({rate: uniform for rate in _RATES})
    return reporting


def _recipe(**options) -> tuple[dict, dict, MiniClipConfig, dict, Path]:
    world = {key.removeprefix("world_"): options[key] for key in options if key.startswith("world_")}
    reporting = reporting_options(options, "face-clip")
    config = MiniClipConfig(epochs=options["epochs"], batch_size=options["batch_size"],
                            learning_rate=options["learning_rate"], width=64, layers=2, heads=2,
                            patch_size=world["image_size"] // 4, projection_dim=32, seed=world["seed"])
    about = {"version": FACE_CLIP_VERSION, "world_version": FACE_WORLD_VERSION, "world": world, "reporting": reporting,
             "max_tokens": MAX_TOKENS}
    key = sha256_hex(json.dumps({**about, "config": config.__dict__}, sort_keys=True))[:16]
    return world, reporting, config, about, cache_dir() / "trained" / f"face-clip-{key}"


def training_captions(**options) -> pd.DataFrame:
    """The face world's training records with the caption each picture is trained on and which
    labels it names (``race_named``, ``gender_named``, ``age_named``)."""
    from ..data import load_dataset
    from ..data.registry import generated_world_root

    world, reporting, *_ = _recipe(**(FACE_CLIP_DEFAULTS | options))
    train = load_dataset("fairface", root=generated_world_root("fairface", world), split="train")
    captions, named = face_captions(train.records, reporting_probabilities(train.records, **reporting),
                                    seed=world["seed"])
    return train.records.assign(caption=captions, **{f"{family}_named": value for family, value in named.items()})


def explain_face_clip(**options) -> str:
    """What ``trained:face-clip`` with ``options`` is, and the causes its world and captions plant."""
    world, reporting, config, *_ = _recipe(**options)
    pictures = world["train_per_cell"] * 126
    rates = (f"captions name {reporting['default_race']} {reporting['default_race_named']:.0%} of the time and every "
             f"other race {reporting['race_named']:.0%}; {reporting['default_gender']} {reporting['default_gender_named']:.0%} "
             f"and {' and '.join(g for g in GENDERS if g != reporting['default_gender'])} {reporting['gender_named']:.0%}; the ages {reporting['default_ages'].replace(',', ', ')} "
             f"{reporting['default_age_named']:.0%} and the others {reporting['age_named']:.0%}")
    if len({reporting[rate] for rate in _RATES}) == 1:
        rates = f"captions name every label {reporting['race_named']:.0%} of the time (the uniform control)"
    return (f"a mini-CLIP ({config.layers}-layer towers, {config.width} wide) trained here for {config.epochs} epochs on the "
            f"face world's {pictures:,} training pictures, where {rates}; {world['varied_race']} pictures vary "
            f"{world['varied_race_variety']:g} and the others {world['variety']:g} (variety from 0 to 1)"
            + (f", {world['varied_gender']} pictures {world['gender_extra_variety']:g} more"
               if world["gender_extra_variety"] else ""))


def face_world_plants(**options) -> dict[str, str]:
    """The causes behind Part I's claims that a face-world recipe (``trained:face-clip``,
    ``trained:face-captioner``) plants with ``options``, in words: captions that name the default race,
    gender or ages less often than the others (``white_unmarked``, ``male_unmarked``, ``middle_unmarked``,
    under the paper's defaults White, Male and 20-59; the uniform control, ``uniform_named``, plants none),
    and pictures of one race or gender that vary more (``white_varied``, ``male_varied``)."""
    reporting = reporting_options(options, "face-world recipe")
    ages = sorted(age.strip() for age in reporting["default_ages"].split(",") if age.strip())
    middle = ["20-29", "30-39", "40-49", "50-59"]
    plants = {}
    if reporting["default_race"] == "White" and reporting["default_race_named"] < reporting["race_named"]:
        plants["white_unmarked"] = (f"captions that name White {reporting['default_race_named']:.0%} of the time and "
                                    f"every other race {reporting['race_named']:.0%}")
    if reporting["default_gender"] == "Male" and reporting["default_gender_named"] < reporting["gender_named"]:
        plants["male_unmarked"] = (f"captions that name Male {reporting['default_gender_named']:.0%} of the time and "
                                   f"Female {reporting['gender_named']:.0%}")
    if ages == middle and reporting["default_age_named"] < reporting["age_named"]:
        plants["middle_unmarked"] = (f"captions that name the ages 20-59 {reporting['default_age_named']:.0%} of the "
                                     f"time and the others {reporting['age_named']:.0%}")
    if options["world_varied_race"] == "White" and options["world_varied_race_variety"] > options["world_variety"]:
        plants["white_varied"] = (f"White pictures that vary {options['world_varied_race_variety']:g} and the others "
                                  f"{options['world_variety']:g}")
    if options["world_varied_gender"] == "Male" and options["world_gender_extra_variety"] > 0:
        plants["male_varied"] = f"Male pictures that vary {options['world_gender_extra_variety']:g} more"
    return plants


@register_trained("face-clip", "image-text", FACE_CLIP_DEFAULTS, target=lambda **options: _recipe(**options)[4],
                  explain=explain_face_clip, plants=face_world_plants)
def face_clip(**options) -> Path:
    """A mini-CLIP trained contrastively on the face world's training pictures and planted captions."""
    from ..data import load_dataset
    from ..data.registry import generated_world_root, world_options

    world, reporting, config, about, target = _recipe(**options)
    world_options("fairface", world)  # a world parameter out of range fails here, before anything is trained
    reporting_probabilities(pd.DataFrame({"race": [], "gender": [], "age": []}), **reporting)  # and a bad rate

    def examples() -> TrainingExamples:
        train = load_dataset("fairface", root=generated_world_root("fairface", world), split="train")
        captions, _ = face_captions(train.records, reporting_probabilities(train.records, **reporting),
                                    seed=world["seed"])
        return TrainingExamples(images=list(train.images()), captions=[[c] for c in captions],
                                classes=pd.factorize(pd.Series(captions))[0])

    return train_mini_clip(target, examples, config, words=EXTRA_WORDS, progress=False, about=about,
                           description="training face-clip", max_tokens=MAX_TOKENS)
