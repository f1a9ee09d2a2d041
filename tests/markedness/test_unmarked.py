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


# prompt sensitivity and the gap tables on pseudo-embeddings (moved here from test_published.py:
# this file is in mutmut's fast selection)
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


def test_unmarked_inputs_are_checked_with_named_errors():
    from vlbias.markedness.unmarked import checked_flags

    with pytest.raises(ValueError, match=r"^label_scores must be \(n, k\) with n=3, got \(2, 2\)$"):
        is_unmarked(np.zeros(3), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"^label_scores must be \(n, k\) with n=3, got \(3,\)$"):
        is_unmarked(np.zeros(3), np.zeros(3))
    assert checked_flags([1, 0, 1.0], 3).tolist() == [True, False, True] and checked_flags([1, 0.0], 2).dtype == bool
    with pytest.raises(ValueError, match=r"^flags must hold one flag per record \(3\), got shape \(2,\)$"):
        checked_flags([1, 0], 3, name="flags")
    with pytest.raises(ValueError, match=r"^unmarked has 2 value\(s\) that are not True/False \(NaN or missing "
                                         r"scores\?\); drop those records or recompute their flags$"):
        checked_flags([1, np.nan, 2], 3)
    with pytest.raises(ValueError, match=r"^unmarked has 1 value\(s\) that are not True/False"):
        checked_flags(["yes", 1, 0], 3)


def test_unmarked_flags_use_the_given_person_prompt_and_name_zero_embeddings():
    from vlbias.markedness import unmarked_flags

    prompts = {"colour": {"red": "a red thing", "blue": "a blue thing"}}
    table = {"a thing": [1.0, 0.0], "a red thing": [0.0, 1.0], "a blue thing": [-1.0, 0.0], "x": [0.0, -1.0]}
    images = np.array([[1.0, 0.1], [0.1, 1.0], [-1.0, 0.0]])

    def embed(texts):
        return np.array([table[t] for t in texts])

    # person "a thing" points at (1, 0): it wins for the first image only
    assert unmarked_flags(images, embed, prompts, person_prompt="a thing")["colour"].tolist() == [True, False, False]
    # a person prompt that is also a label is embedded once and never beats itself
    assert not unmarked_flags(images, embed, prompts, person_prompt="a red thing")["colour"].any()
    with pytest.raises(ValueError, match="^image_embeddings has 1 row"):
        unmarked_flags(np.vstack([images, np.zeros(2)]), embed, prompts, person_prompt="a thing")
    with pytest.raises(ValueError, match="^text embeddings has 1 row"):
        unmarked_flags(images, lambda texts: np.vstack([embed(texts)[:-1], np.zeros(2)]), prompts,
                       person_prompt="a thing")


def test_balanced_table_defaults_sample_size_and_mean_by_hand():
    from vlbias.markedness import unmarked_table

    records = pd.DataFrame({"race": ["White"] * 10 + ["Black"] * 4})
    flags = np.array([1] * 7 + [0] * 3 + [1, 0, 0, 0], bool)
    table = unmarked_table(records, flags, "race", balance=True)
    assert table.equals(unmarked_table(records, flags, "race", balance=True, repetitions=10_000, seed=0))
    assert not table.equals(unmarked_table(records, flags, "race", balance=True, seed=1))
    white = table.set_index("race").loc["White"]
    # 4 of White's 10 images, 7 unmarked: hypergeometric mean 4 * 7/10 of 4, i.e. 70%
    assert white["sample_size"] == 4 and white["balanced_%"] == pytest.approx(70, abs=1.0)
    assert (white["balanced_low_%"], white["balanced_high_%"]) == (25.0, 100.0)  # 1 and 4 of 4 (2.5%, 97.5%)
    black = table.set_index("race").loc["Black"]
    assert black["balanced_%"] == black["unmarked_%"] == 25.0  # the smallest group is drawn whole
    assert np.isnan(black["balanced_low_%"]) and np.isnan(black["balanced_high_%"])  # exact: no interval of zero width
    assert "balanced_%" not in unmarked_table(records, flags, "race").columns  # not balanced by default


