import numpy as np

from vlbias.foils import find_words, random_foil, replace_words

COLOURS = ["red", "blue", "white", "light blue"]


def test_whole_words_only_and_case_insensitive():
    assert find_words("A colored bus covered in Red. paint", COLOURS) == ["red"]
    assert find_words("a light blue shirt and a white hat", COLOURS) == ["light blue", "white"]
    assert find_words("reddish bluebird", COLOURS) == []


def test_replacement_keeps_casing_and_punctuation():
    assert replace_words("Red. A red bus, RED!", {"red": "blue"}) == "Blue. A blue bus, BLUE!"


def test_random_foil_never_keeps_the_original_colour():
    rng = np.random.default_rng(0)
    for _ in range(50):
        foil, mapping = random_foil("a red bus near a white house", COLOURS, ["red", "white", "blue"], rng)
        assert mapping["red"] != "red" and mapping["white"] != "white"
        assert foil == replace_words("a red bus near a white house", mapping)
    assert random_foil("a bus", COLOURS, ["red"], rng) is None
