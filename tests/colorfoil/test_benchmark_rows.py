"""ColorFoil rows: per-caption generators, and blank scores where a row has fewer foils than asked."""

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.colorfoil import construction, evaluation
from vlbias.data import load_dataset


@pytest.fixture
def repeated_captions(tmp_path):
    """COCO-format files in which images repeat a caption word for word."""
    (tmp_path / "annotations").mkdir()
    (tmp_path / "val2017").mkdir()
    captions = {7: ["A red bus.", "A red bus.", "A red bus."], 8: ["A red bus.", "A man by a blue car."]}
    images, annotations = [], []
    for image_id, texts in captions.items():
        name = f"{image_id:012d}.jpg"
        Image.new("RGB", (8, 8), (image_id * 20, 0, 0)).save(tmp_path / "val2017" / name)
        images.append({"id": image_id, "file_name": name, "height": 8, "width": 8})
        annotations += [{"image_id": image_id, "id": 100 * image_id + k, "caption": c} for k, c in enumerate(texts)]
    (tmp_path / "annotations" / "captions_val2017.json").write_text(
        json.dumps({"images": images, "annotations": annotations}))
    return load_dataset("coco", tmp_path, split="val2017")


def test_each_caption_of_an_image_draws_its_own_foils(repeated_captions):
    # the same words at another caption number (or in another image) are another draw: with 9
    # targets per colour, four ordered foils repeat by chance with probability 1 / (9·8·7·6)
    bench = construction.build_benchmark(repeated_captions, caption_choice="all", seed=0, progress=False)
    red_bus = bench[bench["caption"] == "A red bus."]
    assert len(red_bus) == 4 and (red_bus["n_foils"] == 4).all()
    assert len({tuple(foils) for foils in red_bus["foils"]}) == 4
    # and a caption's draw stays its own when the other captions change
    first = construction.build_benchmark(repeated_captions, caption_choice="first", seed=0, progress=False)
    assert first["foils"].tolist() == bench[bench["caption_id"].isin(first["caption_id"])]["foils"].tolist()
    reseeded = construction.build_benchmark(repeated_captions, caption_choice="all", seed=1, progress=False)
    assert reseeded["foils"].tolist() != bench["foils"].tolist()


class IndexScorer:
    """score_candidates returns row r, column j as 10·(r + 1) + j, with r counted across calls."""

    spec, preprocess_id, kind = "fake:index-scorer", "none", "pairwise"

    def __init__(self):
        self.rows_seen = 0

    def score_candidates(self, images, candidates, batch_size=32, progress=True):
        assert len(images) == len(candidates)
        start, self.rows_seen = self.rows_seen, self.rows_seen + len(candidates)
        return np.array([[10.0 * (start + r + 1) + j for j in range(len(row))] for r, row in enumerate(candidates)])


@pytest.mark.parametrize("max_foils", [4, 2])
def test_scores_of_missing_foils_are_nan(repeated_captions, max_foils):
    # gender, size and emotion foils come one per caption: their rows hold fewer foils than max_foils
    bench = pd.DataFrame({"image_index": [0, 1, 0, 1], "caption": ["A man.", "A red bus.", "a b", "c d"],
                          "foils": [["A woman."], ["A blue bus.", "A pink bus.", "A grey bus.", "A tan bus."],
                                    ["x y", "z w"], ["e f", "g h", "i j"]],
                          "n_foils": [1, 4, 2, 3]})
    scores = evaluation.score_benchmark(IndexScorer(), repeated_captions, bench, max_foils=max_foils, cache=False,
                                        progress=False)
    assert scores.shape == (4, 1 + max_foils)
    for r, n_foils in enumerate(bench["n_foils"]):
        for j in range(1 + max_foils):
            expected = np.nan if j > n_foils else 10.0 * (r + 1) + j
            np.testing.assert_equal(scores[r, j], expected)
    # the 2-foil task then uses only the rows that have 2 foils
    usable, _ = evaluation.correct_at(scores, 2)
    assert usable.tolist() == [False, True, True, True]
