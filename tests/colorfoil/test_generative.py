"""ColorFoil asked of a generative VLM (02d, :mod:`vlbias.colorfoil.generative`): by likelihood, read by
02b's tables unchanged, and as a two-choice question in both orders, on stand-ins with planted answers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from PIL import Image

from vlbias.colorfoil import construction, evaluation
from vlbias.colorfoil.generative import likelihood_scores, two_choice, two_choice_summary
from vlbias.data import load_dataset
from vlbias.models.base import VisionLanguageModel

COLOURS = {"red": (255, 0, 0), "blue": (0, 0, 255), "green": (0, 128, 0), "yellow": (255, 255, 0)}
CAPTIONS = {1: ("red", "A red bus."), 2: ("blue", "A blue kite in the sky"), 3: ("green", "A green car"),
            4: ("yellow", "A yellow taxi parked"), 5: ("red", "Two red apples")}


@pytest.fixture
def coco(tmp_path):
    (tmp_path / "annotations").mkdir(parents=True)
    (tmp_path / "val2017").mkdir()
    images, annotations = [], []
    for image_id, (colour, caption) in CAPTIONS.items():
        name = f"{image_id:012d}.jpg"
        Image.new("RGB", (8, 8), COLOURS[colour]).save(tmp_path / "val2017" / name, quality=100)
        images.append({"id": image_id, "file_name": name, "height": 8, "width": 8})
        annotations.append({"image_id": image_id, "id": 10 * image_id, "caption": caption})
    (tmp_path / "annotations" / "captions_val2017.json").write_text(
        json.dumps({"images": images, "annotations": annotations}))
    return load_dataset("coco", tmp_path, split="val2017")


def colour_of(image) -> str:
    pixel = np.asarray(image.convert("RGB"), dtype=float)[4, 4]
    return min(COLOURS, key=lambda name: np.abs(pixel - COLOURS[name]).sum())


class Planted(VisionLanguageModel):
    """Every character a token of log-probability -1; a text naming the picture's colour gains ``bonus``.
    As a two-choice question: ``always`` answers that label; otherwise the label of the text naming the
    picture's colour is likelier by 2."""

    spec = "stand-in:planted"
    dtype = "float32"

    def __init__(self, bonus=5.0, always=None):
        self.bonus, self.always, self.calls = bonus, always, 0

    def cache_identity(self):
        return {"spec": self.spec, "bonus": self.bonus, "always": self.always}

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.calls += 1
        if prompt is None:
            return np.array([-len(t) + self.bonus * (f" {colour_of(i)} " in f" {t.lower()} ")
                             for i, t in zip(images, texts)])
        first, second = re.match(r"Which caption describes the image\? A: (.*) B: (.*) Answer", prompt).groups()
        out = []
        for image, label in zip(images, texts):
            if self.always is not None:
                out.append(0.0 if label == self.always else -1.0)
            else:
                text = first if label == "A" else second
                out.append(-1.0 + 2.0 * (f" {colour_of(image)} " in f" {text.lower()} "))
        return np.array(out)

    def answer_token_counts(self, texts, prompt=None):
        return np.array([len(t) for t in texts])

    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        raise AssertionError("not used")


def test_02d_likelihood_scores_are_02bs_matrix_of_log_likelihoods(coco):
    bench = construction.build_benchmark(coco, progress=False)
    model = Planted()
    scores = likelihood_scores(model, coco, bench, max_foils=2, progress=False)
    assert scores.shape == (len(bench), 3)
    colours = [colour_of(coco.image(i)) for i in bench["image_index"]]
    for row, (caption, foils, colour) in enumerate(zip(bench["caption"], bench["foils"], colours)):
        expected = [-len(t) + 5.0 * (f" {colour} " in f" {t.lower()} ") for t in [caption, *foils[:2]]]
        np.testing.assert_allclose(scores[row, :1 + len(foils[:2])], expected)
        assert np.isnan(scores[row, 1 + len(foils[:2]):]).all()
    # the planted model always prefers the caption: 100% at k = 1 and 2
    assert evaluation.evaluation_row(scores, 1)["accuracy_%"] == 100
    # per token: the same texts over their lengths
    calls = model.calls
    mean = likelihood_scores(model, coco, bench, max_foils=2, score="mean", progress=False)
    assert model.calls == calls  # read from the cache
    lengths = np.array([[len(t) for t in row] for row in evaluation.candidate_lists(bench, 2)], dtype=float)
    np.testing.assert_allclose(mean, scores / lengths)


def test_a_colour_blind_model_is_decided_by_length_alone_under_sum(coco):
    bench = construction.build_benchmark(coco, progress=False)
    scores = likelihood_scores(Planted(bonus=0.0), coco, bench, max_foils=1, progress=False)
    _, correct = evaluation.correct_at(scores, 1)
    shorter = [len(caption) < len(foils[0]) for caption, foils in zip(bench["caption"], bench["foils"])]
    assert correct.tolist() == shorter and 0 < sum(shorter) < len(shorter)  # length, not colour, decides


def test_two_choice_in_both_orders_exposes_a_model_that_always_answers_a(coco):
    bench = construction.build_benchmark(coco, progress=False)
    seeing = two_choice(Planted(), coco, bench, progress=False)
    summary = two_choice_summary(seeing)
    assert summary.loc["both orders", "accuracy_%"] == 100
    assert summary.loc["same label in both orders (position bias)", "accuracy_%"] == 0
    always_a = two_choice_summary(two_choice(Planted(always="A"), coco, bench, progress=False))
    assert always_a["accuracy_%"].tolist() == [100, 0, 0, 100]
    assert always_a.loc["both orders", "n"] == len(bench)


def test_bad_input_names_the_argument(coco):
    bench = construction.build_benchmark(coco, progress=False)
    model = Planted()
    with pytest.raises(ValueError, match="score='median'"):
        likelihood_scores(model, coco, bench, score="median")
    with pytest.raises(ValueError, match=r"\{first\} and \{second\}"):
        two_choice(model, coco, bench, template="Which is it? {first}")
    with pytest.raises(ValueError, match="must differ"):
        two_choice(model, coco, bench, labels=("A", "A"))
    with pytest.raises(ValueError, match="lacks the columns"):
        likelihood_scores(model, coco, bench.drop(columns="foils"))
    with pytest.raises(TypeError, match="generative vision-language model"):
        likelihood_scores(object(), coco, bench)
    assert model.calls == 0


def test_the_real_path_on_a_tiny_random_vlm(coco):
    from vlbias.models import load_vision_language_model

    model = load_vision_language_model("tiny:llava")
    bench = construction.build_benchmark(coco, progress=False).head(3)
    scores = likelihood_scores(model, coco, bench, max_foils=1, progress=False)
    assert scores.shape == (3, 2) and np.isfinite(scores).all() and (scores < 0).all()
    direct = model.log_likelihood([coco.image(int(bench["image_index"].iat[0]))], [bench["caption"].iat[0]],
                                  progress=False)
    assert scores[0, 0] == pytest.approx(direct[0], abs=1e-4)
    choices = two_choice(model, coco, bench, progress=False)
    assert len(choices) == 3 and np.isfinite(choices["margin caption first"]).all()
