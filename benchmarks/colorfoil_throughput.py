"""ColorFoil scoring throughput: (image, text) pairs per second for a dual encoder and a pairwise
matcher, on tiny models and 320x320 images (decoding and resizing them is part of the cost, as for photos), with 1 caption + 4 foils per image.

The dual encoder embeds each image once and each distinct text once; the naive alternative embeds
the image again for every text of its row. Prints pairs/s and the speed-up of one over the other,
measured in this run, and checks that both give the same scores.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from vlbias.models import load_image_text_model  # noqa: E402

COLOURS = ["red", "blue", "green", "yellow", "white", "black", "brown", "pink", "orange", "grey"]


def rows(n_images: int, rng: np.random.Generator):
    images = [Image.fromarray(rng.integers(0, 255, (320, 320, 3), dtype=np.uint8)) for _ in range(n_images)]
    candidates = []
    for i in range(n_images):
        colours = rng.permutation(COLOURS)[:5]
        candidates.append([f"a {c} bus number {i % 50}" for c in colours])
    return images, candidates


def naive_dual(model, images, candidates, batch_size):
    """Every (image, text) pair embedded on its own row: the image once per text."""
    flat_images = [image for image, row in zip(images, candidates) for _ in row]
    flat_texts = [text for row in candidates for text in row]
    a = model.encode_images(flat_images, batch_size=batch_size, progress=False)
    b = model.encode_texts(flat_texts, batch_size=batch_size, progress=False)
    return (a * b).sum(axis=1).reshape(len(images), -1)


def timed(function, *args, repeats=2):
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function(*args)
        best = min(best, time.perf_counter() - start)
    return best, value


def main() -> None:
    images, candidates = rows(400, np.random.default_rng(0))
    pairs = sum(len(row) for row in candidates)
    print(f"{'model':<18} {'kind':<9} {'path':<28} {'pairs/s':>9} {'speed-up':>9}")
    dual = load_image_text_model("tiny:clip", device="cpu")
    fast, a = timed(lambda: dual.score_candidates(images, candidates, batch_size=64, progress=False))
    slow, b = timed(lambda: naive_dual(dual, images, candidates, 64))
    assert np.allclose(a, b, atol=1e-5)
    print(f"{'tiny:clip':<18} {'dual':<9} {'each image, text once':<28} {pairs / fast:>9.0f} {slow / fast:>8.1f}x")
    print(f"{'tiny:clip':<18} {'dual':<9} {'image once per text':<28} {pairs / slow:>9.0f} {1:>8.1f}x")
    for spec in ("tiny:vilt", "tiny:bridgetower"):
        matcher = load_image_text_model(spec, device="cpu")
        one, _ = timed(lambda: matcher.score_candidates(images[:100], candidates[:100], batch_size=1, progress=False), repeats=1)
        many, _ = timed(lambda: matcher.score_candidates(images[:100], candidates[:100], batch_size=64, progress=False), repeats=1)
        n = 5 * 100
        print(f"{spec:<18} {'pairwise':<9} {'batches of 64 pairs':<28} {n / many:>9.0f} {one / many:>8.1f}x")
        print(f"{spec:<18} {'pairwise':<9} {'one pair at a time':<28} {n / one:>9.0f} {1:>8.1f}x")


if __name__ == "__main__":
    main()
