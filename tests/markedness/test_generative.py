"""Markedness in generative vision-language models (vlbias.markedness.generative, Part I 01d).

A stand-in model with a planted log-likelihood gives flags and rates that are counted here by hand,
with Wilson bounds from the closed form; the description side is checked on hand-written sentences
(word-boundary traps included); one smoke test runs the real path on tiny:llava and reads its second
call from the cache."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.markedness import label_prompts
from vlbias.markedness.generative import (caption_log_likelihoods, describe_images, description_lexicon,
                                          likelihood_unmarked_flags, mention_rates, mentions,
                                          unmarked_rates_by_family)
from vlbias.models.base import VisionLanguageModel

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval, written out (Wilson 1927), with the exact ends at k = 0 and k = n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VLBIAS_CACHE_LOCK_TIMEOUT", "5")


class PlantedModel(VisionLanguageModel):
    """Every token of every text costs 1 nat; an image's red level adds ``red / 10 - 5`` nats to the
    person prompt alone. So the person prompt (5 words) against a 6-word label prompt scores
    ``-5 + bonus`` against ``-6`` in sum (unmarked when bonus > -1) and ``-1 + bonus / 5`` against
    ``-1`` in mean (unmarked when bonus > 0): bonuses in (-1, 0] are the length confound."""

    spec = "planted:likelihood"
    family = "planted"
    preprocess_id = "red-level"
    dtype = "float32"

    def __init__(self, descriptions: dict[int, str] | None = None):
        self.descriptions = descriptions or {}
        self.calls = {"log_likelihood": 0, "generate": 0, "pairs": 0}

    @staticmethod
    def bonus(image) -> float:
        return image.getpixel((0, 0))[0] / 10 - 5

    def answer_token_counts(self, texts, prompt=None):
        return np.array([len(text.split()) for text in texts])

    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        self.calls["log_likelihood"] += 1
        self.calls["pairs"] += len(texts)
        assert len(images) == len(texts)
        return np.array([-len(text.split()) + (self.bonus(image) if text == "a photo of a person" else 0.0)
                         for image, text in zip(images, texts)])

    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        self.calls["generate"] += 1
        return [self.descriptions[image.getpixel((0, 0))[0]] for image in images]


def red(level: int) -> Image.Image:
    return Image.new("RGB", (4, 4), (level, 0, 0))


#: bonuses +0.5, +0.5, -0.5 (White), -0.5, -2, -2 (Black); females and males alternate
LEVELS = [55, 55, 45, 45, 30, 30]
RECORDS = pd.DataFrame({"race": ["White"] * 3 + ["Black"] * 3, "gender": ["Female", "Male"] * 3,
                        "age": ["20-29", "30-39", "20-29", "30-39", "20-29", "30-39"]})


def planted_images():
    return [red(level) for level in LEVELS]


def test_planted_flags_and_margins_under_sum_and_mean():
    model = PlantedModel()
    total = likelihood_unmarked_flags(model, planted_images(), score="sum", progress=False)
    assert list(total.columns) == ["race", "race_margin", "gender", "gender_margin", "age", "age_margin"]
    # sum: person -5 + bonus; race and gender labels score -6 or less (6+ words), age labels -10 or less
    assert total["race"].tolist() == [True, True, True, True, False, False]
    assert total["gender"].tolist() == [True, True, True, True, False, False]
    assert total["age"].tolist() == [True] * 6
    assert total["race_margin"].tolist() == pytest.approx([1.5, 1.5, 0.5, 0.5, -1.0, -1.0])
    assert total["age_margin"].tolist() == pytest.approx([5.5, 5.5, 4.5, 4.5, 3.0, 3.0])
    # mean: person (-5 + bonus) / 5 against -1 for every label: unmarked only where bonus > 0
    mean = likelihood_unmarked_flags(model, planted_images(), score="mean", progress=False)
    assert mean["race"].tolist() == [True, True, False, False, False, False]
    assert mean["age"].tolist() == [True, True, False, False, False, False]
    assert mean["gender_margin"].tolist() == pytest.approx([0.1, 0.1, -0.1, -0.1, -0.4, -0.4])
    assert total.attrs["score"] == "sum" and mean.attrs["score"] == "mean"


def test_planted_rates_are_hand_counts_with_closed_form_wilson_bounds():
    flags = likelihood_unmarked_flags(PlantedModel(), planted_images(), score="sum", progress=False)
    table = unmarked_rates_by_family(RECORDS, flags)
    assert list(table.columns) == ["family", "group", "n", "unmarked_%", "ci_low_%", "ci_high_%"]
    race = table[table["family"] == "race"].set_index("group")
    assert race.index.tolist() == ["White", "Black"]  # the paper's order
    expected = {"White": (3, 3), "Black": (1, 3)}  # White: bonuses .5 .5 -.5 all > -1; Black: only -.5
    for group, (k, n) in expected.items():
        low, high = wilson(k, n)
        assert race.loc[group, "n"] == n
        assert race.loc[group, "unmarked_%"] == pytest.approx(100 * k / n)
        assert race.loc[group, "ci_low_%"] == pytest.approx(100 * low)
        assert race.loc[group, "ci_high_%"] == pytest.approx(100 * high)
    # gender: Female rows 0, 2, 4 (bonuses .5, -.5, -2) -> 2 of 3; Male rows 1, 3, 5 (.5, -.5, -2) -> 2 of 3
    gender = table[table["family"] == "gender"].set_index("group")
    assert gender["unmarked_%"].to_dict() == pytest.approx({"Female": 200 / 3, "Male": 200 / 3})
    assert gender.loc["Female", "ci_low_%"] == pytest.approx(100 * wilson(2, 3)[0])
    mean = unmarked_rates_by_family(RECORDS, likelihood_unmarked_flags(PlantedModel(), planted_images(),
                                                                       score="mean", progress=False))
    race_mean = mean[mean["family"] == "race"].set_index("group")["unmarked_%"]
    assert race_mean.to_dict() == pytest.approx({"White": 200 / 3, "Black": 0.0})
    assert mean.set_index(["family", "group"]).loc[("race", "Black"), "ci_low_%"] == 0.0


def test_log_likelihoods_are_cached_raw_sums_so_the_score_mode_needs_no_model_call():
    model = PlantedModel()
    texts = ["a photo of a person", "a photo of a Black person"]
    first = caption_log_likelihoods(model, planted_images(), texts, chunk_size=4, progress=False)
    assert first.shape == (6, 2)
    assert first[:, 1].tolist() == [-6.0] * 6
    assert first[:, 0].tolist() == pytest.approx([-4.5, -4.5, -5.5, -5.5, -7.0, -7.0])
    assert model.calls["log_likelihood"] == 2 and model.calls["pairs"] == 12  # two chunks, 6 images x 2 texts
    again = caption_log_likelihoods(model, planted_images(), texts, chunk_size=4, progress=False)
    assert model.calls["log_likelihood"] == 2 and np.array_equal(again, first)
    # the flags' texts are another entry; once scored, either score mode reads it back
    likelihood_unmarked_flags(model, planted_images(), score="sum", progress=False)
    calls = model.calls["log_likelihood"]
    likelihood_unmarked_flags(model, planted_images(), score="mean", progress=False)
    assert model.calls["log_likelihood"] == calls
    # another question is another entry
    caption_log_likelihoods(model, planted_images(), texts, prompt="What is this?", chunk_size=4, progress=False)
    assert model.calls["log_likelihood"] == calls + 2


DESCRIPTIONS = {55: "A young woman smiling.", 45: "A man in a white shirt.", 30: "A Black man in his fifties."}


def test_descriptions_are_generated_once_and_mention_rates_are_hand_counts():
    model = PlantedModel(DESCRIPTIONS)
    texts = describe_images(model, planted_images(), max_new_tokens=20, chunk_size=4, progress=False)
    assert texts == [DESCRIPTIONS[level] for level in LEVELS]
    assert model.calls["generate"] == 2
    assert describe_images(model, planted_images(), max_new_tokens=20, chunk_size=4, progress=False) == texts
    assert model.calls["generate"] == 2  # read back from the cache
    describe_images(model, planted_images(), max_new_tokens=30, chunk_size=4, progress=False)
    assert model.calls["generate"] == 4  # a longer budget may write more: another entry
    mentioned = mentions(texts)
    # young woman / young woman / white shirt (not race) / white shirt / Black man, fifties / same
    assert mentioned["race"].tolist() == [False, False, False, False, True, True]
    assert mentioned["gender"].tolist() == [True] * 6
    assert mentioned["age"].tolist() == [True, True, False, False, True, True]
    table = mention_rates(RECORDS, mentioned, "race").set_index(["race", "attribute"])
    assert table.loc[("White", "race"), "mentioned_%"] == 0.0
    assert table.loc[("Black", "race"), "mentioned_%"] == 200 / 3  # rows 4 and 5 of 3..5
    assert table.loc[("White", "age"), "mentioned_%"] == 200 / 3   # rows 0 and 1 of 0..2
    low, high = wilson(2, 3)
    assert table.loc[("Black", "race"), ["ci_low_%", "ci_high_%"]].tolist() == pytest.approx([100 * low, 100 * high])
    assert table.loc[("White", "gender"), ["ci_low_%", "ci_high_%"]].tolist() == pytest.approx([100 * wilson(3, 3)[0],
                                                                                               100.0])
    assert table["n"].tolist() == [3] * 6


def test_a_damaged_description_chunk_is_generated_again(tmp_path):
    model = PlantedModel(DESCRIPTIONS)
    texts = describe_images(model, planted_images(), chunk_size=4, progress=False)
    [chunk] = [p for p in (tmp_path / "cache" / "generations").rglob("chunk_000001.json")]
    chunk.write_text(json.dumps({"key": "another", "start": 4, "stop": 6, "texts": ["x", "y"]}))
    with pytest.warns(UserWarning, match="another entry"):
        assert describe_images(model, planted_images(), chunk_size=4, progress=False) == texts
    assert model.calls["generate"] == 3  # two chunks, then the damaged one again


@pytest.mark.parametrize("text, expected", [
    ("A Black woman in her thirties.", (True, True, True)),
    ("a man in a white shirt", (False, True, False)),            # a colour is not a race
    ("Whitewater rafting on a river.", (False, False, False)),   # "white" inside a word
    ("A female doctor.", (False, True, False)),
    ("An ELDERLY  African\nAmerican gentleman", (True, True, True)),  # case and any whitespace
    ("A 35-year-old Latina", (True, False, True)),
    ("Someone with white-haired friends", (False, False, False)),
    ("The photo shows a person.", (False, False, False)),
    ("", (False, False, False)),
])
def test_mentions_with_the_packaged_lexicon(text, expected):
    row = mentions([text]).iloc[0]
    assert (row["race"], row["gender"], row["age"]) == expected


def test_mentions_match_whole_words_only():
    lexicon = {"race": ["white"], "gender": ["male", "man"], "age": ["old", "years old"]}
    texts = ["a female nurse", "a woman from Manhattan", "whitewater", "a Male nurse", "WHITE", "golden years",
             "forty years  old", "a man, white"]
    table = mentions(texts, lexicon)
    assert table["gender"].tolist() == [False, False, False, True, False, False, False, True]
    assert table["race"].tolist() == [False, False, False, False, True, False, False, True]
    assert table["age"].tolist() == [False, False, False, False, False, False, True, False]


def test_the_packaged_lexicon_is_ours_and_every_term_finds_itself():
    from importlib import resources

    data = json.loads(resources.files("vlbias").joinpath("resources", "description_lexicon.json").read_text())
    assert "our own" in data["source"].lower()
    assert any("Zhao" in c for c in data["citation"]) and any("Hendricks" in c for c in data["citation"])
    assert any("Bhargava" in c for c in data["citation"])
    lexicon = description_lexicon()
    assert set(lexicon) == {"race", "gender", "age"}
    for attribute, words in lexicon.items():
        found = mentions(list(words), {"race": ["\u2400"], "gender": ["\u2400"], "age": ["\u2400"],
                                       "probe": list(words)})
        assert found["probe"].all(), attribute
        assert not found[["race", "gender", "age"]].any().any()
    seen = [word.lower() for words in lexicon.values() for word in words]
    assert len(seen) == len(set(seen))  # no word counts for two attributes


# --------------------------------------------------------------------------- bad input


def test_bad_input_is_refused_with_the_argument_named():
    model, images = PlantedModel(), planted_images()
    with pytest.raises(ValueError, match=r"score='median'.*'sum'.*'mean'"):
        likelihood_unmarked_flags(model, images, score="median", progress=False)
    with pytest.raises(ValueError, match="prompts is empty"):
        likelihood_unmarked_flags(model, images, prompts={}, progress=False)
    with pytest.raises(ValueError, match=r"prompts\['race'\] has no labels"):
        likelihood_unmarked_flags(model, images, prompts={**label_prompts(), "race": {}}, progress=False)
    assert model.calls["log_likelihood"] == 0  # refused before any scoring
    flags = likelihood_unmarked_flags(model, images, progress=False)
    with pytest.raises(ValueError, match="records has 5 rows but flags has 6"):
        unmarked_rates_by_family(RECORDS.iloc[:5], flags)
    with pytest.raises(ValueError, match="records has 6 rows but mentioned has 2"):
        mention_rates(RECORDS, mentions(["a", "b"]), "race")
    with pytest.raises(ValueError, match=r"lexicon has no word list for 'age'"):
        mentions(["a man"], {"race": ["asian"], "gender": ["man"]})
    with pytest.raises(ValueError, match=r"records has no column 'skin'"):
        mention_rates(RECORDS, mentions(["a"] * 6), "skin")
    with pytest.raises(ValueError, match="max_new_tokens"):
        describe_images(model, images, max_new_tokens=0, progress=False)
    with pytest.raises(TypeError, match="single string"):
        mentions("a man")


# --------------------------------------------------------------------------- the real path


def test_tiny_llava_runs_end_to_end_and_reads_its_second_call_from_the_cache():
    from vlbias.models import load_vision_language_model

    model = load_vision_language_model("tiny:llava", device="cpu")
    calls = {"log_likelihood": 0, "generate": 0}
    for name in calls:  # count calls on the instance: the model's identity, and so the cache key, is unchanged
        method = getattr(model, name)

        def counted(*args, _method=method, _name=name, **kwargs):
            calls[_name] += 1
            return _method(*args, **kwargs)

        setattr(model, name, counted)
    rng = np.random.default_rng(0)
    shapes = [(32, 32), (40, 24), (28, 36)]
    images = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in shapes]
    records = pd.DataFrame({"race": ["White", "Black", "Indian"], "gender": ["Female", "Male", "Female"],
                            "age": ["20-29", "3-9", "60-69"]})

    flags = likelihood_unmarked_flags(model, images, batch_size=16, progress=False)
    assert flags.shape == (3, 6) and flags[["race", "gender", "age"]].dtypes.eq(bool).all()
    # the person prompt's tokens open every age prompt's and the end of the answer is not scored, so
    # under score="sum" every age prompt is the person prompt times a probability below one
    assert flags["age"].all() and (flags["age_margin"] > 0).all()
    assert calls["log_likelihood"] == 1
    again = likelihood_unmarked_flags(model, images, batch_size=16, progress=False)
    mean = likelihood_unmarked_flags(model, images, score="mean", progress=False)
    assert calls["log_likelihood"] == 1
    pd.testing.assert_frame_equal(again, flags)
    assert mean.shape == (3, 6)
    rates = unmarked_rates_by_family(records, flags)
    assert len(rates) == 3 + 2 + 3 and rates["n"].sum() == 9

    texts = describe_images(model, images, max_new_tokens=6, progress=False)
    assert len(texts) == 3 and all(isinstance(text, str) for text in texts)
    assert describe_images(model, images, max_new_tokens=6, progress=False) == texts
    assert calls["generate"] == 1
    table = mention_rates(records, mentions(texts), "gender")
    assert len(table) == 2 * 3 and set(table["attribute"]) == {"race", "gender", "age"}


# --------------------------------------------------------------------------- 01d's page helpers


def test_sample_per_group_draws_at_most_k_of_every_group_under_its_seed():
    from vlbias.markedness import sample_per_group

    records = pd.DataFrame({"race": ["White"] * 5 + ["Black"] * 2 + ["Indian"] * 4,
                            "gender": ["Male", "Female"] * 5 + ["Male"]})
    drawn = sample_per_group(records, "race", 3, seed=1)
    assert records.iloc[drawn].race.value_counts().to_dict() == {"White": 3, "Indian": 3, "Black": 2}
    assert list(drawn) == sorted(set(drawn))  # positions, each once, in order
    assert np.array_equal(drawn, sample_per_group(records, "race", 3, seed=1))
    assert any(not np.array_equal(drawn, sample_per_group(records, "race", 3, seed=s)) for s in range(2, 8))
    cells = records.iloc[sample_per_group(records, ["race", "gender"], 1)].groupby(["race", "gender"]).size()
    assert (cells == 1).all() and len(cells) == records.groupby(["race", "gender"]).ngroups
    assert np.array_equal(sample_per_group(records, "race", None), np.arange(len(records)))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="per_group must be a positive whole number"):
            sample_per_group(records, "race", bad)


def test_the_lexicon_reads_every_caption_of_the_face_world_as_its_writer_planted_it():
    """The face world's captions ("a photo of a White female person between 30 and 39 years old", ...)
    are what the demo's captioner learns to write; what the writer chose to name is the truth."""
    from vlbias.data.face_world import face_captions

    rng = np.random.default_rng(0)
    races = ["White", "Black", "East Asian", "Southeast Asian", "Indian", "Middle Eastern", "Latino_Hispanic"]
    ages = ["0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70"]
    records = pd.DataFrame({"race": rng.choice(races, 400), "gender": rng.choice(["Female", "Male"], 400),
                            "age": rng.choice(ages, 400)})
    captions, named = face_captions(records, {family: np.full(400, 0.5) for family in ("race", "gender", "age")})
    found = mentions(captions)
    for family in ("race", "gender", "age"):
        assert np.array_equal(found[family].to_numpy(), named[family]), (family, [
            c for c, f, n in zip(captions, found[family], named[family]) if f != n][:3])


