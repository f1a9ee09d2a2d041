"""The published numbers of Part I and the helpers that set ours beside them."""

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
