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
#: name -> its generated world: writer(root: Path, **options), the options' defaults and a version
WORLDS: dict[str, "World"] = {}
WORLD_MARKER = ".vlbias-world.json"


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


class World:
    """A generated world in data set ``name``'s real on-disk layout, with planted causes set by options.

    ``writer(root, **options)`` writes it; ``defaults`` names every option and its default (each
    given value is cast to its default's type); ``check(options)`` raises ``ValueError`` naming
    the parameter that is out of range; ``version`` is bumped when the same options would write
    different files; ``about(options)`` says in a few sentences (Markdown) what the world is and
    what plays what, for the pages that read it.
    """

    def __init__(self, name: str, writer: Callable[..., None], defaults: dict, version: int,
                 check: Callable[[dict], None] | None = None, about: Callable[[dict], str] | None = None,
                 examples: Callable[[Path], tuple] | None = None):
        self.name, self.writer, self.defaults, self.version, self.check = name, writer, dict(defaults), version, check
        self.about, self.examples = about, examples


def register_world(name: str, defaults: dict, version: int = 1, check: Callable[[dict], None] | None = None,
                   about: Callable[[dict], str] | None = None, examples: Callable[[Path], tuple] | None = None):
    """Decorator registering ``writer(root, **options)`` as the generated world of data set ``name``,
    read as ``load_dataset(name, root="world")`` or ``root="world?option=value&..."``.
    ``examples(root)`` may give ``(uint8 picture grid, alt text)`` for the pages to show."""

    def decorator(writer):
        WORLDS[name] = World(name, writer, defaults, version, check, about, examples)
        return writer

    return decorator


def world_options(name: str, query: str | dict = "") -> dict:
    """Every option of ``name``'s world, typed and checked: its defaults updated by ``query``
    (``"key=value&..."``, the part after ``world?``, or a dict)."""
    from urllib.parse import parse_qsl

    _check_known(name, WORLDS)
    world = WORLDS[name]
    given = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=True)) if isinstance(query, str) and query \
        else dict(query or {})
    options = dict(world.defaults)
    for key, value in given.items():
        if key not in world.defaults:
            raise ValueError(f"the {name} world has no parameter {key!r}; its parameters (and defaults) are "
                             f"{', '.join(f'{k}={v!r}' for k, v in world.defaults.items())}.")
        kind = type(world.defaults[key])
        if isinstance(value, str) and kind is not str:
            try:
                value = kind(float(value)) if kind is int and float(value).is_integer() else kind(value)
            except ValueError:
                raise ValueError(f"the {name} world's parameter {key}={value!r} is not a {kind.__name__} "
                                 f"(default {world.defaults[key]!r}).") from None
        options[key] = value
    if world.check is not None:
        world.check(options)
    return options


def generated_world_root(name: str, query: str | dict = "") -> Path:
    """``cache_dir()/worlds/<name>-<key>``: ``name``'s generated world of these options, written on
    first use, keyed by every option and the writer's version (a changed option is a new world)."""
    from .base import sha256_hex

    options = world_options(name, query)
    wanted = {"name": name, "version": WORLDS[name].version, "options": options}
    target = cache_dir() / "worlds" / f"{name}-{sha256_hex(json.dumps(wanted, sort_keys=True))[:16]}"

    return _written_once(target, WORLD_MARKER, wanted, f".{name}-world-",
                         lambda staging: WORLDS[name].writer(staging, **options))


def world_of(root) -> tuple[str, dict] | None:
    """``(name, options)`` of the generated world written at ``root``, or ``None`` for any other folder."""
    try:
        written = json.loads((Path(root) / WORLD_MARKER).read_text())
    except (OSError, ValueError, TypeError):
        return None
    return written["name"], written["options"]


def is_world_root(root) -> bool:
    """Whether ``root`` names a generated world (``"world"`` or ``"world?..."``) rather than a folder."""
    return isinstance(root, str) and (root == "world" or root.startswith("world?"))


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def _check_known(name: str, table: dict) -> None:
    if name not in table:
        raise KeyError(f"Unknown data set {name!r}. Known: {', '.join(sorted(table))}.")


def load_dataset(name: str, root: str | os.PathLike | None = None, split=None, **options) -> ImageDataset:
    """Load data set ``name`` from ``root``.

    ``root=None`` reads ``data_dir()/<name>`` (``VLBIAS_DATA_DIR``); ``root="fixture"`` writes a
    small synthetic copy in the real on-disk format once under ``cache_dir()/fixtures/<name>``
    and reads it through the same parser; ``root="world"`` (or ``"world?option=value&..."``)
    writes the data set's generated world with planted causes (:func:`register_world`), also in
    the real format. ``split=None`` takes the data set's default split.
    Missing files raise :class:`DatasetNotFoundError` saying what to download and where.
    """
    _check_known(name, DATASETS)
    if isinstance(root, str) and root == "fixture":
        root = fixture_root(name)
    elif is_world_root(root):
        if name not in WORLDS:
            raise ValueError(f"root={root!r}: {name} has no generated world; worlds exist for "
                             f"{', '.join(sorted(WORLDS)) or 'no data set yet'}.")
        root = generated_world_root(name, root.partition("?")[2])
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

    return _written_once(target, FIXTURE_MARKER, wanted, f".{name}-",
                         lambda staging: write_fixture(name, staging, seed=seed))


def _written_once(target: Path, marker: str, wanted: dict, prefix: str, write: Callable[[Path], None]) -> Path:
    """``target``, written by ``write(folder)`` unless its ``marker`` file already holds ``wanted`` (the
    writer's version and options, not an older one's). Written into a temporary sibling and renamed
    into place under a file lock, so an interrupted write is never read and two processes write once."""

    def written(directory: Path) -> bool:
        try:
            return json.loads((directory / marker).read_text()) == wanted
        except (OSError, ValueError):
            return False

    if written(target):
        return target
    with one_builder(target):
        if written(target):  # written by another process while this one waited
            return target
        with staged_directory(target, prefix=prefix, complete=written) as staging:
            write(staging)
            (staging / marker).write_text(json.dumps(wanted, indent=1))
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
