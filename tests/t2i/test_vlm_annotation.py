"""The VLM annotator on a stand-in model with planted answer likelihoods: labels, the combination of
phrasings and of tokens as computed by hand, the cache, bad input, DALL-Eval's free-answer reading,
and the labels fed into annotator_robustness; then one smoke test on the tiny random LLaVA."""

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.models.base import VisionLanguageModel
from vlbias.t2i.annotation import GENDER_PROMPTS
from vlbias.t2i.controls import annotator_robustness
from vlbias.t2i.vlm_annotation import (FREE_ANSWER_WORDS, GENDER_ANSWERS, GENDER_QUESTION, answer_scores,
                                       free_answer_label, vlm_free_labels, vlm_labels)

RED, BLUE, WHITE, GREEN = (255, 0, 0), (0, 0, 255), (255, 255, 255), (0, 255, 0)
UNLIKELY = -10.0


def picture(colour, size=8, mode="RGB"):
    """A grey square whose top-left pixel is ``colour``: the stand-in reads only that pixel."""
    image = Image.new("RGB", (size, size), (128, 128, 128))
    image.putpixel((0, 0), colour)
    return image if mode == "RGB" else image.convert(mode)


class Planted(VisionLanguageModel):
    """log P(text | image) read from a table keyed by the image's top-left colour (UNLIKELY elsewhere);
    a text's tokens are its words; free answers read from ``replies``. Counts what it is asked."""

    family, preprocess_id, dtype = "fake", "fake", "float32"

    def __init__(self, table, replies=None):
        self.table, self.replies = table, replies or {}
        # different planted tables are different "weights": they must not share cache entries
        planted = json.dumps([[key, sorted(value.items())] for key, value in table.items()])
        self.spec = "fake:planted@" + hashlib.sha256(planted.encode()).hexdigest()[:12]
        self.pairs, self.generated, self.prompts = 0, 0, []

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.pairs += len(texts)
        self.prompts.append(prompt)
        return np.array([self.table.get(image.getpixel((0, 0)), {}).get(text, UNLIKELY)
                         for image, text in zip(images, texts)], dtype=np.float64)

    def answer_token_counts(self, texts, prompt=None):
        return np.array([len(text.split()) for text in texts])

    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        self.generated += len(images)
        return [self.replies[image.getpixel((0, 0))] for image in images]


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# a woman is likely on red, a man (capitalised) on blue, nobody on white; green is undecided
GENDER_TABLE = {RED: {"a woman": -1.0}, BLUE: {"A man": -1.0}, WHITE: {"no person": -1.0}}


def test_the_labels_are_the_planted_ones_in_the_clip_annotators_vocabulary(own_cache):
    assert list(GENDER_ANSWERS) == list(GENDER_PROMPTS)  # the two annotators' labels compare one to one
    model = Planted(GENDER_TABLE)
    labels, scores, phrasings = vlm_labels(model, [picture(c) for c in (RED, BLUE, WHITE, RED, GREEN)], progress=False)
    # green: every phrasing equally unlikely, a tie, which goes to the label listed first
    assert labels.tolist() == ["female", "male", "no person", "female", "female"]
    assert set(model.prompts) == {GENDER_QUESTION}
    assert model.pairs == 5 * 6  # every image against every phrasing, once
    # by hand: log(e^-1 + e^-10) for red's female; both phrasings at -10: -10 + log 2
    assert scores.loc[0, "female"] == pytest.approx(math.log(math.exp(-1) + math.exp(-10)))
    assert scores.loc[0, "male"] == pytest.approx(-10 + math.log(2))
    assert scores.loc[1, "male"] == pytest.approx(math.log(math.exp(-10) + math.exp(-1)))
    assert phrasings.loc[1, ("male", "A man")] == -1.0 and phrasings.loc[1, ("male", "a man")] == UNLIKELY
    assert list(scores.columns) == ["female", "male", "no person"]


