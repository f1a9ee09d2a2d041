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
