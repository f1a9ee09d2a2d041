import numpy as np

from vlbias.colorfoil.foils import find_words, replace_words

COLOURS = ["red", "blue", "white", "light blue"]


def test_whole_words_only_and_case_insensitive():
    assert find_words("A colored bus covered in Red. paint", COLOURS) == ["red"]
    assert find_words("a light blue shirt and a white hat", COLOURS) == ["light blue", "white"]
    assert find_words("reddish bluebird", COLOURS) == []


def test_replacement_keeps_casing_and_punctuation():
    assert replace_words("Red. A red bus, RED!", {"red": "blue"}) == "Blue. A blue bus, BLUE!"


# --------------------------------------------------------------------------- k distinct foils

from vlbias.colorfoil.foils import alternatives_from_targets, distinct_foils, swap_alternatives  # noqa: E402

TARGETS = ["blue", "black", "red", "pink", "yellow", "grey", "orange", "white", "green", "brown"]


def test_every_colour_word_is_replaced_in_every_foil_keeping_casing():
    alternatives = alternatives_from_targets(["red", "white", "gray", "grey"], TARGETS)
    caption = "RED bus, a Red car and a white-ish red. Gray sky"
    foils = distinct_foils(caption, alternatives, 4, np.random.default_rng(1))
    assert len(foils) == 4
    for foil, mapping in foils:
        assert set(mapping) == {"red", "white", "gray"}
        new = mapping["red"]
        # all three "red"s change alike, each in its own casing; punctuation stays
        assert foil.startswith(f"{new.upper()} bus, a {new.capitalize()} car and a ")
        assert f"-ish {new}. " in foil and foil.endswith(" sky")
        assert mapping["gray"] not in ("gray", "grey") and mapping["white"] != "white"


def test_foils_differ_from_caption_and_each_other_and_are_seeded():
    alternatives = alternatives_from_targets(TARGETS + ["gray"], TARGETS)
    captions = ["a red bus", "Black and white photo.", "a gray cat on a grey mat", "pink, pink, PINK!"]
    for seed in range(20):
        for caption in captions:
            foils = [f for f, _ in distinct_foils(caption, alternatives, 4, np.random.default_rng(seed))]
            assert len(foils) == 4 and len({f.lower() for f in foils} | {caption.lower()}) == 5
            again = [f for f, _ in distinct_foils(caption, alternatives, 4, np.random.default_rng(seed))]
            assert again == foils
    draws = {tuple(f for f, _ in distinct_foils("a red bus", alternatives, 2, np.random.default_rng(s)))
             for s in range(10)}
    assert len(draws) > 1  # the seed matters


def test_foils_are_uniform_over_the_alternatives():
    # "red" has 9 alternatives: over many seeds each should be the first foil about 1/9 of the time
    alternatives = alternatives_from_targets(["red"], TARGETS)
    counts = {}
    for seed in range(2700):
        (foil, mapping), = distinct_foils("red", alternatives, 1, np.random.default_rng(seed))
        counts[mapping["red"]] = counts.get(mapping["red"], 0) + 1
    assert set(counts) == set(TARGETS) - {"red"}
    assert max(counts.values()) < 380 and min(counts.values()) > 220  # 300 expected, ~5 sd apart


def test_swaps_give_as_many_foils_as_exist():
    alternatives = swap_alternatives([("man", "woman"), ("small", "large"), ("small", "big")])
    assert distinct_foils("A man and a woman.", alternatives, 4, np.random.default_rng(0)) == [
        ("A woman and a man.", {"man": "woman", "woman": "man"})]
    foils = distinct_foils("a small dog", alternatives, 4, np.random.default_rng(0))
    assert sorted(f for f, _ in foils) == ["a big dog", "a large dog"]
    assert distinct_foils("a human", alternatives, 4, np.random.default_rng(0)) == []  # "man" is inside a word


def test_a_caption_without_a_colour_word_has_no_foil_and_spellings_are_not_foils():
    alternatives = alternatives_from_targets(["gray", "grey", "red"], ["grey", "gray", "red"])
    assert distinct_foils("a bus", alternatives, 2, np.random.default_rng(0)) == []
    for seed in range(30):
        (_, mapping), = distinct_foils("a gray cat", alternatives, 1, np.random.default_rng(seed))
        assert mapping == {"gray": "red"}
