"""A generated caption world in COCO 2017's and Flickr30k (Karpathy)'s layouts: Part II's demo data.

Every picture is a scene of two drawn shapes on a pale background: a big one in the image's
**main colour** and a small one in another colour. Each image has five captions; each caption
names the main colour with probability ``colour_share`` ("A red car next to a kite.") and
otherwise names no colour ("A car next to a kite."). The object words are drawn at random and are
**not** drawn in the picture: colour is the only thing a caption says that the picture shows, so
the planted cause of ColorFoil's measure is known: a model can tell a caption from its colour foil
only by seeing the main colour and reading its name.

On disk the worlds are exactly the real releases (written by the fixtures' layout writers,
:func:`vlbias.data.fixtures.write_coco_split` and :func:`~vlbias.data.fixtures.write_flickr30k_karpathy`),
so ``load_dataset("coco", root="world")`` and ``load_dataset("flickr30k", root="world")`` read them
with the real loaders. COCO's world has ``train2017`` (``train_images``, the split the book's
models train on) and ``val2017`` (``eval_images``, the split ColorFoil is built from, held out);
Flickr30k's has Karpathy's train / val / test (``eval_images`` split in two halves for val and
test, and a train split as large as the two together: no model of the book trains on it, so it
is kept small). The two worlds draw different pictures from the same rules.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .fixtures import _distinct_integers, _jitter, _with_noise, write_coco_split, write_flickr30k_karpathy
from .registry import register_world

#: bump when the same options would draw different pictures or captions
CAPTION_WORLD_VERSION = 1
FLICKR_WORLD_VERSION = 2  # 2: the train split as large as val + test

#: the palette the world may draw from: ColorFoil's ten foil colours (the paper's list)
PALETTE = {
    "blue": (30, 60, 220), "black": (15, 15, 15), "red": (220, 30, 30), "pink": (245, 150, 190),
    "yellow": (240, 220, 30), "grey": (128, 128, 128), "orange": (245, 140, 20), "white": (250, 250, 250),
    "green": (30, 170, 60), "brown": (120, 75, 35),
}
#: object words of the captions (none of them a CSS3 colour name); they are not drawn
OBJECTS = ["car", "bus", "kite", "umbrella", "shirt", "dog", "cat", "bicycle", "truck", "vase", "chair", "boat",
           "bench", "train", "bag", "cup"]
_COLOURED = ["A {c} {o} next to a {p}.", "The {o} is {c}.", "{C} {o} on the street", "A {c} {o} beside a {p}",
             "a {c} {o} in the picture", "There is a {c} {o} here."]
_PLAIN = ["A {o} next to a {p}.", "The {o} is here.", "{O} on the street", "A {o} beside a {p}",
          "a {o} in the picture", "Someone standing near a {o}."]

CAPTION_WORLD_DEFAULTS = {"train_images": 400, "eval_images": 40, "colour_share": 0.6,
                          "colours": ",".join(PALETTE), "image_size": 32, "seed": 0}


def world_colours(colours: str) -> list[str]:
    """The world's colour names from its ``colours`` option ("red,blue,...")."""
    return [name.strip() for name in colours.split(",") if name.strip()]


def check_caption_world(options: dict) -> None:
    """One ``ValueError`` naming the first parameter out of range."""
    if not 0.0 <= options["colour_share"] <= 1.0:
        raise ValueError(f"colour_share={options['colour_share']!r} is a share of captions: give a value in [0, 1].")
    for name in ("train_images", "eval_images"):
        if options[name] < 2:
            raise ValueError(f"{name}={options[name]!r}: the caption world needs at least 2 images per split.")
    colours = world_colours(options["colours"])
    unknown = [c for c in colours if c not in PALETTE]
    if unknown:
        raise ValueError(f"colours={options['colours']!r}: {', '.join(unknown)} not in the palette "
                         f"({', '.join(PALETTE)}).")
    if len(set(colours)) < 2:
        raise ValueError(f"colours={options['colours']!r}: the caption world needs at least two distinct colours "
                         "(a foil swaps the main colour for another).")
    if not 16 <= options["image_size"] <= 256:
        raise ValueError(f"image_size={options['image_size']!r}: give a side between 16 and 256 pixels.")


