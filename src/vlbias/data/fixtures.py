"""Small synthetic stand-ins for the data sets, written in their real on-disk formats.

The pictures are simple but not random: a FairFace "face" is an ellipse whose colour follows
race, size follows age and hair follows gender, and a COCO/Flickr picture shows shapes in the
colours its captions name. So a model can pick up the planted structure, and a demo on the
fixture shows a signal. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from .fairface import AGES, GENDERS, RACES
from .registry import register_fixture

# ----------------------------------------------------------------------------------------- pictures


def _encode(image: Image.Image, fmt: str = "JPEG") -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, quality=90) if fmt == "JPEG" else image.save(buffer, format=fmt)
    return buffer.getvalue()


def _with_noise(image: Image.Image, rng: np.random.Generator, scale: float = 8.0) -> Image.Image:
    pixels = np.asarray(image, dtype=np.float32)
    pixels = pixels + rng.normal(0.0, scale, size=pixels.shape)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode=image.mode)


def _jitter(color, rng: np.random.Generator, amount: int = 12) -> tuple[int, ...]:
    return tuple(int(np.clip(c + rng.integers(-amount, amount + 1), 0, 255)) for c in color)


# One made-up "skin" colour per race label: arbitrary, only there to plant a learnable signal.
_RACE_COLORS = [(235, 200, 160), (170, 110, 70), (95, 60, 40), (245, 215, 195),
                (200, 150, 110), (210, 160, 120), (185, 135, 90)]


def _face(race: int, gender: int, age: int, size: int, rng: np.random.Generator) -> Image.Image:
    background = int(rng.integers(90, 200))
    image = Image.new("RGB", (size, size), (background,) * 3)
    draw = ImageDraw.Draw(image)
    center = size / 2 + rng.normal(0, size / 40, size=2)
    radius = size * (0.18 + 0.025 * age) * (1 + rng.normal(0, 0.03))  # older -> bigger face
    half_width, half_height = radius * 0.8, radius
    box = [center[0] - half_width, center[1] - half_height, center[0] + half_width, center[1] + half_height]
    if gender == 1:  # "Female": long dark hair behind the face
        draw.rectangle([box[0] - size * 0.06, box[1] - size * 0.04, box[2] + size * 0.06, box[3] + size * 0.1],
                       fill=_jitter((45, 30, 20), rng))
    else:  # "Male": short hair on top only
        draw.ellipse([box[0], box[1] - size * 0.05, box[2], box[1] + radius * 0.5], fill=_jitter((45, 30, 20), rng))
    draw.ellipse(box, fill=_jitter(_RACE_COLORS[race], rng))
    for dx in (-0.35, 0.35):  # eyes
        x, y = center[0] + dx * half_width, center[1] - 0.2 * half_height
        draw.ellipse([x - size * 0.03, y - size * 0.02, x + size * 0.03, y + size * 0.02], fill=(30, 30, 30))
    return _with_noise(image, rng)


COLORS = {
    "red": (220, 30, 30), "green": (30, 170, 60), "blue": (30, 60, 220), "yellow": (240, 220, 30),
    "orange": (245, 140, 20), "purple": (130, 40, 170), "pink": (245, 150, 190), "brown": (120, 75, 35),
    "black": (15, 15, 15), "white": (245, 245, 245), "gray": (128, 128, 128),
}
_OBJECTS = ["car", "bus", "kite", "umbrella", "shirt", "dog", "cat", "bicycle", "truck", "vase", "chair", "boat"]


def _scene(colors: list[str], width: int, height: int, rng: np.random.Generator, grayscale: bool) -> Image.Image:
    """A pale background with one big shape in the first colour and smaller ones in the others."""
    image = Image.new("RGB", (width, height), _jitter((200, 200, 190), rng, 20))
    draw = ImageDraw.Draw(image)
    for k, color in enumerate(colors):
        scale = 0.6 if k == 0 else 0.3
        w, h = width * scale, height * scale
        x0, y0 = rng.uniform(0, width - w), rng.uniform(0, height - h)
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape([x0, y0, x0 + w, y0 + h], fill=_jitter(COLORS[color], rng))
    image = _with_noise(image, rng, 6.0)
    return image.convert("L") if grayscale else image


def _captions_for(colors: list[str], obj: str, other: str, n: int, rng: np.random.Generator,
                  grayscale: bool) -> list[str]:
    """Captions mixing zero, one and several colour words, odd casing and punctuation, and the
    look-alikes "colored"/"covered" (which contain "red" but are not colour words)."""
    first, second = colors[0], colors[-1]
    if grayscale:
        pool = [f"A black and white photo of a {obj}.", f"An old photograph of a {obj} and a {other}",
                f"Gray tones everywhere: a {obj}.", f"A {obj} next to a {other}.", f"black and white {obj}"]
    else:
        pool = [
            f"A {first} {obj} next to a {other}.",
            f"{first.capitalize()} {obj} and a {second} {other} on the street",
            f"A {obj} covered in dust beside a {other}.",
            f"The {obj} is {first}.",
            f"{first.capitalize()}.",
            f"A brightly colored {obj} with a {second} {other}",
            f"Someone standing near a {obj}.",
            f"A {obj} painted {first} and {second}, with some {first.upper()} stripes!",
            f"There is a {obj} here.",
            f"a {first}-ish {obj}, partly {second}",
        ]
    picks = list(rng.permutation(len(pool)))
    while len(picks) < n:
        picks += picks[: n - len(picks)]
    return [pool[i] for i in picks[:n]]


def _distinct_integers(rng: np.random.Generator, low: int, high: int, n: int) -> list[int]:
    chosen: set[int] = set()
    while len(chosen) < n:
        chosen.add(int(rng.integers(low, high)))
    return sorted(chosen)


def _tokens(sentence: str) -> list[str]:
    # Karpathy's files hold lower-cased tokens without punctuation.
    return re.findall(r"[a-z0-9]+", sentence.lower())


# ----------------------------------------------------------------------------------------- FairFace

FAIRFACE_HF_FEATURES = {
    "image": {"_type": "Image"},
    "age": {"names": AGES, "_type": "ClassLabel"},
    "gender": {"names": GENDERS, "_type": "ClassLabel"},
    "race": {"names": RACES, "_type": "ClassLabel"},
    "service_test": {"dtype": "bool", "_type": "Value"},
}


def fairface_fixture_rows(seed: int = 0, per_cell: int = 2, val_per_cell: int = 1, image_size: int = 64):
    """{split: [(file, age, gender, race, service_test, jpeg_bytes)]}, every race×gender×age cell
    present ``per_cell`` times in train (``val_per_cell`` in val), rows shuffled like the real
    label files. The first image of each split is grayscale (stored as an 'L' JPEG)."""
    rng = np.random.default_rng(seed)
    splits = {}
    for split, repeats in (("train", per_cell), ("val", val_per_cell)):
        cells = [(r, g, a) for r in range(len(RACES)) for g in range(len(GENDERS)) for a in range(len(AGES))
                 for _ in range(repeats)]
        rows = []
        for number, cell_index in enumerate(rng.permutation(len(cells)), start=1):
            race, gender, age = cells[cell_index]
            image = _face(race, gender, age, image_size, rng)
            if number == 1:
                image = image.convert("L")
            rows.append((f"{split}/{number}.jpg", AGES[age], GENDERS[gender], RACES[race],
                         bool(rng.random() < 0.5), _encode(image)))
        splits[split] = rows
    return splits


def write_fairface_csv_layout(root: Path, rows: dict) -> None:
    """FairFace's official layout under ``root``: ``fairface_label_<split>.csv`` beside the JPEG files
    it lists, from ``{split: [(file, age, gender, race, service_test, jpeg_bytes)]}``."""
    for split, split_rows in rows.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        with open(root / f"fairface_label_{split}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["file", "age", "gender", "race", "service_test"])
            for file, age, gender, race, service_test, data in split_rows:
                writer.writerow([file, age, gender, race, str(service_test)])
                (root / file).write_bytes(data)


@register_fixture("fairface", version=1)
def write_fairface_fixture(root: Path, seed: int = 0, layout: str = "parquet", per_cell: int = 2,
                           val_per_cell: int = 1, image_size: int = 64, padding: str = "1.25",
                           keep_paths: bool = True, shards: int = 2, row_group_size: int = 32) -> None:
    """FairFace in the Hugging Face parquet layout (default) or the official CSV layout.

    Same seed, same images and labels in both layouts. ``keep_paths=False`` leaves the parquet
    ``image.path`` empty (the loader then names rows by parquet file and row).
    """
    rows = fairface_fixture_rows(seed, per_cell, val_per_cell, image_size)
    if layout == "csv":
        write_fairface_csv_layout(root, rows)
    elif layout == "parquet":
        config_dir = root / padding
        config_dir.mkdir(parents=True, exist_ok=True)
        metadata = {b"huggingface": json.dumps({"info": {"features": FAIRFACE_HF_FEATURES}}).encode()}
        for split, hf_split, n_shards in (("train", "train", shards), ("val", "validation", 1)):
            split_rows = rows[split]
            bounds = np.linspace(0, len(split_rows), n_shards + 1).astype(int)
            for shard in range(n_shards):
                part = split_rows[bounds[shard]:bounds[shard + 1]]
                table = pa.table({
                    "image": pa.array([{"bytes": r[5], "path": r[0] if keep_paths else None} for r in part],
                                      type=pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
                    "age": pa.array([AGES.index(r[1]) for r in part], type=pa.int64()),
                    "gender": pa.array([GENDERS.index(r[2]) for r in part], type=pa.int64()),
                    "race": pa.array([RACES.index(r[3]) for r in part], type=pa.int64()),
                    "service_test": pa.array([r[4] for r in part], type=pa.bool_()),
                }).replace_schema_metadata(metadata)
                pq.write_table(table, config_dir / f"{hf_split}-{shard:05d}-of-{n_shards:05d}.parquet",
                               row_group_size=row_group_size)
    else:
        raise ValueError(f"layout must be 'parquet' or 'csv', got {layout!r}")


# ----------------------------------------------------------------------------------------- COCO


def _caption_images(rng: np.random.Generator, n_images: int, captions_per_image: int, gray_every: int):
    """(colors, captions, width, height, grayscale) per image; one image gets an extra caption,
    as a few real COCO images do."""
    names = list(COLORS)
    images = []
    for index in range(n_images):
        colors = [str(c) for c in rng.choice(names, size=2, replace=False)]
        obj, other = (str(o) for o in rng.choice(_OBJECTS, size=2, replace=False))
        grayscale = index % gray_every == gray_every // 2
        n = captions_per_image + (1 if index == 3 else 0)
        width, height = [(64, 48), (48, 64), (56, 56)][index % 3]
        images.append((colors, _captions_for(colors, obj, other, n, rng, grayscale), width, height, grayscale))
    return images


@register_fixture("coco", version=1)
def write_coco_fixture(root: Path, seed: int = 0, n_images: int = 40, captions_per_image: int = 5,
                       split: str = "val2017") -> None:
    """``annotations/captions_<split>.json`` (real COCO structure) and ``<split>/<12-digit id>.jpg``."""
    rng = np.random.default_rng(seed + 1)
    image_ids = _distinct_integers(rng, 1, 600_000, n_images)
    pictures = ((_scene(colors, width, height, rng, grayscale), captions)
                for colors, captions, width, height, grayscale in
                _caption_images(rng, n_images, captions_per_image, gray_every=20))
    write_coco_split(root, split, image_ids, pictures, rng, "vlbias synthetic COCO captions fixture")


def write_coco_split(root: Path, split: str, image_ids: list[int], pictures, rng: np.random.Generator,
                     description: str) -> None:
    """One split of COCO captions in the real layout: ``annotations/captions_<split>.json`` and
    ``<split>/<12-digit id>.jpg``, one per ``(picture, captions)`` of ``pictures`` (drawn lazily, in
    order, so a caller's generator may draw them from ``rng`` between this writer's draws)."""
    (root / split).mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    image_entries, annotations = [], []
    for image_id, (picture, captions) in zip(image_ids, pictures):
        file_name = f"{image_id:012d}.jpg"
        width, height = picture.size
        picture.save(root / split / file_name, quality=90)
        image_entries.append({"license": int(rng.integers(1, 8)), "file_name": file_name,
                              "coco_url": f"http://images.cocodataset.org/{split}/{file_name}",
                              "height": height, "width": width, "date_captured": "2013-11-14 17:02:52",
                              "flickr_url": f"http://farm4.staticflickr.com/{image_id}.jpg", "id": image_id})
        annotations += [{"image_id": image_id, "caption": caption} for caption in captions]
    # The real file interleaves images' captions; ids increase through the file.
    order = rng.permutation(len(annotations))
    annotations = [dict(annotations[i], id=int(10 * k + 37)) for k, i in enumerate(order)]
    image_order = [image_entries[i] for i in rng.permutation(len(image_entries))]  # real "images" is unsorted too
    content = {
        "info": {"description": description, "version": "1.0", "year": 2017},
        "licenses": [{"url": "http://creativecommons.org/licenses/by/2.0/", "id": i, "name": "fixture"}
                     for i in range(1, 9)],
        "images": image_order,
        "annotations": annotations,
    }
    with open(root / "annotations" / f"captions_{split}.json", "w", encoding="utf-8") as handle:
        json.dump(content, handle)


# ----------------------------------------------------------------------------------------- Flickr30k


@register_fixture("flickr30k", version=1)
def write_flickr30k_fixture(root: Path, seed: int = 0, n_train: int = 18, n_val: int = 6, n_test: int = 6,
                            captions_per_image: int = 5) -> None:
    """``dataset_flickr30k.json`` (Karpathy's format) and ``flickr30k-images/<id>.jpg``."""
    rng = np.random.default_rng(seed + 2)
    n_images = n_train + n_val + n_test
    splits = ["train"] * n_train + ["val"] * n_val + ["test"] * n_test
    splits = [splits[i] for i in rng.permutation(n_images)]
    stems = _distinct_integers(rng, 1_000_000_000, 9_999_999_999, n_images)  # like "1000092795.jpg"
    pictures = ((_scene(colors, width, height, rng, grayscale), captions[:captions_per_image])  # exactly five
                for colors, captions, width, height, grayscale in
                _caption_images(rng, n_images, captions_per_image, gray_every=12))
    write_flickr30k_karpathy(root, stems, splits, pictures)


def write_flickr30k_karpathy(root: Path, stems: list[int], splits: list[str], pictures) -> None:
    """Flickr30k in Karpathy's layout: ``dataset_flickr30k.json`` and ``flickr30k-images/<stem>.jpg``,
    one per ``(picture, captions)`` of ``pictures`` (drawn lazily, in order) with its split."""
    (root / "flickr30k-images").mkdir(parents=True, exist_ok=True)
    entries, sentid = [], 0
    for imgid, (stem, split, (picture, captions)) in enumerate(zip(stems, splits, pictures)):
        filename = f"{stem}.jpg"
        picture.save(root / "flickr30k-images" / filename, quality=90)
        sentences = [{"tokens": _tokens(raw), "raw": raw, "imgid": imgid, "sentid": sentid + k}
                     for k, raw in enumerate(captions)]
        entries.append({"sentids": [s["sentid"] for s in sentences], "imgid": imgid, "sentences": sentences,
                        "split": split, "filename": filename})
        sentid += len(sentences)
    with open(root / "dataset_flickr30k.json", "w", encoding="utf-8") as handle:
        json.dump({"images": entries, "dataset": "flickr30k"}, handle)