def test_balanced_interval_is_the_hypergeometric_quantiles_at_the_confidence():
    from scipy import stats as scipy_stats

    from vlbias.markedness import unmarked_table

    # 20 of White's 50 images drawn, 25 unmarked: at confidence 0.5 the quartiles of Hypergeom(50, 25, 20)
    # are 9 and 11 (each well inside its atom), i.e. 45% and 55%
    records = pd.DataFrame({"race": ["White"] * 50 + ["Black"] * 20})
    flags = np.array([1] * 25 + [0] * 25 + [1] * 5 + [0] * 15, bool)
    white = unmarked_table(records, flags, "race", balance=True, confidence=0.5).set_index("race").loc["White"]
    quartiles = scipy_stats.hypergeom(50, 25, 20).ppf([0.25, 0.75])
    assert tuple(100 * quartiles / 20) == pytest.approx((45.0, 55.0))
    assert (white["balanced_low_%"], white["balanced_high_%"]) == pytest.approx((45.0, 55.0))


def test_unmarked_by_selects_records_and_names_groups():
    from vlbias.markedness import unmarked_by, unmarked_columns, unmarked_table

    records = pd.DataFrame({"race": ["White", "White", "Black", "Black", "White"],
                            "gender": ["Male", "Female", "Male", "Male", "Male"]})
    flags = pd.DataFrame({"race": [True, False, True, False, False], "gender": [False] * 5})
    where = np.array([True, True, True, True, False])
    table = unmarked_by(records, flags, "race", ["race", "gender"], where=where)
    assert table["group"].tolist() == ["White, Female", "White, Male", "Black, Male"]  # the paper's label order
    assert table["unmarked_%"].tolist() == [0.0, 100.0, 50.0] and table["n"].tolist() == [1, 1, 2]
    everyone = unmarked_by(records, flags, "race", "race")
    pd.testing.assert_frame_equal(everyone.drop(columns="group"), unmarked_table(records, flags["race"].to_numpy(), "race"))
    at_90 = unmarked_by(records, flags, "race", "race", confidence=0.90)  # options reach unmarked_table
    pd.testing.assert_frame_equal(at_90.drop(columns="group"),
                                  unmarked_table(records, flags["race"].to_numpy(), "race", confidence=0.90))
    assert unmarked_columns(True) == ("balanced_%", "balanced_low_%", "balanced_high_%")
    assert unmarked_columns(False) == ("unmarked_%", "ci_low_%", "ci_high_%")


def test_prompt_sensitivity_uses_the_given_phrasings_and_a_fresh_index():
    from vlbias.markedness import prompt_sensitivity
    from vlbias.markedness.prompts import RACE_PHRASES

    records = fixture_like_records()
    images = np.random.default_rng(3).normal(size=(len(records), 8))
    table = prompt_sensitivity(records, images, fake_text_embed, ["a photo of"], ["70 or more years old"],
                               race_phrases={"Black": "an African"}, gender_words={"Female": "woman", "Male": "man"})
    assert table.columns.tolist() == ["prefix", "oldest_age_wording", "family", "group", "n", "unmarked_%"]
    assert table.index.tolist() == list(range(len(table)))
    unit = images / np.linalg.norm(images, axis=1, keepdims=True)

    def cosines(*texts):
        vectors = fake_text_embed(list(texts))
        return unit @ (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).T

    person = cosines("a photo of a person")[:, 0]
    gender = person > cosines("a photo of a woman person", "a photo of a man person").max(axis=1)
    rows = table[table.family == "gender"].set_index("group")
    for label in ("Female", "Male"):
        assert rows.loc[label, "unmarked_%"] == pytest.approx(100 * gender[(records.gender == label).to_numpy()].mean())
    race_prompts = [f"a photo of {'an African' if race == 'Black' else phrase} person"
                    for race, phrase in RACE_PHRASES.items()]
    race = person > cosines(*race_prompts).max(axis=1)
    black = table[(table.family == "race") & (table.group == "Black")]
    assert black["unmarked_%"].item() == pytest.approx(100 * race[(records.race == "Black").to_numpy()].mean())
    # a race phrase that makes its label the person prompt itself: never beaten, every race rate is 0
    tie = prompt_sensitivity(records, images, fake_text_embed, ["a photo of"], ["70 or more years old"],
                             race_phrases={"Black": "a"})
    assert (tie[tie.family == "race"]["unmarked_%"] == 0).all() and (table[table.family == "race"]["unmarked_%"] > 0).any()
