"""The parallel image decoding behind embed_images keeps order and results."""

import random
import threading
import time

import numpy as np
from PIL import Image

from vlbias.embeddings import decoded_batches, embed_images
from vlbias.models import load_image_text_model


class SlowImages:
    """A sequence whose reads take random time, so parallel reads finish out of order."""

    def __init__(self, n):
        self.n, self.threads = n, set()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.threads.add(threading.get_ident())
        time.sleep(random.Random(i).uniform(0, 0.004))
        return Image.new("RGB", (24, 24), (i * 7 % 256, i * 13 % 256, i * 29 % 256))


def test_decoded_batches_keep_order_with_or_without_a_pool():
    from concurrent.futures import ThreadPoolExecutor

    images = SlowImages(23)
    serial = [[im.getpixel((0, 0)) for im in batch] for batch in decoded_batches(images, 3, 23, 6, None)]
    with ThreadPoolExecutor(4) as pool:
        parallel = [[im.getpixel((0, 0)) for im in batch] for batch in decoded_batches(images, 3, 23, 6, pool)]
    assert parallel == serial and [len(b) for b in serial] == [6, 6, 6, 2]
    assert serial[0][0] == (21, 39, 87)  # image 3
    assert len(images.threads) > 1  # the pool really used several threads


def test_embed_images_same_with_parallel_decoding():
    model = load_image_text_model("tiny:clip", device="cpu")
    images = SlowImages(40)
    serial = embed_images(model, images, dataset_identity="slow-40", batch_size=8, chunk_size=16,
                          cache=False, progress=False, decode_workers=0)
    parallel = embed_images(model, images, dataset_identity="slow-40", batch_size=8, chunk_size=16,
                            cache=False, progress=False, decode_workers=4)
    direct = model.encode_images([images[i] for i in range(40)], batch_size=8, progress=False)
    np.testing.assert_allclose(parallel, serial, atol=1e-6)
    np.testing.assert_allclose(parallel, direct, atol=1e-6)


def test_parallel_decoding_of_the_fairface_parquet_fixture():
    from vlbias.data import load_dataset

    dataset = load_dataset("fairface", root="fixture", split="train")
    model = load_image_text_model("tiny:clip", device="cpu")
    serial = embed_images(model, dataset, batch_size=16, chunk_size=100, cache=False, progress=False, decode_workers=0)
    parallel = embed_images(model, dataset, batch_size=16, chunk_size=100, cache=False, progress=False, decode_workers=4)
    assert serial.shape == (len(dataset), model.embedding_dim or serial.shape[1])
    np.testing.assert_allclose(parallel, serial, atol=1e-6)
