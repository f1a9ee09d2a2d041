"""The published numbers of Part I and the helpers that set ours beside them."""

import numpy as np
import pandas as pd
import pytest

from vlbias import book
from vlbias.markedness import (AGES, GENDERS, RACES, bounds_check, extremes, prompt_set, published_as_unmarked,
                               table4_counts, with_group_label)


def test_published_file_holds_the_numbers_the_issue_quotes():
    published = book.published("markedness_wolfe2022")
    assert "Wolfe" in published.attrs["source"]
    value = published.set_index(["measure", "family", "group"])["value"]
    assert value.loc[("self_similarity", "race", "White")] == 0.573
    assert value.loc[("self_similarity", "gender", "Female")] == 0.592
    assert value.loc[("self_similarity", "age", "0-2")] == 0.692
    assert sorted(value.loc[("unmarked_rate", "gender", "Male")].tolist()) == [26.6, 26.7]
    assert sorted(value.loc[("unmarked_rate", "age", "30-39")].tolist()) == [57.9, 59.0]
    assert value.loc[("unmarked_rate", "age", "more than 70")] == 6.7
    # every group names labels the data use, in the race, gender, age order
    labels = set(RACES) | set(GENDERS) | set(AGES)
    for group in published[~published.measure.isin(["table4_count", "self_similarity_gap"])].group:
        assert all(part in labels for part in group.split(", ")), group
    assert published["where"].str.len().min() > 0


def test_marked_rates_are_restated_as_unmarked():
    published = pd.DataFrame({"measure": ["marked_rate", "marked_rate_min", "unmarked_rate"],
                              "family": ["gender"] * 3, "group": ["Female, 30-39", "Female, 10-19", "Male"],
                              "value": [91.5, 85.0, 26.7], "where": ["a", "b", "c"]})
    result = published_as_unmarked(published)
    assert result.measure.tolist() == ["unmarked_rate", "unmarked_rate_max", "unmarked_rate"]
    assert result.value.tolist() == pytest.approx([8.5, 15.0, 26.7])


def test_bounds_check_compares_in_the_right_direction():
    ours = with_group_label(pd.DataFrame({"race": ["White", "Black"], "rate": [47.0, 20.0]}), ["race"])
    published = pd.DataFrame({"measure": ["rate_min", "rate_max", "rate_max"], "group": ["White", "Black", "Indian"],
                              "value": [40.0, 16.8, 1.5], "where": ["x", "y", "z"]})
    result = bounds_check(ours, published, "rate", "rate")
    assert result.group.tolist() == ["White", "Black"]  # Indian is not in our table
    assert result.holds.tolist() == [True, False] and result["paper says"].tolist() == ["≥ 40", "≤ 16.8"]


def test_table4_counts_on_a_hand_built_ranking():
    rows = [("White", "Male", "30-39"), ("White", "Male", "60-69"), ("Black", "Male", "20-29"),
            ("Indian", "Female", "0-2"), ("White", "Female", "more than 70"), ("Black", "Female", "3-9")]
    table = pd.DataFrame(rows, columns=["race", "gender", "age"]).assign(mean=[0.1, 0.2, 0.3, 0.9, 0.8, 0.7])
    counts = table4_counts(extremes(table, k=3)).set_index("group")["ours"]
    assert counts["least 10: Male"] == 3 and counts["least 10: White"] == 2
    assert counts["least 10: White and Male"] == 2 and counts["least 10: races represented"] == 2
    assert counts["least 10: aged 20-59"] == 2 and counts["least 10: aged 60 or more"] == 1
    assert counts["most 10: under 10 or more than 70"] == 3 and counts["most 10: Female"] == 3
    assert counts["most 10: White"] == 1


def test_prompt_set_builds_person_and_label_prompts_from_one_prefix():
    person, prompts = prompt_set("a picture of", "more than 70 years old")
    assert person == "a picture of a person"
    assert prompts["race"]["Black"] == "a picture of a Black person"
    assert prompts["age"]["more than 70"] == "a picture of a person more than 70 years old"
    assert prompt_set()[1]["age"]["more than 70"] == "a photo of a person 70 or more years old"


