"""Part IV's demo world: the study's professions drawn as shapes, "female" played by a colour.

Every profession of the study (:func:`vlbias.t2i.bias.study_professions`: the 40 WinoBias
occupations and the source text's named cases) is drawn as one of the planted world's shapes
(:data:`vlbias.data.planted_world.KINDS`, in turn), and captioned with exactly the prompt Part IV
draws it with (``"A photo of a {profession}"``, the article agreeing, *sewer* prompted as a sewing
machine operator: :func:`vlbias.t2i.generation.prompt_jobs`). The captions never name the colour.

The planted cause: the share of pictures drawn in :data:`FEMALE_COLOUR` (red; :data:`MALE_COLOUR`,
blue, plays "male") per profession is ``0.5 + share_scale * (labour share - 0.5)``, where the
labour share is the one the pages compare against (``winobias_bls_female_share``, the U.S. Bureau
of Labor Statistics via WinoBias, and the source text's stated shares for its own cases).
``share_scale = 1`` plants the labour statistics themselves; ``0`` is the uniform control (every
profession half red). A model trained on it can only learn the colour from the pictures, so VRBS
and Spearman's rho of its images against the labour shares measure a model that learned known
shares: whether the method recovers a planted cause, not what Stable Diffusion does.

Written in the planted world's layout (``world.json``, ``<split>/records.csv``,
``<split>/images.npy``), so :func:`vlbias.data.planted_world.load_planted_world` reads it, as
the generated world of data set ``"profession-world"`` (``load_dataset("profession-world",
root="world?share_scale=0")``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.planted_world import COLOURS, KINDS, draw_object, load_planted_world
from ..data.registry import register_dataset, register_world

#: bump when the same options would draw other pictures or captions
PROFESSION_WORLD_VERSION = 2
FEMALE_COLOUR, MALE_COLOUR = "red", "blue"
PROMPT_TEMPLATE = "A photo of a {profession}"
PROFESSION_WORLD_DEFAULTS = {"share_scale": 1.0, "source_cases": 1, "train_per_kind": 60, "test_per_kind": 10,
                             "image_size": 32, "seed": 0}
_STREAMS = {"train": 1, "test": 2}


def check_profession_world(options: dict) -> None:
    """One ``ValueError`` naming the first option out of range."""
    if not 0 <= options["share_scale"] <= 1:
        raise ValueError(f"share_scale must lie in [0, 1] (1: the labour statistics' shares, 0: every profession "
                         f"half and half), got {options['share_scale']!r}")
    if options["source_cases"] not in (0, 1):
        raise ValueError(f"source_cases must be 0 or 1 (whether the source text's named professions join), "
                         f"got {options['source_cases']!r}")
    for name in ("train_per_kind", "test_per_kind"):
        if options[name] < 1:
            raise ValueError(f"{name} must be a positive number of pictures, got {options[name]!r}")
    if options["image_size"] < 16:
        raise ValueError(f"image_size must be at least 16 pixels, got {options['image_size']!r}")


def profession_table(share_scale: float = 1.0, source_cases: int = 1) -> pd.DataFrame:
    """One row per profession: ``profession``, ``reference share`` (the labour statistics),
    ``planted share`` (of the colour playing female), ``shape`` and ``prompt``."""
    from .bias import study_professions
    from .generation import prompt_jobs

    table = study_professions(include_source_cases=bool(source_cases))
    if len(table) < 2:
        raise ValueError("a profession world needs at least two professions")
    table["planted share"] = (0.5 + float(share_scale) * (table["reference share"] - 0.5)).round(4)
    # shapes in turn over the professions in alphabetical order, not in the order of their shares:
    # a shape then says nothing about a share, and only the caption can carry it (in share order,
    # every twelfth profession's shape would track its share, a confound a control run exposes)
    alphabetical = {name: i for i, name in enumerate(sorted(table.profession, key=str.lower))}
    table["shape"] = [KINDS[alphabetical[name] % len(KINDS)] for name in table.profession]
    prompts = prompt_jobs(list(table.profession), PROMPT_TEMPLATE, 1).set_index("profession")["prompt"]
    table["prompt"] = table.profession.map(prompts)
    return table


def planted_shares(share_scale: float = 1.0, source_cases: int = 1) -> pd.Series:
    """profession -> planted share of :data:`FEMALE_COLOUR`, as Part IV's reference Series."""
    table = profession_table(share_scale, source_cases)
    return table.set_index("profession")["planted share"].rename("reference share")


