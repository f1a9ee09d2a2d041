"""A small registry of data sets: name -> loader, plus the matching fixture writers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from ..paths import cache_dir, data_dir, one_builder, staged_directory
from .base import DatasetNotFoundError, ImageDataset, files_listing_hash, stat_image_files

#: name -> loader(root: Path, split, **options) -> ImageDataset
DATASETS: dict[str, Callable[..., ImageDataset]] = {}
#: name -> writer(root: Path, seed: int, **size_options) writing the real on-disk format
FIXTURE_WRITERS: dict[str, Callable[..., None]] = {}
#: name -> version of its fixture writer; bump it so stale fixtures in the cache are rewritten
FIXTURE_VERSIONS: dict[str, int] = {}

FIXTURE_MARKER = ".vlbias-fixture.json"


def register_dataset(name: str):
    """Decorator registering ``loader(root, split, **options)`` as data set ``name``."""

    def decorator(loader):
        DATASETS[name] = loader
        return loader

    return decorator


def register_fixture(name: str, version: int = 1):
    """Decorator registering ``writer(root, seed=0, **size_options)`` as ``name``'s fixture."""

    def decorator(writer):
        FIXTURE_WRITERS[name] = writer
        FIXTURE_VERSIONS[name] = version
        return writer

    return decorator


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def _check_known(name: str, table: dict) -> None:
    if name not in table:
        raise KeyError(f"Unknown data set {name!r}. Known: {', '.join(sorted(table))}.")


def load_dataset(name: str, root: str | os.PathLike | None = None, split=None, **options) -> ImageDataset:
    """Load data set ``name`` from ``root``.

    ``root=None`` reads ``data_dir()/<name>`` (``VLBIAS_DATA_DIR``); ``root="fixture"`` writes a
    small synthetic copy in the real on-disk format once under ``cache_dir()/fixtures/<name>``
    and reads it through the same parser. ``split=None`` takes the data set's default split.
    Missing files raise :class:`DatasetNotFoundError` saying what to download and where.
    """
    _check_known(name, DATASETS)
    if isinstance(root, str) and root == "fixture":
        root = fixture_root(name)
    elif root is None:
        root = data_dir() / name
    root = Path(root).expanduser()
    try:
        return DATASETS[name](root, split, **options)
    except DatasetNotFoundError as error:
        # Raised from here so notebooks show one short message, not the parser's stack.
        raise DatasetNotFoundError(str(error)) from None


def write_fixture(name: str, root: str | os.PathLike, seed: int = 0, **size_options) -> Path:
    """Write the small synthetic fixture of ``name`` under ``root`` in the real on-disk format."""
    _check_known(name, FIXTURE_WRITERS)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    FIXTURE_WRITERS[name](root, seed=seed, **size_options)
    return root


def fixture_root(name: str, seed: int = 0) -> Path:
    """``cache_dir()/fixtures/<name>``, written on first use (and again when its writer changes).

    Written into a temporary sibling and renamed into place, so an interrupted write is never read.
    """
    _check_known(name, FIXTURE_WRITERS)
    target = cache_dir() / "fixtures" / name
    wanted = {"name": name, "version": FIXTURE_VERSIONS[name], "seed": seed}

    def written(directory: Path) -> bool:  # by this writer's version and seed, not an older one
        try:
            return json.loads((directory / FIXTURE_MARKER).read_text()) == wanted
        except (OSError, ValueError):
            return False

    if written(target):
        return target
    with one_builder(target):
        if written(target):  # written by another process while this one waited
            return target
        with staged_directory(target, prefix=f".{name}-", complete=written) as staging:
            write_fixture(name, staging, seed=seed)
            (staging / FIXTURE_MARKER).write_text(json.dumps(wanted))
    return target


def not_found_message(name: str, root: Path, expected: list[str], how_to_get: list[str]) -> str:
    """The text of a DatasetNotFoundError: what is missing, where to get it, where to put it."""
    lines = [f"Data set {name!r} not found at {root}.", "Expected there:"]
    lines += [f"  {root / item}" for item in expected]
    lines += ["How to get it:"] + [f"  {line.replace('<root>', str(root))}" for line in how_to_get]
    lines += [
        f"Put the files at {root}, or pass root=... (the default root is {data_dir() / name}; "
        "VLBIAS_DATA_DIR moves it).",
        f"To try things out without the data, use load_dataset({name!r}, root=\"fixture\"): "
        "a small synthetic stand-in in the same format.",
    ]
    return "\n".join(lines)


def require_image_files(name: str, root: Path, files, listed_where: str, how_to_get: list[str]) -> str:
    """Check that every listed image file exists; return the hash of the (file, size) listing.

    A missing file raises DatasetNotFoundError saying how many are missing and how to get them.
    """
    files = list(files)
    sizes, missing = stat_image_files(root, files)
    if missing:
        raise DatasetNotFoundError(not_found_message(
            name, root, [f"{len(missing)} of the {len(files)} images {listed_where} are missing, "
                         f"e.g. {', '.join(missing[:3])}"], how_to_get))
    return files_listing_hash(files, sizes)
