"""Where vlbias keeps things on disk. Every location can be moved with an environment variable,
but for the book's own layout, relative to the project root (the folder holding ``_toc.yml``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

#: the source notebooks, relative to the project root: the runner executes them, launch buttons open them
NOTEBOOKS_DIR = Path("notebooks")
#: where the runner writes executed notebooks, relative to the project root; ``_toc.yml`` points here
GENERATED_DIR = Path("book") / "generated"


def spec_slug(spec: str) -> str:
    """A file name for a model spec: everything but letters, digits, dots and dashes replaced by
    ``_``, so that every spec the book uses gets its own name (a card, a card's page)."""
    import re

    return re.sub(r"[^A-Za-z0-9.\-]+", "_", spec).strip("_")


def instance_page(name: str, spec: str) -> Path:
    """Where the runner writes notebook ``name``'s run for one model ``spec``, relative to the project
    root, for a notebook that runs once per model (its declaration's ``per_spec``): a page of its
    own, ``book/generated/<name>/<spec_slug>.ipynb``, which ``_toc.yml`` takes in with a glob."""
    return GENERATED_DIR / name / f"{spec_slug(spec)}.ipynb"


def cache_dir() -> Path:
    """Root of vlbias's caches (tiny checkpoints, embeddings, generated images).

    ``VLBIAS_CACHE_DIR`` overrides the default ``~/.cache/vlbias``.
    """
    path = Path(os.environ.get("VLBIAS_CACHE_DIR") or Path.home() / ".cache" / "vlbias")
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """Root under which data sets live as ``<data_dir>/<name>`` when no root is given.

    ``VLBIAS_DATA_DIR`` overrides the default ``~/vlbias-data``.
    """
    return Path(os.environ.get("VLBIAS_DATA_DIR") or Path.home() / "vlbias-data")


@contextmanager
def one_builder(target: str | Path) -> Iterator[None]:
    """Hold the block as the only builder of ``target`` among processes sharing its folder.

    A file lock beside it (``.<name>.lock``), held while the block runs: another process building
    the same ``target`` (two notebooks run at once that train or write the same checkpoint) waits,
    then finds it complete and reuses it, so the work is done once. Callers check completeness
    again inside the block. The wait is :func:`vlbias.cache.lock_wait` (``VLBIAS_CACHE_LOCK_TIMEOUT``).
    """
    from .cache import _locked

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f".{target.name}.lock"):
        yield


@contextmanager
def staged_directory(target: str | Path, prefix: str | None = None,
                     complete: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """Build ``target`` in a new temporary sibling folder (yielded), renamed into place when the
    block ends without error: a reader never finds a half-built ``target``.

    - An exception in the block leaves ``target`` as it was and removes the staging folder; a
      killed process leaves only its hidden staging folder (``prefix`` + random, default
      ``.<target name>-``), never a half-built ``target``.
    - ``complete(target)`` says whether a finished ``target`` is there (default: it exists). When
      the block ends and one is (a concurrent builder finished first), that one wins and this
      build is discarded; builds of one key are meant to be equal, and readers may be reading it.
    - A ``target`` that is there but not complete (left by an older version) is first renamed
      aside, then removed, so it never appears half-deleted either.
    - If the final rename fails, a concurrent builder's complete ``target`` that got there first
      wins too; any other failure is raised.

    Callers check ``complete(target)`` before entering, to skip the build.
    """
    target = Path(target)
    complete = complete or Path.exists
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix or f".{target.name}-", dir=target.parent))
    try:
        yield staging
        if complete(target):
            return
        if target.exists():
            aside = Path(tempfile.mkdtemp(prefix=f"{staging.name}.stale-", dir=target.parent))
            try:
                target.rename(aside / target.name)
            except FileNotFoundError:  # another builder moved it away first
                pass
            shutil.rmtree(aside, ignore_errors=True)
        try:
            staging.rename(target)
        except OSError:
            if not complete(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_once(target: str | Path, build: Callable[[Path], None], prefix: str | None = None,
               complete: Callable[[Path], bool] | None = None, threads: int | None = None) -> Path:
    """``target``, built by ``build(staging)`` unless a complete one is there: the pattern of every
    checkpoint and world the book trains or writes on first use.

    ``complete(directory)`` says whether a directory is finished (default: it holds ``training.json``,
    the file a trained recipe writes last). One process builds (:func:`one_builder`; the others wait,
    then find it complete), into a staged sibling renamed into place (:func:`staged_directory`), so a
    killed build leaves nothing half-built behind. ``threads``: torch threads while building
    (:func:`vlbias.device.torch_threads`; trainers use 1, so their weights do not depend on the
    machine's thread count), None leaves them alone.
    """
    from contextlib import nullcontext

    target = Path(target)
    complete = complete or (lambda directory: (directory / "training.json").exists())
    if complete(target):
        return target
    with one_builder(target):
        if complete(target):  # built by another process while this one waited
            return target
        if threads:
            from .device import torch_threads

            limit = torch_threads(threads)
        else:
            limit = nullcontext()
        with staged_directory(target, prefix, complete=complete) as staging, limit:
            build(staging)
    return target