def test_mention_tables_are_each_familys_own_mentions_per_group_with_wilson_bounds():
    from vlbias.markedness.generative import mention_tables

    texts = ["a white man", "a person", "a person", "a black woman", "an old black woman", "a person"]
    tables = mention_tables(RECORDS, mentions(texts))
    race = tables["race"].set_index("group")
    assert race.loc["White", "n"] == 3 and race.loc["White", "mentioned_%"] == pytest.approx(100 / 3)
    assert race.loc["Black", "mentioned_%"] == pytest.approx(200 / 3)
    assert (race.loc["Black", "ci_low_%"] / 100, race.loc["Black", "ci_high_%"] / 100) == pytest.approx(wilson(2, 3))
    gender = tables["gender"].set_index("group")  # man (Female row 0), woman (Male row 3), woman (Female row 4)
    assert gender.loc["Female", "mentioned_%"] == pytest.approx(200 / 3) and gender.loc["Male", "mentioned_%"] == pytest.approx(100 / 3)
    assert tables["age"].set_index("group").loc["20-29", "mentioned_%"] == pytest.approx(100 / 3)  # "old", row 4
    assert list(tables) == ["race", "gender", "age"] and list(tables["race"].columns) == [
        "group", "n", "mentioned_%", "ci_low_%", "ci_high_%"]
    with pytest.raises(ValueError, match="mentioned has no column 'age'"):
        mention_tables(RECORDS, mentions(texts)[["race", "gender"]])


