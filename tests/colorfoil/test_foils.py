import numpy as np
import pytest

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


def test_alternative_tables_are_keyed_by_lower_case_words():
    assert alternatives_from_targets(["Red", "GRAY"], ["red", "blue"]) == {"red": ["blue"], "gray": ["red", "blue"]}
    assert swap_alternatives([("Man", "Woman"), ("man", "Boy")]) == {"man": ["woman", "boy"], "woman": ["man"],
                                                                    "boy": ["man"]}


def test_distinct_foils_k_vocabulary_and_fewer_combinations_than_k():
    with pytest.raises(ValueError, match="^k must be at least 1, got 0$"):
        distinct_foils("a red bus", {"red": ["blue"]}, 0, np.random.default_rng(0))
    alternatives = {"red": ["green"], "blue": ["pink"]}
    # only the vocabulary's words are replaced, even when other words have alternatives
    (foil, mapping), = distinct_foils("a red and blue bus", alternatives, 3, np.random.default_rng(0), vocabulary=["red"])
    assert foil == "a green and blue bus" and mapping == {"red": "green"}
    # one combination exists: one foil, however many are asked for
    assert [f for f, _ in distinct_foils("a man", swap_alternatives([("man", "woman")]), 3,
                                         np.random.default_rng(0))] == ["a woman"]


def test_distinct_foils_of_a_caption_with_more_combinations_than_int64_holds():
    # 30 words with 9 alternatives each: 9**30 ~ 4e28 combinations, past numpy's integers
    words = [f"w{i}" for i in range(30)]
    alternatives = {word: [f"{word}x{j}" for j in range(9)] for word in words}
    foils = distinct_foils(" ".join(words), alternatives, 20, np.random.default_rng(1))
    assert len(foils) == 20 and len({foil for foil, _ in foils}) == 20
    for foil, mapping in foils:
        assert all(mapping[word] in alternatives[word] for word in words)
        assert foil == " ".join(mapping[word] for word in words)
    assert foils == distinct_foils(" ".join(words), alternatives, 20, np.random.default_rng(1))
    # uniform over all combinations: the last word varies too (a total cut to int64 would pin it)
    assert len({mapping["w29"] for _, mapping in foils}) > 3


def test_longest_word_first_one_letter_capitals_and_empty_vocabulary():
    assert find_words("a blue green car", ["blue", "blue green"]) == ["blue green"]
    assert replace_words("a blue green car", {"blue": "red", "blue green": "teal"}) == "a teal car"
    assert replace_words("I saw it", {"i": "we"}) == "We saw it"  # one capital letter: capitalised, not upper
    with pytest.raises(ValueError, match="^empty vocabulary$"):
        find_words("a red car", [])


def test_foils_equal_to_the_text_or_to_each_other_ignoring_case_are_dropped():
    # "red" -> "red" repeats the text; "blue" and "BLUE" give one foil up to case
    foils = distinct_foils("a red car", {"red": ["blue", "BLUE", "red"]}, 3, np.random.default_rng(0))
    assert len(foils) == 1 and foils[0][0].lower() == "a blue car"


def test_asking_for_more_foils_than_combinations_gives_every_combination_once():
    alternatives = {"red": [f"c{i}" for i in range(12)], "blue": [f"d{i}" for i in range(12)]}
    foils = distinct_foils("red and blue", alternatives, 200, np.random.default_rng(0))
    assert sorted(f for f, _ in foils) == sorted(f"c{i} and d{j}" for i in range(12) for j in range(12))


def test_big_integer_draws_are_uniform_below_the_total_and_distinct():
    from vlbias.colorfoil.foils import _distinct_large

    # 6 needs 3 bits: a byte shifted right by 5; each value about 1/6 of 3,000 single draws
    counts = np.bincount([_distinct_large(np.random.default_rng(seed), 6, 1)[0] for seed in range(3000)], minlength=6)
    assert len(counts) == 6 and counts.min() > 400 and counts.max() < 600
    assert sorted(_distinct_large(np.random.default_rng(0), 5, 5)) == [0, 1, 2, 3, 4]
    assert sorted(_distinct_large(np.random.default_rng(0), 256, 256)) == list(range(256))  # 8 bits, no shift
    assert sorted(_distinct_large(np.random.default_rng(0), 100, 100)) == list(range(100))  # 7 bits