def test_log_sum_exp_max_sum_and_mean_combine_as_computed_by_hand(own_cache):
    # two "she" phrasings at -1 outweigh one "he" at -0.5 together (log 2e^-1 = -0.307), not one by one
    model = Planted({RED: {"she": -1.0, "her": -1.0, "he": -0.5}})
    answers = {"female": ["she", "her"], "male": ["he"]}
    labels, scores, _ = vlm_labels(model, [picture(RED)], answers=answers, progress=False)
    assert labels.tolist() == ["female"] and scores.loc[0, "female"] == pytest.approx(-1 + math.log(2))
    labels, scores, _ = vlm_labels(model, [picture(RED)], answers=answers, combine="max", progress=False)
    assert labels.tolist() == ["male"] and scores.loc[0, "female"] == -1.0 and scores.loc[0, "male"] == -0.5
    # a three-word answer at -3 against a two-word one at -2.4: the sum picks the short one, the mean
    # (-1 per token against -1.2) the long one
    model = Planted({BLUE: {"a tall woman": -3.0, "a man": -2.4}})
    answers = {"female": "a tall woman", "male": "a man"}
    labels, scores, _ = vlm_labels(model, [picture(BLUE)], answers=answers, score="sum", progress=False)
    assert labels.tolist() == ["male"]
    labels, scores, phrasings = vlm_labels(model, [picture(BLUE)], answers=answers, score="mean", progress=False)
    assert labels.tolist() == ["female"]
    assert scores.loc[0].tolist() == pytest.approx([-1.0, -1.2])
    assert phrasings.loc[0, ("female", "a tall woman")] == pytest.approx(-1.0)


def test_a_second_call_is_served_from_the_cache_whatever_the_combination(own_cache):
    model = Planted(GENDER_TABLE)
    images = [picture(c) for c in (RED, BLUE, WHITE)]
    first = vlm_labels(model, images, progress=False)
    assert model.pairs == 3 * 6
    again = vlm_labels(model, [picture(c) for c in (RED, BLUE, WHITE)], progress=False)  # equal pixels, new objects
    by_max = vlm_labels(model, images, score="mean", combine="max", progress=False)
    assert model.pairs == 3 * 6  # neither asked the model again: score and combine apply to cached scores
    assert again.labels.tolist() == first.labels.tolist() == by_max.labels.tolist()
    pd.testing.assert_frame_equal(again.scores, first.scores)
    assert any((own_cache / "vlm_annotation").iterdir())
    vlm_labels(model, images, question="Who is in this picture?", progress=False)
    assert model.pairs == 2 * 3 * 6  # another question is another entry
    vlm_labels(model, images[:2] + [picture(GREEN)], progress=False)
    assert model.pairs == 3 * 3 * 6  # other pixels, another entry
    vlm_labels(model, images, cache=False, progress=False)
    assert model.pairs == 4 * 3 * 6


def test_image_files_are_read_as_rgb_and_named_by_their_bytes(own_cache, tmp_path):
    model = Planted(GENDER_TABLE)
    paths = []
    for index, colour in enumerate((RED, BLUE, WHITE)):
        paths.append(tmp_path / f"{index}.png")
        picture(colour).convert("RGBA").save(paths[-1])  # an RGBA file: opened as RGB, like the CLIP annotator
    labels = vlm_labels(model, [str(p) for p in paths], progress=False).labels
    assert labels.tolist() == ["female", "male", "no person"] and model.pairs == 18
    moved = tmp_path / "moved"
    moved.mkdir()
    for path in paths:
        (moved / path.name).write_bytes(path.read_bytes())
    assert vlm_labels(model, sorted(moved.iterdir()), progress=False).labels.tolist() == labels.tolist()
    assert model.pairs == 18  # the same bytes elsewhere: the same entry
    picture(BLUE).save(paths[0])  # other bytes at the same path: computed afresh
    assert vlm_labels(model, paths, progress=False).labels.tolist() == ["male", "male", "no person"]
    assert model.pairs == 36


def test_answer_scores_are_the_model_log_likelihoods_in_phrasing_order(own_cache):
    model = Planted({RED: {"x": -2.0, "y": -3.0}, BLUE: {"y": -0.25}})
    scores = answer_scores(model, [picture(RED), picture(BLUE)], ["x", "y"], question="q?", progress=False)
    assert scores.tolist() == [[-2.0, -3.0], [UNLIKELY, -0.25]]


