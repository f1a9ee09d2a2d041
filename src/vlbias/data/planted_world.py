"""A world with planted biases: drawn shapes whose colour share per kind and caption reporting are set by hand.

The controlled experiments of the book train small models on this world, so that every bias a
measure finds has a known cause. Each picture shows one object of a *kind* (a circle, a star, ...;
the kinds play professions) in one value of an *attribute* (its colour; it plays gender or race).
Two tables set the world:

* ``shares``: per kind, the share of each attribute value (the labour statistics), spread from
  about 10% to 90% by default, balanced over the kinds, so no value is a majority of the world;
* ``named``: per attribute value, the probability that a caption names it ("a photo of a red
  star" rather than "a photo of a star"): the reporting bias.

On disk a world is ``world.json`` (its parameters) and, per split, ``<split>/records.csv``
(``image_id, kind, colour, named, caption``) beside ``<split>/images.npy`` (uint8, n x size x size x 3).
Pictures and captions come from separate random streams, so worlds that differ only in reporting
show the same pictures. :func:`world_root` generates a world once into the cache (seconds);
``load_dataset("planted-world", root=world_root(...), split="train")`` reads it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

from ..paths import build_once, cache_dir
from .base import DatasetNotFoundError, ImageDataset, file_sha256, make_identity, sha256_hex
from .registry import not_found_message, register_dataset, register_fixture

#: bump when the same parameters would draw different pictures or captions
WORLD_VERSION = 2

KINDS = ("circle", "square", "triangle", "diamond", "star", "cross", "ring", "hexagon", "crescent", "bar", "tee",
         "heart")
#: mirror images of each other (red and blue channels swapped), as are the grey backgrounds' and the
#: jitter's distributions: neither colour stands out in the pixels, so only the captions tell them apart
COLOURS = {"red": (205, 40, 40), "blue": (40, 40, 205)}
#: the tints of background a world may draw (each channel jittered by up to 4 levels), all within the
#: range a world that plants none draws each channel from, 150 to 230 (:data:`DEFAULT_BACKGROUND`), and
#: none redder or bluer than the other by more than that range allows. Tints, not the object's size or
#: the background's brightness: a mini-CLIP of 32-pixel pictures learns four tints at once but confuses
#: the middle two of four sizes or four greys (a huge bar covers less than a small square)
BACKDROPS = {"mint": (152, 226, 172), "sand": (228, 206, 152), "grey": (190, 190, 190), "lilac": (202, 152, 228)}
DEFAULT_BACKGROUND = (150, 230)
#: the shades of a colour a world may draw: how far its fill is mixed towards white (> 0) or black (< 0)
SHADES = {"light": 0.6, "medium": 0.0, "dark": -0.55}
#: what a caption calls the object in a world with tints and shades, whatever its kind ("a photo of a
#: light red object on a sand background"): naming the kind too makes 288 captions, and a mini-CLIP
#: learns the kind and the colour from them long before the rest
ATTRIBUTE_NOUN = "object"


def spread_shares(spread: float = 0.8, kinds=KINDS) -> dict[str, float]:
    """The first colour's share per kind, evenly from ``0.5 - spread/2`` to ``0.5 + spread/2`` (mean 50%)."""
    if not 0 <= spread <= 1:
        raise ValueError(f"spread must be in [0, 1] (0: every kind half and half), got {spread!r}")
    return dict(zip(kinds, np.round(np.linspace(0.5 - spread / 2, 0.5 + spread / 2, len(kinds)), 3).tolist()))


#: the first colour's share per kind: 10% to 90%, balanced over the kinds (mean 50%)
#: how far red's share spreads around 50% by default: the 10%-90% table
DEFAULT_SHARE_SPREAD = 0.8
DEFAULT_SHARES = spread_shares(DEFAULT_SHARE_SPREAD)
CAPTION_TEMPLATE = "a photo of a {}"
#: how often a caption names each colour by default
NAMED_DEFAULT = 0.9
SPLITS = ("train", "test")
_SPLIT_STREAMS = {"train": 1, "test": 2}  # picture seeds differ per split, captions per split too


