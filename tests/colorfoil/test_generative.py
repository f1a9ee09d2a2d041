"""ColorFoil asked of a generative VLM (02d, :mod:`vlbias.colorfoil.generative`): by likelihood, read by
02b's tables unchanged, and as a two-choice question in both orders, on stand-ins with planted answers
whose right answers are counted here by hand."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.colorfoil import construction, evaluation
from vlbias.colorfoil.generative import (READINGS, likelihood_scores, two_choice, two_choice_per_colour,
                                         two_choice_summary, two_choice_table)
from vlbias.data import load_dataset
from vlbias.models.base import VisionLanguageModel
from vlbias.stats import wilson_interval

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


@pytest.fixture
def bench(coco):
    return construction.build_benchmark(coco, progress=False)


def colour_of(image) -> str:
    pixel = np.asarray(image.convert("RGB"), dtype=float)[4, 4]
    return min(COLOURS, key=lambda name: np.abs(pixel - COLOURS[name]).sum())


def names(colour: str, text: str) -> bool:
    return f" {colour} " in f" {text.lower()} "


class Planted(VisionLanguageModel):
    """Every character a token of log-probability -1; a text naming the picture's colour gains ``bonus``.
    As a two-choice question: ``always`` answers that label, as does a picture whose colour is in
    ``blind``; otherwise the label of the text naming the picture's colour is likelier by 2."""

    spec = "stand-in:planted"
    dtype = "float32"

    def __init__(self, bonus=5.0, always=None, blind=()):
        self.bonus, self.always, self.calls = bonus, always, 0
        self.blind = list(blind)  # not a tuple: cache keys are compared after a JSON round trip

    def cache_identity(self):
        return {"spec": self.spec, "bonus": self.bonus, "always": self.always, "blind": self.blind}

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.calls += 1
        if prompt is None:
            return np.array([-len(t) + self.bonus * names(colour_of(i), t) for i, t in zip(images, texts)])
        first, second = re.match(r"Which caption describes the image\? A: (.*) B: (.*) Answer", prompt).groups()
        out = []
        for image, label in zip(images, texts):
            colour = colour_of(image)
            always = "A" if colour in self.blind else self.always
            if always is not None:
                out.append(0.0 if label == always else -1.0)
            else:
                out.append(-1.0 + 2.0 * names(colour, first if label == "A" else second))
        return np.array(out)

    def answer_token_counts(self, texts, prompt=None):
        return np.array([len(t) for t in texts])

    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        raise AssertionError("not used")


class WordTokens(Planted):
    """Words are tokens, but "yellow" is three; each token has log-probability -1, except the tokens of
    the picture's own colour word, -0.8 each. So the sum penalises a long true colour word."""

    spec = "stand-in:word-tokens"
    TOKENS = {"yellow": 3}

    def _tokens(self, text):
        return [(word, self.TOKENS.get(word, 1)) for word in text.lower().split()]

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.calls += 1
        return np.array([sum(n * (-0.8 if word == colour_of(image) else -1.0) for word, n in self._tokens(text))
                         for image, text in zip(images, texts)])

    def answer_token_counts(self, texts, prompt=None):
        return np.array([sum(n for _, n in self._tokens(text)) for text in texts])


# --------------------------------------------------------------------------- by likelihood


def test_02d_likelihood_scores_are_02bs_matrix_of_log_likelihoods(coco, bench):
    model = Planted()
    scores = likelihood_scores(model, coco, bench, max_foils=2, progress=False)
    assert scores.shape == (len(bench), 3)
    colours = [colour_of(coco.image(i)) for i in bench["image_index"]]
    for row, (caption, foils, colour) in enumerate(zip(bench["caption"], bench["foils"], colours)):
        expected = [-len(t) + 5.0 * names(colour, t) for t in [caption, *foils[:2]]]
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


