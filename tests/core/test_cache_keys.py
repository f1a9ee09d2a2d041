"""The cache through its public API: an entry is never read under another model or chunk size."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from vlbias.cache import compute_chunked
from vlbias.embeddings import embed_images, embed_texts


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", "5")   # a lock nobody releases fails fast


class SeededEncoder:
    """A dual encoder whose "weights" are a random projection drawn from ``weights_seed``."""

    kind = "dual"
    preprocess_id = "seeded-8px"

    def __init__(self, spec: str, weights_seed: int, weights_id: str | None = None):
        self.spec = spec
        if weights_id is not None:
            self.weights_id = weights_id
        self.projection = np.random.default_rng(weights_seed).normal(size=(12, 6))

    def _unit(self, features):
        rows = np.asarray(features, dtype=np.float64).reshape(-1, 12) @ self.projection
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)

    def encode_texts(self, texts, batch_size=256, progress=True):
        return self._unit([[(ord(c) * (i + 1)) % 97 + 1.0 for i, c in enumerate((t * 12)[:12])] for t in texts])

    def encode_images(self, images, batch_size=32, progress=True):
        return self._unit([np.asarray(image.convert("RGB"), dtype=np.float64)[:2, :2].ravel() + 1.0
                           for image in images])


TEXTS = ["a red car", "a blue car", "a photo of a person", "a green kite", "x"]


@pytest.mark.parametrize("first, second", [
    (SeededEncoder("fake:a", 0), SeededEncoder("fake:b", 1)),                    # another spec
    (SeededEncoder("fake:a", 0, "weights-v1"), SeededEncoder("fake:a", 1, "weights-v2")),  # same spec, other weights
])
def test_a_second_model_never_gets_the_first_models_text_embeddings(first, second):
    np.testing.assert_array_equal(embed_texts(first, TEXTS, progress=False), first.encode_texts(TEXTS))
    theirs = embed_texts(second, TEXTS, progress=False)
    np.testing.assert_array_equal(theirs, second.encode_texts(TEXTS))
    assert not np.allclose(theirs, first.encode_texts(TEXTS))


@pytest.mark.parametrize("first, second", [
    (SeededEncoder("fake:a", 0), SeededEncoder("fake:b", 1)),
    (SeededEncoder("fake:a", 0, "weights-v1"), SeededEncoder("fake:a", 1, "weights-v2")),
])
def test_a_second_model_never_gets_the_first_models_image_embeddings(first, second):
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)) for _ in range(5)]
    np.testing.assert_array_equal(embed_images(first, images, dataset_identity="five", progress=False),
                                  first.encode_images(images))
    theirs = embed_images(second, images, dataset_identity="five", progress=False)
    np.testing.assert_array_equal(theirs, second.encode_images(images))
    assert not np.allclose(theirs, first.encode_images(images))


def rows(start, stop):
    return np.arange(start, stop, dtype=np.float64)[:, None] * np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("written, read", [(10, 5), (5, 10), (10, 7)])
def test_reading_an_entry_with_another_chunk_size_returns_the_direct_rows(written, read):
    # 25 rows: written in chunks of 10, the last file holds rows 20-24; read in chunks of 5, the
    # third chunk is rows 10-14, and a file of the right length must not pass for it
    key = {"what": "chunk-size-test"}
    direct = rows(0, 25)
    np.testing.assert_array_equal(compute_chunked(key, 25, rows, chunk_size=written, progress=False), direct)
    np.testing.assert_array_equal(compute_chunked(key, 25, rows, chunk_size=read, progress=False), direct)
    np.testing.assert_array_equal(compute_chunked(key, 25, rows, chunk_size=written, progress=False), direct)



def test_clear_removes_one_entry_and_only_that_one():
    from vlbias.cache import clear

    calls = []

    def counted(start, stop):
        calls.append((start, stop))
        return rows(start, stop)

    first, second = {"what": "clear-test", "n": 1}, {"what": "clear-test", "n": 2}
    for key in (first, second):
        compute_chunked(key, 12, counted, chunk_size=5, progress=False)
    assert len(calls) == 6
    clear(first)
    np.testing.assert_array_equal(compute_chunked(first, 12, counted, chunk_size=5, progress=False), rows(0, 12))
    assert len(calls) == 9                       # the cleared entry is computed afresh
    compute_chunked(second, 12, counted, chunk_size=5, progress=False)
    assert len(calls) == 9                       # the other one is still cached
    clear({"what": "never written"})             # clearing nothing is no error
    compute_chunked(first, 12, counted, chunk_size=5, progress=False, kind="scores")
    clear(first, kind="scores")                  # an entry of another kind is cleared in its own store
    compute_chunked(first, 12, counted, chunk_size=5, progress=False, kind="scores")
    assert len(calls) == 15


def test_a_failed_write_raises_its_own_error_and_leaves_no_partial_files(tmp_path, monkeypatch):
    key = {"what": "failing-disk"}
    real_save = np.savez

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OSError, match="No space left"):
        compute_chunked(key, 12, rows, chunk_size=5, progress=False)
    leftovers = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.name != "meta.json" and not p.name.endswith(".lock")]
    assert leftovers == []                       # no temporary or half-written chunk stays behind
    monkeypatch.setattr(np, "savez", real_save)
    np.testing.assert_array_equal(compute_chunked(key, 12, rows, chunk_size=5, progress=False), rows(0, 12))


def test_bad_arguments_and_the_empty_case():
    with pytest.raises(ValueError, match="^n_items must be >= 0 and chunk_size >= 1$"):
        compute_chunked({"what": "bad"}, -1, rows, chunk_size=5, progress=False)
    with pytest.raises(ValueError, match="chunk_size >= 1"):
        compute_chunked({"what": "bad"}, 10, rows, chunk_size=0, progress=False)
    empty = compute_chunked({"what": "empty"}, 0, rows, chunk_size=5, progress=False)
    assert empty.shape == (0, 3)                 # compute_fn(0, 0) says what "empty" looks like
    calls = []
    sliced = compute_chunked({"what": "empty"}, 0, lambda a, b: calls.append((a, b)) or rows(0, 9)[a:b],
                             chunk_size=5, progress=False)
    assert sliced.shape == (0, 3) and calls == [(0, 0)]
    np.testing.assert_array_equal(compute_chunked({"what": "ones"}, 3, rows, chunk_size=1, progress=False), rows(0, 3))


def test_bad_compute_output_is_refused_with_what_was_expected():
    with pytest.raises(TypeError, match="^compute_fn must return a numeric array, not objects$"):
        compute_chunked({"what": "objects"}, 2, lambda a, b: np.array([{}, {}], dtype=object), chunk_size=5,
                        progress=False, cache=False)
    with pytest.raises(ValueError, match=r"compute_fn\(5, 10\) returned shape \(4, 3\), expected 5 rows"):
        compute_chunked({"what": "short"}, 12, lambda a, b: rows(a, b if a == 0 else b - 1), chunk_size=5,
                        progress=False)
    # a later chunk of another dtype (same row shape), or of another row shape, is refused by name
    with pytest.raises(ValueError, match=r"holds <f8 rows of shape \[3\]"):
        compute_chunked({"what": "dtype"}, 12, lambda a, b: rows(a, b).astype(np.float32 if a else np.float64),
                        chunk_size=5, progress=False)
    with pytest.raises(ValueError, match=r"returned float64\(5, 2\), but the cache entry .* holds <f8 rows of shape \[3\]"):
        compute_chunked({"what": "dim"}, 12, lambda a, b: rows(a, b)[:, : 3 if a == 0 else 2], chunk_size=5,
                        progress=False)


def test_one_dimensional_results_are_cached_too():
    calls = []

    def scores(start, stop):
        calls.append(start)
        return np.arange(start, stop, dtype=np.float32) / 7

    first = compute_chunked({"what": "1-d"}, 12, scores, chunk_size=5, progress=False)
    np.testing.assert_array_equal(compute_chunked({"what": "1-d"}, 12, scores, chunk_size=5, progress=False), first)
    assert calls == [0, 5, 10] and first.shape == (12,)


def test_a_run_killed_in_its_first_chunk_resumes():
    def killed(start, stop):
        raise KeyboardInterrupt("simulated kill")

    with pytest.raises(KeyboardInterrupt):
        compute_chunked({"what": "first-kill"}, 12, killed, chunk_size=5, progress=False)
    np.testing.assert_array_equal(compute_chunked({"what": "first-kill"}, 12, rows, chunk_size=5, progress=False),
                                  rows(0, 12))


def test_kinds_are_separate_stores():
    key = {"what": "same key, two kinds"}
    compute_chunked(key, 6, rows, chunk_size=5, progress=False, kind="scores")
    other = compute_chunked(key, 6, lambda a, b: -rows(a, b), chunk_size=5, progress=False, kind="colorfoil")
    np.testing.assert_array_equal(other, -rows(0, 6))


def test_progress_bar_shows_only_when_asked(capsys):
    compute_chunked({"what": "quiet"}, 12, rows, chunk_size=5, progress=False, desc="quiet bar")
    assert "quiet bar" not in capsys.readouterr().err
    compute_chunked({"what": "loud"}, 12, rows, chunk_size=5, desc="loud bar")   # progress by default
    assert "loud bar" in capsys.readouterr().err
    compute_chunked({"what": "loud-2"}, 12, rows, chunk_size=5, progress=True)
    err = capsys.readouterr().err
    assert "embeddings chunks" in err and "/3 " in err and "chunk/s" in err   # it counts chunks: 3 of them
    assert err.endswith("\r") and "\n" not in err    # and is erased when done: no stale bar in the page


def test_progress_bar_ends_at_its_total_whether_chunks_are_computed_or_read(monkeypatch):
    from tqdm import tqdm

    from vlbias import cache

    ends = []

    class Recording(tqdm):
        def close(self):
            if not self.disable:                      # a closed bar is disabled: count each bar once
                ends.append((self.n, self.total))
            super().close()

    monkeypatch.setattr(cache, "tqdm", Recording)
    for _ in range(2):                                # computed, then read from the cache
        compute_chunked({"what": "counted bar"}, 12, rows, chunk_size=5, progress=True)
    assert ends == [(3, 3), (3, 3)]


def test_only_chunks_writes_the_selected_chunks_that_a_plain_call_then_reads(tmp_path):
    from vlbias.cache import CACHE_FORMAT, entry_dir, only_chunks

    key, calls = {"what": "selected-chunks"}, []

    def counted(start, stop):
        calls.append((start, stop))
        return rows(start, stop)

    with only_chunks([]) as probe:                    # a probe of a new entry records its sizes
        compute_chunked(key, 17, counted, chunk_size=4, progress=False)
    assert json.loads((entry_dir(key) / "meta.json").read_text()) == {
        "format": CACHE_FORMAT, "key_parts": key, "n_items": 17, "chunk_size": 4, "dim": None, "dtype": None}
    with only_chunks([3, 0, -1, 5]) as selection:     # -1 and 5 (past the last chunk, 4) are ignored
        compute_chunked(key, 17, counted, chunk_size=4, progress=False, cache=False)  # a worker writes anyway
        calls.append("the block goes on")            # never: the block ends once the chunks are done
    assert calls == [(0, 4), (12, 16)]
    assert (selection.computed, selection.loaded) == ([0, 3], [])
    assert (selection.directory, selection.n_items, selection.chunk_size) == (entry_dir(key), 17, 4)
    files = sorted(entry_dir(key).glob("chunk_*.npz"))
    assert [p.name for p in files] == ["chunk_000000.npz", "chunk_000003.npz"]
    with np.load(files[1], allow_pickle=False) as stored:
        np.testing.assert_array_equal(stored["rows"], rows(12, 16))
        assert (int(stored["start"]), int(stored["stop"])) == (12, 16)
    with only_chunks([4, 3]) as again:                # chunk 3 is read, chunk 4 (rows 16..17) computed
        compute_chunked(key, 17, counted, chunk_size=4, progress=False)
    assert (again.computed, again.loaded) == ([4], [3]) and calls[2:] == [(16, 17)]
    with only_chunks([]) as probe:                    # opens the entry, computes nothing
        compute_chunked(key, 17, counted, chunk_size=4, progress=False)
    assert (probe.directory, probe.n_items, probe.computed, probe.loaded) == (entry_dir(key), 17, [], [])
    # outside the block, a plain call computes only the chunks no worker wrote, and returns every row
    np.testing.assert_array_equal(compute_chunked(key, 17, counted, chunk_size=4, progress=False), rows(0, 17))
    assert calls[3:] == [(4, 8), (8, 12)]


def test_a_models_own_cache_identity_is_its_key():
    """A model that says what decides its outputs (here: an adapter on top of its weights) is keyed by that."""
    from vlbias.cache import cache_key, key_hash, model_identity

    class Adapted(SeededEncoder):
        def cache_identity(self):
            return {"weights": self.spec, "adapter": "lora-7"}

    assert model_identity(Adapted("fake:a", 0)) == {"weights": "fake:a", "adapter": "lora-7"}
    assert model_identity(SeededEncoder("fake:a", 0)) == {"weights": "fake:a", "dtype": None, "kind": "dual",
                                                          "preprocess": "seeded-8px"}
    adapted, plain = (cache_key("texts", 1, model) for model in (Adapted("fake:a", 0), SeededEncoder("fake:a", 0)))
    assert key_hash(adapted) != key_hash(plain)