def test_bad_input_gets_one_clear_error(own_cache):
    model = Planted(GENDER_TABLE)
    images = [picture(RED)]
    with pytest.raises(ValueError, match="answers must map each label"):
        vlm_labels(model, images, answers={}, progress=False)
    with pytest.raises(ValueError, match=r"answers\['male'\] has no phrasing"):
        vlm_labels(model, images, answers={"female": ["a woman"], "male": []}, progress=False)
    with pytest.raises(ValueError, match=r"answers\['male'\] holds '': every phrasing must be a non-empty"):
        vlm_labels(model, images, answers={"female": ["a woman"], "male": [""]}, progress=False)
    with pytest.raises(ValueError, match="'a person' is a phrasing of both 'female' and 'male'"):
        vlm_labels(model, images, answers={"female": ["a person"], "male": ["a person"]}, progress=False)
    with pytest.raises(ValueError, match=r"'woman' begins 'woman\.'.* combine='max'"):
        vlm_labels(model, images, answers={"female": ["woman", "woman."], "male": ["man"]}, progress=False)
    vlm_labels(model, images, answers={"female": ["woman", "woman."], "male": ["man"]}, combine="max", progress=False)
    for question in (None, 3, "  "):
        with pytest.raises(ValueError, match="question must be a non-empty string"):
            vlm_labels(model, images, question=question, progress=False)
    with pytest.raises(ValueError, match=r"score=.product. is not a score mode"):
        vlm_labels(model, images, score="product", progress=False)
    with pytest.raises(ValueError, match=r"combine must be one of"):
        vlm_labels(model, images, combine="mean", progress=False)
    with pytest.raises(ValueError, match=r"images\[1\] is a 'RGBA' image; .*image.convert\('RGB'\)"):
        vlm_labels(model, [picture(RED), picture(BLUE, mode="RGBA")], progress=False)
    with pytest.raises(ValueError, match="got a single one; wrap it in a list"):
        vlm_labels(model, picture(RED), progress=False)
    with pytest.raises(ValueError, match="mixes file paths and other objects"):
        vlm_labels(model, [picture(RED), "a.png"], progress=False)
    with pytest.raises(TypeError, match=r"images\[0\] is a ndarray"):
        vlm_labels(model, [np.zeros((8, 8, 3))], progress=False)
    assert model.pairs == 3  # only the one call with valid input (3 phrasings, 1 image) reached the model


# --------------------------------------------------------------------------- into annotator_robustness

REFERENCE = pd.Series({"nurse": 0.75, "pilot": 0.25, "baker": 0.5})
COLOURS = {"nurse": [RED, RED, RED, BLUE], "pilot": [BLUE, BLUE, BLUE, WHITE], "baker": [RED, BLUE, RED, BLUE]}
OTHER = {"nurse": ["female", "female", "male", "male"], "pilot": ["male"] * 4,
         "baker": ["female", "male", "female", "male"]}


def test_the_labels_feed_annotator_robustness_with_the_agreement_computed_by_hand(own_cache):
    manifest = pd.DataFrame([{"profession": p, "seed": i} for p, colours in COLOURS.items()
                             for i in range(len(colours))])
    images = [picture(colour) for colours in COLOURS.values() for colour in colours]
    vlm = vlm_labels(Planted(GENDER_TABLE), images, progress=False).labels
    assert vlm.tolist() == ["female"] * 3 + ["male"] * 4 + ["no person", "female", "male", "female", "male"]
    other = [label for labels in OTHER.values() for label in labels]  # differs at nurse 3 and pilot 4
    per_annotator, comparison = annotator_robustness(manifest, {"vlm": vlm, "clip": other}, REFERENCE, n_boot=200)
    assert comparison["both labelled"] == 12
    assert comparison["agreement"] == pytest.approx(10 / 12)
    # Cohen's kappa by hand: marginals vlm (F, M, N) = (5, 6, 1)/12, clip (4, 8, 0)/12
    expected = (5 * 4 + 6 * 8 + 1 * 0) / 144
    assert comparison["cohen_kappa"] == pytest.approx((10 / 12 - expected) / (1 - expected))  # 13/19
    # VRBS: vlm's female shares among people (3/4, 0/3, 2/4) miss the reference by (0, .25, 0); clip's
    # (2/4, 0/4, 2/4) by (.25, .25, 0)
    assert per_annotator.loc["vlm", "VRBS"] == pytest.approx(1 - 0.25 / 3)
    assert per_annotator.loc["clip", "VRBS"] == pytest.approx(1 - 0.5 / 3)
    assert comparison["VRBS change"] == pytest.approx(-0.25 / 3)
    with pytest.raises(ValueError, match=r"labels\['vlm'\] has 11 labels for 12 images"):
        annotator_robustness(manifest, {"vlm": vlm[:11], "clip": other}, REFERENCE, n_boot=10)


# --------------------------------------------------------------------------- free answers

