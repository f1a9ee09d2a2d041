"""The chunked embedding cache: correct, resumable, distrustful of damaged files, pickle-free."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from PIL import Image

from vlbias import cache
from vlbias.cache import compute_chunked, entry_dir, key_hash
from vlbias.data import load_dataset
from vlbias.embeddings import embed_images, embed_texts
from vlbias.models.base import ImageTextModel


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test starts from an empty cache."""
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
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
    assert meta["dim"] == [5] and np.dtype(meta["dtype"]) == np.float32


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


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "pickled-object", "wrong-rows"])
def test_damaged_chunk_is_recomputed(damage):
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    victim = entry_dir(KEY) / "chunk_000001.npy"
    if damage == "truncate":  # as if written in place and killed midway
        victim.write_bytes(victim.read_bytes()[:-17])
    elif damage == "garbage":
        victim.write_bytes(b"not an npy file at all")
    elif damage == "empty":
        victim.write_bytes(b"")
    elif damage == "pickled-object":  # must never be unpickled
        np.save(victim, np.array([{"x": 1}] * 10, dtype=object), allow_pickle=True)
    elif damage == "wrong-rows":
        np.save(victim, data[:3], allow_pickle=False)
    rerun = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 30, rerun, chunk_size=10, progress=False), data)
    assert rerun.calls == [(10, 20)]
    np.testing.assert_array_equal(np.load(victim, allow_pickle=False), data[10:20])


def test_mismatched_meta_recomputes_cleanly():
    data = _table(30)
    compute_chunked(KEY, 30, Counting(data), chunk_size=10, progress=False)
    fewer = Counting(data)
    np.testing.assert_array_equal(compute_chunked(KEY, 25, fewer, chunk_size=10, progress=False), data[:25])
    assert fewer.calls == [(0, 10), (10, 20), (20, 25)]
    assert sorted(p.name for p in entry_dir(KEY).glob("chunk_*")) == [f"chunk_00000{i}.npy" for i in range(3)]
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
    np.testing.assert_array_equal(compute_chunked(other, 12, Counting(data), chunk_size=5, progress=False), data * 2)
    files = [p for p in own_cache.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix in {".pkl", ".pickle", ".tmp"}]
    chunks = [p for p in files if p.suffix == ".npy"]
    assert len(chunks) == 6
    for chunk in chunks:
        assert np.load(chunk, allow_pickle=False).dtype == np.float32
    assert {p.name for p in files} - {c.name for c in chunks} == {"meta.json"}


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
