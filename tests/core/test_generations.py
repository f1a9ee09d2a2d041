"""Cached generations (:mod:`vlbias.generations`): each chunk generated once, a lost chunk alone
generated again, a foreign chunk refused with a warning, nothing written with ``cache=False``."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from vlbias.cache import CacheWarning
from vlbias.generations import generate_cached
from vlbias.paths import cache_dir


class Echo:
    """A stand-in generator: the answer about image i is "image <its red value>", calls counted."""

    spec = "stand-in:echo"
    dtype = "float32"

    def __init__(self):
        self.generated = []

    def cache_identity(self):
        return {"spec": self.spec, "weights": "echo-v1"}

    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        self.generated += [image.getpixel((0, 0))[0] for image in images]
        return [f"image {image.getpixel((0, 0))[0]} says {prompt}"[:max_new_tokens * 8] for image in images]


IMAGES = [Image.new("RGB", (2, 2), (i, 0, 0)) for i in range(7)]


def run(model, tmp_path, **options):
    options = {"prompt": "hi", "max_new_tokens": 4, "chunk_size": 3, "progress": False, **options}
    return generate_cached(model, len(IMAGES), lambda a, b: IMAGES[a:b], f"red-0..6@{tmp_path.name}", **options)


def test_each_chunk_is_generated_once_and_a_lost_one_alone_again(tmp_path):
    model = Echo()
    texts = run(model, tmp_path)
    assert texts == [f"image {i} says hi" for i in range(7)] and model.generated == list(range(7))
    assert run(model, tmp_path) == texts and model.generated == list(range(7))  # all read back
    [directory] = {path.parent for path in cache_dir().glob("generations/*/chunk_000001.json")
                   if json.loads(path.read_text())["texts"][0] == "image 3 says hi"}
    (directory / "chunk_000001.json").unlink()  # as a kill before this chunk was written leaves it
    assert run(model, tmp_path) == texts and model.generated == list(range(7)) + [3, 4, 5]
    (directory / "chunk_000002.json").write_text(json.dumps({"key": "another", "start": 6, "stop": 7, "texts": ["x"]}))
    with pytest.warns(CacheWarning, match="belongs to another entry"):
        assert run(model, tmp_path) == texts
    assert model.generated[-1:] == [6]
    run(model, tmp_path, prompt="hello")  # another prompt: another entry
    assert model.generated[-7:] == list(range(7))


def test_without_the_cache_nothing_is_written_and_bad_sizes_are_refused(tmp_path):
    model = Echo()
    before = set(cache_dir().glob("generations/**/*"))
    assert run(model, tmp_path, cache=False, prompt="uncached")[6] == "image 6 says uncached"
    assert set(cache_dir().glob("generations/**/*")) == before
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        run(model, tmp_path, max_new_tokens=0)
    with pytest.raises(ValueError, match="chunk_size=0"):
        run(model, tmp_path, chunk_size=0)