def test_a_colour_blind_model_is_decided_by_length_under_sum_and_ties_under_mean(coco, bench):
    blind = Planted(bonus=0.0)
    _, correct = evaluation.correct_at(likelihood_scores(blind, coco, bench, max_foils=1, progress=False), 1)
    shorter = [len(caption) < len(foils[0]) for caption, foils in zip(bench["caption"], bench["foils"])]
    assert correct.tolist() == shorter and 0 < sum(shorter) < len(shorter)  # length, not colour, decides
    # per character, every text scores -1: every example is a tie, and a tie is a failure
    row = evaluation.evaluation_row(likelihood_scores(blind, coco, bench, max_foils=1, score="mean",
                                                      progress=False), 1)
    assert (row["accuracy_%"], row["ties"], row["n"]) == (0, len(bench), len(bench))


def test_mean_and_sum_part_where_the_colour_words_take_different_token_counts(coco):
    positions = {colour_of(coco.image(i)): i for i in range(len(coco))}
    hand = pd.DataFrame({"image_index": [positions["red"], positions["blue"], positions["yellow"]],
                         "caption": ["a red bus", "a blue kite", "a yellow taxi"],
                         "foils": [["a yellow bus"], ["a green kite"], ["a red taxi"]], "n_foils": [1, 1, 1],
                         "words": [["red"], ["blue"], ["yellow"]]})
    model = WordTokens()
    total = likelihood_scores(model, coco, hand, max_foils=1, progress=False)
    mean = likelihood_scores(model, coco, hand, max_foils=1, score="mean", progress=False)
    # by hand: "a red bus" = -1 - 0.8 - 1 over 3 tokens; "a yellow bus" = -1 - 3 - 1 over 5;
    # "a yellow taxi" on the yellow picture = -1 - 3 * 0.8 - 1 over 5; "a red taxi" = -3 over 3
    np.testing.assert_allclose(total, [[-2.8, -5.0], [-2.8, -3.0], [-4.4, -3.0]])
    np.testing.assert_allclose(mean, [[-2.8 / 3, -1.0], [-2.8 / 3, -1.0], [-0.88, -1.0]])
    assert evaluation.correct_at(total, 1)[1].tolist() == [True, True, False]  # the long true word loses
    assert evaluation.correct_at(mean, 1)[1].tolist() == [True, True, True]
    by_model = evaluation.evaluation_table({("sum", "hand"): total, ("mean", "hand"): mean}, foil_counts=(1,))
    assert by_model["accuracy_%"].tolist() == pytest.approx([200 / 3, 100])
    low, high = wilson_interval(2, 3)
    assert (by_model["ci_low_%"].iat[0], by_model["ci_high_%"].iat[0]) == pytest.approx((100 * low, 100 * high))
    per_colour = evaluation.per_colour_accuracy(hand, total, 1).set_index("colour")["accuracy_%"]
    assert per_colour.to_dict() == {"blue": 100, "red": 100, "yellow": 0}
    calls = model.calls
    likelihood_scores(model, coco, hand, max_foils=1, progress=False)
    assert model.calls == calls  # the same texts and prompt: from the cache
    likelihood_scores(model, coco, hand, max_foils=1, prompt="Describe the image.", progress=False)
    assert model.calls == calls + 1  # another prompt is another key


# --------------------------------------------------------------------------- as a two-choice question


def test_two_choice_in_both_orders_exposes_a_model_that_always_answers_a(coco, bench):
    seeing = two_choice_summary(two_choice(Planted(), coco, bench, progress=False))
    assert list(seeing.index) == list(READINGS)
    assert seeing["accuracy_%"].tolist() == [100, 100, 100, 100, 0]
    always_a = two_choice_summary(two_choice(Planted(always="A"), coco, bench, progress=False))
    # caption first, foil first, averaged, both orders, position bias
    assert always_a["accuracy_%"].tolist() == [100, 0, 50, 0, 100]
    assert (always_a["n"] == len(bench)).all()
    always_b = two_choice_summary(two_choice(Planted(always="B"), coco, bench, progress=False))
    assert always_b["accuracy_%"].tolist() == [0, 100, 50, 0, 100]


