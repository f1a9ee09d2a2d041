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

Two more planted causes serve the extensions of 04d (the source text's section 4.1), each drawn
independently of the colour: the background's *tint* plays perceived age (:data:`AGE_BACKDROPS`:
grey for under 25, sand for 25-45, mint for 45-65, lilac for over 65), and the colour's *shade*
plays skin tone (:data:`SKIN_SHADES`: light, medium and dark for Fitzpatrick I-II, III-IV and V-VI).
Every profession draws the sand tint ("25-45") with share ``age_peak`` and the three others equally, as
the source text finds a preference for 25-45-year-olds; the professions of :data:`LIGHT_PROFESSIONS`
draw the light shade with share ``light_share`` and the two others equally, every other profession
the three shades equally, as it finds light skin over-represented in some professions such as
doctors. ``share_scale`` scales these towards uniform as it scales the colour's (0: no cause at all).
The captions name none of them.

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

from ..data.planted_world import BACKDROPS, COLOURS, KINDS, SHADES, draw_object, load_planted_world
from ..data.registry import register_dataset, register_world

#: bump when the same options would draw other pictures or captions
PROFESSION_WORLD_VERSION = 3  # 3: tint and shade planted (04d's age and skin tone)
FEMALE_COLOUR, MALE_COLOUR = "red", "blue"
PROMPT_TEMPLATE = "A photo of a {profession}"
#: the background's tint plays perceived age (the age bands of :data:`vlbias.t2i.annotation.AGE_PROMPTS`;
#: :data:`vlbias.data.planted_world.BACKDROPS`)
AGE_BACKDROPS = {"under 25": "grey", "25-45": "sand", "45-65": "mint", "over 65": "lilac"}
#: the colour's shade plays skin tone (the Fitzpatrick groups of :data:`vlbias.t2i.annotation.SKIN_TONE_PROMPTS`)
SKIN_SHADES = {"light (I-II)": "light", "medium (III-IV)": "medium", "dark (V-VI)": "dark"}
#: the professions drawn light more often (the source text: "such as doctors"; WinoBias's doctor is
#: the physician); the other three are our choice of professions of similar standing
LIGHT_PROFESSIONS = ("physician", "lawyer", "ceo", "manager")
PROFESSION_WORLD_DEFAULTS = {"share_scale": 1.0, "source_cases": 1, "train_per_kind": 60, "test_per_kind": 10,
                             "image_size": 32, "seed": 0, "age_peak": 0.85, "light_share": 0.9}
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
    for name, what in (("age_peak", "the share of pictures drawn on sand, playing 25-45; 0.25 is uniform"),
                       ("light_share", "the share drawn light in the light-favoured professions; 1/3 is uniform")):
        if not 0 <= options[name] <= 1:
            raise ValueError(f"{name} must lie in [0, 1] ({what}), got {options[name]!r}")
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


def exact_counts(shares: dict[str, float], n: int) -> dict[str, int]:
    """``n`` split in proportion to ``shares`` (summing to 1) in whole numbers, largest remainders first
    (equal ones, to 9 places, in the order of ``shares``): every world holds its table to the picture."""
    raw = {key: share * n for key, share in shares.items()}
    counts = {key: int(np.floor(value + 1e-9)) for key, value in raw.items()}
    for key in sorted(raw, key=lambda k: round(counts[k] - raw[k], 9))[:n - sum(counts.values())]:
        counts[key] += 1
    return counts


def age_shares(share_scale: float = 1.0,
               age_peak: float = PROFESSION_WORLD_DEFAULTS["age_peak"]) -> dict[str, float]:
    """Age band -> planted share of its tint, the same in every profession: ``25-45`` drawn with
    ``0.25 + share_scale * (age_peak - 0.25)``, the three other bands equally."""
    peak = 0.25 + float(share_scale) * (float(age_peak) - 0.25)
    return {band: peak if band == "25-45" else (1 - peak) / 3 for band in AGE_BACKDROPS}


