"""MS-COCO captions (2017): ``annotations/captions_<split>.json`` beside the images ``<split>/``."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pandas as pd

from .base import CaptionDataset, DatasetNotFoundError, file_sha256, make_identity
from .registry import not_found_message, register_dataset, require_image_files

SPLITS = {"val": "val2017", "val2017": "val2017", "train": "train2017", "train2017": "train2017"}


def _how_to_get(split: str) -> list[str]:
    return [
        f"http://images.cocodataset.org/zips/{split}.zip (unzip into <root>, giving <root>/{split}/)",
        "http://images.cocodataset.org/annotations/annotations_trainval2017.zip "
        "(unzip into <root>, giving <root>/annotations/)",
        "(https://cocodataset.org/#download)",
    ]


@register_dataset("coco")
def load_coco(root: Path, split=None) -> CaptionDataset:
    """COCO captions of ``split`` ("val2017" by default; "val"/"train" accepted).

    Records, one row per image in the JSON's ``images`` order: ``image_id, file, height, width,
    captions`` (captions in annotation order); ``captions_frame()`` has one row per caption.
    """
    split = SPLITS.get(split or "val2017")
    if split is None:
        raise ValueError(f"COCO split must be one of {sorted(SPLITS)}")
    annotation_file = root / "annotations" / f"captions_{split}.json"
    if not annotation_file.exists():
        raise DatasetNotFoundError(not_found_message(
            "coco", root, [f"annotations/captions_{split}.json", f"{split}/*.jpg"], _how_to_get(split)))
    with open(annotation_file, encoding="utf-8") as handle:
        content = json.load(handle)

    captions, caption_ids = defaultdict(list), defaultdict(list)
    for annotation in content["annotations"]:
        captions[annotation["image_id"]].append(annotation["caption"])
        caption_ids[annotation["image_id"]].append(annotation["id"])
    images = content["images"]
    records = pd.DataFrame({
        "image_id": pd.array([image["id"] for image in images], dtype="int64"),
        "file": pd.array([f"{split}/{image['file_name']}" for image in images], dtype=str),
        "height": pd.array([image["height"] for image in images], dtype="int64"),
        "width": pd.array([image["width"] for image in images], dtype="int64"),
        "captions": [captions.get(image["id"], []) for image in images],
    })

    listing = require_image_files("coco", root, records["file"], f"in {annotation_file.name}", _how_to_get(split))
    identity = make_identity("coco", "captions", split, file_sha256(annotation_file), listing)
    return CaptionDataset("coco", split, root, records, identity,
                          caption_ids=[caption_ids.get(image["id"], []) for image in images])
