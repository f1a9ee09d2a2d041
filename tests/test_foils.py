import numpy as np

import pandas as pd

from vlbias.foils import find_words, foil_first_matching_caption, random_foil, replace_words

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


def test_spelling_variants_are_not_foils():
    rng = np.random.default_rng(0)
    for _ in range(30):
        _, mapping = random_foil("a gray cat", ["gray", "grey"], ["grey", "gray", "red"], rng)
        assert mapping == {"gray": "red"}


def test_first_matching_caption_per_image_is_seeded():
    records = pd.DataFrame({"image_id": [1, 2, 3], "captions": [["a cat", "a red cat"], ["a dog"], ["Blue sky.", "red"]]})
    first = foil_first_matching_caption(records, COLOURS, ["green", "pink"], seed=3)
    assert first["index"].tolist() == [0, 2] and first["caption"].tolist() == ["a red cat", "Blue sky."]
    assert first.equals(foil_first_matching_caption(records, COLOURS, ["green", "pink"], seed=3))
    assert foil_first_matching_caption(records, COLOURS, ["green"], max_images=1)["foil"].tolist() == ["a green cat"]
