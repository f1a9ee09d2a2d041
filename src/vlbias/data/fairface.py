"""FairFace (Kärkkäinen & Joo, 2021): face crops labelled with race, gender and age group.

Two on-disk layouts are recognised, and both give the same records
(``file, age, gender, race, service_test``; labels as strings):

* the official release: ``fairface_label_{train,val}.csv`` beside the unzipped images
  ``train/*.jpg`` and ``val/*.jpg`` (``fairface-img-margin125-trainval.zip`` for padding 1.25);
* the Hugging Face copy ``HuggingFaceM4/FairFace``: ``<padding>/{train,validation}-*.parquet``
  (or the converter's ``<padding>/<split>/*.parquet``) with the JPEG bytes inside and the labels
  as ClassLabel indices.

Parquet images are decoded lazily: only the label columns are read at load time; an image read
fetches the ``image.bytes`` column of its row group (a few MB) and keeps the last few row groups,
so a sequential pass reads each row group once and memory stays small.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from PIL import Image

from .base import (DatasetNotFoundError, FileImageDataset, ImageDataset, file_sha256, make_identity, open_rgb,
                   sha256_hex)
from .registry import not_found_message, register_dataset, require_image_files

# ClassLabel orders of HuggingFaceM4/FairFace (also the natural order for plots and tables).
AGES = ["0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70"]
GENDERS = ["Male", "Female"]
RACES = ["East Asian", "Indian", "Black", "White", "Middle Eastern", "Latino_Hispanic", "Southeast Asian"]
LABEL_NAMES = {"age": AGES, "gender": GENDERS, "race": RACES}
RECORD_COLUMNS = ["file", "age", "gender", "race", "service_test"]

PADDINGS = ("0.25", "1.25")
# split as asked -> (csv label-file split, parquet split)
SPLITS = {"train": ("train", "train"), "val": ("val", "validation"), "validation": ("val", "validation")}


def _how_to_get(padding: str) -> list[str]:
    margin = padding.replace(".", "")
    return [
        "Either the Hugging Face copy (parquet, labels included):",
        f"  hf download HuggingFaceM4/FairFace --repo-type dataset --include '{padding}/*' "
        "--local-dir <root>",
        "  (https://huggingface.co/datasets/HuggingFaceM4/FairFace)",
        "or the official release from https://github.com/joojs/fairface (Google Drive links):",
        f"  fairface-img-margin{margin}-trainval.zip (unzip into <root>, giving <root>/train and <root>/val),",
        "  fairface_label_train.csv and fairface_label_val.csv (into <root>).",
    ]


@register_dataset("fairface")
def load_fairface(root: Path, split=None, padding: str = "1.25") -> ImageDataset:
    """FairFace ``split`` ("train" or "validation"/"val") at ``padding`` "1.25" (default) or "0.25".

    The official CSV layout holds one padding per download, so there ``padding`` only labels the
    data (in ``identity``); in the parquet layout it picks the config directory.
    """
    split = split or "train"
    if split not in SPLITS:
        raise ValueError(f"FairFace split must be one of {sorted(SPLITS)}, got {split!r}")
    padding = str(padding)
    if padding not in PADDINGS:
        raise ValueError(f"FairFace padding must be one of {PADDINGS}, got {padding!r}")
    csv_split, parquet_split = SPLITS[split]

    parquet_files = _parquet_shards(root / padding, parquet_split)
    if parquet_files:
        return FairFaceParquet(root, parquet_split, padding, parquet_files)
    label_file = root / f"fairface_label_{csv_split}.csv"
    if label_file.exists():
        return _load_csv_layout(root, parquet_split, padding, label_file)
    raise DatasetNotFoundError(not_found_message(
        "fairface", root,
        [f"{padding}/{parquet_split}-*.parquet (Hugging Face layout), or",
         f"fairface_label_{csv_split}.csv, with the images in {csv_split}/ (official layout)"],
        _how_to_get(padding)))


def _parquet_shards(config_dir: Path, split: str) -> list[Path]:
    # The hub repo stores "1.25/train-00000-of-00004-<hash>.parquet"; the parquet converter
    # branch stores "1.25/train/0000.parquet". Shard names sort in row order.
    if not config_dir.is_dir():
        return []
    return sorted(config_dir.glob(f"{split}-*.parquet")) or sorted((config_dir / split).glob("*.parquet"))


def _load_csv_layout(root: Path, split: str, padding: str, label_file: Path) -> ImageDataset:
    """``split`` is the canonical name ("train"/"validation") the dataset reports in both layouts."""
    # Every column as text: "True"/"False" parsed explicitly, labels never turned into numbers.
    table = pd.read_csv(label_file, dtype=str, keep_default_na=False)
    missing_columns = [c for c in RECORD_COLUMNS if c not in table.columns]
    if missing_columns:
        raise ValueError(f"{label_file} lacks columns {missing_columns}; found {list(table.columns)}")
    records = table[RECORD_COLUMNS].copy()
    records["service_test"] = records["service_test"].str.strip().str.lower().map({"true": True, "false": False})
    if records["service_test"].isna().any():
        raise ValueError(f"{label_file}: service_test must be True/False")
    records = _finalize(records, label_file)

    listing = require_image_files("fairface", root, records["file"], f"listed in {label_file.name}",
                                  _how_to_get(padding))
    identity = make_identity("fairface", padding, split, file_sha256(label_file), listing)
    return FileImageDataset("fairface", split, root, records, identity)


def _finalize(records: pd.DataFrame, source) -> pd.DataFrame:
    """Same dtypes from both layouts (text columns as str, service_test as bool); labels checked."""
    records = records.astype({"file": str, "age": str, "gender": str, "race": str, "service_test": bool})
    for column, names in LABEL_NAMES.items():
        unknown = sorted(set(records[column]) - set(names))
        if unknown:
            raise ValueError(f"{source}: unexpected {column} labels {unknown}; expected {names}")
    return records.reset_index(drop=True)


class FairFaceParquet(ImageDataset):
    """The Hugging Face parquet layout; JPEG bytes are read per row group on demand."""

    #: row groups kept decoded-as-bytes in memory (HF writes ~100 images per row group)
    cached_row_groups = 4

    def __init__(self, root: Path, split: str, padding: str, files: list[Path]):
        frames, locations, listing = [], [], []
        for shard, path in enumerate(files):
            parquet = pq.ParquetFile(path)
            names = _class_label_names(parquet.schema_arrow.metadata)
            table = parquet.read(columns=["image.path", "age", "gender", "race", "service_test"])
            frame = pd.DataFrame({column: table.column(column).to_numpy(zero_copy_only=False)
                                  for column in ["age", "gender", "race", "service_test"]})
            frame["path"] = _image_field(table, "path").to_numpy(zero_copy_only=False)
            for column in LABEL_NAMES:
                frame[column] = np.asarray(names[column], dtype=object)[frame[column].to_numpy(dtype=np.int64)]
            # The image's original path when the copy kept it, else a reference to its parquet row.
            relative = path.relative_to(root).as_posix()
            fallback = [f"{relative}#{row}" for row in range(len(frame))]
            frame["file"] = [p if isinstance(p, str) and p else f for p, f in zip(frame["path"], fallback)]
            frames.append(frame[RECORD_COLUMNS])
            row_group_starts = np.cumsum([0] + [parquet.metadata.row_group(g).num_rows
                                                for g in range(parquet.metadata.num_row_groups)])
            rows = np.arange(len(frame))
            groups = np.searchsorted(row_group_starts, rows, side="right") - 1
            locations.append(np.stack([np.full(len(frame), shard), groups, rows - row_group_starts[groups]], axis=1))
            listing.append([relative, path.stat().st_size])
        records = _finalize(pd.concat(frames, ignore_index=True), files[0].parent)
        # The labels are hashed as read; the image bytes (GBs) only through the shards' names and sizes.
        labels_hash = sha256_hex(records.to_csv(index=False))
        identity = make_identity("fairface", padding, split, labels_hash, json.dumps(listing))
        super().__init__("fairface", split, root, records, identity)
        self.padding = padding
        self.files = files
        self._locations = np.concatenate(locations).astype(np.int64)
        self._open_files: dict[int, pq.ParquetFile] = {}
        self._row_groups: OrderedDict[tuple[int, int], list] = OrderedDict()
        self._lock = threading.Lock()  # backends may read images from several threads

    def _row_group_bytes(self, shard: int, group: int) -> list:
        key = (shard, group)
        with self._lock:
            if key in self._row_groups:
                self._row_groups.move_to_end(key)
                return self._row_groups[key]
            if shard not in self._open_files:
                self._open_files[shard] = pq.ParquetFile(self.files[shard])
            table = self._open_files[shard].read_row_group(group, columns=["image.bytes"])
            images = _image_field(table, "bytes").to_pylist()
            self._row_groups[key] = images
            while len(self._row_groups) > self.cached_row_groups:
                self._row_groups.popitem(last=False)
            return images

    def _load_image(self, position: int) -> Image.Image:
        shard, group, row = self._locations[position]
        return open_rgb(self._row_group_bytes(int(shard), int(group))[int(row)])

    def __getstate__(self):
        # Open parquet handles and cached bytes stay behind (e.g. when sent to worker processes).
        state = dict(self.__dict__)
        state["_open_files"], state["_row_groups"] = {}, OrderedDict()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _image_field(table, field: str):
    """``image.<field>`` of a table read with a nested column selection (pyarrow versions differ
    in whether it comes back as the ``image`` struct or as a top-level column)."""
    if field in table.column_names:
        return table.column(field).combine_chunks()
    return table.column("image").combine_chunks().field(field)


def _class_label_names(metadata: dict | None) -> dict[str, list[str]]:
    """ClassLabel names from the ``huggingface`` schema metadata when present, else FairFace's."""
    names = dict(LABEL_NAMES)
    try:
        features = json.loads(metadata[b"huggingface"])["info"]["features"]
        for column in LABEL_NAMES:
            if "names" in features.get(column, {}):
                names[column] = list(features[column]["names"])
    except (TypeError, KeyError, ValueError):
        pass
    return names