def world_parameters(shares: dict[str, float] | None = None, named: dict[str, float] | None = None,
                     train_per_kind: int = 200, test_per_kind: int = 50, image_size: int = 32, seed: int = 0,
                     attributes: bool = False) -> dict:
    """The parameters of a world, checked and in canonical form (the key of its cache entry).

    ``shares``: kind -> share of the first colour (default :data:`DEFAULT_SHARES`); ``named``:
    colour -> probability that a caption names it (default 0.9 for each). ``attributes``: every
    picture also draws one of the :data:`BACKDROPS` and one of the :data:`SHADES`, each uniformly and
    independently, and every caption names both and not the kind ("a photo of a light red object on a
    sand background", :data:`ATTRIBUTE_NOUN`): the world a zero-shot annotator of tint and shade
    learns from (Part IV's 04d). Off, the world is as before
    (its key unchanged).
    """
    shares = dict(DEFAULT_SHARES if shares is None else shares)
    named = {colour: NAMED_DEFAULT for colour in COLOURS} | dict(named or {})
    unknown = sorted(set(shares) - set(KINDS)) + sorted(set(named) - set(COLOURS))
    if unknown:
        raise ValueError(f"unknown kinds or colours {unknown}: kinds are {list(KINDS)}, colours {list(COLOURS)}")
    if len(shares) < 2:
        raise ValueError(f"shares: a world needs at least two kinds, got {list(shares)}")
    for name, table in (("shares", shares), ("named", named)):
        bad = {key: value for key, value in table.items() if not 0 <= float(value) <= 1}
        if bad:
            raise ValueError(f"{name} must be probabilities in [0, 1]; got {bad}")
    for name, value in (("train_per_kind", train_per_kind), ("test_per_kind", test_per_kind)):
        if int(value) < 1:
            raise ValueError(f"{name} must be a positive number of images, got {value!r}")
    if int(image_size) < 16:
        raise ValueError(f"image_size must be at least 16 pixels, got {image_size!r}")
    if attributes not in (0, 1, False, True):
        raise ValueError(f"attributes must be 0 or 1 (whether pictures also vary in tint and shade), got {attributes!r}")
    parameters = {"version": WORLD_VERSION, "kinds": list(shares), "colours": list(COLOURS),
                  "shares": {k: float(v) for k, v in shares.items()}, "named": {k: float(v) for k, v in named.items()},
                  "per_kind": {"train": int(train_per_kind), "test": int(test_per_kind)},
                  "image_size": int(image_size), "seed": int(seed), "caption_template": CAPTION_TEMPLATE}
    if attributes:
        parameters["attributes"] = {"backdrops": dict(BACKDROPS), "shades": dict(SHADES)}
    return parameters


# ----------------------------------------------------------------------------------------- pictures

def _regular(n: int, radius: float, rotation: float, centre) -> list[tuple[float, float]]:
    return [(centre[0] + radius * math.cos(rotation + 2 * math.pi * i / n),
             centre[1] + radius * math.sin(rotation + 2 * math.pi * i / n)) for i in range(n)]


