"""``tiny:`` fixtures: small randomly initialised checkpoints built once into the cache.

A builder writes a checkpoint into a directory with the library's own saving code
(``save_pretrained`` or open_clip's equivalent). Loading then goes through the very code
path that a hub id or a local directory takes, so the tests exercise the real loaders.
Builders register themselves with :func:`register_tiny`; the registry is filled by
importing the backend modules (see :mod:`vlbias.models`).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..paths import cache_dir


@dataclass(frozen=True)
class TinyBuilder:
    name: str
    kind: str  # "image-text", "language" or "text-to-image"
    version: int
    build: Callable[[Path], None]
    description: str


TINY_BUILDERS: dict[str, TinyBuilder] = {}


def register_tiny(name: str, kind: str, version: int = 1, description: str = ""):
    """Decorator registering ``build(directory)`` as the builder of ``tiny:<name>``.

    Bump ``version`` whenever the builder changes, so that stale caches are rebuilt.
    """

    def decorator(build: Callable[[Path], None]) -> Callable[[Path], None]:
        TINY_BUILDERS[name] = TinyBuilder(name, kind, version, build, description or (build.__doc__ or "").strip())
        return build

    return decorator


def tiny_checkpoint(name: str, root: Path | None = None) -> Path:
    """Return the directory of ``tiny:<name>``, building it on first use.

    The build happens in a temporary sibling directory that is renamed into place, so an
    interrupted build never leaves a half-written checkpoint behind.
    """
    from . import _load_backends

    _load_backends()
    if name not in TINY_BUILDERS:
        known = ", ".join(sorted(TINY_BUILDERS))
        raise KeyError(f"Unknown tiny model 'tiny:{name}'. Known: {known}.")
    builder = TINY_BUILDERS[name]
    root = Path(root) if root is not None else cache_dir() / "tiny"
    target = root / f"{name}-v{builder.version}"
    if target.exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        builder.build(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.exists():  # a concurrent build won the race otherwise
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
