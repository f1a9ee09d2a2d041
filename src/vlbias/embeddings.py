"""Image and text embeddings of a dual encoder, cached on disk in resumable chunks.

The cache key (:func:`vlbias.cache.cache_key`) names everything an embedding depends on: the
model's weights, dtype and image preprocessing, and the exact images (a data set's ``identity``)
or texts (a hash of their content). Change any of them and the embeddings are computed afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from .cache import cache_key, compute_chunked
from .models.base import ImageTextModel

#: bump when the layout or meaning of cached embeddings changes
EMBEDDING_CACHE_VERSION = 2


def images_identity(images: Sequence[Image.Image]) -> str:
    """Content hash of in-memory images (mode, size and pixels of each), for images without an identity."""
    digest = hashlib.sha256()
    for image in images:
        digest.update(f"{image.mode}:{image.size[0]}x{image.size[1]}:".encode())
        digest.update(image.tobytes())
    return f"pil-images/{len(images)}@{digest.hexdigest()[:16]}"


def files_identity(files: Sequence[str | Path]) -> str:
    """Content hash of image files (their bytes, in order): the same files at another path share cached
    results, other files at the same path do not (a rerun that overwrote a run's images must not read
    the old labels)."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
    return f"image-files/{len(files)}@{digest.hexdigest()[:16]}"


class FileImages:
    """Image files as a lazy sequence: indexing opens a file as RGB, nothing is held; ``identity`` names
    them in cache keys, by default by their bytes (:func:`files_identity`)."""

    def __init__(self, files: Sequence[str | Path], identity: str | None = None):
        self.files = [Path(f) for f in files]
        self.identity = files_identity(self.files) if identity is None else identity

    def __len__(self) -> int:
        return len(self.files)

    def _open(self, path: Path) -> Image.Image:
        with Image.open(path) as image:
            return image.convert("RGB")

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._open(path) for path in self.files[index]]
        return self._open(self.files[index])


def texts_identity(texts: Sequence[str]) -> str:
    canonical = json.dumps(list(texts), ensure_ascii=False, separators=(",", ":"))
    return f"texts/{len(texts)}@{hashlib.sha256(canonical.encode('utf-8')).hexdigest()[:16]}"


def resolve_images(dataset_or_images, dataset_identity: str | None = None):
    """(indexable images, what names them in cache keys) of a data set (its ``images()`` and
    ``identity``), a sequence carrying an ``identity``, or any sequence of PIL images (named by
    ``dataset_identity``, else by a hash of their pixels: fine for small lists)."""
    if hasattr(dataset_or_images, "images") and hasattr(dataset_or_images, "identity"):
        images, identity = dataset_or_images.images(), dataset_or_images.identity
    else:
        images, identity = dataset_or_images, getattr(dataset_or_images, "identity", None)
    identity = dataset_identity or identity
    if identity is None:
        images = list(images)
        identity = images_identity(images)
    return images, identity


def _require_embeddings(model: ImageTextModel) -> None:
    if not getattr(model, "has_embeddings", True):
        raise TypeError(f"{model.spec} is a {model.kind} model without embeddings; use model.score(...) instead")


def default_decode_workers() -> int:
    """Threads that decode images while the model runs (JPEG decoding releases the GIL): the cores
    this process is given (:func:`vlbias.device.cpu_budget`), at most 8."""
    from .device import cpu_budget

    return min(8, cpu_budget())


def decoded_batches(images: Sequence[Image.Image], start: int, stop: int, batch_size: int,
                    pool: ThreadPoolExecutor | None) -> Iterator[list[Image.Image]]:
    """``images[start:stop]`` in batches, decoded by ``pool`` ahead of the batch being consumed.

    Every image of the range is submitted at once and batches are yielded in order as their
    images arrive, so the pool keeps decoding while the caller encodes the previous batch.
    Without a pool the images are read one after another.
    """
    if pool is None:
        for begin in range(start, stop, batch_size):
            yield [images[i] for i in range(begin, min(stop, begin + batch_size))]
        return
    futures = [pool.submit(images.__getitem__, i) for i in range(start, stop)]
    try:
        for begin in range(0, len(futures), batch_size):
            yield [future.result() for future in futures[begin:begin + batch_size]]
    finally:
        for future in futures:  # on an error or an early stop, drop what was not started
            future.cancel()


def embed_images(model: ImageTextModel, dataset_or_images, dataset_identity: str | None = None,
                 batch_size: int = 32, chunk_size: int = 512, cache: bool = True,
                 progress: bool = True, decode_workers: int | None = None) -> np.ndarray:
    """(n_images, dim) float32 L2-normalised embeddings, cached per chunk of ``chunk_size`` images.

    ``dataset_or_images`` is a data set from :func:`vlbias.data.load_dataset`, its
    ``images(indices)``, or any sequence of PIL images. Data sets carry their own identity; for
    other sequences pass ``dataset_identity`` or the pixels are hashed (fine for small lists).
    ``decode_workers`` threads (default :func:`default_decode_workers`; 0 or 1: none) read and
    decode the images of a chunk in parallel, ahead of the batch of ``batch_size`` the model is
    encoding; a whole chunk may be decoded ahead, so ``chunk_size`` also bounds memory (512 FairFace
    images at 448x448 RGB: about 300 MB).
    """
    _require_embeddings(model)
    images, identity = resolve_images(dataset_or_images, dataset_identity)
    key_parts = cache_key("image-embeddings", EMBEDDING_CACHE_VERSION, model, images=identity, n_items=len(images))

    workers = default_decode_workers() if decode_workers is None else int(decode_workers)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="decode") if workers > 1 else None

    def compute(start: int, stop: int) -> np.ndarray:
        parts = [np.asarray(model.encode_images(batch, batch_size=batch_size, progress=False), dtype=np.float32)
                 for batch in decoded_batches(images, start, stop, batch_size, pool)]
        if not parts:  # an empty range: let the model say what an empty result looks like
            return np.asarray(model.encode_images([], batch_size=batch_size, progress=False), dtype=np.float32)
        return np.concatenate(parts)

    try:
        return compute_chunked(key_parts, len(images), compute, chunk_size=chunk_size, progress=progress,
                               cache=cache, desc=f"image embeddings ({model.spec})")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def embed_texts(model: ImageTextModel, texts: Sequence[str], batch_size: int = 256, chunk_size: int = 4096,
                cache: bool = True, progress: bool = True) -> np.ndarray:
    """(n_texts, dim) float32 L2-normalised text embeddings, cached under a hash of the texts."""
    _require_embeddings(model)
    texts = [str(text) for text in texts]
    key_parts = cache_key("text-embeddings", EMBEDDING_CACHE_VERSION, model, texts=texts_identity(texts))

    def compute(start: int, stop: int) -> np.ndarray:
        return np.asarray(model.encode_texts(texts[start:stop], batch_size=batch_size, progress=False),
                          dtype=np.float32)

    return compute_chunked(key_parts, len(texts), compute, chunk_size=chunk_size, progress=progress,
                           cache=cache, desc=f"text embeddings ({model.spec})")
