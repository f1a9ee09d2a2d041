"""Shared test set-up: offline hubs, and a fresh cache so tiny checkpoints are really built."""

from __future__ import annotations

import os

# Set before transformers/huggingface_hub are imported: offline, hub calls fail fast
# instead of retrying for minutes (and CLIPTokenizer would silently come back empty).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test session builds its tiny checkpoints and caches from scratch."""
    previous = os.environ.get("VLBIAS_CACHE_DIR")
    path = tmp_path_factory.mktemp("vlbias-cache")
    os.environ["VLBIAS_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("VLBIAS_CACHE_DIR", None)
    else:
        os.environ["VLBIAS_CACHE_DIR"] = previous