def test_a_model_blind_to_red_counted_by_hand_overall_per_model_and_per_colour(coco, bench):
    colours = [colour_of(coco.image(i)) for i in bench["image_index"]]
    n, n_red = len(colours), colours.count("red")
    assert (n, n_red) == (5, 2)
    choices = two_choice(Planted(blind=["red"]), coco, bench, progress=False)
    summary = two_choice_summary(choices)
    # red pictures: "A" in both orders (right when the caption comes first); the others: right in both
    assert summary["accuracy_%"].tolist() == pytest.approx([100, 60, 80, 60, 40])
    low, high = wilson_interval(4, 5)  # averaged: 2 examples half right, 3 right, each counted once
    assert summary.loc["averaged over orders", ["ci_low_%", "ci_high_%"]].tolist() == pytest.approx([100 * low,
                                                                                                      100 * high])
    table = two_choice_table({("blind to red", "coco"): choices,
                              ("seeing", "coco"): two_choice(Planted(), coco, bench, progress=False)})
    assert len(table) == 2 * len(READINGS) and (table["foils"] == 1).all()
    averaged = table[table["reading"] == "averaged over orders"].set_index("model")["accuracy_%"]
    assert averaged.to_dict() == pytest.approx({"blind to red": 80, "seeing": 100})
    per_colour = two_choice_per_colour(bench, choices).set_index("colour")
    assert per_colour["n"].to_dict() == {"red": 2, "blue": 1, "green": 1, "yellow": 1}
    assert per_colour["accuracy_%"].to_dict() == {"red": 50, "blue": 100, "green": 100, "yellow": 100}
    both = two_choice_per_colour(bench, choices, reading="both orders").set_index("colour")["accuracy_%"]
    assert both.to_dict() == {"red": 0, "blue": 100, "green": 100, "yellow": 100}


def test_per_colour_counts_a_two_colour_caption_for_both_and_reads_gray_as_grey():
    hand = pd.DataFrame({"words": [["gray", "red"], ["grey"], ["red"]]}, index=[10, 11, 12])
    choices = pd.DataFrame({"caption chosen, caption first": [True, True, False],
                            "caption chosen, foil first": [True, False, False],
                            "same label": [False, True, False]}, index=[10, 11, 12])
    table = two_choice_per_colour(hand, choices).set_index("colour")
    # grey: rows 10 (right in both: 1) and 11 (one order: 1/2); red: rows 10 (1) and 12 (0)
    assert table["n"].to_dict() == {"grey": 2, "red": 2}
    assert table["accuracy_%"].to_dict() == {"grey": 75, "red": 50}
    bias = two_choice_per_colour(hand, choices, reading="same label in both orders (position bias)")
    assert bias.set_index("colour")["accuracy_%"].to_dict() == {"grey": 50, "red": 0}


class Recorder(Planted):
    """Records every question and answer it is asked to score; returns ``answers`` (the first wins)."""

    def __init__(self, answers=(0.0, -1.0)):
        super().__init__()
        self.answers, self.asked = list(answers), []

    def cache_identity(self):
        return {"spec": self.spec, "answers": self.answers}

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.asked.append((prompt, list(texts)))
        return np.array(self.answers)


def test_the_template_and_labels_are_what_the_model_is_asked(coco, bench):
    model = Recorder()
    template, labels = "Pick one. (1) {first} (2) {second}", ("1", "2")
    choices = two_choice(model, coco, bench.head(2), template=template, labels=labels, progress=False)
    expected = []
    for caption, foils in zip(bench["caption"].head(2), bench["foils"].head(2)):
        expected += [(f"Pick one. (1) {caption} (2) {foils[0]}", ["1", "2"]),
                     (f"Pick one. (1) {foils[0]} (2) {caption}", ["1", "2"])]
    assert model.asked == expected
    assert choices["same label"].all() and choices["margin foil first"].tolist() == [-1.0, -1.0]


def test_a_tie_between_the_labels_is_neither_a_right_answer_nor_a_position_bias(coco, bench):
    summary = two_choice_summary(two_choice(Recorder(answers=(-0.5, -0.5)), coco, bench, progress=False))
    assert summary["accuracy_%"].tolist() == [0, 0, 0, 0, 0]


