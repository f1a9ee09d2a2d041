"""Flickr30k with Karpathy's splits: ``dataset_flickr30k.json`` beside ``flickr30k-images/``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .base import CaptionDataset, DatasetNotFoundError, file_sha256, make_identity
from .registry import not_found_message, register_dataset, require_image_files

KARPATHY_SPLITS = ("train", "val", "test")
IMAGE_DIR = "flickr30k-images"
ANNOTATION_FILE = "dataset_flickr30k.json"

HOW_TO_GET = [
    f"{ANNOTATION_FILE}: Karpathy's caption_datasets.zip, "
    "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip (into <root>)",
    f"{IMAGE_DIR}/: flickr30k-images.zip from https://huggingface.co/datasets/nlphuji/flickr30k "
    "or via the form at https://shannon.cs.illinois.edu/DenotationGraph/ (unzip into <root>)",
]


@register_dataset("flickr30k")
def load_flickr30k(root: Path, split=None) -> CaptionDataset:
    """Flickr30k images of one Karpathy split or several (``split=["val", "test"]``, the default,
    as ColorFoil uses). Records keep the JSON's order: ``image_id`` (file name stem), ``imgid``,
    ``split``, ``file``, ``captions`` (the raw sentences); ``captions_frame()`` uses ``sentid``.
    """
    splits = ["val", "test"] if split is None else [split] if isinstance(split, str) else list(split)
    unknown = sorted(set(splits) - set(KARPATHY_SPLITS))
    if unknown or not splits:
        raise ValueError(f"Flickr30k splits must be among {KARPATHY_SPLITS}, got {split!r}")
    annotation_file = root / ANNOTATION_FILE
    if not annotation_file.exists():
        raise DatasetNotFoundError(not_found_message(
            "flickr30k", root, [ANNOTATION_FILE, f"{IMAGE_DIR}/*.jpg"], HOW_TO_GET))
    with open(annotation_file, encoding="utf-8") as handle:
        content = json.load(handle)

    images = [image for image in content["images"] if image["split"] in splits]
    records = pd.DataFrame({
        "image_id": pd.array([Path(image["filename"]).stem for image in images], dtype=str),
        "imgid": pd.array([image["imgid"] for image in images], dtype="int64"),
        "split": pd.array([image["split"] for image in images], dtype=str),
        "file": pd.array([f"{IMAGE_DIR}/{image['filename']}" for image in images], dtype=str),
        "captions": [[sentence["raw"] for sentence in image["sentences"]] for image in images],
    })

    listing = require_image_files("flickr30k", root, records["file"], f"of split {'+'.join(splits)}", HOW_TO_GET)
    split_name = "+".join(s for s in KARPATHY_SPLITS if s in splits)
    identity = make_identity("flickr30k", "karpathy", split_name, file_sha256(annotation_file), listing)
    return CaptionDataset("flickr30k", split_name, root, records, identity,
                          caption_ids=[[sentence["sentid"] for sentence in image["sentences"]] for image in images])
