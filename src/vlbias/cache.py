"""A chunked on-disk cache for large arrays (embeddings of 86k images): resumable, verified, shareable.

Layout of one entry, ``cache_dir()/<kind>/<sha256 of the key parts>/``:

``meta.json``
    the key parts, ``n_items``, ``chunk_size``, the cache ``format`` and, once a chunk exists,
    the row shape ``dim`` and ``dtype`` of the result.
``chunk_000000.npz``, ``chunk_000001.npz``, ...
    chunk ``i`` holds rows ``[i * chunk_size, (i + 1) * chunk_size)`` as ``rows``, together with
    the ``start`` and ``stop`` it was computed for and the ``sha256`` of its dtype, shape and bytes.
    A chunk is used only when all of them check out: flipped bytes, a truncated file or a chunk
    copied over another are recomputed, with a warning naming the file.
``.lock``, ``chunk_000000.lock``
    file locks (the ``filelock`` package): the first while an entry is created or reset, the others
    while a process computes that chunk. Several processes can fill one entry at once: each takes
    the chunks nobody else is computing, then waits for the rest and reads them. A process waits for
    a lock as long as it takes, or at most ``VLBIAS_CACHE_LOCK_TIMEOUT`` seconds when that is set
    (then :class:`CacheLockTimeout` names the lock file).

Every file is written to a temporary name in the same folder and renamed into place, so a killed
run leaves only whole files behind and a rerun computes only the missing chunks. Files are read
with ``allow_pickle=False``: loading a cache never runs code.

Keys come from :func:`cache_key`, which names everything a result depends on: what it is and the
version of the code computing it, the model (its weights, dtype and preprocessing) and the data.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import tempfile
import warnings
import zipfile
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
from filelock import FileLock, Timeout
from tqdm import tqdm  # plain text bars: widgets need ipywidgets and render badly in built pages

from .paths import cache_dir

META_FILE = "meta.json"
#: bump when the files of an entry change their layout; older entries are then started afresh
CACHE_FORMAT = 2


class CacheWarning(UserWarning):
    """A cache file was damaged or inconsistent and its contents are being recomputed."""


#: seconds a process waits for a cache lock held by another; unset or empty: as long as it takes
LOCK_TIMEOUT_VARIABLE = "VLBIAS_CACHE_LOCK_TIMEOUT"


class CacheLockTimeout(Timeout):
    """A cache lock was still held by someone else after ``VLBIAS_CACHE_LOCK_TIMEOUT`` seconds."""

    def __init__(self, lock_file: str, seconds: float | None = None) -> None:
        super().__init__(lock_file)
        self.seconds = seconds

    def __str__(self) -> str:
        return (f"Waited {self.seconds:g} s ({LOCK_TIMEOUT_VARIABLE}) for the cache lock {self.lock_file}: another "
                f"process is writing this cache entry. Let it finish (raise {LOCK_TIMEOUT_VARIABLE}, or unset it to "
                f"wait as long as it takes); if no other process uses this cache, the lock is stale: delete "
                f"{self.lock_file} and rerun. Cached chunks are kept.")


def lock_wait() -> float:
    """Seconds to wait for a cache lock another process holds: ``VLBIAS_CACHE_LOCK_TIMEOUT``, read at
    each call, or -1 (as long as it takes) when it is unset or empty."""
    text = os.environ.get(LOCK_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return -1
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{LOCK_TIMEOUT_VARIABLE}={text!r}: expected a number of seconds >= 0 (how long to wait "
                         "for a cache lock another process holds), or unset it to wait as long as it takes")
    return seconds


def _acquire(lock_file: Path, wait: bool = True) -> FileLock | None:
    """The file lock at ``lock_file``, held; None when another process holds it and ``wait`` is false.
    Waiting lasts :func:`lock_wait` seconds, then :class:`CacheLockTimeout` names the file."""
    seconds = lock_wait() if wait else 0
    lock = FileLock(lock_file, timeout=seconds)
    try:
        lock.acquire()
    except Timeout:
        if not wait:
            return None
        raise CacheLockTimeout(str(lock_file), seconds) from None
    return lock


@contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    lock = _acquire(lock_file)
    try:
        yield
    finally:
        lock.release()


# --------------------------------------------------------------------------- keys


def model_identity(model) -> dict[str, Any]:
    """What about ``model`` decides its outputs: weights, architecture, dtype, kind and preprocessing.

    A loaded model carries the :class:`vlbias.models.identity.ModelIdentity` its loader built: its
    weights are named by a fingerprint of their files (the same files at any path share entries;
    other files at the same path do not) or by the hub snapshot revision, and ``cache_identity()``
    returns :meth:`~vlbias.models.identity.ModelIdentity.key`. A model may say otherwise in its own
    ``cache_identity()``; for other objects (stand-ins) the spec, dtype, kind and preprocessing are
    read where present.
    """
    if hasattr(model, "cache_identity"):
        return model.cache_identity()
    from .models.base import describe_model  # only for stand-ins that do not derive from the bases

    return describe_model(model)


def cache_key(what: str, version: int | str, model=None, **inputs: Any) -> dict[str, Any]:
    """The key parts of a cached result, built in one place for every cache.

    ``what`` names the result and ``version`` the version of the code computing it (bump it when
    that code changes meaning); ``model`` contributes :func:`model_identity`; ``inputs`` name the
    data (a data set's ``identity``, a hash of texts) and every setting. All must be JSON values.
    """
    key: dict[str, Any] = {"what": what, "version": version}
    if model is not None:
        key["model"] = model_identity(model)
    key.update(inputs)
    return key


def key_hash(key_parts: dict[str, Any]) -> str:
    """sha256 of the key parts as canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(key_parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def entry_dir(key_parts: dict[str, Any], kind: str = "embeddings") -> Path:
    return cache_dir() / kind / key_hash(key_parts)


def chunk_path(directory: Path, index: int) -> Path:
    return directory / f"chunk_{index:06d}.npz"


# --------------------------------------------------------------------------- writing


@contextmanager
def explained_write_errors(target: Path | None, needed_bytes: int | None = None) -> Iterator[None]:
    """Turn a full disk or a read-only folder into an error that says what to do."""
    try:
        yield
    except OSError as error:
        text, target = str(error), target or error.filename
        if error.errno in (errno.ENOSPC, errno.EDQUOT) or "requested and" in text:  # numpy's short write
            need = f"; it needs about {_size(needed_bytes)} more" if needed_bytes else ""
            raise OSError(errno.ENOSPC, f"No space left on device while writing {target}{need}. Free space "
                          "there, or move the cache with VLBIAS_CACHE_DIR=/a/folder/with/space. Files already "
                          f"written are kept, and a rerun resumes from them ({text})") from error
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise PermissionError(error.errno, f"Cannot write to {target}: the cache folder is read-only. Set "
                                  "VLBIAS_CACHE_DIR to a writable folder, or pass cache=False to compute without "
                                  f"caching ({text})") from error
        raise


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB" if n_bytes >= 2**20 else f"{max(1, round(n_bytes / 2**10))} KiB"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: what ``open`` would give a new file; mkstemp's 0600 would hide a shared cache from its other users
FILE_MODE = 0o666 & ~_umask()


def write_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` through a temporary file renamed into place (whole or absent)."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(handle, FILE_MODE)
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files :func:`write_atomically` left beside ``path`` when a writer was killed
    mid-write (``.NAME.XXXX.tmp``). Call it only while holding the lock under which ``path`` is written:
    then no live writer of ``path`` can own one of them. Returns the files removed."""
    removed = []
    for temporary in Path(path).parent.glob(f".{Path(path).name}.*.tmp"):
        temporary.unlink(missing_ok=True)
        removed.append(temporary)
    return removed


def _digest(array: np.ndarray) -> str:
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    digest.update(np.ascontiguousarray(array).tobytes())  # a copy, but memory-speed: any dtype works
    return digest.hexdigest()


def chunk_bytes(array: np.ndarray, start: int, stop: int) -> bytes:
    """A chunk file's contents: the rows, their row range and their checksum."""
    buffer = io.BytesIO()
    np.savez(buffer, rows=array, start=np.int64(start), stop=np.int64(stop), sha256=np.str_(_digest(array)))
    return buffer.getvalue()


def _save_meta(directory: Path, meta: dict) -> None:
    """Write the entry's meta; called under the entry's lock, so a temporary of a killed writer is stale."""
    remove_stale_temporaries(directory / META_FILE)
    write_atomically(directory / META_FILE, json.dumps(meta, indent=1).encode())


def _read_meta(directory: Path) -> dict | None:
    try:
        return json.loads((directory / META_FILE).read_text())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- reading


def read_chunk(path: Path, start: int, stop: int) -> tuple[np.ndarray | None, str | None]:
    """(rows, None) when ``path`` holds verified rows ``start..stop``; (None, what is wrong) otherwise.

    A missing file is ``(None, None)``: not damage, just not computed yet.
    """
    try:
        # our own handle: np.load leaves the file open when a damaged one fails to open as a zip
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as stored:
            rows, recorded = stored["rows"], (int(stored["start"]), int(stored["stop"]))
            checksum = str(stored["sha256"])
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, TypeError, EOFError, KeyError, zipfile.BadZipFile) as error:
        return None, f"unreadable ({type(error).__name__}: {error})"
    if recorded != (start, stop):
        return None, f"holds rows {recorded[0]}..{recorded[1]}, not {start}..{stop}"
    if rows.ndim < 1 or rows.shape[0] != stop - start:
        return None, f"holds {rows.shape[0] if rows.ndim else 0} rows, not {stop - start}"
    if _digest(rows) != checksum:
        return None, "its checksum does not match its contents"
    return rows, None


def _layout(array: np.ndarray) -> tuple[list[int], str]:
    return list(array.shape[1:]), array.dtype.str


def _first_chunk_layout(directory: Path, meta: dict) -> tuple[list[int], str] | None:
    """Row shape and dtype of the first chunk file that verifies, if any."""
    chunk_size, n_items = meta["chunk_size"], meta["n_items"]
    for path in sorted(directory.glob("chunk_[0-9]*.npz")):
        index = int(path.stem.removeprefix("chunk_"))
        rows, _ = read_chunk(path, index * chunk_size, min(n_items, (index + 1) * chunk_size))
        if rows is not None:
            return _layout(rows)
    return None


# --------------------------------------------------------------------------- selected chunks


class ChunksSelected(Exception):
    """Raised by :func:`compute_chunked` inside :func:`only_chunks` once its chunks are done; the
    ``with`` block swallows it, so the caller's remaining work (which needs every row) is skipped."""


@dataclass
class ChunkSelection:
    """What :func:`compute_chunked` did inside :func:`only_chunks`: the entry it opened and which of
    the selected chunks it computed (the others were already cached and verified)."""

    indices: frozenset[int]
    directory: Path | None = None
    n_items: int = 0
    chunk_size: int = 0
    computed: list[int] = field(default_factory=list)
    loaded: list[int] = field(default_factory=list)


_SELECTION: ContextVar[ChunkSelection | None] = ContextVar("vlbias_chunk_selection", default=None)


@contextmanager
def only_chunks(indices: Iterable[int]) -> Iterator[ChunkSelection]:
    """Within the block, the first :func:`compute_chunked` call fills only chunks ``indices`` of its
    entry, through the very key and ``compute_fn`` its caller built, then ends the block.

    For workers that each take some chunks of an entry (``python -m vlbias precompute``): they call
    the same function a notebook calls (``embed_images``, ...) and write the same files. An empty
    selection opens the entry and computes nothing (to learn its folder and size).
    """
    selection = ChunkSelection(frozenset(int(i) for i in indices))
    token = _SELECTION.set(selection)
    try:
        yield selection
    except ChunksSelected:
        pass
    finally:
        _SELECTION.reset(token)


# --------------------------------------------------------------------------- entries


def _open_entry(directory: Path, key_parts: dict, n_items: int, chunk_size: int) -> dict:
    """The entry's meta; the entry is started afresh when its meta is absent, unreadable, for
    other sizes, or disagrees with the chunks it describes."""
    # as meta.json gives the key back (a tuple comes back a list): compared raw, a key built with a tuple
    # would look foreign to its own entry and be recomputed on every call
    wanted = json.loads(json.dumps({"format": CACHE_FORMAT, "key_parts": key_parts, "n_items": n_items,
                                    "chunk_size": chunk_size}))
    meta = _read_meta(directory)
    if _entry_state(directory, meta, wanted)[0] == "ok":  # no lock needed to read a finished entry
        return meta
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory / ".lock"):
        meta = _read_meta(directory)  # another process may have set it up meanwhile
        state, problem = _entry_state(directory, meta, wanted)
        if state == "ok":
            return meta
        if state == "unconfirmed":  # no chunk left to confirm the recorded layout: learn it anew
            meta.update(dim=None, dtype=None)
        else:
            for path in directory.glob("chunk_*.npz"):  # chunks of another shape must not be mixed in
                path.unlink(missing_ok=True)
            meta = dict(wanted, dim=None, dtype=None)
        _save_meta(directory, meta)
    if problem:
        warnings.warn(problem, CacheWarning, stacklevel=3)
    return meta


def _entry_state(directory: Path, meta: dict | None, wanted: dict) -> tuple[str, str | None]:
    """("ok" | "unconfirmed" | "invalid", what is wrong) for an entry's meta and chunks."""
    if meta is None or any(meta.get(name) != value for name, value in wanted.items()):
        return "invalid", None  # new, or made for other sizes: nothing to warn about
    if meta.get("dim") is None:
        return "ok", None
    layout = _first_chunk_layout(directory, meta)
    if layout is None:
        return "unconfirmed", None
    if layout != (meta["dim"], meta["dtype"]):
        return "invalid", (f"{directory / META_FILE} says rows of shape {meta['dim']} and dtype {meta['dtype']}, "
                           f"but its chunks hold {layout[0]} and {layout[1]}: the entry is recomputed.")
    return "ok", None


def _record_layout(directory: Path, meta: dict, chunk: np.ndarray) -> None:
    """Write the row shape and dtype into meta.json once the first chunk exists."""
    with _locked(directory / ".lock"):
        current = _read_meta(directory) or meta
        if current.get("dim") is None:
            current.update(zip(("dim", "dtype"), _layout(chunk)))
            _save_meta(directory, current)
    meta.update(dim=current["dim"], dtype=current["dtype"])


def compute_chunked(key_parts: dict[str, Any], n_items: int, compute_fn: Callable[[int, int], np.ndarray],
                    chunk_size: int = 1024, progress: bool = True, cache: bool = True,
                    kind: str = "embeddings", desc: str | None = None) -> np.ndarray:
    """Rows ``0..n_items`` of ``compute_fn(start, stop)``, computed chunk by chunk and cached.

    Finished chunks are loaded; only missing (or damaged) ones are computed, so a run killed
    midway resumes where it stopped, and processes sharing a cache share the work. ``key_parts``
    must name everything the result depends on (build it with :func:`cache_key`).
    ``cache=False`` computes everything and writes nothing.
    """
    if n_items < 0 or chunk_size < 1:
        raise ValueError("n_items must be >= 0 and chunk_size >= 1")
    if n_items == 0:
        return np.asarray(compute_fn(0, 0))
    n_chunks = -(-n_items // chunk_size)
    selection = _SELECTION.get()
    directory, meta = None, {}
    if cache or selection is not None:
        with explained_write_errors(None):
            directory = entry_dir(key_parts, kind)
            meta = _open_entry(directory, key_parts, n_items, chunk_size)
    if selection is not None:
        return _compute_selected(selection, directory, meta, n_items, chunk_size, compute_fn)

    result = None
    bar = tqdm(total=n_chunks, desc=desc or f"{kind} chunks", unit="chunk", disable=not progress, leave=False)
    pending, wait = list(range(n_chunks)), False
    try:
        while pending:
            busy = []  # chunks another process is computing: read them once it is done
            for index in pending:
                start, stop = index * chunk_size, min(n_items, (index + 1) * chunk_size)
                if cache:
                    chunk = _cached_chunk(directory, index, start, stop, meta, compute_fn, wait, n_chunks - index)
                else:
                    chunk = _checked(compute_fn(start, stop), start, stop, meta, None)
                if chunk is None:
                    busy.append(index)
                    continue
                if result is None:  # allocate once: concatenating 86k x 768 twice would double memory
                    result = np.empty((n_items,) + chunk.shape[1:], dtype=chunk.dtype)
                result[start:stop] = chunk
                bar.update(1)
            pending, wait = busy, True
    finally:
        bar.close()
    return result


def _compute_selected(selection: ChunkSelection, directory: Path, meta: dict, n_items: int, chunk_size: int,
                      compute_fn: Callable[[int, int], np.ndarray]) -> None:
    """The selected chunks of one entry, cached like any other (see :func:`only_chunks`)."""
    n_chunks = -(-n_items // chunk_size)
    selection.directory, selection.n_items, selection.chunk_size = directory, n_items, chunk_size
    calls: list[int] = []  # the chunks compute_fn ran for (the others were read)

    def counted(begin: int, end: int) -> np.ndarray:
        calls.append(begin // chunk_size)
        return compute_fn(begin, end)

    for index in sorted(i for i in selection.indices if 0 <= i < n_chunks):
        start, stop = index * chunk_size, min(n_items, (index + 1) * chunk_size)
        _cached_chunk(directory, index, start, stop, meta, counted, True, n_chunks - index)
        (selection.computed if index in calls else selection.loaded).append(index)
    raise ChunksSelected


def _cached_chunk(directory: Path, index: int, start: int, stop: int, meta: dict,
                  compute_fn: Callable[[int, int], np.ndarray], wait: bool, remaining: int) -> np.ndarray | None:
    """Chunk ``index`` from its file, else computed and saved; None when another process is
    computing it and ``wait`` is false. ``remaining`` chunks (this one included) are still to come."""
    path = chunk_path(directory, index)
    chunk = _verified(path, start, stop, meta)
    if chunk is None:
        lock = _acquire(path.with_suffix(".lock"), wait)
        if lock is None:
            return None
        try:
            chunk, _ = read_chunk(path, start, stop)  # finished by another process while we waited?
            if chunk is None or not _fits(chunk, meta):
                chunk = _checked(compute_fn(start, stop), start, stop, meta, directory)
                payload = chunk_bytes(chunk, start, stop)
                with explained_write_errors(path, len(payload) * remaining):
                    remove_stale_temporaries(path)  # a killed writer's; this chunk's lock is ours
                    write_atomically(path, payload)
            path.with_suffix(".lock").unlink(missing_ok=True)  # waiters re-read the chunk first: safe
        finally:
            lock.release()
    if meta.get("dim") is None:
        with explained_write_errors(directory / META_FILE):
            _record_layout(directory, meta, chunk)
    return chunk


def _fits(chunk: np.ndarray, meta: dict) -> bool:
    return meta.get("dim") is None or _layout(chunk) == (meta["dim"], meta["dtype"])


def _verified(path: Path, start: int, stop: int, meta: dict) -> np.ndarray | None:
    """The chunk at ``path`` if it verifies and has the entry's layout; warns about damage."""
    chunk, problem = read_chunk(path, start, stop)
    if chunk is not None and not _fits(chunk, meta):
        chunk, problem = None, (f"holds {chunk.dtype} rows of shape {list(chunk.shape[1:])}, "
                                f"the entry {meta['dtype']} {meta['dim']}")
    if problem:
        warnings.warn(f"{path}: {problem}; recomputing rows {start}..{stop}.", CacheWarning, stacklevel=5)
    return chunk


def _checked(chunk, start: int, stop: int, meta: dict, directory: Path | None) -> np.ndarray:
    chunk = np.ascontiguousarray(chunk)
    if chunk.dtype == object:
        raise TypeError("compute_fn must return a numeric array, not objects")
    if chunk.ndim < 1 or chunk.shape[0] != stop - start:
        raise ValueError(f"compute_fn({start}, {stop}) returned shape {chunk.shape}, expected {stop - start} rows")
    if not _fits(chunk, meta):
        raise ValueError(f"compute_fn({start}, {stop}) returned {chunk.dtype}{chunk.shape}, but the cache entry "
                         f"{directory} holds {meta['dtype']} rows of shape {meta['dim']}: its key does not name "
                         "everything the result depends on. Bump the version in the key, or delete that folder.")
    return chunk


def clear(key_parts: dict[str, Any], kind: str = "embeddings") -> None:
    """Remove one entry (e.g. after changing a backend without changing its spec)."""
    shutil.rmtree(entry_dir(key_parts, kind), ignore_errors=True)
