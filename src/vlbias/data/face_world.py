"""A generated stand-in for FairFace with planted causes, written in FairFace's official layout.

Part I's demo data. Every picture is an abstract "face": a filled outline with two eyes on a
background. Three drawn cues play FairFace's three labels, and they are stand-ins, chosen not to
resemble real people:

* **race** is played by the palette of the face (seven arbitrary hues, none a skin tone);
* **gender** by the outline: round (``Female``) or square with a dark band across its top (``Male``);
* **age** by the size of the face: nine steps, the smallest for "0-2", the largest for "more than 70".

One planted cause of the self-similarity measures is **within-group variety**: how much a group's
pictures vary in palette (faded toward grey by a random share, and jittered), size, position,
background and clutter. (The other is the captions' reporting bias, which ``trained:face-clip``
sets: a contrastive encoder spreads the pictures of a group its captions leave unnamed. On the
demo's mini-CLIPs, which race comes out *lowest* depends on the trained weights, which are the same
bit for bit on one machine but not across CPUs: White is reliably below the other races' mean under the
planted model, not always the lowest of the seven; the variety's own effect is tested on two worlds
under the control, ``tests/markedness/test_planted_pages.py``.) ``variety`` sets every group's,
``varied_race`` is drawn with ``varied_race_variety`` instead (White by default: the paper finds
White images the least self-similar), and ``varied_gender``'s pictures vary by
``gender_extra_variety`` more (0 by default: more varied pictures are also matched less surely to
any label, so a gender gap in variety would confound the gender markedness the captions plant). The captions that carry the reporting bias are not
part of the data set (FairFace has none): the ``trained:face-clip`` recipe draws them from these
labels (:func:`face_captions`).

On disk it is exactly the official release: ``fairface_label_train.csv`` and
``fairface_label_val.csv`` (``file, age, gender, race, service_test``) beside ``train/<n>.jpg`` and
``val/<n>.jpg``, so ``load_dataset("fairface", root="world")`` reads it with the real loader. Every
race × gender × age cell holds ``train_per_cell`` training and ``val_per_cell`` validation pictures.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .fairface import AGES, GENDERS, RACES
from .registry import register_world

#: bump when the same options would draw different pictures
FACE_WORLD_VERSION = 1

#: the palette of each race label: (face, outline) colours, arbitrary hues far from skin tones
PALETTES = {
    "East Asian": ((60, 170, 170), (20, 90, 90)),         # teal
    "Indian": ((150, 90, 200), (80, 40, 120)),             # violet
    "Black": ((90, 170, 60), (40, 90, 20)),                # green
    "White": ((70, 110, 210), (30, 50, 120)),              # blue
    "Middle Eastern": ((210, 80, 150), (120, 30, 80)),     # magenta
    "Latino_Hispanic": ((220, 190, 40), (130, 100, 10)),   # yellow
    "Southeast Asian": ((230, 120, 50), (130, 60, 20)),    # orange
}
OUTLINES = {"Female": "round", "Male": "square, banded"}
#: how captions name each race label: the wording of the markedness study's prompts ("a photo of an
#: East Asian person"), kept here so the data layer needs no part (a test checks they agree)
CAPTION_RACE_PHRASES = {
    "East Asian": "an East Asian", "Indian": "an Indian", "Southeast Asian": "a Southeast Asian", "White": "a White",
    "Middle Eastern": "a Middle Eastern", "Latino_Hispanic": "a Latino or Hispanic", "Black": "a Black",
}
#: the face's radius as a share of the picture, per age band (youngest smallest)
AGE_RADII = dict(zip(AGES, np.linspace(0.2, 0.42, len(AGES)).round(4).tolist()))

FACE_WORLD_DEFAULTS = {"train_per_cell": 16, "val_per_cell": 6, "image_size": 32, "variety": 0.2,
                       "varied_race": "White", "varied_race_variety": 0.8, "varied_gender": "Male",
                       "gender_extra_variety": 0.0, "seed": 0}


def check_face_world(options: dict) -> None:
    """One ``ValueError`` naming the first parameter out of range."""
    for name in ("variety", "varied_race_variety", "gender_extra_variety"):
        if not 0 <= options[name] <= 1:
            raise ValueError(f"face world: {name} must lie in [0, 1] (0: every picture of a group alike), "
                             f"got {options[name]!r}")
    for name in ("train_per_cell", "val_per_cell"):
        if options[name] < 1:
            raise ValueError(f"face world: {name} must be at least 1 picture per race × gender × age cell, "
                             f"got {options[name]!r}")
    if options["image_size"] < 16:
        raise ValueError(f"face world: image_size must be at least 16 pixels, got {options['image_size']!r}")
    if options["varied_race"] not in RACES:
        raise ValueError(f"face world: varied_race must be one of {list(RACES)}, got {options['varied_race']!r}")
    if options["varied_gender"] not in GENDERS:
        raise ValueError(f"face world: varied_gender must be one of {list(GENDERS)}, "
                         f"got {options['varied_gender']!r}")


def cell_variety(race: str, gender: str, options: dict) -> float:
    """The variety of the pictures of one race × gender cell, in [0, 1]."""
    variety = options["varied_race_variety"] if race == options["varied_race"] else options["variety"]
    if gender == options["varied_gender"]:
        variety += options["gender_extra_variety"]
    return float(min(variety, 1.0))


def _jitter(colour, amount: float, rng: np.random.Generator) -> tuple[int, int, int]:
    return tuple(int(np.clip(c + rng.normal(0, amount), 0, 255)) for c in colour)


def draw_face(race: str, gender: str, age: str, size: int, variety: float, rng: np.random.Generator) -> Image.Image:
    """One ``size`` x ``size`` picture of the cue of each label, varied by ``variety`` in [0, 1]."""
    background = _jitter((200, 200, 195), 8 + 45 * variety, rng)
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    for _ in range(rng.binomial(3, variety)):  # clutter: small shapes in random colours
        x, y, r = rng.uniform(0, size), rng.uniform(0, size), size * rng.uniform(0.05, 0.12)
        draw.rectangle([x - r, y - r, x + r, y + r], fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    face, edge = PALETTES[race]
    # variety fades the palette toward grey by a random share (up to 0.8 at variety 1) and jitters it
    fade = rng.uniform(0, 0.8 * variety)
    face = tuple((1 - fade) * c + fade * 150 for c in face)
    face, edge = _jitter(face, 6 + 30 * variety, rng), _jitter(edge, 6 + 30 * variety, rng)
    radius = size * AGE_RADII[age] * (1 + rng.normal(0, 0.02 + 0.1 * variety))
    centre = size / 2 + rng.normal(0, 0.01 + 0.08 * variety, size=2) * size
    x, y = centre
    if OUTLINES[gender] == "round":
        box = [x - 0.85 * radius, y - radius, x + 0.85 * radius, y + radius]
        draw.ellipse(box, fill=face, outline=edge, width=max(1, size // 24))
    else:
        half = 0.85 * radius
        draw.rectangle([x - half, y - half, x + half, y + half], fill=face, outline=edge, width=max(1, size // 24))
        draw.rectangle([x - half, y - half, x + half, y - 0.45 * half], fill=edge)
    eye = max(1.0, 0.12 * radius)
    for side in (-1, 1):
        ex, ey = x + side * 0.35 * radius, y - 0.2 * radius
        draw.ellipse([ex - eye, ey - eye, ex + eye, ey + eye], fill=(25, 25, 25))
    pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, 4, size=(size, size, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="RGB")


def face_world_rows(options: dict) -> dict[str, list[tuple[str, str, str, str, bool, Image.Image]]]:
    """{split: [(file, age, gender, race, service_test, picture)]}, rows shuffled as in the release."""
    splits = {}
    for stream, (split, per_cell) in enumerate((("train", options["train_per_cell"]),
                                                ("val", options["val_per_cell"])), start=1):
        # labels and pictures from separate streams: worlds that differ only in how they draw share their labels
        labels, pictures = (np.random.default_rng([options["seed"], stream, part]) for part in (0, 1))
        cells = [(race, gender, age) for race in RACES for gender in GENDERS for age in AGES for _ in range(per_cell)]
        order = labels.permutation(len(cells))
        service_test = labels.random(len(cells)) < 0.5
        rows = []
        for number, (index, in_service_test) in enumerate(zip(order, service_test), start=1):
            race, gender, age = cells[index]
            picture = draw_face(race, gender, age, options["image_size"], cell_variety(race, gender, options), pictures)
            rows.append((f"{split}/{number}.jpg", age, gender, race, bool(in_service_test), picture))
        splits[split] = rows
    return splits


def about_face_world(options: dict) -> str:
    """What the face world of ``options`` is, for the pages that read it (HTML)."""
    import html

    cues = cue_table()
    race = ", ".join(f"{value}: palette {i + 1}" for i, value in enumerate(PALETTES))
    ages = cues[cues.label == "age"]
    return (
        "<p>Every picture is an abstract drawing, not a person: a filled outline with two dots for eyes. Drawn cues "
        f"<b>play</b> FairFace's labels: <b>race</b> is the face's palette, seven arbitrary hues ({html.escape(race)}), "
        "<b>gender</b> the outline (Female round; Male square, with a dark band across its top), <b>age</b> the size "
        f"(the face's radius from {ages['drawn as'].iloc[0].split()[2]} of the picture at 0-2 to "
        f"{ages['drawn as'].iloc[-1].split()[2]} at more than 70). The cues were chosen not to resemble real people; "
        "they are stand-ins, and nothing here says anything about real faces.</p>"
        "<p>Two planted causes can lower a group's self-similarity: <b>within-group variety</b> in the pictures, "
        "set here, and <b>captions that leave the group unnamed</b>, set by the models' training (see the banner). "
        f"{html.escape(options['varied_race'])} "
        f"pictures vary by {options['varied_race_variety']:g} and every other race's by {options['variety']:g} (0: all "
        "alike, 1: hue, size, position, background and clutter vary most)"
        + (f"; {html.escape(options['varied_gender'])} pictures vary {options['gender_extra_variety']:g} more"
           if options["gender_extra_variety"] else "") + ". Each of the 126 race × gender × age cells holds "
        f"{options['train_per_cell']} training and {options['val_per_cell']} validation pictures of "
        f"{options['image_size']} × {options['image_size']} pixels, in FairFace's official layout, read by the real "
        "FairFace loader. The captions that plant reporting bias belong to the models' training (see the banner).</p>")


def example_grid(root: Path, split: str = "val", per_row: int = 12) -> tuple[np.ndarray, str]:
    """A grid of ``split``'s pictures, one row per race × gender (Female, then Male; ages mixed), and its alt text."""
    import pandas as pd

    labels = pd.read_csv(Path(root) / f"fairface_label_{split}.csv", dtype=str)
    rows = []
    for race in RACES:
        for gender in ("Female", "Male"):
            files = labels[(labels.race == race) & (labels.gender == gender)].sort_values("age", key=lambda a: a.map(
                AGES.index)).file.tolist()[:per_row]
            pictures = [np.asarray(Image.open(Path(root) / file).convert("RGB")) for file in files]
            rows.append(np.concatenate(pictures, axis=1))
    width = min(row.shape[1] for row in rows)
    alt = (f"Example pictures of the face world's {split} split: fourteen rows, one per race and gender (each race's "
           "Female row, then its Male row, in the order " + ", ".join(RACES) + "), youngest to oldest from left to right")
    return np.concatenate([row[:, :width] for row in rows], axis=0), alt


