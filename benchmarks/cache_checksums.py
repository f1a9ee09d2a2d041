"""What the cache's chunk checksums cost, against the embedding they protect (issue 13: under 5%).

Embeds 448x448 images (FairFace's padded size) with a full-size, randomly initialised open_clip
ViT-B-32 (no download) through ``embed_images``, once without the cache and once into a fresh
cache, and times the sha256 of every chunk as it is written and again as it is read back. All
ratios are measured in this run. ``--device cuda`` runs the model on a GPU in half precision,
where embedding is fastest and the checksums weigh most.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--chunk-size", type=int, default=32)
    args = parser.parse_args()
    os.environ["VLBIAS_CACHE_DIR"] = tempfile.mkdtemp(prefix="vlbias-bench-cache-")

    from vlbias import cache
    from vlbias.embeddings import embed_images
    from vlbias.models.image_text import OpenClipModel

    device = torch.device(args.device)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    model = OpenClipModel("random:ViT-B-32", "ViT-B-32", None, device, dtype)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (448, 448, 3), dtype=np.uint8)) for _ in range(args.images)]
    settings = dict(dataset_identity=f"bench-{args.images}", batch_size=32, chunk_size=args.chunk_size,
                    progress=False)
    embed_images(model, images[:8], dataset_identity="warm-up", cache=False, progress=False)

    start = time.perf_counter()
    embeddings = embed_images(model, images, cache=False, **settings)
    embedding = time.perf_counter() - start
    start = time.perf_counter()
    cached = embed_images(model, images, cache=True, **settings)
    embedding_and_writing = time.perf_counter() - start
    start = time.perf_counter()
    again = embed_images(model, images, cache=True, **settings)
    verified_read = time.perf_counter() - start
    assert np.array_equal(cached, again) and np.allclose(embeddings, cached, atol=1e-2)

    chunks = [embeddings[i:i + args.chunk_size] for i in range(0, len(embeddings), args.chunk_size)]
    repeats = 50  # the hashes of a few chunks take too little time to read off one pass
    start = time.perf_counter()
    for _ in range(2 * repeats):  # once when a chunk is written, once when it is read back
        for chunk in chunks:
            cache._digest(chunk)
    hashing = (time.perf_counter() - start) / repeats

    print(f"{args.images} images, ViT-B-32 (random weights), {args.device} {str(dtype).removeprefix('torch.')}, "
          f"chunks of {args.chunk_size} x {embeddings.shape[1]}")
    print(f"{'what':<46} {'seconds':>9} {'of embedding':>13}")
    for what, seconds in [("embedding, no cache", embedding),
                          ("embedding into a fresh cache (writes included)", embedding_and_writing),
                          ("reading the cache back (verified)", verified_read),
                          ("sha256 of every chunk, written and read", hashing)]:
        print(f"{what:<46} {seconds:>9.3f} {seconds / embedding:>12.3%}")
    per_image = hashing / args.images
    print(f"sha256 at {2 * embeddings.nbytes / hashing / 1e6:,.0f} MB/s: the checksums stay under 5% of embedding "
          f"time unless embedding runs faster than {0.05 / per_image:,.0f} images/s")


if __name__ == "__main__":
    main()
