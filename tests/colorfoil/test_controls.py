"""Part II controls on planted cases: blind baselines at chance when foils are as plausible as the
captions and above chance on a planted language prior; McNemar against scipy's binomial test; the
paired bootstrap against its closed-form spread."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats

from vlbias.colorfoil.evaluation import correct_at, per_colour_accuracy
from vlbias.colorfoil.controls import (blank_image, blind_comparison, blind_image_scores, language_model_scores,
                                       mcnemar_exact, mean_image, paired_accuracy_difference, paired_matrix,
                                       paired_model_table)
from vlbias.models.base import ImageTextModel, LanguageModel

COLOURS = ("blue", "black", "red", "pink", "yellow", "grey", "orange", "white", "green", "brown")
RGB = {colour: np.random.default_rng(i).integers(0, 256, 3) for i, colour in enumerate(COLOURS)}


def planted_benchmark(n, caption_weights=None, seed=0, max_foils=2):
    """Captions "a <colour> car", colours drawn with ``caption_weights``; foils uniform over the others."""
    rng = np.random.default_rng(seed)
    weights = np.full(len(COLOURS), 1 / len(COLOURS)) if caption_weights is None else np.asarray(caption_weights)
    rows = []
    for _ in range(n):
        colour = rng.choice(COLOURS, p=weights)
        others = rng.permutation([c for c in COLOURS if c != colour])[:max_foils]
        rows.append({"caption": f"a {colour} car", "foils": [f"a {c} car" for c in others], "words": [colour],
                     "n_foils": max_foils, "colour": colour})
    return pd.DataFrame(rows)


class UnigramModel(LanguageModel):
    """log P(text) = sum of fixed per-word log-probabilities: a language prior we plant."""

    spec, kind = "planted-unigram", "causal"

    def __init__(self, logprob):
        self.logprob = logprob

    def sequence_logprob(self, texts, batch_size=16, progress=True):
        return np.array([sum(self.logprob.get(w, -5.0) for w in text.split()) for text in texts])

    def fill_logprobs(self, *args, **kwargs):
        raise NotImplementedError

    def generate(self, *args, **kwargs):
        raise NotImplementedError


def random_prior(seed=1):
    values = np.random.default_rng(seed).permutation(len(COLOURS)).astype(float)  # distinct: no ties
    return {colour: -1.0 - 0.3 * v for colour, v in zip(COLOURS, values)}


def test_language_model_baseline_is_at_chance_when_foils_are_as_plausible_as_captions():
    benchmark = planted_benchmark(2000)
    scores = language_model_scores(UnigramModel(random_prior()), benchmark, max_foils=2, cache=False)
    _, correct = correct_at(scores, 1)
    # caption and foil colours are exchangeable, so P(caption beats foil) = 1/2 exactly
    assert abs(correct.mean() - 0.5) < 0.035
    _, correct2 = correct_at(scores, 2)
    assert abs(correct2.mean() - 1 / 3) < 0.035


def test_language_model_baseline_finds_a_planted_prior_without_the_image():
    prior = random_prior()
    favourite = max(prior, key=prior.get)
    weights = np.array([0.8 if c == favourite else 0.2 / 9 for c in COLOURS])
    scores = language_model_scores(UnigramModel(prior), planted_benchmark(2000, weights), max_foils=2, cache=False)
    assert correct_at(scores, 1)[1].mean() > 0.8


def test_language_model_scores_are_the_models_sequence_logprob_laid_out_per_row():
    benchmark = planted_benchmark(5).assign(n_foils=[2, 1, 2, 2, 0])
    model = UnigramModel(random_prior())
    scores = language_model_scores(model, benchmark, max_foils=2, cache=False)
    for row in range(5):
        texts = [benchmark.caption[row]] + benchmark.foils[row][:benchmark.n_foils[row]]
        np.testing.assert_allclose(scores[row, :len(texts)], model.sequence_logprob(texts))
        assert np.isnan(scores[row, len(texts):]).all()


def test_language_model_scores_through_a_real_causal_checkpoint():
    from vlbias.models import load_language_model

    model = load_language_model("tiny:causal-lm")
    benchmark = planted_benchmark(4)
    scores = language_model_scores(model, benchmark, max_foils=2, cache=True)
    again = language_model_scores(model, benchmark, max_foils=2, cache=True)  # from the cache
    direct = model.sequence_logprob([benchmark.caption[0], *benchmark.foils[0]], progress=False)
    np.testing.assert_allclose(scores[0], direct, rtol=1e-5)
    np.testing.assert_array_equal(scores, again)


class ColourMatcher(ImageTextModel):
    """Scores = language prior of the text's colour + ``vision`` x closeness of the image to that colour."""

    spec, kind, preprocess_id = "planted-matcher", "dual", "none"

    def __init__(self, prior, vision=1.0):
        self.prior, self.vision = prior, vision

    def score(self, images, texts, batch_size=32, progress=True):
        pixels = [np.asarray(image, float).reshape(-1, 3).mean(0) for image in images]
        colour = [next(c for c in COLOURS if f" {c} " in f" {t} ") for t in texts]
        return np.array([[self.prior[c] - self.vision * np.linalg.norm(p - RGB[c]) / 100 for c in colour]
                         for p in pixels])

    def score_candidates(self, images, candidates, batch_size=32, progress=True):
        return np.array([self.score([image], texts)[0] for image, texts in zip(images, candidates)])

    def encode_images(self, *args, **kwargs):
        raise NotImplementedError

    def encode_texts(self, *args, **kwargs):
        raise NotImplementedError


