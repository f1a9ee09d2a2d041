"""Where vlbias keeps things on disk. Every location can be moved with an environment variable."""

from __future__ import annotations

import os
from pathlib import Path


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