def _draw_kind(draw: ImageDraw.ImageDraw, kind: str, centre, r: float, fill, background) -> None:
    """One object of ``kind`` of radius about ``r`` around ``centre``."""
    x, y = centre
    box = [x - r, y - r, x + r, y + r]
    if kind == "circle":
        draw.ellipse(box, fill=fill)
    elif kind == "square":
        draw.rectangle([x - 0.8 * r, y - 0.8 * r, x + 0.8 * r, y + 0.8 * r], fill=fill)
    elif kind == "triangle":
        draw.polygon(_regular(3, r, -math.pi / 2, centre), fill=fill)
    elif kind == "diamond":
        draw.polygon([(x, y - r), (x + 0.7 * r, y), (x, y + r), (x - 0.7 * r, y)], fill=fill)
    elif kind == "star":
        points = [(x + (r if i % 2 == 0 else 0.4 * r) * math.cos(-math.pi / 2 + math.pi * i / 5),
                   y + (r if i % 2 == 0 else 0.4 * r) * math.sin(-math.pi / 2 + math.pi * i / 5)) for i in range(10)]
        draw.polygon(points, fill=fill)
    elif kind == "cross":
        draw.rectangle([x - r, y - 0.3 * r, x + r, y + 0.3 * r], fill=fill)
        draw.rectangle([x - 0.3 * r, y - r, x + 0.3 * r, y + r], fill=fill)
    elif kind == "ring":
        draw.ellipse(box, fill=fill)
        draw.ellipse([x - 0.55 * r, y - 0.55 * r, x + 0.55 * r, y + 0.55 * r], fill=background)
    elif kind == "hexagon":
        draw.polygon(_regular(6, r, 0.0, centre), fill=fill)
    elif kind == "crescent":
        draw.ellipse(box, fill=fill)
        draw.ellipse([x - 0.4 * r, y - 1.1 * r, x + 1.4 * r, y + 0.7 * r], fill=background)
    elif kind == "bar":
        draw.rectangle([x - r, y - 0.3 * r, x + r, y + 0.3 * r], fill=fill)
    elif kind == "tee":
        draw.rectangle([x - r, y - r, x + r, y - 0.45 * r], fill=fill)
        draw.rectangle([x - 0.28 * r, y - r, x + 0.28 * r, y + r], fill=fill)
    elif kind == "heart":
        draw.ellipse([x - r, y - 0.8 * r, x + 0.05 * r, y + 0.2 * r], fill=fill)
        draw.ellipse([x - 0.05 * r, y - 0.8 * r, x + r, y + 0.2 * r], fill=fill)
        draw.polygon([(x - 0.95 * r, y - 0.1 * r), (x + 0.95 * r, y - 0.1 * r), (x, y + r)], fill=fill)
    else:
        raise ValueError(f"no drawing for kind {kind!r}; kinds are {list(KINDS)}")