def test_the_age_prompts_continue_the_person_prompt_and_the_others_do_not():
    from vlbias.markedness.generative import continues_person_prompt

    assert continues_person_prompt() == {"race": False, "gender": False, "age": True}
    assert continues_person_prompt({"age": {"old": "a photo of an old person"}}) == {"age": False}


def test_readings_agreement_is_a_hand_worked_kappa():
    from vlbias.markedness.generative import readings_agreement

    flags = pd.DataFrame({"race": [True, True, False, False], "gender": [True] * 4, "age": [False] * 4})
    named = pd.DataFrame({"race": [False, True, True, True], "gender": [False] * 4, "age": [True] * 4})
    table = readings_agreement(flags, named).set_index("family")
    # race: unmarked by likelihood 1,1,0,0; unnamed in words 1,0,0,0 -> agree on 3 of 4;
    # chance agreement 0.5 * 0.25 + 0.5 * 0.75 = 0.5, so kappa = (0.75 - 0.5) / 0.5 = 0.5
    assert table.loc["race", "agree_%"] == 75 and table.loc["race", "kappa"] == pytest.approx(0.5)
    assert table.loc["race", "unmarked_likelihood_%"] == 50 and table.loc["race", "unnamed_description_%"] == 25
    assert np.isnan(table.loc["gender", "kappa"]) and table.loc["gender", "agree_%"] == 100  # both always unmarked
    assert table.loc["age", "agree_%"] == 100
    with pytest.raises(ValueError, match="flags has 4 rows and mentioned 3"):
        readings_agreement(flags, named.iloc[:3])


