"""Data sets as records plus lazily opened images: FairFace, COCO captions, Flickr30k (Karpathy), and a
generated world with planted biases (``planted-world``).

``load_dataset(name, root=None, split=None, **options)``; ``root="fixture"`` gives a small
synthetic copy in the real on-disk format, so notebooks and tests run without the data;
``root="world"`` gives a generated world with planted causes, in the same format (the demo's data).
"""

from .base import DatasetNotFoundError, ImageDataset, LazyImages, open_rgb
from .registry import (DATASETS, WORLDS, fixture_root, generated_world_root, list_datasets, load_dataset,
                       register_dataset, register_fixture, register_world, world_options, write_fixture)

# Importing the modules fills the registries.
from . import caption_world, coco, face_world, fairface, fixtures, flickr30k, planted_world  # noqa: E402,F401

__all__ = [
    "DatasetNotFoundError", "ImageDataset", "LazyImages", "open_rgb", "DATASETS", "fixture_root",
    "list_datasets", "load_dataset", "register_dataset", "register_fixture", "write_fixture", "WORLDS",
    "generated_world_root", "register_world", "world_options",
]
