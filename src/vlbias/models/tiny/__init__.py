"""``tiny:`` fixtures: small randomly initialised checkpoints built once into the cache.

A builder writes a checkpoint into a directory with the library's own saving code
(``save_pretrained`` or open_clip's equivalent). Loading then goes through the very code
path that a hub id or a local directory takes, so the tests exercise the real loaders.

This package holds every builder, one module per model kind (:mod:`.image_text`,
:mod:`.language`, :mod:`.text_to_image`, :mod:`.vision_language`; their tokenizer files in
:mod:`.tokenizers`), and this registry. Builders register themselves with :func:`register_tiny` when their module is
imported; :func:`tiny_builder` and :func:`tiny_checkpoint` import them all first
(:func:`load_tiny_builders`), so a lookup never depends on which backend ran before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...paths import cache_dir, one_builder, staged_directory


@dataclass(frozen=True)
class TinyBuilder:
    name: str
    kind: str  # "image-text", "language", "text-to-image" or "vision-language"
    version: int
    build: Callable[[Path], None]
    description: str


#: every registered builder by name; read it after :func:`load_tiny_builders` (or use :func:`tiny_builder`)
TINY_BUILDERS: dict[str, TinyBuilder] = {}


def register_tiny(name: str, kind: str, version: int = 1, description: str = ""):
    """Decorator registering ``build(directory)`` as the builder of ``tiny:<name>``.

    Bump ``version`` whenever the builder changes, so that stale caches are rebuilt.
    """

    def decorator(build: Callable[[Path], None]) -> Callable[[Path], None]:
        TINY_BUILDERS[name] = TinyBuilder(name, kind, version, build, description or (build.__doc__ or "").strip())
        return build

    return decorator


def load_tiny_builders() -> dict[str, TinyBuilder]:
    """Import the builder modules, so that every fixture is registered; returns :data:`TINY_BUILDERS`.

    Imported on demand, not with :mod:`vlbias.models`: the builders import torch and the model
    libraries, which a spec lookup alone does not need.
    """
    from . import image_text, language, text_to_image, vision_language  # noqa: F401  (each registers its builders)

    return TINY_BUILDERS


def tiny_builder(name: str) -> TinyBuilder:
    """The registered builder of ``tiny:<name>``; an unknown name is a ``KeyError`` listing the known ones."""
    builders = load_tiny_builders()
    if name not in builders:
        raise KeyError(f"Unknown tiny model 'tiny:{name}'. Known: {', '.join(sorted(builders))}.")
    return builders[name]


def tiny_checkpoint(name: str, root: Path | None = None) -> Path:
    """Return the directory of ``tiny:<name>``, building it on first use.

    The build happens in a temporary sibling directory that is renamed into place
    (:func:`vlbias.paths.staged_directory`), so an interrupted build never leaves a half-written
    checkpoint behind, and of two processes building at once the first to finish wins.
    """
    builder = tiny_builder(name)
    root = Path(root) if root is not None else cache_dir() / "tiny"
    target = root / f"{name}-v{builder.version}"
    if target.exists():
        return target
    with one_builder(target):
        if target.exists():  # built by another process while this one waited
            return target
        with staged_directory(target, prefix=f".{name}-") as staging:
            builder.build(staging)
    return target