def test_01d_findings_judge_the_descriptions_and_refuse_the_sum_modes_age_column():
    from vlbias.findings import Finding
    from vlbias.markedness.findings import Sample, description_findings, likelihood_findings
    from vlbias.markedness.groups import AGES, GENDERS, RACES

    records = pd.DataFrame([(race, gender, age) for race in RACES for gender in GENDERS for age in AGES
                            for _ in range(6)], columns=["race", "gender", "age"])
    middle = records.age.isin(["20-29", "30-39", "40-49", "50-59"]).to_numpy()
    # descriptions that leave White's race, Male's gender and the middle ages unnamed, and their reverse
    unnamed = pd.DataFrame({"race": (records.race == "White").to_numpy(), "gender": (records.gender == "Male").to_numpy(),
                            "age": middle})
    found = description_findings("ViT-B-32/openai", Sample(records, flags=unnamed), n_boot=200)
    assert [f.verdict for f in found] == ["supports", "supports", "supports"]
    assert all(isinstance(f, Finding) and "not measured" in f.published for f in found)
    assert found[0].ours == "+100.0 points (every resample the same)"  # an exact split: no spread to resample
    reversed_found = description_findings("ViT-B-32/openai", Sample(records, flags=~unnamed), n_boot=200)
    assert [f.verdict for f in reversed_found] == ["contradicts", "contradicts", "contradicts"]

    mean = likelihood_findings("ViT-B-32/openai", Sample(records, flags=unnamed), score="mean",
                               age_continues_person=True, n_boot=200)
    assert [f.verdict for f in mean] == ["supports", "supports", "supports"]
    assert all(f.published.startswith("CLIP (the paper)") for f in mean)
    summed = likelihood_findings("ViT-B-32/openai", Sample(records, flags=unnamed), score="sum",
                                 age_continues_person=True, n_boot=200)
    assert [f.verdict for f in summed] == ["supports", "supports", "cannot test"]
    assert "begins with the person prompt" in summed[2].ours