def test_bad_input_names_the_argument(coco, bench):
    model = Planted()
    with pytest.raises(ValueError, match="score='median'"):
        likelihood_scores(model, coco, bench, score="median")
    with pytest.raises(ValueError, match=r"\{first\} and \{second\}"):
        two_choice(model, coco, bench, template="Which is it? {first}")
    with pytest.raises(ValueError, match=r"template=.*only \{first\} and \{second\} may be fields"):
        two_choice(model, coco, bench, template="{first} or {second}? {answer}")
    with pytest.raises(ValueError, match="must differ"):
        two_choice(model, coco, bench, labels=("A", "A"))
    with pytest.raises(ValueError, match="labels=.*give two non-empty answers"):
        two_choice(model, coco, bench, labels=("A", "B", "C"))
    with pytest.raises(ValueError, match="lacks the columns"):
        likelihood_scores(model, coco, bench.drop(columns="foils"))
    with pytest.raises(TypeError, match="generative vision-language model"):
        likelihood_scores(object(), coco, bench)
    assert model.calls == 0
    choices = two_choice(model, coco, bench, progress=False)
    with pytest.raises(ValueError, match="reading='best'"):
        two_choice_per_colour(bench, choices, reading="best")
    with pytest.raises(ValueError, match="choices has 3 rows that benchmark lacks"):
        two_choice_per_colour(bench.head(2), choices)
    with pytest.raises(ValueError, match=r"keys must be \(model, dataset\) pairs"):
        two_choice_table({"planted": choices})


# --------------------------------------------------------------------------- the real path


def test_the_real_path_on_a_tiny_random_vlm(coco, bench, monkeypatch):
    from vlbias.models import load_vision_language_model

    model = load_vision_language_model("tiny:llava")
    real, calls = model.log_likelihood, []

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "log_likelihood", counted)
    bench = bench.head(3)
    scores = likelihood_scores(model, coco, bench, max_foils=1, progress=False)
    assert scores.shape == (3, 2) and np.isfinite(scores).all() and (scores < 0).all()
    direct = real([coco.image(int(bench["image_index"].iat[0]))], [bench["caption"].iat[0]], progress=False)
    assert scores[0, 0] == pytest.approx(direct[0], abs=1e-4)
    choices = two_choice(model, coco, bench, progress=False)
    assert len(choices) == 3 and np.isfinite(choices[["margin caption first", "margin foil first"]]).all().all()
    assert two_choice_summary(choices).shape == (len(READINGS), 4)
    made = len(calls)
    assert made > 0
    np.testing.assert_array_equal(likelihood_scores(model, coco, bench, max_foils=1, progress=False), scores)
    pd.testing.assert_frame_equal(two_choice(model, coco, bench, progress=False), choices)
    assert len(calls) == made  # both served from the cache


# --------------------------------------------------------------------------- 02d's sentences and findings


def _table(rows):
    """A two_choice_table from {(model, dataset): per-reading (n, accuracy %, low, high)}."""
    frames = []
    for (model, dataset), readings in rows.items():
        for reading, (n, value, low, high) in zip(READINGS, readings):
            frames.append({"model": model, "dataset": dataset, "foils": 1, "reading": reading, "n": n,
                           "accuracy_%": value, "ci_low_%": low, "ci_high_%": high})
    return pd.DataFrame(frames)


def test_two_choice_sentences_never_read_a_position_as_content():
    from vlbias.colorfoil import findings as cff

    always_a = (40, 100.0, 91.2, 100.0), (40, 0.0, 0.0, 8.8), (40, 50.0, 35.2, 64.8), (40, 0.0, 0.0, 8.8), (40, 100.0, 91.2, 100.0)
    good = (40, 90.0, 77.0, 96.0), (40, 85.0, 71.0, 93.0), (40, 87.5, 76.0, 94.0), (40, 80.0, 65.0, 90.0), (40, 12.0, 5.0, 26.0)
    table = _table({("a", "coco"): always_a, ("g", "coco"): good})
    text = cff.two_choice_sentences(table, {"g": "good model"})
    assert "a on coco: the same label won in both orders for all 40 pairs" in text and "no finding" in text
    assert "good model on coco: 87.5% [76.0, 94.0] averaged over the orders, above chance (50%)" in text