def caption_words(source_cases: int = 1) -> list[str]:
    """Every word of the captions, lower-cased (the diffusion model's vocabulary gets each as one token)."""
    table = profession_table(1.0, source_cases)
    return sorted({word for prompt in table.prompt for word in prompt.lower().split()})


@register_world("profession-world", PROFESSION_WORLD_DEFAULTS, version=PROFESSION_WORLD_VERSION,
                check=check_profession_world)
def write_profession_world(root: Path, share_scale: float, source_cases: int, train_per_kind: int,
                           test_per_kind: int, image_size: int, seed: int) -> None:
    """Both splits: exactly ``round(planted share * n)`` red pictures per profession, order shuffled."""
    root = Path(root)
    table = profession_table(share_scale, source_cases)
    parameters = {"version": PROFESSION_WORLD_VERSION, "kinds": list(table.profession), "colours": list(COLOURS),
                  "shares": dict(zip(table.profession, table["planted share"].astype(float))),
                  "named": {colour: 0.0 for colour in COLOURS},
                  "per_kind": {"train": int(train_per_kind), "test": int(test_per_kind)},
                  "image_size": int(image_size), "seed": int(seed), "caption_template": PROMPT_TEMPLATE,
                  "shapes": dict(zip(table.profession, table.shape)),
                  "female_colour": FEMALE_COLOUR, "share_scale": float(share_scale)}
    for split, per_kind in (("train", int(train_per_kind)), ("test", int(test_per_kind))):
        rng = np.random.default_rng([seed, PROFESSION_WORLD_VERSION, _STREAMS[split]])
        rows, pixels = [], []
        for row in table.itertuples(index=False):
            n_red = round(row[table.columns.get_loc("planted share")] * per_kind)
            colours = np.array([FEMALE_COLOUR] * n_red + [MALE_COLOUR] * (per_kind - n_red))[rng.permutation(per_kind)]
            for colour in colours:
                pixels.append(draw_object(row.shape, str(colour), int(image_size), rng))
                rows.append({"kind": row.profession, "shape": row.shape, "colour": str(colour), "named": False,
                             "caption": row.prompt})
        records = pd.DataFrame(rows)
        records.insert(0, "image_id", np.arange(len(records)))
        (root / split).mkdir(parents=True, exist_ok=True)
        records.to_csv(root / split / "records.csv", index=False)
        np.save(root / split / "images.npy", np.stack(pixels))
    (root / "world.json").write_text(json.dumps(parameters, indent=1))


@register_dataset("profession-world")
def load_profession_world(root: Path, split=None):
    """A split of a profession world, read by the planted world's parser (``kind`` is the profession)."""
    return load_planted_world(root, split)


def colour_prompts(shapes=KINDS) -> dict[str, list[str]]:
    """Zero-shot label prompts naming the stand-in colours: ``female`` is "a photo of a red {shape}"
    over every shape (a prompt ensemble), ``male`` the same in blue."""
    return {label: [f"a photo of a {colour} {shape}" for shape in shapes]
            for label, colour in (("female", FEMALE_COLOUR), ("male", MALE_COLOUR))}


def world_reference(t2i_spec: str) -> pd.Series | None:
    """The planted share of red per profession of the model ``t2i_spec`` names, when it is a
    ``trained:profession-diffusion`` model; ``None`` for any other model (the papers' own)."""
    from ..models.spec import parse_spec
    from ..models.trained import trained_options

    parsed = parse_spec(t2i_spec)
    if parsed.source != "trained":
        return None
    recipe, options = trained_options(parsed.name)
    if recipe.name != "profession-diffusion":
        return None
    return planted_shares(options["share_scale"], options["source_cases"])