@pytest.mark.parametrize("answer, label", [
    ("A woman.", "female"), ("female", "female"), ("The person in the image is a man", "male"),
    ("WOMAN", "female"), ("a human", None), ("a cat", None), ("a man and a woman", None),
    ("There is no person in the image.", "no person"), ("nobody", "no person"), ("males", None),
])
def test_free_answers_map_to_labels_by_whole_words(answer, label):
    assert free_answer_label(answer) == label  # "woman" is not "man", "female" not "male"


def test_free_labels_count_what_matched_and_are_cached(own_cache):
    replies = {RED: "A woman.", BLUE: "the person looks like a male", WHITE: "a cat", GREEN: "a man or a woman"}
    model = Planted({}, replies=replies)
    images = [picture(c) for c in (RED, BLUE, WHITE, GREEN, RED)]
    labels, answers, counts, at_limit = vlm_free_labels(model, images, chunk_size=2, progress=False)
    assert labels.tolist() == ["female", "male", None, None, "female"]
    assert answers == [replies[c] for c in (RED, BLUE, WHITE, GREEN, RED)]
    assert counts == {"matched": 3, "unmatched": 1, "ambiguous": 1}
    assert at_limit == 0  # the longest answer has 6 words (the stand-in's tokens), under the default 16
    assert model.generated == 5
    assert vlm_free_labels(model, images, chunk_size=2, progress=False).answers == answers
    assert model.generated == 5  # read back, chunk by chunk
    # at 5 new tokens "the person looks like a male" (6 words) is at the limit, "a man or a woman" (5) too
    assert vlm_free_labels(model, images, max_new_tokens=5, progress=False).at_limit == 2
    with pytest.raises(ValueError, match=r"words\['male'\] must be one or more non-empty strings"):
        vlm_free_labels(model, images, words={"female": ["woman"], "male": []}, progress=False)
    with pytest.raises(ValueError, match="max_new_tokens must be at least 1"):
        vlm_free_labels(model, images, max_new_tokens=0, progress=False)
    # None is "not labelled" for annotator_robustness, as DALL-Eval left such images out
    manifest = pd.DataFrame({"profession": ["nurse"] * 5, "seed": range(5)})
    per_annotator, comparison = annotator_robustness(manifest, {"free": labels, "other": ["female"] * 5},
                                                     pd.Series({"nurse": 0.9}), n_boot=10)
    assert per_annotator.loc["free", "labelled"] == 3 and comparison["both labelled"] == 3
    assert comparison["agreement"] == pytest.approx(2 / 3)


def test_default_free_words_and_answers_name_the_same_labels():
    assert list(FREE_ANSWER_WORDS) == list(GENDER_ANSWERS)


def test_04b_asks_the_generative_annotator_this_modules_question_by_default():
    """04b's parameters cell spells the question, answers and words out (papermill needs literals): they are
    this module's defaults, so the page and a call without them ask the same."""
    from pathlib import Path

    from vlbias.profiles import parameter_defaults

    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "04b_annotation_and_metrics.ipynb"
    defaults = parameter_defaults(notebook)
    assert defaults["vlm_question"] == GENDER_QUESTION
    assert defaults["vlm_answers"] == GENDER_ANSWERS and defaults["vlm_free_words"] == FREE_ANSWER_WORDS


# --------------------------------------------------------------------------- the real tiny model

def test_tiny_llava_scores_are_its_own_log_likelihoods():
    from vlbias.models import load_vision_language_model

    model = load_vision_language_model("tiny:llava", device="cpu")
    images = [Image.new("RGB", (32, 32), colour) for colour in (RED, BLUE, WHITE)]
    labels, scores, phrasings = vlm_labels(model, images, progress=False)
    assert set(labels) <= set(GENDER_ANSWERS) and np.isfinite(scores.to_numpy()).all()
    # independently: the model's log-likelihood of each phrasing for image 1, combined by log-sum-exp
    direct = model.log_likelihood([images[1]] * 2, GENDER_ANSWERS["male"], prompt=GENDER_QUESTION, progress=False)
    assert scores.loc[1, "male"] == pytest.approx(math.log(sum(math.exp(v) for v in direct)), rel=1e-5)
    assert labels[1] == scores.columns[int(np.argmax(scores.loc[1].to_numpy()))]
    free = vlm_free_labels(model, images[:2], max_new_tokens=4, progress=False)
    assert len(free.answers) == 2 and sum(free.counts.values()) == 2


# --------------------------------------------------------------------------- beside the zero-shot annotator (04b)

