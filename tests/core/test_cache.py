"""The chunked embedding cache: correct, resumable, distrustful of damaged files, pickle-free."""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock, Timeout
from PIL import Image

from vlbias import cache
from vlbias.cache import CacheLockTimeout, compute_chunked, entry_dir, key_hash, lock_wait
from vlbias.data import load_dataset
from vlbias.embeddings import embed_images, embed_texts
from vlbias.models.base import ImageTextModel


@pytest.fixture(autouse=True, scope="module")
def own_progress_bar_lock():
    """This process's own tqdm write lock. tqdm's lock holds a semaphore shared with every process
    forked after it was made, and a bar whose display raised keeps it (tqdm's ``refresh`` releases
    it only on success): every bar in a process forked later would then hang, as mutmut's next
    mutants did (``make mutation`` forks one process per mutant from the one that ran the tests)."""
    from tqdm import tqdm
    from tqdm.std import TqdmDefaultWriteLock

    TqdmDefaultWriteLock.mp_lock = multiprocessing.RLock()
    tqdm.set_lock(TqdmDefaultWriteLock())


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test starts from an empty cache; a lock nobody releases fails the test within seconds."""
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", "5")
    return tmp_path / "cache"


class FakeModel(ImageTextModel):
    """Deterministic stand-in for a dual encoder: pixel statistics and text hashes, L2-normalised."""

    kind = "dual"

    def __init__(self, spec="fake:pixels", preprocess_id="fake-64px"):
        self.spec, self.preprocess_id = spec, preprocess_id
        self.images_seen = 0
        self.texts_seen = 0

    def encode_images(self, images, batch_size=32, progress=True):
        rows = []
        for image in images:
            self.images_seen += 1
            pixels = np.asarray(image.convert("RGB"), dtype=np.float64) / 255.0
            rows.append(np.concatenate([pixels.mean(axis=(0, 1)), pixels.std(axis=(0, 1)),
                                        [pixels.shape[0] / 100, pixels.shape[1] / 100]]))
        return _normalised(np.array(rows).reshape(len(rows), 8))

    def encode_texts(self, texts, batch_size=256, progress=True):
        self.texts_seen += len(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) + 1.0 for t in texts]
        return _normalised(np.array(rows).reshape(len(rows), 8))

    def score(self, images, texts, batch_size=32, progress=True):
        return self.encode_images(images) @ self.encode_texts(texts).T

    def score_candidates(self, images, candidates, batch_size=32, progress=True):
        raise NotImplementedError


def _normalised(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _table(n: int, dim: int = 5) -> np.ndarray:
    return np.arange(n * dim, dtype=np.float32).reshape(n, dim) * 0.5


class Counting:
    """compute_fn recording which chunks it computed; optionally dies after ``fail_after`` chunks."""

    def __init__(self, data: np.ndarray, fail_after: int | None = None):
        self.data, self.fail_after, self.calls = data, fail_after, []

    def __call__(self, start, stop):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("simulated kill")
        self.calls.append((start, stop))
        return self.data[start:stop]


KEY = {"what": "test", "model": "fake", "data": "table"}


def test_results_equal_direct_computation_and_second_run_is_free():
    data = _table(23)
    first = Counting(data)
    result = compute_chunked(KEY, 23, first, chunk_size=5, progress=False)
    np.testing.assert_array_equal(result, data)
    assert first.calls == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    second = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 23, second, chunk_size=5, progress=False), data)
    assert second.calls == []
    meta = json.loads((entry_dir(KEY) / "meta.json").read_text())
    assert meta["key_parts"] == KEY and meta["n_items"] == 23 and meta["chunk_size"] == 5
    assert meta == {"format": cache.CACHE_FORMAT, "key_parts": KEY, "n_items": 23, "chunk_size": 5, "dim": [5],
                    "dtype": np.dtype(np.float32).str}


def test_killed_run_resumes_with_only_the_missing_chunks():
    data = _table(40)
    dying = Counting(data, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        compute_chunked(KEY, 40, dying, chunk_size=8, progress=False)
    assert dying.calls == [(0, 8), (8, 16), (16, 24)]
    assert not list(entry_dir(KEY).glob("*.tmp")), "no half-written files left behind"
    rerun = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 40, rerun, chunk_size=8, progress=False), data)
    assert rerun.calls == [(24, 32), (32, 40)]


def _rows(path):
    with np.load(path, allow_pickle=False) as stored:
        return stored["rows"]


def _flip_bytes(path, offset, count=64):
    """Invert ``count`` bytes of ``path`` at ``offset`` (negative: from the end), in place."""
    raw = bytearray(path.read_bytes())
    start = offset % len(raw)
    raw[start:start + count] = bytes(b ^ 0xFF for b in raw[start:start + count])
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage, reason", [
    ("truncate", r"unreadable \(BadZipFile: "),
    ("garbage", r"unreadable \(ValueError: This file contains pickled"),  # numpy refuses to unpickle it
    ("empty", r"unreadable \(EOFError: "),
    ("pickled-object", r"unreadable \(ValueError: Object arrays cannot be loaded when allow_pickle=False\)"),
    ("wrong-rows", r"unreadable \(KeyError: 'start "),
    ("flipped-bytes", r"unreadable \(BadZipFile: Bad CRC-32"),
    ("chunk-0-copied-over", r"holds rows 0\.\.10, not 10\.\.20"),
    ("rows-rewritten", r"its checksum does not match its contents"),
    ("too-few-rows", r"holds 3 rows, not 10"),
    ("scalar-rows", r"holds 0 rows, not 10"),
    ("other-dtype", r"holds float64 rows of shape \[5\], the entry <f4 \[5\]"),
    ("other-shape", r"holds float32 rows of shape \[5, 1\], the entry <f4 \[5\]"),
])
def test_damaged_chunk_is_recomputed_with_a_warning_naming_it(damage, reason):
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    victim = entry_dir(KEY) / "chunk_000001.npz"
    if damage == "truncate":  # as if written in place and killed midway
        victim.write_bytes(victim.read_bytes()[:-17])
    elif damage == "garbage":
        victim.write_bytes(b"not an npz file at all")
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "pickled-object":  # must never be unpickled
        np.savez(victim, rows=np.array([{"x": 1}] * 10, dtype=object), allow_pickle=True)
    elif damage == "wrong-rows":
        np.savez(victim, rows=data[:3])
    elif damage == "flipped-bytes":  # bit rot inside the stored rows
        rows_at = victim.read_bytes().index(data[10:20].tobytes())
        _flip_bytes(victim, rows_at + 16)
    elif damage == "chunk-0-copied-over":  # a whole, valid chunk in the wrong place
        victim.write_bytes((entry_dir(KEY) / "chunk_000000.npz").read_bytes())
    elif damage == "rows-rewritten":  # a valid file whose rows no longer match their checksum
        with np.load(victim) as stored:
            parts = dict(stored)
        np.savez(victim, **dict(parts, rows=parts["rows"] + 1))
    elif damage in ("too-few-rows", "scalar-rows"):  # a whole file, for rows 10..20, checksum right
        few = data[10:13] if damage == "too-few-rows" else np.float32(7)
        victim.write_bytes(cache.chunk_bytes(few, 10, 20))
    elif damage in ("other-dtype", "other-shape"):  # whole and checked, but not the entry's row layout
        other = data[10:20].astype(np.float64) if damage == "other-dtype" else data[10:20, :, None]
        victim.write_bytes(cache.chunk_bytes(other, 10, 20))
    rerun = Counting(data)
    with pytest.warns(cache.CacheWarning, match=f"chunk_000001.npz: {reason}.*; recomputing rows 10..20.$") as caught:
        result = compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], "a damaged file is closed too"
    np.testing.assert_array_equal(result, data)
    assert rerun.calls == [(10, 20)]
    np.testing.assert_array_equal(_rows(victim), data[10:20])


def test_every_chunk_damaged_still_warns_about_each_one():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    for chunk in entry_dir(KEY).glob("chunk_*.npz"):  # none left to confirm the row layout meta.json records
        chunk.write_bytes(b"")
    rerun = Counting(data)
    with pytest.warns(cache.CacheWarning) as caught:
        np.testing.assert_array_equal(compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False), data)
    assert sorted(str(w.message).split(": ")[0].rsplit("/", 1)[1] for w in caught) == \
        ["chunk_000000.npz", "chunk_000001.npz", "chunk_000002.npz"]
    assert len(rerun.calls) == 3


def test_a_run_killed_before_recording_the_row_layout_keeps_its_chunk():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    meta_file = entry_dir(KEY) / "meta.json"  # as left by a kill between chunk 0's rename and the meta update
    meta_file.write_text(json.dumps(dict(json.loads(meta_file.read_text()), dim=None, dtype=None)))
    (entry_dir(KEY) / "chunk_000002.npz").unlink()
    rerun = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False), data)
    assert rerun.calls == [(20, 30)]
    assert json.loads(meta_file.read_text())["dim"] == [5]


def test_mismatched_meta_recomputes_cleanly():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    fewer = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 25, fewer, chunk_size=10, progress=False), data[:25])
    assert fewer.calls == [(0, 10), (10, 20), (20, 25)]
    assert sorted(p.name for p in entry_dir(KEY).glob("chunk_*")) == [f"chunk_00000{i}.npz" for i in range(3)]
    resized = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 25, resized, chunk_size=7, progress=False), data[:25])
    assert len(resized.calls) == 4
    (entry_dir(KEY) / "meta.json").write_text("{broken")
    again = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 25, again, chunk_size=7, progress=False), data[:25])
    assert len(again.calls) == 4


def test_keys_directories_and_no_pickles(own_cache):
    data = _table(12)
    other = dict(KEY, model="other")
    compute_chunked(KEY, 12, Counting(data), chunk_size=5, progress=False)
    compute_chunked(other, 12, Counting(data * 2), chunk_size=5, progress=False)
    assert entry_dir(KEY) != entry_dir(other)
    assert key_hash({"b": 1, "a": [1, 2]}) == key_hash({"a": [1, 2], "b": 1})
    assert key_hash({"a": [1, 2]}) != key_hash({"a": [2, 1]})
    # the folder names of existing caches: sha256 of sorted, unspaced, unescaped JSON
    assert key_hash({"z": "café", "a": [1, {"y": None, "x": 2}]}) == hashlib.sha256(
        '{"a":[1,{"x":2,"y":null}],"z":"café"}'.encode()).hexdigest()
    np.testing.assert_array_equal(compute_chunked(other, 12, Counting(data), chunk_size=5, progress=False), data * 2)
    files = [p for p in own_cache.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix in {".pkl", ".pickle", ".tmp"}]
    chunks = [p for p in files if p.suffix == ".npz"]
    assert len(chunks) == 6
    for chunk in chunks:
        assert _rows(chunk).dtype == np.float32
        assert chunk.stat().st_mode & 0o777 == cache.FILE_MODE, "readable by whoever shares the cache"
    assert {p.name for p in files} - {c.name for c in chunks} == {"meta.json", ".lock"}


def test_cache_files_get_the_mode_open_gives_a_new_file(own_cache, tmp_path):
    compute_chunked(KEY, 12, Counting(_table(12)), chunk_size=5, progress=False)
    with open(tmp_path / "plain", "w"):
        pass
    plain_mode = (tmp_path / "plain").stat().st_mode & 0o777
    for path in [*entry_dir(KEY).glob("chunk_*.npz"), entry_dir(KEY) / "meta.json"]:
        assert path.stat().st_mode & 0o777 == plain_mode
    previous = os.umask(0o027)                   # reading the umask must leave it as it was
    try:
        assert cache._umask() == 0o027 and os.umask(0o027) == 0o027
    finally:
        os.umask(previous)


def test_files_are_written_under_a_hidden_temporary_name_in_their_own_folder(monkeypatch):
    renamed, real_replace = [], os.replace

    def recording(source, target):
        renamed.append((Path(source), Path(target)))
        real_replace(source, target)

    monkeypatch.setattr(cache.os, "replace", recording)
    compute_chunked(KEY, 12, Counting(_table(12)), chunk_size=5, progress=False)
    assert sorted(target.name for _, target in renamed) == ["chunk_000000.npz", "chunk_000001.npz",
                                                             "chunk_000002.npz", "meta.json", "meta.json"]
    for source, target in renamed:  # one folder: the rename is atomic (no copy across file systems)
        assert source.parent == target.parent == entry_dir(KEY)
        assert source.name.startswith(f".{target.name}.") and source.name.endswith(".tmp"), source.name


def test_cache_false_writes_nothing(own_cache):
    data = _table(9)
    counting = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 9, counting, chunk_size=4, progress=False, cache=False), data)
    assert len(counting.calls) == 3
    assert not entry_dir(KEY).exists()


def test_bad_compute_output_is_refused():
    with pytest.raises(ValueError, match="rows"):
        compute_chunked(KEY, 10, lambda start, stop: _table(3), chunk_size=5, progress=False)


def test_embed_images_matches_direct_encoding_and_is_cached():
    dataset = load_dataset("fairface", root="fixture")
    model = FakeModel()
    expected = model.encode_images(list(dataset.images()))
    model.images_seen = 0
    embeddings = embed_images(model, dataset, chunk_size=64, progress=False)
    np.testing.assert_allclose(embeddings, expected, rtol=0, atol=0)
    assert embeddings.dtype == np.float32 and model.images_seen == len(dataset)
    assert embed_images(model, dataset, chunk_size=64, progress=False).tobytes() == embeddings.tobytes()
    assert model.images_seen == len(dataset), "second call must come from the cache"
    # The same images under another preprocessing, or another model, are computed again.
    for other in (FakeModel(preprocess_id="fake-other"), FakeModel(spec="fake:other-model")):
        embed_images(other, dataset, chunk_size=64, progress=False)
        assert other.images_seen == len(dataset)
    # A subset has its own identity (and is not confused with the full set).
    subset = dataset.images(np.arange(10, 30))
    np.testing.assert_array_equal(embed_images(model, subset, chunk_size=64, progress=False), expected[10:30])
    # The planted signal: the fake "model" separates races in the fixture by colour.
    races = dataset.records["race"].to_numpy()
    means = {race: embeddings[races == race].mean(axis=0) for race in set(races)}
    assert len({tuple(np.round(m, 3)) for m in means.values()}) == 7


def test_embed_raw_images_hashes_their_pixels():
    model = FakeModel()
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)) for _ in range(6)]
    first = embed_images(model, images, chunk_size=4, progress=False)
    np.testing.assert_array_equal(first, model.encode_images(images))
    seen = model.images_seen
    embed_images(model, images, chunk_size=4, progress=False)
    assert model.images_seen == seen
    changed = [image.copy() for image in images]
    changed[5].putpixel((0, 0), (0, 0, 0) if changed[5].getpixel((0, 0)) != (0, 0, 0) else (1, 1, 1))
    np.testing.assert_array_equal(embed_images(model, changed, chunk_size=4, progress=False),
                                  model.encode_images(changed))
    assert model.images_seen > seen + 6


def test_embed_texts_matches_direct_encoding_and_is_cached():
    model = FakeModel()
    texts = [f"a photo of a {color} car" for color in ["red", "green", "blue", "yellow", "pink"]] * 3
    expected = model.encode_texts(texts)
    model.texts_seen = 0
    np.testing.assert_array_equal(embed_texts(model, texts, chunk_size=4, progress=False), expected)
    assert model.texts_seen == len(texts)
    embed_texts(model, texts, chunk_size=4, progress=False)
    assert model.texts_seen == len(texts)
    embed_texts(model, texts[:-1] + ["a photo of a gray car"], chunk_size=4, progress=False)
    assert model.texts_seen == 2 * len(texts)
    entries = [p for p in (cache.cache_dir() / "embeddings").iterdir()]
    assert len(entries) == 2


def test_pairwise_models_have_no_embeddings():
    model = FakeModel()
    model.kind = "pairwise"
    with pytest.raises(TypeError, match="score"):
        embed_texts(model, ["a"], progress=False)


def test_meta_that_disagrees_with_its_chunks_invalidates_the_entry():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    meta_file = entry_dir(KEY) / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta_file.write_text(json.dumps(dict(meta, dim=[7])))
    rerun = Counting(data)
    with pytest.warns(cache.CacheWarning, match=f"{meta_file}.*recomputed"):
        result = compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False)
    np.testing.assert_array_equal(result, data)
    assert len(rerun.calls) == 3
    assert json.loads(meta_file.read_text())["dim"] == [5]
    # a wrong layout with no chunks left to contradict it is simply corrected
    for chunk in entry_dir(KEY).glob("chunk_*"):
        chunk.unlink()
    meta_file.write_text(json.dumps(dict(meta, dim=[7], dtype="<f8")))
    np.testing.assert_array_equal(compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False), data)


def test_meta_is_checked_against_whichever_chunk_is_left():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    for index in (0, 2):                        # only chunk 1 (rows 10..20) is left to contradict meta
        (entry_dir(KEY) / f"chunk_00000{index}.npz").unlink()
    meta_file = entry_dir(KEY) / "meta.json"
    meta_file.write_text(json.dumps(dict(json.loads(meta_file.read_text()), dim=[7])))
    rerun = Counting(data)
    with pytest.warns(cache.CacheWarning, match=r"says rows of shape \[7\] .* but its chunks hold \[5\] and <f4"):
        np.testing.assert_array_equal(compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False), data)
    assert len(rerun.calls) == 3                # the entry is started afresh: chunk 1 too


def test_compute_fn_that_changes_layout_under_one_key_names_the_entry():
    compute_chunked(KEY, 20, Counting(_table(20)), chunk_size=10, progress=False)
    (entry_dir(KEY) / "chunk_000001.npz").unlink()
    with pytest.raises(ValueError, match=f"{entry_dir(KEY)}.*Bump the version in the key, or delete that folder.$"):
        compute_chunked(KEY, 20, Counting(_table(20, dim=6)), chunk_size=10, progress=False)


# --------------------------------------------------------------------------- processes


def _fill_entries(n_entries, start_together, calls):
    """Create ``n_entries`` fresh entries of 4 chunks; count the chunks this process computed."""
    start_together.wait()
    computed = 0

    def compute(start, stop):
        nonlocal computed
        computed += 1
        time.sleep(0.002)  # long enough for the two processes to meet on one chunk
        return _table(40)[start:stop] * (entry + 1)

    for entry in range(n_entries):
        result = compute_chunked(dict(KEY, entry=entry), 40, compute, chunk_size=10, progress=False)
        np.testing.assert_array_equal(result, _table(40) * (entry + 1))
    calls.put(computed)


def test_two_processes_filling_the_same_entries_share_the_work(hang_guard):
    context = multiprocessing.get_context("fork")
    start_together, calls = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_fill_entries, args=(30, start_together, calls)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        hang_guard.join(worker, 2.0, "a process filling the shared cache entries")
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert calls.get(timeout=5) + calls.get(timeout=5) == 30 * 4, "each chunk computed exactly once"
    for entry in range(30):
        again = Counting(_table(40) * (entry + 1))
        np.testing.assert_array_equal(compute_chunked(dict(KEY, entry=entry), 40, again, chunk_size=10,
                                                      progress=False), _table(40) * (entry + 1))
        assert again.calls == []


def _killed_run(kill_at, chunk_index):
    """Compute an entry and SIGKILL this process at ``kill_at`` of chunk ``chunk_index``."""
    def compute(start, stop):
        if kill_at == "compute" and start == chunk_index * 8:
            os.kill(os.getpid(), signal.SIGKILL)
        return _table(40)[start:stop]

    real_replace = os.replace

    def replace(source, target):
        if kill_at == "rename" and Path(target).name.startswith(f"chunk_{chunk_index:06d}."):
            os.kill(os.getpid(), signal.SIGKILL)  # the temporary file is whole, not yet in place
        real_replace(source, target)

    os.replace = replace
    compute_chunked(KEY, 40, compute, chunk_size=8, progress=False)


@pytest.mark.parametrize("kill_at, chunk_index", [("compute", 0), ("compute", 3), ("rename", 0), ("rename", 2)])
def test_sigkill_at_any_point_resumes_with_only_the_missing_chunks(kill_at, chunk_index, hang_guard):
    child = multiprocessing.get_context("fork").Process(target=_killed_run, args=(kill_at, chunk_index))
    child.start()
    hang_guard.join(child, 1.0, f"a cache process killed at {kill_at}")
    assert child.exitcode == -signal.SIGKILL
    stale = list(entry_dir(KEY).glob(".*.tmp"))
    assert len(stale) == (kill_at == "rename"), stale  # the killed writer's whole temporary, never renamed
    rerun = Counting(_table(40))
    np.testing.assert_array_equal(compute_chunked(KEY, 40, rerun, chunk_size=8, progress=False), _table(40))
    assert rerun.calls == [(i * 8, i * 8 + 8) for i in range(chunk_index, 5)]
    assert not list(entry_dir(KEY).glob(".*.tmp"))  # the rerun removed it, under that chunk's lock


def test_only_the_temporaries_of_the_file_being_written_are_removed(tmp_path):
    target = tmp_path / "chunk_000000.npz"
    names = [".chunk_000000.npz.a1b2.tmp", ".chunk_000000.npz.zz.tmp", ".chunk_000001.npz.a1b2.tmp",
             "chunk_000000.npz", ".meta.json.q.tmp", "chunk_000000.npz.tmp"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = cache.remove_stale_temporaries(target)
    assert sorted(path.name for path in removed) == [".chunk_000000.npz.a1b2.tmp", ".chunk_000000.npz.zz.tmp"]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(names[2:])
    assert cache.remove_stale_temporaries(tmp_path / "absent.npz") == []


# --------------------------------------------------------------------------- errors a user can act on


def test_full_disk_says_so_with_the_path_and_the_size_needed(monkeypatch):
    real_fsync, written = os.fsync, []

    def fills_up_after_three_files(descriptor):
        if len(written) == 3:  # meta.json, chunk 0 and meta.json with its row shape fit; chunk 1 does not
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(descriptor)
        real_fsync(descriptor)

    monkeypatch.setattr(cache.os, "fsync", fills_up_after_three_files)
    data = _table(3000, dim=100)  # chunks of 1000 rows x 100 float32: about 391 KiB each
    with pytest.raises(OSError, match=r"No space left on device while writing .*chunk_000001.npz; it needs about "
                                      r"78\d KiB more.*VLBIAS_CACHE_DIR") as caught:
        compute_chunked(KEY, 3000, Counting(data), chunk_size=1000, progress=False)
    assert caught.value.errno == errno.ENOSPC
    assert not list(entry_dir(KEY).glob("*.tmp"))
    monkeypatch.setattr(cache.os, "fsync", real_fsync)
    resumed = Counting(data)  # space freed: the run resumes after the chunk that was written
    np.testing.assert_array_equal(compute_chunked(KEY, 3000, resumed, chunk_size=1000, progress=False), data)
    assert resumed.calls == [(1000, 2000), (2000, 3000)]


@pytest.mark.parametrize("needed, said", [(100, "1 KiB"), (1536, "2 KiB"), (2**20 - 1, "1024 KiB"),
                                           (2**20, "1.0 MiB"), (3 * 2**19, "1.5 MiB"), (5 * 2**30, "5,120.0 MiB")])
def test_a_full_disk_names_the_space_needed_in_kib_or_mib(tmp_path, needed, said):
    with pytest.raises(OSError, match=f"No space left on device while writing {tmp_path}; it needs about {said} more"):
        with cache.explained_write_errors(tmp_path, needed):
            raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_while_recording_the_row_layout_names_meta_json(monkeypatch):
    real_fsync, written = os.fsync, []

    def fills_up_after_two_files(descriptor):
        if len(written) == 2:  # meta.json and chunk 0 fit; meta.json with its row shape does not
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(descriptor)
        real_fsync(descriptor)

    monkeypatch.setattr(cache.os, "fsync", fills_up_after_two_files)
    with pytest.raises(OSError, match=f"No space left on device while writing {entry_dir(KEY) / 'meta.json'}. Free"):
        compute_chunked(KEY, 30, Counting(_table(30)), chunk_size=10, progress=False)


def test_numpy_short_write_is_reported_as_a_full_disk(monkeypatch):
    def short_write(path, payload):
        raise OSError("16384 requested and 6112 written")

    monkeypatch.setattr(cache, "write_atomically", short_write)
    with pytest.raises(OSError, match="No space left on device while writing"):
        compute_chunked(KEY, 30, Counting(_table(30)), chunk_size=10, progress=False)


def test_read_only_cache_names_the_variable_that_moves_it(monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(cache.tempfile, "mkstemp", read_only)
    with pytest.raises(PermissionError, match="read-only. Set VLBIAS_CACHE_DIR to a writable folder, or pass cache="):
        compute_chunked(KEY, 30, Counting(_table(30)), chunk_size=10, progress=False)


def test_a_finished_entry_is_read_without_writing(monkeypatch):
    compute_chunked(KEY, 30, Counting(_table(30)), chunk_size=10, progress=False)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(cache.tempfile, "mkstemp", read_only)
    monkeypatch.setattr(cache, "FileLock", read_only)
    np.testing.assert_array_equal(compute_chunked(KEY, 30, Counting(_table(30)), chunk_size=10, progress=False),
                                  _table(30))


# --------------------------------------------------------------------------- keys


def test_cache_key_names_weights_dtype_preprocessing_data_and_code_version(monkeypatch):
    model = FakeModel()
    key = cache.cache_key("image-embeddings", 3, model, images="fixture@abc")
    assert key == {"what": "image-embeddings", "version": 3, "images": "fixture@abc",
                   "model": {"weights": "fake:pixels", "dtype": None, "kind": "dual", "preprocess": "fake-64px"}}
    half = FakeModel()
    half.dtype = "torch.float16"
    assert cache.cache_key("image-embeddings", 3, half, images="fixture@abc")["model"]["dtype"] == "float16"
    variants = [cache.cache_key("image-embeddings", 4, model, images="fixture@abc"),
                cache.cache_key("image-embeddings", 3, model, images="fixture@abd"),
                cache.cache_key("image-embeddings", 3, FakeModel(preprocess_id="other"), images="fixture@abc"),
                cache.cache_key("image-embeddings", 3, half, images="fixture@abc")]
    assert len({key_hash(k) for k in [key, *variants]}) == 5


def test_language_model_scores_are_not_reused_after_the_tiny_model_is_rebuilt(monkeypatch):
    """harms.cached_scores keys on the weights' identity, a fingerprint of the checkpoint's files: a
    tiny: fixture rebuilt with other weights (its builder at a new version) is scored anew."""
    from safetensors.torch import load_file, save_file

    from vlbias.harms.measures import cached_scores
    from vlbias.models import TINY_BUILDERS, load_language_model, tiny_builder
    from vlbias.models.tiny import TinyBuilder

    texts, candidates = ["The nurse said {slot} left.", "The doctor said {slot} left."], ["she", "he"]
    original = load_language_model("tiny:mlm", device="cpu")
    first = cached_scores(original, "fill_logprobs", texts, candidates, 4, False, True)
    builder = tiny_builder("mlm")

    def build_other_weights(directory):
        builder.build(directory)
        weights = directory / "model.safetensors"
        moved = {name: tensor + 0.5 if tensor.is_floating_point() else tensor
                 for name, tensor in load_file(str(weights)).items()}
        save_file(moved, str(weights), metadata={"format": "pt"})

    monkeypatch.setitem(TINY_BUILDERS, "mlm", TinyBuilder("mlm", "language", builder.version + 1,
                                                          build_other_weights, builder.description))
    rebuilt = load_language_model("tiny:mlm", device="cpu")
    assert rebuilt.spec == original.spec and rebuilt.identity.weights != original.identity.weights
    second = cached_scores(rebuilt, "fill_logprobs", texts, candidates, 4, False, True)
    np.testing.assert_allclose(second, rebuilt.fill_logprobs(texts, candidates, progress=False), rtol=0, atol=1e-12)
    assert not np.allclose(second, first)


def test_an_unwritable_cache_root_names_the_variable_that_moves_it(monkeypatch, tmp_path):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "shared-cache"))

    def denied(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(PermissionError, match=f"Cannot write to {tmp_path / 'shared-cache'}: .*VLBIAS_CACHE_DIR"):
        compute_chunked(KEY, 3, Counting(_table(3)), chunk_size=2, progress=False)


# --------------------------------------------------------------------------- locks

LOCK_KEY = {"what": "lock-test"}


def _lock_rows(start, stop):
    return np.arange(start, stop, dtype=np.float64)[:, None] * np.array([1.0, 3.0])


def _hold(lock_file, held, release, patience):
    """Another process: hold ``lock_file`` until told to let go (or ``patience`` seconds passed)."""
    with FileLock(lock_file):
        held.set()
        release.wait(patience)


@pytest.fixture
def other_process_holding():
    """``hold(path)``: a second process takes the lock at ``path`` and keeps it until released."""
    context, children = multiprocessing.get_context("fork"), []

    def hold(lock_file, patience=30):
        held, release = context.Event(), context.Event()
        child = context.Process(target=_hold, args=(str(lock_file), held, release, patience))
        child.start()
        assert held.wait(30), "the other process never took the lock"
        children.append((child, release))
        return release

    yield hold
    for child, release in children:
        release.set()
        child.join(30)


def test_unset_or_empty_waits_as_long_as_it_takes_and_a_number_is_seconds(monkeypatch):
    monkeypatch.delenv("VLBIAS_CACHE_LOCK_TIMEOUT")
    assert lock_wait() == -1                    # filelock's "forever": what users get by default
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", " ")
    assert lock_wait() == -1
    for text, seconds in (("0", 0.0), ("2.5", 2.5), (" 30 ", 30.0)):
        monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", text)
        assert lock_wait() == seconds


@pytest.mark.parametrize("text", ["soon", "-1", "nan", "inf"])
def test_a_bad_lock_timeout_names_the_variable(monkeypatch, text):
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", text)
    with pytest.raises(ValueError, match=rf"^VLBIAS_CACHE_LOCK_TIMEOUT='{text}': expected a number of seconds >= 0 "
                                         r"\(.*\), or unset it to wait as long as it takes$"):
        compute_chunked(LOCK_KEY, 4, _lock_rows, chunk_size=2, progress=False)


def test_a_chunk_another_process_keeps_locked_times_out_naming_the_lock(monkeypatch, other_process_holding):
    compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False)
    victim = entry_dir(LOCK_KEY) / "chunk_000001.npz"
    victim.unlink()                                        # to be recomputed, but someone holds its lock
    release = other_process_holding(victim.with_suffix(".lock"))
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", "0.3")
    began = time.monotonic()
    with pytest.raises(CacheLockTimeout) as caught:
        compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False)
    assert 0.3 <= time.monotonic() - began < 20
    message = str(caught.value)
    assert isinstance(caught.value, Timeout) and caught.value.lock_file == str(victim.with_suffix(".lock"))
    assert message.startswith(f"Waited 0.3 s (VLBIAS_CACHE_LOCK_TIMEOUT) for the cache lock {victim.with_suffix('.lock')}")
    assert "another process is writing this cache entry" in message
    assert f"the lock is stale: delete {victim.with_suffix('.lock')} and rerun" in message
    assert sorted(p.name for p in entry_dir(LOCK_KEY).glob("*.npz")) == ["chunk_000000.npz", "chunk_000002.npz"]
    release.set()                                          # once it lets go, the chunk is computed
    np.testing.assert_array_equal(compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False), _lock_rows(0, 6))


def test_an_entry_lock_another_process_keeps_times_out_naming_it(monkeypatch, other_process_holding):
    directory = entry_dir(LOCK_KEY)
    directory.mkdir(parents=True)
    other_process_holding(directory / ".lock")
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", "0")
    with pytest.raises(CacheLockTimeout, match=rf"Waited 0 s .* cache lock {directory / '.lock'}: another process"):
        compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False)
    assert not (directory / "meta.json").exists()


def test_the_error_survives_pickling_to_a_worker_and_back():
    error = pickle.loads(pickle.dumps(CacheLockTimeout("/cache/x/.lock", 2.0)))
    assert isinstance(error, CacheLockTimeout) and error.lock_file == "/cache/x/.lock" and error.seconds == 2.0
    assert str(error).startswith("Waited 2 s (VLBIAS_CACHE_LOCK_TIMEOUT) for the cache lock /cache/x/.lock")
    assert cache.LOCK_TIMEOUT_VARIABLE == "VLBIAS_CACHE_LOCK_TIMEOUT"


def test_the_first_pass_takes_the_chunks_nobody_else_is_computing(monkeypatch, other_process_holding):
    monkeypatch.delenv("VLBIAS_CACHE_LOCK_TIMEOUT")      # the default: wait as long as it takes
    directory = entry_dir(LOCK_KEY)
    compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False)
    for chunk in directory.glob("chunk_*.npz"):
        chunk.unlink()
    release = other_process_holding(directory / "chunk_000000.lock", patience=10)
    calls = []

    def compute(start, stop):
        calls.append((start, stop))
        if stop == 6:  # the other process finishes chunk 0 (here: lets go of it) while we do the last one
            release.set()
        return _lock_rows(start, stop)

    np.testing.assert_array_equal(compute_chunked(LOCK_KEY, 6, compute, chunk_size=2, progress=False),
                                  _lock_rows(0, 6))
    assert calls == [(2, 4), (4, 6), (0, 2)]             # chunk 0 only once its lock was free


def _compute_slowly_once_told(go):
    """Another process filling the entry: it takes chunk 0 first, and finishes it only once told."""
    def compute(start, stop):
        if start == 0:
            go.wait(30)
            time.sleep(0.3)  # meanwhile the first process waits for this chunk's lock
        return _lock_rows(start, stop)

    np.testing.assert_array_equal(compute_chunked(LOCK_KEY, 6, compute, chunk_size=2, progress=False),
                                  _lock_rows(0, 6))


def test_a_chunk_another_process_finished_while_we_waited_is_read_not_recomputed():
    context = multiprocessing.get_context("fork")
    go = context.Event()
    other = context.Process(target=_compute_slowly_once_told, args=(go,))
    other.start()
    lock_file = entry_dir(LOCK_KEY) / "chunk_000000.lock"
    for _ in range(3000):  # until it holds chunk 0 (the lock file appears)
        if lock_file.exists():
            break
        time.sleep(0.01)
    calls = []

    def compute(start, stop):
        calls.append((start, stop))
        if stop == 6:
            go.set()
        return _lock_rows(start, stop)

    np.testing.assert_array_equal(compute_chunked(LOCK_KEY, 6, compute, chunk_size=2, progress=False),
                                  _lock_rows(0, 6))
    other.join(30)
    assert other.exitcode == 0
    assert calls == [(2, 4), (4, 6)]  # chunk 0 came from the other process
    assert not lock_file.exists()     # whoever finishes a chunk removes its lock file


def test_a_selected_chunk_another_process_holds_is_waited_for_then_computed(other_process_holding):
    from vlbias.cache import only_chunks

    lock_file = entry_dir(LOCK_KEY) / "chunk_000001.lock"
    lock_file.parent.mkdir(parents=True)
    other_process_holding(lock_file, patience=0.5)  # lets go after half a second, having written nothing
    with only_chunks([1]) as selection:
        compute_chunked(LOCK_KEY, 6, _lock_rows, chunk_size=2, progress=False)
    assert (selection.computed, selection.loaded) == ([1], [])
    rows, problem = cache.read_chunk(entry_dir(LOCK_KEY) / "chunk_000001.npz", 2, 4)
    assert problem is None
    np.testing.assert_array_equal(rows, _lock_rows(2, 4))


def test_a_key_with_a_tuple_is_served_from_the_cache_on_the_second_call():
    """meta.json holds the key as JSON reads it back (a tuple comes back a list); a key built with a
    tuple must still match its own entry, not be recomputed on every call."""
    from vlbias.cache import cache_key

    calls = []

    def compute(start, stop):
        calls.append((start, stop))
        return np.arange(start, stop, dtype=np.float32)[:, None]

    key = cache_key("tuple-key", 1, labels=("A", "B"), sizes=(1, (2, 3)))
    first = compute_chunked(key, 6, compute, chunk_size=4, progress=False)
    again = compute_chunked(cache_key("tuple-key", 1, labels=("A", "B"), sizes=(1, (2, 3))), 6, compute,
                            chunk_size=4, progress=False)
    np.testing.assert_array_equal(first, again)
    assert calls == [(0, 4), (4, 6)]
