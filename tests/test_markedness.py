import numpy as np
import pandas as pd

from vlbias.markedness import AGES, GENDERS, RACES, is_unmarked, label_prompts, unmarked_table


def test_label_prompts_follow_released_code():
    prompts = label_prompts()
    assert list(prompts["race"]) == list(RACES) and list(prompts["gender"]) == list(GENDERS)
    assert list(prompts["age"]) == list(AGES)
    assert prompts["race"]["Latino_Hispanic"] == "a photo of a Latino or Hispanic person"
    assert prompts["race"]["East Asian"] == "a photo of an East Asian person"
    assert prompts["gender"]["Female"] == "a photo of a female person"
    assert prompts["age"]["20-29"] == "a photo of a person between 20 and 29 years old"
    assert prompts["age"]["more than 70"] == "a photo of a person 70 or more years old"
    assert label_prompts("a photo of a person more than 70 years old")["age"]["more than 70"].endswith("more than 70 years old")
    assert len(RACES) * len(GENDERS) * len(AGES) == 126


def test_is_unmarked_requires_beating_every_label():
    person = np.array([0.30, 0.30, 0.30])
    labels = np.array([[0.10, 0.29], [0.10, 0.31], [0.30, 0.20]])  # beats all; loses; ties (marked)
    assert is_unmarked(person, labels).tolist() == [True, False, False]


def test_unmarked_table_rates():
    records = pd.DataFrame({"race": ["A", "A", "B", "B", "B"]})
    table = unmarked_table(records, {"race": np.array([1, 0, 1, 1, 1], bool)}, by="race")
    assert table.loc["A", "race"] == 50.0 and table.loc["B", "race"] == 100.0
    assert table["n"].tolist() == [2, 3]