def test_label_phrasings_can_be_replaced():
    _, prompts = prompt_set(race_phrases={"Latino_Hispanic": "a Hispanic"}, gender_words={"Female": "woman"})
    assert prompts["race"]["Latino_Hispanic"] == "a photo of a Hispanic person"
    assert prompts["race"]["Black"] == "a photo of a Black person"
    assert prompts["gender"] == {"Female": "a photo of a woman person", "Male": "a photo of a male person"}


def fake_text_embed(texts):
    """Deterministic pseudo-embeddings per text (a hash seeds each vector)."""
    import zlib

    return np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=8) for t in texts])


def fixture_like_records(seed=0, per_cell=2):
    rows = [(r, g, a) for r in RACES for g in GENDERS for a in AGES for _ in range(per_cell)]
    return pd.DataFrame(rows, columns=["race", "gender", "age"])


def test_prompt_sensitivity_against_cosines_of_hand_written_prompts():
    from vlbias.markedness import prompt_sensitivity

    records = fixture_like_records()
    images = np.random.default_rng(1).normal(size=(len(records), 8))
    table = prompt_sensitivity(records, images, fake_text_embed, ["a photo of", "a picture of"])
    assert len(table) == 2 * 2 * (7 + 2 + 9)
    unit = images / np.linalg.norm(images, axis=1, keepdims=True)

    def cosines(*texts):
        vectors = fake_text_embed(list(texts))
        return unit @ (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).T

    for prefix in ("a photo of", "a picture of"):
        for wording in ("70 or more years old", "more than 70 years old"):
            rows = table[(table.prefix == prefix) & (table.oldest_age_wording == wording)]
            person = cosines(f"{prefix} a person")[:, 0]
            gender = person > cosines(f"{prefix} a female person", f"{prefix} a male person").max(axis=1)
            ages = [f"{prefix} a person between {a} and {b} years old"
                    for a, b in (("0", "2"), ("3", "9"), ("10", "19"), ("20", "29"), ("30", "39"), ("40", "49"),
                                 ("50", "59"), ("60", "69"))] + [f"{prefix} a person {wording}"]
            age = person > cosines(*ages).max(axis=1)
            for family, flags in (("gender", gender), ("age", age)):
                got = rows[rows.family == family].set_index("group")["unmarked_%"]
                for label in got.index:
                    expected = 100 * flags[(records[family] == label).to_numpy()].mean()
                    assert got[label] == pytest.approx(expected), (prefix, wording, family, label)
    # the oldest-age wording changes the age family only
    photo = table[table.prefix == "a photo of"]
    code, paper = (photo[photo.oldest_age_wording == w].reset_index(drop=True)
                   for w in ("70 or more years old", "more than 70 years old"))
    same = code.family != "age"
    assert code[same]["unmarked_%"].tolist() == paper[same]["unmarked_%"].tolist()
    assert code[~same]["unmarked_%"].tolist() != paper[~same]["unmarked_%"].tolist()


def test_gap_tables_cover_the_headline_comparisons():
    from vlbias.markedness import rate_gap_table, self_similarity_gap_table, unmarked_flags

    records = fixture_like_records(per_cell=3)
    rng = np.random.default_rng(2)
    images = rng.normal(size=(len(records), 8))
    flags = unmarked_flags(images, fake_text_embed)
    rates = rate_gap_table(records, flags, permutations=200)
    assert len(rates) == 6 + 3 + 3 and rates.p_value.between(0, 1).all()
    white, black = flags["race"][(records.race == "White").to_numpy()], flags["race"][(records.race == "Black").to_numpy()]
    row = rates.set_index("comparison").loc["White vs Black"]
    assert row.gap == pytest.approx(100 * (white.mean() - black.mean()))
    gaps = self_similarity_gap_table(records, images, permutations=50)
    assert len(gaps) == 6 + 3 + 1 and "White Male vs Black Female" in gaps.comparison.tolist()
