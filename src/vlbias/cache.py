"""A chunked on-disk cache for large arrays (embeddings of 86k images), resumable after a kill.

An entry lives in ``cache_dir()/embeddings/<sha256 of the key parts>/``: ``meta.json`` (the key
parts, n_items, chunk_size, dim, dtype) and ``chunk_000000.npy``, ``chunk_000001.npy``, ... each
holding rows ``[i * chunk_size, (i + 1) * chunk_size)``. Every file is written to a temporary
name in the same directory and renamed into place, so a chunk file either is complete or does
not exist; a chunk that still fails to load or has the wrong shape is recomputed, never trusted.
Files are plain ``.npy`` read with ``allow_pickle=False``: loading a cache never runs code.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm  # plain text bars: widgets need ipywidgets and render badly in built pages

from .paths import cache_dir

META_FILE = "meta.json"


def key_hash(key_parts: dict[str, Any]) -> str:
    """sha256 of the key parts as canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(key_parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def entry_dir(key_parts: dict[str, Any], kind: str = "embeddings") -> Path:
    return cache_dir() / kind / key_hash(key_parts)


def chunk_path(directory: Path, index: int) -> Path:
    return directory / f"chunk_{index:06d}.npy"


def _write_atomically(path: Path, write: Callable[[Any], None]) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _save_chunk(path: Path, array: np.ndarray) -> None:
    _write_atomically(path, lambda stream: np.save(stream, array, allow_pickle=False))


def _save_meta(directory: Path, meta: dict) -> None:
    _write_atomically(directory / META_FILE, lambda stream: stream.write(json.dumps(meta, indent=1).encode()))


def _load_chunk(path: Path, rows: int, meta: dict) -> np.ndarray | None:
    """The chunk if it is complete and has the shape and dtype the entry promises, else None."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):  # missing, truncated, not an .npy, or an object array
        return None
    if array.ndim < 1 or array.shape[0] != rows:
        return None
    if meta.get("dim") is not None and list(array.shape[1:]) != list(meta["dim"]):
        return None
    if meta.get("dtype") is not None and array.dtype.str != meta["dtype"]:
        return None
    return array


def _open_entry(directory: Path, key_parts: dict, n_items: int, chunk_size: int) -> dict:
    """The entry's meta, starting the entry afresh when absent, unreadable or for other sizes."""
    wanted = {"key_parts": key_parts, "n_items": n_items, "chunk_size": chunk_size}
    try:
        meta = json.loads((directory / META_FILE).read_text())
        if all(meta.get(name) == value for name, value in wanted.items()):
            return meta
    except (OSError, ValueError):
        pass
    if directory.exists():  # stale chunks of another shape must not be mixed in
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    meta = dict(wanted, dim=None, dtype=None)
    _save_meta(directory, meta)
    return meta


def compute_chunked(key_parts: dict[str, Any], n_items: int, compute_fn: Callable[[int, int], np.ndarray],
                    chunk_size: int = 1024, progress: bool = True, cache: bool = True,
                    kind: str = "embeddings", desc: str | None = None) -> np.ndarray:
    """Rows ``0..n_items`` of ``compute_fn(start, stop)``, computed chunk by chunk and cached.

    Finished chunks are loaded; only missing (or damaged) ones are computed, so a run killed
    midway resumes where it stopped. ``key_parts`` must name everything the result depends on
    (JSON-serialisable). ``cache=False`` computes everything and writes nothing.
    """
    if n_items < 0 or chunk_size < 1:
        raise ValueError("n_items must be >= 0 and chunk_size >= 1")
    if n_items == 0:
        return np.asarray(compute_fn(0, 0))
    n_chunks = -(-n_items // chunk_size)
    directory = entry_dir(key_parts, kind) if cache else None
    meta = _open_entry(directory, key_parts, n_items, chunk_size) if cache else {}

    result = None
    bar = tqdm(total=n_chunks, desc=desc or f"{kind} chunks", unit="chunk", disable=not progress, leave=False)
    try:
        for index in range(n_chunks):
            start, stop = index * chunk_size, min(n_items, (index + 1) * chunk_size)
            chunk = _load_chunk(chunk_path(directory, index), stop - start, meta) if cache else None
            if chunk is None:
                chunk = _checked(compute_fn(start, stop), start, stop, meta)
                if cache:
                    if meta.get("dim") is None:
                        meta.update(dim=list(chunk.shape[1:]), dtype=chunk.dtype.str)
                        _save_meta(directory, meta)
                    _save_chunk(chunk_path(directory, index), chunk)
            if result is None:  # allocate once: concatenating 86k x 768 twice would double memory
                result = np.empty((n_items,) + chunk.shape[1:], dtype=chunk.dtype)
            result[start:stop] = chunk
            bar.update(1)
    finally:
        bar.close()
    return result


def _checked(chunk, start: int, stop: int, meta: dict) -> np.ndarray:
    chunk = np.ascontiguousarray(chunk)
    if chunk.dtype == object:
        raise TypeError("compute_fn must return a numeric array, not objects")
    if chunk.ndim < 1 or chunk.shape[0] != stop - start:
        raise ValueError(f"compute_fn({start}, {stop}) returned shape {chunk.shape}, expected {stop - start} rows")
    if meta.get("dim") is not None and (list(chunk.shape[1:]) != list(meta["dim"]) or chunk.dtype.str != meta["dtype"]):
        raise ValueError(f"compute_fn({start}, {stop}) returned {chunk.dtype}{chunk.shape}, "
                         f"but earlier chunks were {meta['dtype']} with row shape {meta['dim']}")
    return chunk


def clear(key_parts: dict[str, Any], kind: str = "embeddings") -> None:
    """Remove one entry (e.g. after changing a backend without changing its spec)."""
    shutil.rmtree(entry_dir(key_parts, kind), ignore_errors=True)