def test_blind_image_baseline_keeps_the_prior_and_loses_what_vision_adds():
    prior = {colour: 0.0 for colour in COLOURS}       # no language prior at all
    model = ColourMatcher(prior)
    benchmark = planted_benchmark(400)
    images = [Image.new("RGB", (8, 8), tuple(int(v) for v in RGB[c])) for c in benchmark.colour]
    seen = model.score_candidates(images, [[c, *f] for c, f in zip(benchmark.caption, benchmark.foils)])
    blind = blind_image_scores(model, benchmark, blank_image((8, 8)), max_foils=2)
    assert correct_at(seen, 1)[1].mean() == 1.0
    # one image for every row: each colour scores the same whatever the caption, so the ranking is
    # by colour alone and captions (uniform) win half the time
    assert abs(correct_at(blind, 1)[1].mean() - 0.5) < 0.07
    table = blind_comparison(benchmark, {"model": seen, "blank image": blind})
    assert table.loc["all colours", "model"] == 100.0
    assert table.loc["all colours", "n"] == 400
    reference = per_colour_accuracy(benchmark, blind, k=1).set_index("colour")
    pd.testing.assert_series_equal(table["blank image"].drop("all colours"), reference["accuracy_%"],
                                   check_names=False)


def test_blind_image_scores_do_not_depend_on_the_benchmark_images_and_match_score_candidates():
    from vlbias.models import load_image_text_model

    model = load_image_text_model("tiny:clip")
    benchmark = planted_benchmark(6)
    grey = blank_image((32, 32))
    ours = blind_image_scores(model, benchmark, grey, max_foils=2)
    theirs = model.score_candidates([grey] * 6, [[c, *f] for c, f in zip(benchmark.caption, benchmark.foils)],
                                    progress=False)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_mean_image_is_the_pixel_average():
    red, blue = Image.new("RGB", (4, 4), (200, 0, 0)), Image.new("RGB", (2, 2), (0, 0, 100))
    assert np.asarray(mean_image([red, blue], size=(4, 4)))[0, 0].tolist() == [100, 0, 50]
    with pytest.raises(ValueError, match="at least one"):
        mean_image([])


@pytest.mark.parametrize("a_only,b_only,both", [(7, 2, 10), (0, 5, 3), (12, 12, 0), (0, 0, 9), (30, 11, 40)])
def test_exact_mcnemar_equals_scipys_binomial_test(a_only, b_only, both):
    a = np.array([1] * a_only + [0] * b_only + [1] * both + [0] * 4, bool)
    b = np.array([0] * a_only + [1] * b_only + [1] * both + [0] * 4, bool)
    result = mcnemar_exact(a, b)
    expected = 1.0 if a_only + b_only == 0 else stats.binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert (result["a_only"], result["b_only"]) == (a_only, b_only)
    assert result["p_mcnemar"] == pytest.approx(expected, rel=1e-12)


def test_paired_bootstrap_interval_of_the_accuracy_difference():
    rng = np.random.default_rng(0)
    a = rng.random(3000) < 0.7
    b = np.where(rng.random(3000) < 0.8, a, ~a)       # agree on 80% of items
    result = paired_accuracy_difference(a, b, n_bootstrap=4000)
    assert result["difference"] == pytest.approx(a.mean() - b.mean())
    # the paired standard error: sd of the per-item differences over sqrt(n)
    se = (a.astype(float) - b).std() / np.sqrt(a.size)
    assert result["high"] - result["low"] == pytest.approx(2 * 1.96 * se, rel=0.1)
    same = paired_accuracy_difference(a, a)
    assert (same["difference"], same["low"], same["high"]) == (0.0, 0.0, 0.0)


def test_paired_model_table_and_matrix():
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(500, 3))
    good = truth.copy()
    good[:, 0] += 3.0                               # caption well ahead: nearly always right
    chance = truth                                  # caption and foils exchangeable
    table = paired_model_table({"good": good, "chance": chance, "copy": chance.copy()}, k=2, n_bootstrap=500)
    row = table.set_index(["model_a", "model_b"]).loc[("good", "chance")]
    assert row["difference_pp"] == pytest.approx(100 * (correct_at(good, 2)[1].mean() - correct_at(chance, 2)[1].mean()))
    assert row["low_pp"] > 40 and row["p_mcnemar"] < 1e-10
    same = table.set_index(["model_a", "model_b"]).loc[("chance", "copy")]
    assert same["p_mcnemar"] == 1.0 and same["difference_pp"] == 0.0
    matrix = paired_matrix(table)
    assert matrix.loc["chance", "good"] == -matrix.loc["good", "chance"]
    assert paired_matrix(table, "p_mcnemar").loc["chance", "good"] == row["p_mcnemar"]
    with pytest.raises(ValueError, match="value"):
        paired_matrix(table, "low_pp")