def draw_scene(main: str, other: str, size: int, rng: np.random.Generator) -> Image.Image:
    """A pale background, a big shape in ``main`` and a small one in ``other``."""
    image = Image.new("RGB", (size, size), _jitter((190, 185, 170), rng, 10))
    draw = ImageDraw.Draw(image)
    for colour, scale in ((main, 0.62), (other, 0.28)):
        side = size * scale
        x0, y0 = rng.uniform(0, size - side), rng.uniform(0, size - side)
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape([x0, y0, x0 + side, y0 + side], fill=_jitter(PALETTE[colour], rng, 10))
    return _with_noise(image, rng, 5.0)


def world_captions(main: str, n: int, colour_share: float, rng: np.random.Generator) -> list[str]:
    """``n`` captions, each naming ``main`` with probability ``colour_share``."""
    captions = []
    for _ in range(n):
        obj, place = (str(o) for o in rng.choice(OBJECTS, size=2, replace=False))
        coloured = rng.random() < colour_share
        template = str(rng.choice(_COLOURED if coloured else _PLAIN))
        captions.append(template.format(c=main, C=main.capitalize(), o=obj, O=obj.capitalize(), p=place))
    return captions


def main_colours(root: Path) -> dict[str, str]:
    """file (relative to ``root``) -> the main colour drawn in it, as the writer recorded it."""
    import json

    return json.loads((Path(root) / "main_colours.json").read_text())


def _pictures(rng: np.random.Generator, n: int, colours: list[str], size: int, colour_share: float, record: list):
    for _ in range(n):
        main, other = (str(c) for c in rng.choice(colours, size=2, replace=False))
        record.append(main)
        yield draw_scene(main, other, size, rng), world_captions(main, 5, colour_share, rng)


@register_world("coco", CAPTION_WORLD_DEFAULTS, version=CAPTION_WORLD_VERSION, check=check_caption_world)
def write_coco_world(root: Path, train_images: int, eval_images: int, colour_share: float, colours: str,
                     image_size: int, seed: int) -> None:
    """COCO's world: ``train2017`` and ``val2017`` in the real layout, and ``main_colours.json``."""
    import json

    rng = np.random.default_rng([seed, 2017])
    palette, truth = world_colours(colours), {}
    for split, n in (("train2017", train_images), ("val2017", eval_images)):
        ids, record = _distinct_integers(rng, 1, 600_000, n), []
        write_coco_split(root, split, ids, _pictures(rng, n, palette, image_size, colour_share, record), rng,
                         "vlbias generated caption world (planted colours)")
        truth.update({f"{split}/{i:012d}.jpg": colour for i, colour in zip(ids, record)})
    (root / "main_colours.json").write_text(json.dumps(truth, indent=0))


@register_world("flickr30k", CAPTION_WORLD_DEFAULTS, version=FLICKR_WORLD_VERSION, check=check_caption_world)
def write_flickr30k_world(root: Path, train_images: int, eval_images: int, colour_share: float, colours: str,
                          image_size: int, seed: int) -> None:
    """Flickr30k's world in Karpathy's layout (train, val, test), and ``main_colours.json``; the train
    split holds ``eval_images`` pictures (``train_images`` sizes COCO's train2017, where the models train)."""
    import json

    rng = np.random.default_rng([seed, 30])
    n_val = eval_images // 2
    splits = ["train"] * eval_images + ["val"] * n_val + ["test"] * (eval_images - n_val)
    stems, record = _distinct_integers(rng, 1_000_000_000, 9_999_999_999, len(splits)), []
    write_flickr30k_karpathy(root, stems, splits, _pictures(rng, len(splits), world_colours(colours), image_size,
                                                            colour_share, record))
    (root / "main_colours.json").write_text(json.dumps(
        {f"flickr30k-images/{stem}.jpg": colour for stem, colour in zip(stems, record)}, indent=0))
