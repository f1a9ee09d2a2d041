"""Part I controls on planted text geometry: the text-side control finds the group prompt planted
next to the person prompt, and WEAT on a text encoder runs Part III's code on template sentences."""

import hashlib

import numpy as np
import pandas as pd
import pytest

from vlbias.markedness.controls import (group_term_tests, text_beside_unmarked, text_encoder_weat,
                                        text_side_control, text_similarity_to_person)
from vlbias.markedness.prompts import RACES, prompt_set
from vlbias.weat import caliskan_tests, seat_sentences, weat_test

DIM = 64


def random_vector(text):
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    return np.random.default_rng(seed).normal(size=DIM)


def planted_embed(texts):
    """Random directions, except that every "White person" prompt sits next to its person prompt."""
    out = []
    for text in texts:
        if " a White person" in text:
            person = text.replace(" a White person", " a person")
            out.append(random_vector(person) + 0.1 * random_vector(text))
        else:
            out.append(random_vector(text))
    return np.array(out)


PREFIXES = ["a photo of", "a picture of", "an image of"]


def test_text_similarity_equals_hand_computed_cosines_and_ranks():
    table = text_similarity_to_person(planted_embed, PREFIXES)
    assert len(table) == 3 * (7 + 2 + 9)
    person, prompts = prompt_set("a picture of")
    p = random_vector(person)
    label = random_vector(prompts["gender"]["Female"])
    expected = p @ label / np.linalg.norm(p) / np.linalg.norm(label)
    row = table.query("prefix == 'a picture of' and group == 'Female'")
    assert row["cosine"].item() == pytest.approx(expected)
    for _, part in table.groupby(["prefix", "family"]):
        assert sorted(part["rank"]) == list(range(1, len(part) + 1))
        assert part.loc[part["cosine"].idxmax(), "rank"] == 1


def test_text_side_control_finds_the_planted_group_at_every_prefix():
    table = text_side_control(planted_embed, PREFIXES).set_index(["family", "group"])
    assert table.loc[("race", "White"), "nearest_rate_%"] == 100
    assert table.loc[("race", "White"), "mean_cosine"] > 0.9
    assert (table.loc["race"].drop("White")["nearest_rate_%"] == 0).all()
    assert (table["prefixes"] == 3).all()
    # every family has exactly one nearest prompt per prefix
    assert table.groupby(level="family")["nearest_rate_%"].sum().tolist() == pytest.approx([100, 100, 100])


def test_text_beside_unmarked_correlates_a_planted_image_side():
    text = text_similarity_to_person(planted_embed, PREFIXES)
    # image side planted as a monotone function of the text cosine, in both oldest-age wordings
    sensitivity = pd.concat([text.assign(oldest_age_wording=w, n=100, **{"unmarked_%": 50 + 40 * text["cosine"]})
                             for w in ("70 or more years old", "more than 70 years old")])
    merged, summary = text_beside_unmarked(text, sensitivity.drop(columns=["cosine", "rank", "nearest"]))
    assert len(merged) == len(text)
    assert summary.set_index("family")["spearman_rho"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    race = summary.set_index("family").loc["race"]
    assert race["unmarked_%_of_nearest"] > race["unmarked_%_of_others"]
    nothing_unmarked = sensitivity.assign(**{"unmarked_%": 0.0}).drop(columns=["cosine", "rank", "nearest"])
    assert text_beside_unmarked(text, nothing_unmarked)[1]["spearman_rho"].isna().all()
    with pytest.raises(ValueError, match="prompt prefixes"):
        text_beside_unmarked(text, sensitivity.assign(prefix="another prefix"))


def test_group_term_tests_pair_the_study_groups_with_caliskan_attributes():
    tests = group_term_tests()
    weat3 = next(t for t in caliskan_tests() if t["id"] == "WEAT3")
    assert [t["id"] for t in tests] == [f"White vs {r}" for r in RACES if r != "White"] + ["Female vs Male"]
    assert all(t["A"] == weat3["A"] and t["B"] == weat3["B"] for t in tests)
    assert tests[-1]["X"] == ["a female person", "a female child", "a female family", "a female student"]
    assert tests[0]["X"][1] == "a White man" and tests[0]["Y"][1] == "an East Asian man"
    with pytest.raises(ValueError, match="attributes_from"):
        group_term_tests("WEAT99")


class PlantedTextEncoder:
    """Sentences mentioning X-words or pleasant words point one way, Y-words or unpleasant the other."""

    spec, kind = "planted-text", "dual"

    def __init__(self, test):
        self.up = set(test["X"]) | set(test["A"])
        self.down = set(test["Y"]) | set(test["B"])
        self.direction = np.random.default_rng(0).normal(size=DIM)

    def encode_texts(self, texts, batch_size=256, progress=True):
        out = []
        for text in texts:
            sign = 1.0 if any(w in text for w in self.up) else -1.0 if any(w in text for w in self.down) else 0.0
            out.append(random_vector(text) + 3 * sign * self.direction)
        return np.array(out)


def test_text_encoder_weat_finds_a_planted_association():
    test = group_term_tests()[0]
    table = text_encoder_weat(PlantedTextEncoder(test), [test], n_permutations=2000, max_exact=1000)
    assert table["effect_size"].item() > 1.5 and table["p_value"].item() < 0.01


def test_text_encoder_weat_is_part_three_weat_on_template_sentences():
    from vlbias.models import load_image_text_model

    model = load_image_text_model("tiny:clip")
    test = group_term_tests()[-1]
    templates = ("a photo of {}.", "{} is here.")
    table = text_encoder_weat(model, [test], templates=templates, max_exact=10_000)
    vectors = [model.encode_texts(seat_sentences(test[key], templates), progress=False) for key in "XYAB"]
    expected = weat_test(*vectors, max_exact=10_000)
    assert table["effect_size"].item() == pytest.approx(expected.effect_size, rel=1e-6)
    assert table["p_value"].item() == pytest.approx(expected.p_value)
    assert table["n_X"].item() == 2 * 4


def test_text_encoder_weat_refuses_a_pairwise_matcher():
    class Matcher:
        spec, kind = "m", "pairwise"

    with pytest.raises(TypeError, match="text encoder"):
        text_encoder_weat(Matcher())