def _readings(choice, free, answers=None, at_limit=0):
    from vlbias.t2i.vlm_annotation import FreeAnswers, VLMAnnotation, VLMReadings

    free = np.array(free, dtype=object)
    found = [label is not None for label in free]
    counts = {"matched": sum(found), "unmatched": len(free) - sum(found), "ambiguous": 0}
    return VLMReadings(VLMAnnotation(np.array(choice, dtype=object), pd.DataFrame(), pd.DataFrame()),
                       FreeAnswers(free, answers or [str(label) for label in free], counts, at_limit))


def test_04b_comparison_with_the_zero_shot_annotator_by_hand():
    """Four professions of ten images; the choice reading copies the zero-shot labels (agreement 1, kappa 1,
    no VRBS change, an interval of zero width said so); the free reading leaves 4 images unlabelled and
    flips 3 of the rest, counted by hand."""
    from vlbias.t2i.vlm_annotation import comparison_sentences, compare_with_annotator

    professions = np.repeat(["nurse", "pilot", "clerk", "baker"], 10)
    zero_shot = np.tile(["female"] * 6 + ["male"] * 4, 4).astype(object)
    free = zero_shot.copy()
    free[[0, 10, 20, 30]] = None                      # answers that named no label
    free[[1, 2, 11]] = "male"                           # three female images read as male
    manifest = pd.DataFrame({"profession": professions, "seed": np.tile(np.arange(10), 4)})
    reference = pd.Series({"nurse": 0.9, "pilot": 0.1, "clerk": 0.6, "baker": 0.5})
    table = compare_with_annotator(manifest, zero_shot, "zero-shot", {"vlm": _readings(zero_shot, free, at_limit=2)},
                                   reference, n_boot=200)
    choice, by_answer = table.loc[("vlm", "closed-form choice")], table.loc[("vlm", "free answer (DALL-Eval's reading)")]
    assert choice["labelled"] == 40 and choice["both labelled"] == 40
    assert choice["agreement"] == 1 and choice["cohen_kappa"] == pytest.approx(1.0)
    assert choice["VRBS change"] == 0 and choice["ci_low"] == choice["ci_high"] == 0
    # VRBS of the zero-shot labels: every profession 0.6 female, so 1 - mean |0.6 - reference| by hand
    assert choice["VRBS (zero-shot)"] == pytest.approx(1 - np.mean([0.3, 0.5, 0.0, 0.1]))
    assert by_answer["labelled"] == 36 and by_answer["both labelled"] == 36
    assert by_answer["agreement"] == pytest.approx(33 / 36)
    assert by_answer["answers unmatched"] == 4 and by_answer["answers at the token limit"] == 2
    # on the 36 images both labelled: nurse 5/9 -> 3/9 female (images 1, 2 flipped), pilot 5/9 -> 4/9, others 5/9
    both = {"nurse": (5 / 9, 3 / 9), "pilot": (5 / 9, 4 / 9), "clerk": (5 / 9, 5 / 9), "baker": (5 / 9, 5 / 9)}
    vrbs = [1 - np.mean([abs(pair[i] - reference[name]) for name, pair in both.items()]) for i in (0, 1)]
    assert by_answer["VRBS (zero-shot)"] == pytest.approx(vrbs[0])
    assert by_answer["VRBS (generative)"] == pytest.approx(vrbs[1])
    text = comparison_sentences(table, "the zero-shot annotator", 40)
    assert "agrees with the zero-shot annotator on 100% of the 40 images both labelled (κ = 1.00)" in text
    assert "interval of zero width" in text
    assert "4 of its 40 free answers named no label or several" in text
    assert "2 answers reached the limit of new tokens" in text
    assert comparison_sentences(table.iloc[:0], "the zero-shot annotator", 40).startswith("No generative annotator")
    # the free reading's change on the 36 images, its interval and the verdict, read from the table
    low, high = by_answer["ci_low"], by_answer["ci_high"]
    assert (low > 0 or high < 0) == ("(its interval excludes 0: an annotator effect)" in text)
    # two readings that label every image alike are said once
    alike = compare_with_annotator(manifest, zero_shot, "zero-shot", {"vlm": _readings(zero_shot, zero_shot)}, reference,
                                   n_boot=50)
    once = comparison_sentences(alike, "the zero-shot annotator", 40, {"vlm": _readings(zero_shot, zero_shot)})
    assert once.count("agrees with") == 1 and "by closed-form choice and by free answer alike" in once
    assert "every one of its 40 free answers named exactly one label" in once
    assert "interval of zero width" in once
    # no person anywhere (the rehearsal's random weights): the change is undefined, and the sentence says so
    nobody = np.array(["no person"] * 40, dtype=object)
    undefined = compare_with_annotator(manifest, nobody, "zero-shot", {"vlm": _readings(nobody, nobody)}, reference,
                                       n_boot=50)
    said = comparison_sentences(undefined, "the zero-shot annotator", 40, {"vlm": _readings(nobody, nobody)})
    assert "; the change in VRBS when it annotates instead is undefined" in said and "moves by undefined" not in said


