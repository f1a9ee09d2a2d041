"""Batching shared by every backend."""

from __future__ import annotations

from typing import Iterator, Sequence

from tqdm import tqdm  # text bars: widgets would need ipywidgets


def batches(items: Sequence, batch_size: int, progress: bool, description: str) -> Iterator[list]:
    """Consecutive batches of ``items`` with a progress bar over batches (hidden for a single batch)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    items = list(items)
    starts = range(0, len(items), batch_size)
    for start in tqdm(starts, desc=description, disable=not progress or len(starts) <= 1, leave=False):
        yield items[start:start + batch_size]