def draw_object(kind: str, colour: str, size: int, rng: np.random.Generator, background=None,
                shade: float = 0.0) -> np.ndarray:
    """A ``size`` x ``size`` RGB picture (uint8) of one ``colour`` ``kind`` on a grey background, jittered.

    ``background``: the tint of the background (:data:`BACKDROPS`), each channel jittered by up to 4
    levels; ``None``, each channel drawn from :data:`DEFAULT_BACKGROUND`;
    ``shade``: how far the fill is mixed towards white (> 0) or black (< 0) (:data:`SHADES`). The
    defaults draw as worlds that plant neither, with the same random draws.
    """
    background = tuple(int(v) for v in (rng.integers(*DEFAULT_BACKGROUND, size=3) if background is None else
                                        np.asarray(background) + rng.integers(-4, 5, size=3)))
    image = Image.new("RGB", (size, size), background)
    fill = [float(np.clip(c + rng.integers(-25, 26), 0, 255)) for c in COLOURS[colour]]
    if shade:
        target = 255.0 if shade > 0 else 0.0
        fill = [c + abs(shade) * (target - c) for c in fill]
    fill = tuple(int(round(c)) for c in fill)
    radius = size * rng.uniform(0.26, 0.36)
    centre = size / 2 + rng.uniform(-0.08, 0.08, size=2) * size
    _draw_kind(ImageDraw.Draw(image), kind, centre, radius, fill, background)
    pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, 6, size=(size, size, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def small_pictures(pixels: np.ndarray, size: int) -> np.ndarray:
    """uint8 (n, s, s, 3) pictures box-filtered (each output pixel the mean of its block) to ``size``."""
    if pixels.shape[1] == size:
        return pixels
    return np.stack([np.asarray(Image.fromarray(p).resize((size, size), Image.Resampling.BOX)) for p in pixels])


# ----------------------------------------------------------------------------------------- writing

def _split_records(parameters: dict, split: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Records and pictures of one split; pictures depend on shares and sizes, never on reporting."""
    seed, size = parameters["seed"], parameters["image_size"]
    per_kind = parameters["per_kind"][split]
    first, second = parameters["colours"]
    pictures_rng = np.random.default_rng([seed, _SPLIT_STREAMS[split], 0])
    captions_rng = np.random.default_rng([seed, _SPLIT_STREAMS[split], 1])
    rows, pixels = [], []
    for kind in parameters["kinds"]:
        # exactly round(share * n) of the first colour, so every world holds its table to the image
        n_first = round(parameters["shares"][kind] * per_kind)
        colours = np.array([first] * n_first + [second] * (per_kind - n_first))[pictures_rng.permutation(per_kind)]
        for colour in colours:
            named = bool(captions_rng.random() < parameters["named"][colour])
            row = {"kind": kind, "colour": str(colour), "named": named}
            if "attributes" in parameters:
                row["backdrop"], row["shade"] = (str(pictures_rng.choice(list(parameters["attributes"][name])))
                                                 for name in ("backdrops", "shades"))
                pixels.append(draw_object(kind, str(colour), size, pictures_rng,
                                          background=parameters["attributes"]["backdrops"][row["backdrop"]],
                                          shade=parameters["attributes"]["shades"][row["shade"]]))
                described = f"{row['shade']} {colour + ' ' if named else ''}{ATTRIBUTE_NOUN} on a {row['backdrop']} background"
            else:
                pixels.append(draw_object(kind, str(colour), size, pictures_rng))
                described = f"{colour} {kind}" if named else kind
            rows.append({**row, "caption": parameters["caption_template"].format(described)})
    records = pd.DataFrame(rows)
    records.insert(0, "image_id", np.arange(len(records)))
    return records, np.stack(pixels)


def write_world(root: str | Path, **parameters) -> Path:
    """Write the world of :func:`world_parameters` ``(**parameters)`` under ``root``."""
    root = Path(root)
    parameters = world_parameters(**parameters)
    for split in SPLITS:
        records, pixels = _split_records(parameters, split)
        (root / split).mkdir(parents=True, exist_ok=True)
        records.to_csv(root / split / "records.csv", index=False)
        np.save(root / split / "images.npy", pixels)
    (root / "world.json").write_text(json.dumps(parameters, indent=1))
    return root


def world_key(parameters: dict) -> str:
    return sha256_hex(json.dumps(parameters, sort_keys=True))[:16]


def world_defaults() -> dict:
    """The defaults of a world's parameters, as the trained recipes' options name them:
    ``share_spread``, ``named`` (colour -> probability), ``train_per_kind``, ``test_per_kind``,
    ``image_size`` and ``seed`` (one source: :func:`world_parameters`' signature)."""
    import inspect

    defaults = {name: parameter.default for name, parameter in inspect.signature(world_parameters).parameters.items()
                if name not in ("shares", "named")}
    return {"share_spread": DEFAULT_SHARE_SPREAD, "named": {colour: NAMED_DEFAULT for colour in COLOURS}, **defaults}


def world_root(**parameters) -> Path:
    """``cache_dir()/worlds/<key>``: the world of these parameters, generated on first use.

    Written into a temporary sibling and renamed into place, so an interrupted write is never read.
    """
    canonical = world_parameters(**parameters)
    target = cache_dir() / "worlds" / f"world-{world_key(canonical)}"

    return build_once(target, lambda staging: write_world(staging, **parameters), ".world-",
                      complete=lambda directory: (directory / "world.json").exists())


@register_fixture("planted-world", version=WORLD_VERSION)
def write_world_fixture(root: Path, seed: int = 0) -> None:
    """The default world (balanced shares 10%-90%, every colour named with 0.9), small splits."""
    write_world(root, train_per_kind=40, test_per_kind=10, seed=seed)


# ----------------------------------------------------------------------------------------- reading

class PlantedWorld(ImageDataset):
    """One split of a planted world: ``records`` (image_id, kind, colour, named, caption), pictures in memory."""

    def __init__(self, root: Path, split: str, records: pd.DataFrame, pixels: np.ndarray, parameters: dict,
                 identity: str):
        super().__init__("planted-world", split, root, records, identity)
        self.pixels = pixels
        self.parameters = parameters

    def _load_image(self, position: int) -> Image.Image:
        return Image.fromarray(self.pixels[position], mode="RGB")

    def captions_frame(self) -> pd.DataFrame:
        """One row per caption, as the caption data sets give it: ``image_index, image_id, caption_id, caption``."""
        return pd.DataFrame({"image_index": np.arange(len(self)), "image_id": self.records["image_id"],
                             "caption_id": self.records["image_id"], "caption": self.records["caption"]})

    def summary(self) -> pd.DataFrame:
        """Per kind: pictures, the first colour's planted and counted share, how often each colour is named."""
        first = self.parameters["colours"][0]
        records = self.records.assign(is_first=self.records["colour"] == first)
        table = records.groupby("kind", sort=False).agg(n=("colour", "size"), counted=("is_first", "mean"))
        table.insert(1, f"{first}_share_planted", pd.Series(self.parameters["shares"]))
        table = table.rename(columns={"counted": f"{first}_share"})
        named = records.pivot_table(index="kind", columns="colour", values="named", aggfunc="mean", sort=False)
        return table.join(named.add_prefix("named_").add_suffix("_rate")).reset_index()

    def picture_grid(self, per_kind: int = 6, size: int | None = None) -> np.ndarray:
        """The first ``per_kind`` pictures of every kind, one row per kind, as one uint8 array; each
        picture box-filtered to ``size`` pixels first when given (what a model trained at that size sees)."""
        pixels = self.pixels if size is None else small_pictures(self.pixels, size)
        rows = [np.concatenate(pixels[index[:per_kind]], axis=1)
                for index in self.records.groupby("kind", sort=False).indices.values()]
        return np.concatenate(rows, axis=0)


_HOW_TO_GET = ["Generate it (seconds, no download):",
               "  from vlbias.data.planted_world import write_world; write_world('<root>', seed=0)",
               "or let world_root(...) write one into the cache."]


@register_dataset("planted-world")
def load_planted_world(root: Path, split=None) -> PlantedWorld:
    """Split ``"train"`` (default) or ``"test"`` of the world written under ``root``.

    The identity of the test split names its pictures only (not its captions), so two worlds that
    differ in reporting share the test pictures' cached embeddings.
    """
    split = split or "train"
    if split not in SPLITS:
        raise ValueError(f"planted-world split must be one of {SPLITS}, got {split!r}")
    files = [root / "world.json", root / split / "records.csv", root / split / "images.npy"]
    if not all(path.exists() for path in files):
        raise DatasetNotFoundError(not_found_message(
            "planted-world", root, ["world.json", f"{split}/records.csv", f"{split}/images.npy"], _HOW_TO_GET))
    parameters = json.loads(files[0].read_text())
    records = pd.read_csv(files[1], dtype={"kind": str, "colour": str, "caption": str})
    records["named"] = records["named"].astype(bool)
    pixels = np.load(files[2])
    if pixels.shape[0] != len(records) or pixels.ndim != 4 or pixels.shape[3] != 3 or pixels.dtype != np.uint8:
        raise ValueError(f"{files[2]} holds {pixels.shape} {pixels.dtype} pixels for {len(records)} records; "
                         "expected uint8 (n, size, size, 3): write the world again")
    content = [file_sha256(files[2])] if split == "test" else [file_sha256(files[2]), file_sha256(files[1])]
    identity = make_identity("planted-world", f"v{parameters['version']}", split, *content)
    return PlantedWorld(root, split, records, pixels, parameters, identity)