def test_annotate_with_vlms_reads_each_model_both_ways_and_boxes_a_model_that_fails(own_cache, tmp_path):
    from vlbias.t2i.vlm_annotation import annotate_with_vlms

    images = [Image.new("RGB", (32, 32), colour) for colour in (RED, BLUE)]
    with pytest.raises(ValueError, match="question must be a non-empty string"):
        annotate_with_vlms(["tiny:llava"], images, question=" ")
    with pytest.raises(ValueError, match="specs must be a list of model specs"):
        annotate_with_vlms("tiny:llava", images)
    readings, failures = annotate_with_vlms(["tiny:llava", str(tmp_path / "missing")], images, max_new_tokens=3,
                                            device="cpu", progress=False)
    assert list(readings) == ["tiny:llava"]
    assert len(readings["tiny:llava"].choice.labels) == 2 and len(readings["tiny:llava"].free.answers) == 2
    assert failures.model.tolist() == [str(tmp_path / "missing")] and failures.stage.tolist() == ["load"]


def test_04b_generative_annotator_recipe_refuses_bad_options_before_training():
    from vlbias.models.trained import trained_options

    for option, message in (("red_answered_blue=1.5", "red_answered_blue is a probability"),
                            ("image_size=10", "image_size must be a multiple of 4"),
                            ("share_spread=2", "share_spread must lie in"), ("epochs=0", "epochs must be at least 1")):
        recipe, options = trained_options(f"world-vqa?{option}")
        with pytest.raises(ValueError, match=message):
            recipe.explain(**options)
    recipe, options = trained_options("world-vqa?red_answered_blue=0.6")
    assert "60% of the red ones are answered 'blue'" in recipe.explain(**options)
    assert recipe.target(**options) != recipe.target(**trained_options("world-vqa")[1])  # another model, another cache


@pytest.mark.slow
def test_04b_generative_annotator_reads_the_planted_colour_and_a_planted_annotator_bias_shows(demo_cache):
    """04b's demo annotator, trained here to answer "Is the shape red or blue?", on the planted world's
    held-out pictures (box-filtered to the 8 pixels it reads, as the profession model draws them), whose
    colours are known: both readings name the colour of nearly every picture. Trained instead with 80% of
    the red pictures answered "blue" (a planted annotator bias), it calls most red pictures blue, and the
    blue ones stay blue: the bias reaches the labels, and from them every share 04b measures."""
    from vlbias.data import load_dataset
    from vlbias.data.planted_world import small_pictures, spread_shares, world_root
    from vlbias.models import load_vision_language_model
    from vlbias.t2i.trained_models import WORLD_VQA_QUESTION

    test = load_dataset("planted-world", root=world_root(shares=spread_shares(0.0), seed=0), split="test")
    images = [Image.fromarray(p, mode="RGB") for p in small_pictures(test.pixels, 8)]
    truth = test.records["colour"].map({"red": "female", "blue": "male"}).to_numpy()
    answers, words = {"female": ["red"], "male": ["blue"]}, {"female": ["red"], "male": ["blue"]}
    rates = {}
    for spec in ("trained:world-vqa", "trained:world-vqa?red_answered_blue=0.8"):
        model = load_vision_language_model(spec, device="cpu")
        choice = vlm_labels(model, images, WORLD_VQA_QUESTION, answers, progress=False).labels
        free = vlm_free_labels(model, images, WORLD_VQA_QUESTION, words, max_new_tokens=8, progress=False)
        assert free.at_limit == 0
        rates[spec] = {reading: {colour: float(np.mean(labels[truth == colour] == colour)) for colour in ("female", "male")}
                       for reading, labels in (("choice", choice), ("free", free.labels))}
    for reading in ("choice", "free"):
        faithful, biased = rates["trained:world-vqa"][reading], rates["trained:world-vqa?red_answered_blue=0.8"][reading]
        assert faithful["female"] > 0.95 and faithful["male"] > 0.95
        assert biased["female"] < 0.3 and biased["male"] > 0.95
