import numpy as np
import pytest
import pandas as pd

from scipy import stats

from vlbias.markedness import (AGES, GENDERS, RACES, is_unmarked, label_prompts, self_similarity_by_group,
                              unmarked_rates)


def test_label_prompts_follow_released_code():
    prompts = label_prompts()
    assert list(prompts["race"]) == list(RACES) and list(prompts["gender"]) == list(GENDERS)
    assert list(prompts["age"]) == list(AGES)
    assert prompts["race"]["Latino_Hispanic"] == "a photo of a Latino or Hispanic person"
    assert prompts["race"]["East Asian"] == "a photo of an East Asian person"
    assert prompts["gender"]["Female"] == "a photo of a female person"
    assert prompts["age"]["20-29"] == "a photo of a person between 20 and 29 years old"
    assert prompts["age"]["more than 70"] == "a photo of a person 70 or more years old"
    assert label_prompts(oldest_age_wording="more than 70 years old")["age"]["more than 70"].endswith("more than 70 years old")
    assert len(RACES) * len(GENDERS) * len(AGES) == 126


def test_is_unmarked_requires_beating_every_label():
    person = np.array([0.30, 0.30, 0.30])
    labels = np.array([[0.10, 0.29], [0.10, 0.31], [0.30, 0.20]])  # beats all; loses; ties (marked)
    assert is_unmarked(person, labels).tolist() == [True, False, False]


def test_unmarked_rates_with_wilson_intervals_in_label_order():
    records = pd.DataFrame({"race": ["White", "White", "Black", "Black", "Black", "Indian"]})
    table = unmarked_rates(records, np.array([1, 0, 1, 1, 1, 0], bool), by="race")
    assert table["race"].tolist() == ["Indian", "White", "Black"]  # the paper's order, not alphabetical
    assert table["n"].tolist() == [1, 2, 3]
    assert table["unmarked_%"].tolist() == [0.0, 50.0, 100.0]
    ci = stats.binomtest(1, 2).proportion_ci(method="wilson")
    white = table.set_index("race").loc["White"]
    assert white["ci_low_%"] == pytest.approx(100 * ci.low) and white["ci_high_%"] == pytest.approx(100 * ci.high)


def test_self_similarity_by_group_against_all_pairs():
    rng = np.random.default_rng(1)
    records = pd.DataFrame({"gender": ["Male"] * 4 + ["Female"] * 3 + ["Male"], "age": ["3-9"] * 3 + ["0-2"] * 5})
    x = rng.normal(size=(8, 5))
    table = self_similarity_by_group(records, x, ["gender", "age"])
    assert table[["gender", "age"]].values.tolist() == [["Female", "0-2"], ["Male", "0-2"], ["Male", "3-9"]]
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    for _, row in table.iterrows():
        index = np.flatnonzero((records.gender == row.gender) & (records.age == row.age))
        pairs = [unit[i] @ unit[j] for i in index for j in index if i != j]
        assert row.n == len(index) and row.self_similarity == pytest.approx(np.mean(pairs))