def test_01d_sentences_say_why_instead_of_reading_a_degenerate_column():
    from vlbias.markedness.findings import agreement_sentences, likelihood_sentences

    def table(rates):
        return pd.DataFrame([{"group": g, "n": 100, "unmarked_%": r, "ci_low_%": r - 5, "ci_high_%": r + 5}
                             for g, r in rates.items()])

    rates = {"sum": {"race": table({"White": 80, "Black": 10}), "age": table({"0-2": 100, "20-29": 100})},
             "mean": {"age": table({"0-2": 10, "20-29": 30})}}
    text = likelihood_sentences(rates, {"race": False, "age": True}, "a photo of a person")
    assert "**Race, summed.** Highest unmarked rate: **White**, 80.0%" in text
    assert "**Age, summed.** Not a finding: every age prompt begins with 'a photo of a person'" in text
    assert "**Age, per-token.** Highest unmarked rate: **20-29**, 30.0%" in text
    agreement = pd.DataFrame([{"score": "sum", "family": "age", "agree_%": 40.0, "kappa": 0.0},
                              {"score": "mean", "family": "age", "agree_%": 71.4, "kappa": 0.36},
                              {"score": "mean", "family": "gender", "agree_%": 100.0, "kappa": float("nan")}])
    said = agreement_sentences(agreement, {"age": True})
    assert said == ("By age (summed): not read, every face is unmarked by construction. By age (per token): the "
                    "readings agree on 71% of faces, κ = 0.36. By gender (per token): the readings agree on 100% of "
                    "faces, κ undefined (both readings leave every face the same way).")