def skin_shares(profession: str, share_scale: float = 1.0,
                light_share: float = PROFESSION_WORLD_DEFAULTS["light_share"]) -> dict[str, float]:
    """Skin-tone group -> planted share of its shade in ``profession``: light drawn with
    ``1/3 + share_scale * (light_share - 1/3)`` in :data:`LIGHT_PROFESSIONS`, every shade a third elsewhere."""
    light = 1 / 3 + float(share_scale) * (float(light_share) - 1 / 3) if profession in LIGHT_PROFESSIONS else 1 / 3
    return {group: light if group == "light (I-II)" else (1 - light) / 2 for group in SKIN_SHADES}


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
                           test_per_kind: int, image_size: int, seed: int, age_peak: float, light_share: float) -> None:
    """Both splits: exactly ``round(planted share * n)`` red pictures per profession, the tints and
    shades in their planted shares too (:func:`exact_counts`), each shuffled on its own."""
    root = Path(root)
    table = profession_table(share_scale, source_cases)
    parameters = {"version": PROFESSION_WORLD_VERSION, "kinds": list(table.profession), "colours": list(COLOURS),
                  "shares": dict(zip(table.profession, table["planted share"].astype(float))),
                  "named": {colour: 0.0 for colour in COLOURS},
                  "per_kind": {"train": int(train_per_kind), "test": int(test_per_kind)},
                  "image_size": int(image_size), "seed": int(seed), "caption_template": PROMPT_TEMPLATE,
                  "shapes": dict(zip(table.profession, table.shape)),
                  "female_colour": FEMALE_COLOUR, "share_scale": float(share_scale),
                  "age_backdrops": AGE_BACKDROPS, "skin_shades": SKIN_SHADES,
                  "age_shares": age_shares(share_scale, age_peak),
                  "light_shares": {name: skin_shares(name, share_scale, light_share)["light (I-II)"]
                                   for name in table.profession}}
    for split, per_kind in (("train", int(train_per_kind)), ("test", int(test_per_kind))):
        rng = np.random.default_rng([seed, PROFESSION_WORLD_VERSION, _STREAMS[split]])
        rows, pixels = [], []
        for row in table.itertuples(index=False):
            n_red = round(row[table.columns.get_loc("planted share")] * per_kind)
            colours = np.array([FEMALE_COLOUR] * n_red + [MALE_COLOUR] * (per_kind - n_red))[rng.permutation(per_kind)]
            tints, shades = ([cue[label] for label, count in exact_counts(shares, per_kind).items()
                              for _ in range(count)] for cue, shares in (
                (AGE_BACKDROPS, age_shares(share_scale, age_peak)),
                (SKIN_SHADES, skin_shares(row.profession, share_scale, light_share))))
            tints, shades = np.array(tints)[rng.permutation(per_kind)], np.array(shades)[rng.permutation(per_kind)]
            for colour, tint, shade in zip(colours, tints, shades):
                pixels.append(draw_object(row.shape, str(colour), int(image_size), rng, background=BACKDROPS[tint],
                                          shade=SHADES[shade]))
                rows.append({"kind": row.profession, "shape": row.shape, "colour": str(colour), "backdrop": str(tint),
                             "shade": str(shade), "named": False, "caption": row.prompt})
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


def _trained_world_options(t2i_spec: str) -> dict | None:
    """The options of the ``trained:profession-diffusion`` model ``t2i_spec`` names; ``None`` for any other."""
    from ..models.spec import parse_spec
    from ..models.trained import trained_options

    parsed = parse_spec(t2i_spec)
    if parsed.source != "trained":
        return None
    recipe, options = trained_options(parsed.name)
    return options if recipe.name == "profession-diffusion" else None


def world_reference(t2i_spec: str) -> pd.Series | None:
    """The planted share of red per profession of the model ``t2i_spec`` names, when it is a
    ``trained:profession-diffusion`` model; ``None`` for any other model (the papers' own)."""
    options = _trained_world_options(t2i_spec)
    return None if options is None else planted_shares(options["share_scale"], options["source_cases"])


def planted_beside_perceived(manifest: pd.DataFrame, attribute: str, t2i_spec: str) -> pd.DataFrame | None:
    """04d's labels beside what the world of ``t2i_spec`` planted; ``None`` for a model not trained on
    the profession world, or an attribute it does not plant.

    ``attribute`` ``"age"``: per age band, its planted share (every profession alike) and its share of
    the ``manifest``'s images (column ``age``); ``"skin tone"``: per profession of the manifest, the
    planted and the perceived share of "light (I-II)" (column ``skin tone``). Images labelled "no
    person" are left out of the perceived shares (the world's annotator has no such label).
    """
    from .bias import NO_PERSON

    options = _trained_world_options(t2i_spec)
    if options is None or attribute not in ("age", "skin tone"):
        return None
    labelled = manifest[manifest[attribute] != NO_PERSON]
    if attribute == "age":
        planted = pd.Series(age_shares(options["share_scale"], options["age_peak"]))
        perceived = labelled["age"].value_counts(normalize=True).reindex(planted.index, fill_value=0.0)
        return pd.DataFrame({"planted share": planted, "perceived share": perceived}).rename_axis("age").round(3)
    light = "light (I-II)"
    perceived = (labelled[attribute] == light).groupby(labelled["profession"]).agg(["mean", "size"])
    planted = [skin_shares(name, options["share_scale"], options["light_share"])[light] for name in perceived.index]
    return pd.DataFrame({"planted light share": planted, "perceived light share": perceived["mean"],
                         "images": perceived["size"]}, index=perceived.index).round(3)


def stand_in_prompts(attribute: str) -> dict[str, list[str]]:
    """Zero-shot label prompts for the stand-ins of 04d, in the captions of the annotator's world
    (``trained:world-clip?share_spread=0&attributes=1``, :func:`vlbias.data.planted_world.world_parameters`):
    ``"age"`` gives per age band "a photo of a {shade} {colour} object on a {tint} background" with the
    band's tint over every shade and colour (a prompt ensemble); ``"skin tone"`` per Fitzpatrick group,
    the group's shade over every tint and colour."""
    from ..data.planted_world import ATTRIBUTE_NOUN, CAPTION_TEMPLATE

    def caption(shade: str, colour: str, tint: str) -> str:
        return CAPTION_TEMPLATE.format(f"{shade} {colour} {ATTRIBUTE_NOUN} on a {tint} background")

    if attribute == "age":
        return {band: [caption(shade, colour, tint) for shade in SHADES for colour in COLOURS]
                for band, tint in AGE_BACKDROPS.items()}
    if attribute == "skin tone":
        return {group: [caption(shade, colour, tint) for tint in BACKDROPS for colour in COLOURS]
                for group, shade in SKIN_SHADES.items()}
    raise ValueError(f"attribute must be 'age' or 'skin tone' (the stand-ins the profession world plants), "
                     f"got {attribute!r}")
