"""What every data set looks like to a notebook: a table of records plus images opened on demand."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from PIL import Image


class DatasetNotFoundError(FileNotFoundError):
    """The data set's files are not where we looked. The message says what to download and where."""


def open_rgb(source: str | os.PathLike | bytes) -> Image.Image:
    """Open an image file (or encoded bytes) fully into memory as RGB.

    ``load()`` closes the file at once, so iterating over 86k images never exhausts file handles;
    grayscale, palette and CMYK files all come back as RGB so every model sees three channels.
    """
    handle = io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else source
    with Image.open(handle) as image:
        image.load()
        return image if image.mode == "RGB" else image.convert("RGB")


def sha256_hex(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") if isinstance(part, str) else part)
        digest.update(b"\x00")  # separator, so ("ab", "c") and ("a", "bc") differ
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stat_image_files(root: Path, relative_paths: Iterable[str]) -> tuple[list[int], list[str]]:
    """Sizes of the image files (relative to ``root``) and the ones that are missing.

    One ``stat`` per file: cheap enough for 86k images, unlike hashing their bytes.
    """
    sizes, missing = [], []
    for relative in relative_paths:
        try:
            sizes.append(os.stat(root / relative).st_size)
        except FileNotFoundError:
            sizes.append(-1)
            missing.append(relative)
    return sizes, missing


def files_listing_hash(relative_paths: Sequence[str], sizes: Sequence[int]) -> str:
    """Hash of the list of (file, size): detects added, removed, renamed or replaced images."""
    return sha256_hex(json.dumps([[str(p), int(s)] for p, s in zip(relative_paths, sizes)]))


def make_identity(name: str, config: str, split: str, *content_hashes: str) -> str:
    """``name/config/split@hash16``: readable in cache metadata, unique through the hash."""
    return f"{name}/{config}/{split}@{sha256_hex(*content_hashes)[:16]}"


class LazyImages(Sequence):
    """A read-only sequence of PIL RGB images that opens each one only when asked for it.

    Slicing and fancy indexing return another ``LazyImages``, so ``images[start:stop]`` costs
    nothing until iterated. ``identity`` names exactly which images these are (for cache keys).
    """

    def __init__(self, load: Callable[[int], Image.Image], positions: Sequence[int], identity: str | None):
        self._load = load
        self._positions = np.asarray(positions, dtype=np.int64)
        self.identity = identity

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return self._load(int(self._positions[index]))
        if isinstance(index, slice):
            if index == slice(None):
                return self
            positions = self._positions[index]
        else:
            positions = self._positions[_as_positions(index, len(self))]
        return LazyImages(self._load, positions, _subset_identity(self.identity, positions))

    def __iter__(self):
        for position in self._positions:
            yield self._load(int(position))

    def __repr__(self) -> str:
        return f"LazyImages(n={len(self)}, identity={self.identity!r})"


def _as_positions(indices: Any, length: int) -> np.ndarray:
    """Integer positions from ints, a boolean mask, a pandas Index/Series of positions."""
    array = np.asarray(indices)
    if array.dtype == bool:
        if len(array) != length:
            raise IndexError(f"boolean mask has length {len(array)}, expected {length}")
        return np.flatnonzero(array)
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"image indices must be integers or a boolean mask, got {array.dtype}")
    array = array.astype(np.int64).reshape(-1)
    if array.size and (array.max() >= length or array.min() < -length):
        raise IndexError(f"image index out of range for {length} images")
    return np.where(array < 0, array + length, array)


def _subset_identity(identity: str | None, positions: np.ndarray) -> str | None:
    if identity is None:
        return None
    return f"{identity}[{sha256_hex(positions.astype('<i8').tobytes())[:12]}]"


class ImageDataset:
    """Records (one row per image, positions 0..n-1) and the images behind them.

    Subclasses set ``records`` and ``identity`` and implement ``_load_image(position)``.
    """

    name: str
    split: str
    root: Path
    records: pd.DataFrame
    identity: str

    def __init__(self, name: str, split: str, root: Path, records: pd.DataFrame, identity: str):
        self.name = name
        self.split = split
        self.root = Path(root)
        self.records = records.reset_index(drop=True)
        self.identity = identity

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, split={self.split!r}, n={len(self)}, root='{self.root}')"

    def _load_image(self, position: int) -> Image.Image:
        raise NotImplementedError

    def image(self, i: int) -> Image.Image:
        """Image at record position ``i``, as RGB."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"image {i} out of range for {len(self)} images")
        return self._load_image(int(i) % len(self))

    def images(self, indices=None) -> LazyImages:
        """Lazy sequence of RGB images (all of them, or those at ``indices`` / a boolean mask)."""
        everything = LazyImages(self._load_image, np.arange(len(self)), self.identity)
        return everything if indices is None else everything[indices]


class FileImageDataset(ImageDataset):
    """Images stored as files; ``records['file']`` holds each path relative to ``root``."""

    def _load_image(self, position: int) -> Image.Image:
        return open_rgb(self.root / self.records["file"].iat[position])


class CaptionDataset(FileImageDataset):
    """Image files with several captions each (``records['captions']`` is a list of str)."""

    def __init__(self, *args, caption_ids: list[list[Any]], **kwargs):
        super().__init__(*args, **kwargs)
        self._caption_ids = caption_ids

    def captions_frame(self) -> pd.DataFrame:
        """One row per caption: ``image_index`` (record position), ``image_id``, ``caption_id``, ``caption``."""
        rows = [
            (position, image_id, caption_id, caption)
            for position, (image_id, captions, ids) in enumerate(
                zip(self.records["image_id"], self.records["captions"], self._caption_ids))
            for caption_id, caption in zip(ids, captions)
        ]
        return pd.DataFrame(rows, columns=["image_index", "image_id", "caption_id", "caption"])
