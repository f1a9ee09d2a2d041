"""Zero-shot labels of image files keep the files' order across the chunks they are read in."""

import numpy as np
from PIL import Image

from vlbias.t2i.annotation import label_image_files


class RednessModel:
    """score(images, texts): "red" scores each image's mean red channel, "blue" its mean blue."""

    spec, kind = "fake:redness", "pairwise"

    def __init__(self):
        self.batches = []

    def score(self, images, texts, batch_size=32, progress=True):
        self.batches.append(len(images))
        pixels = np.stack([np.asarray(image, dtype=float).mean(axis=(0, 1)) for image in images])
        return np.stack([pixels[:, 0] if t == "red" else pixels[:, 2] for t in texts], axis=1)


def test_labels_follow_file_order_across_chunks(tmp_path):
    rng = np.random.default_rng(0)
    reds = rng.random(11) < 0.5
    files = []
    for i, red in enumerate(reds):
        path = tmp_path / f"{i:02d}.png"
        Image.new("RGB", (4, 4), (200, 0, 30) if red else (30, 0, 200)).save(path)
        files.append(str(path))
    model = RednessModel()
    labels = label_image_files(model, files, {"red": "red", "blue": "blue"}, chunk=4, progress=False)
    assert labels.tolist() == ["red" if red else "blue" for red in reds]
    assert model.batches == [4, 4, 3]           # read four files at a time
    shuffled = [files[i] for i in (10, 3, 7, 0, 5, 1, 9, 2, 8, 4, 6)]
    again = label_image_files(RednessModel(), shuffled, {"red": "red", "blue": "blue"}, chunk=3, progress=False)
    assert again.tolist() == ["red" if reds[i] else "blue" for i in (10, 3, 7, 0, 5, 1, 9, 2, 8, 4, 6)]
    assert label_image_files(model, [], {"red": "red"}, progress=False).tolist() == []


class RednessEncoder:
    """A dual encoder: an image's embedding is its (mean red, mean blue), normalised; "red" and "blue" are the
    axes. Counts the images it encodes."""

    spec, kind, preprocess_id = "fake:redness-encoder", "dual", "fake"

    def __init__(self):
        self.encoded = 0

    def encode_images(self, images, batch_size=32, progress=True):
        self.encoded += len(images)
        pixels = np.stack([np.asarray(image, dtype=float).mean(axis=(0, 1))[[0, 2]] for image in images])
        return (pixels / np.linalg.norm(pixels, axis=1, keepdims=True)).astype(np.float32)

    def encode_texts(self, texts, batch_size=256, progress=True):
        return np.array([[1.0, 0.0] if text == "red" else [0.0, 1.0] for text in texts], dtype=np.float32)

    def score(self, images, texts, batch_size=32, progress=True):
        return self.encode_images(images) @ self.encode_texts(texts).T


def _coloured_files(folder, reds):
    files = []
    for i, red in enumerate(reds):
        path = folder / f"{i:02d}.png"
        Image.new("RGB", (4, 4), (200, 0, 30) if red else (30, 0, 200)).save(path)
        files.append(path)
    return files


def test_a_dual_encoders_labels_are_cached_by_the_files_bytes(tmp_path):
    """A dual encoder labels image files from its cached image embeddings: planted labels, no image encoded on
    a second call (another notebook labelling the same images), and a file overwritten with other pixels at the
    same path labelled anew."""
    reds = [True, False, False, True, True, False, True]
    files = _coloured_files(tmp_path, reds)
    prompts = {"red": "red", "blue": "blue"}
    model = RednessEncoder()
    labels = label_image_files(model, files, prompts, chunk=3, progress=False)
    assert labels.tolist() == ["red" if red else "blue" for red in reds] and model.encoded == 7
    again = RednessEncoder()
    assert label_image_files(again, files, prompts, chunk=3, progress=False).tolist() == labels.tolist()
    assert again.encoded == 0
    Image.new("RGB", (4, 4), (30, 0, 200)).save(files[0])  # the first image, now blue, at the same path
    changed = RednessEncoder()
    assert label_image_files(changed, files, prompts, chunk=3, progress=False).tolist()[0] == "blue"
    assert changed.encoded == 7


def test_a_real_dual_encoders_cached_scores_equal_its_scores_through_score(tmp_path):
    """tiny:clip through the cache gives exactly the scores zero_shot_scores gives on the opened images, read in
    the same chunks (the same batches, the same prompt embeddings: a batch's size moves float32 sums by an ulp),
    with lists of prompts averaged; read again from the cache, the same."""
    import pandas as pd

    from vlbias.models import load_image_text_model
    from vlbias.t2i.annotation import dual_encoder_file_scores, zero_shot_scores

    rng = np.random.default_rng(1)
    files = []
    for i in range(13):
        path = tmp_path / f"{i:02d}.png"
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(path)
        files.append(path)
    model = load_image_text_model("tiny:clip", device="cpu")
    prompts = {"female": ["a photo of a woman", "a woman"], "male": ["a photo of a man", "a man"],
               "no person": "a photo of an object"}
    images = [Image.open(path).convert("RGB") for path in files]
    for chunk in (8, 5):  # a multiple of the batch, as the notebooks' 256 and 32; and a chunk ending mid-batch
        expected = pd.concat([zero_shot_scores(model, images[start:start + chunk], prompts, batch_size=4,
                                               progress=False) for start in range(0, len(images), chunk)])
        assert expected.shape == (13, 3) and expected.to_numpy().std(axis=0).min() > 0
        for _ in range(2):  # computed, then read from the cache
            cached = dual_encoder_file_scores(model, files, prompts, batch_size=4, chunk=chunk, progress=False)
            assert list(cached.columns) == list(expected.columns)
            np.testing.assert_array_equal(cached.to_numpy(), expected.to_numpy())