def _choices(first: np.ndarray, second: np.ndarray) -> pd.DataFrame:
    """A two_choice table from whether the caption was chosen with it first and with it second: the same label
    won in both orders where exactly one of the two chose the caption."""
    return pd.DataFrame({"caption chosen, caption first": first, "caption chosen, foil first": second,
                         "same label": first != second})


def _right(n: int, rate: float, seed: int) -> np.ndarray:
    right = np.zeros(n, bool)
    right[:round(rate * n)] = True
    return np.random.default_rng(seed).permutation(right)


def _likelihoods(right: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -1.0] if r else [-1.0, 0.0] for r in right])


def test_generative_findings_judge_both_readings_against_the_control_and_never_read_a_position_as_content():
    from vlbias import book
    from vlbias.colorfoil import findings as cff

    published = book.published("colorfoil_table1_samin2024")
    planted, control = "trained:caption-captioner?colour_words=1", "trained:caption-captioner?colour_words=0"
    n = 120
    own, theirs = _right(n, 0.8, 1), _right(n, 0.5, 2)
    scores = {(planted, "coco"): _likelihoods(own), (control, "coco"): _likelihoods(theirs)}
    always_a = _choices(np.ones(n, bool), np.zeros(n, bool))  # the first label, whatever the content
    choices = {(planted, "coco"): always_a, (control, "coco"): always_a}
    first, second = cff.generative_findings(planted, scores, choices, {planted: control}, published)
    assert first.verdict == "recovered" and first.estimates["contrast"].value == pytest.approx(own.mean() - theirs.mean())
    assert "by likelihood" in first.claim and first.published.startswith("CLIP (image-text, the paper): coco ")
    # the world plants no answer to a question: its numbers stand, and its position is said
    assert second.verdict == "not planted" and second.estimates["model"].value == 0
    assert "follow the position, not the content" in second.note and "So did the control" in second.note
    assert "[" not in second.ours  # every pair averages 50%: no spread, said in words
    # placebo: the control's answers in the planted model's place
    swapped = {(planted, "coco"): scores[control, "coco"], (control, "coco"): scores[planted, "coco"]}
    assert cff.generative_findings(planted, swapped, None, {planted: control}, published)[0].verdict == "not recovered"
    assert len(cff.generative_findings(planted, scores, None, {planted: control}, published)) == 1  # no choices: no row
    # a paper's model: its own intervals; by position every pair: cannot test the question
    answers = {("llava", "coco"): _likelihoods(own)}
    found = cff.generative_findings("llava", answers, {("llava", "coco"): always_a}, {}, published)
    assert [f.verdict for f in found] == ["supports", "cannot test"]
    assert "same label in both orders for every pair" in found[1].ours
    knows = _choices(_right(n, 0.9, 3), _right(n, 0.85, 4))
    found = cff.generative_findings("llava", answers, {("llava", "coco"): knows}, {}, published)
    assert found[1].verdict == "supports"
    averaged = (knows.iloc[:, 0].to_numpy(float) + knows.iloc[:, 1].to_numpy(float)) / 2
    assert found[1].estimates["model"].value == pytest.approx(averaged.mean() - 0.5)
    missing = cff.generative_findings("x", {}, {}, {}, published)
    assert [f.verdict for f in missing] == ["cannot test", "cannot test"]
    text, about = cff.generative_planted(planted, {planted: control})
    assert "never asked a question" in text and "every colour word removed" in about
    assert cff.generative_planted("llava-hf/llava-1.5-7b-hf") == (None, None)


def test_the_caption_captioner_refuses_bad_options_before_training():
    from vlbias.models import load_vision_language_model

    for spec, message in (("trained:caption-captioner?colour_words=2", "colour_words=2"),
                          ("trained:caption-captioner?epochs=0", "epochs must be at least 1"),
                          ("trained:caption-captioner?image_size=30", "multiple of 4")):
        with pytest.raises(ValueError, match=message):
            load_vision_language_model(spec)