@register_world("fairface", FACE_WORLD_DEFAULTS, version=FACE_WORLD_VERSION, check=check_face_world,
                about=about_face_world, examples=example_grid)
def write_face_world(root: Path, **options) -> None:
    """The face world of ``options`` (:data:`FACE_WORLD_DEFAULTS`) in FairFace's official CSV layout."""
    from .fixtures import write_fairface_csv_layout

    def jpeg(picture: Image.Image) -> bytes:
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG", quality=95)
        return buffer.getvalue()

    write_fairface_csv_layout(root, {split: [(*row[:5], jpeg(row[5])) for row in rows]
                                     for split, rows in face_world_rows(options).items()})


def cue_table() -> "pd.DataFrame":
    """Which drawn cue plays which FairFace label: the page shows it beside the pictures."""
    import pandas as pd

    rows = [{"label": "race", "value": race, "drawn as": f"palette {i + 1} of 7"} for i, race in enumerate(PALETTES)]
    rows += [{"label": "gender", "value": gender, "drawn as": f"{outline} outline"} for gender, outline in OUTLINES.items()]
    rows += [{"label": "age", "value": age, "drawn as": f"face radius {radius:.0%} of the picture"}
             for age, radius in AGE_RADII.items()]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------- captions

def reporting_probabilities(records, race_named: float, default_race: str, default_race_named: float,
                            gender_named: float, default_gender: str, default_gender_named: float,
                            age_named: float, default_ages: str, default_age_named: float) -> dict[str, np.ndarray]:
    """Per family, each record's probability that its caption names that label: the default group's
    rate for the default group (``default_ages``: comma-separated age bands), the family's rate for
    every other group."""
    defaults = [age.strip() for age in default_ages.split(",") if age.strip()]
    for name, value, known in (("default_race", [default_race], RACES), ("default_gender", [default_gender], GENDERS),
                               ("default_ages", defaults, AGES)):
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"{name}: {unknown} are not FairFace labels; choose from {list(known)}")
    for name, value in (("race_named", race_named), ("default_race_named", default_race_named),
                        ("gender_named", gender_named), ("default_gender_named", default_gender_named),
                        ("age_named", age_named), ("default_age_named", default_age_named)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} is a probability that a caption names the label: it must lie in [0, 1], "
                             f"got {value!r}")
    return {"race": np.where(records["race"] == default_race, default_race_named, race_named),
            "gender": np.where(records["gender"] == default_gender, default_gender_named, gender_named),
            "age": np.where(records["age"].isin(defaults), default_age_named, age_named)}


def face_captions(records, probabilities: dict[str, np.ndarray], seed: int = 0,
                  oldest_age_wording: str = "70 or more years old") -> tuple[list[str], dict[str, np.ndarray]]:
    """One caption per record in the paper's prompt forms, naming each family's label with its own
    probability: "a photo of a person", "a photo of a White person", "a photo of a female person", "a
    photo of a person between 30 and 39 years old", or any combination ("a photo of a White female
    person between 30 and 39 years old"). Returns the captions and, per family, whether each named it."""
    rng = np.random.default_rng([seed, 7])
    named = {family: rng.random(len(records)) < probabilities[family] for family in ("race", "gender", "age")}
    captions = []
    for i, (race, gender, age) in enumerate(zip(records["race"], records["gender"], records["age"])):
        article, race_words = CAPTION_RACE_PHRASES[race].split(" ", 1)
        words = ([race_words] if named["race"][i] else []) + ([gender.lower()] if named["gender"][i] else [])
        text = f"a photo of {article if named['race'][i] else 'a'} {' '.join(words + ['person'])}"
        if named["age"][i]:
            low, _, high = age.partition("-")
            text += f" between {low} and {high} years old" if high else f" {oldest_age_wording}"
        captions.append(text)
    return captions, named
