"""The recipes of Part II's demo models: options, cache keys, the foils the matcher trains on."""

from __future__ import annotations

import numpy as np
import pytest

from vlbias.colorfoil.colour_model import ColourModelConfig, _key
from vlbias.colorfoil.foils import find_words
from vlbias.models.caption_world_models import matcher_pairs, strip_colour_words
from vlbias.models.trained import trained_options
from vlbias.paths import cache_dir


def test_strip_colour_words_leaves_no_colour():
    colours = ["red", "blue"]
    assert strip_colour_words("A red car next to a kite.", colours) == "A car next to a kite."
    assert strip_colour_words("Red car on the street", colours) == "Car on the street"
    assert strip_colour_words("A brightly colored bus", colours) == "A brightly colored bus"


def test_matcher_pairs_swap_only_the_main_colour():
    colours = ["red", "blue", "green"]
    captions = [["A car.", "A red car next to a bus."], ["The kite."], ["Blue bus", "a blue cup"]]
    pairs = matcher_pairs(captions, ["red", "green", "blue"], colours, np.random.default_rng(0))
    assert [p[0] for p in pairs] == [0, 2]  # image 1 has no caption naming its colour
    for index, caption, foil in pairs:
        main = ["red", "green", "blue"][index]
        assert find_words(caption, colours) == [main] and len(find_words(foil, colours)) == 1
        assert find_words(foil, colours) != [main]
        assert strip_colour_words(caption, colours) == strip_colour_words(foil, colours)


def test_a_changed_world_option_is_a_new_model():
    recipe, options = trained_options("caption-clip?colour_words=1")
    _, other = trained_options("caption-clip?colour_words=1&colour_share=0.5")
    _, without = trained_options("caption-clip?colour_words=0")
    targets = {str(recipe.target(**o)) for o in (options, other, without)}
    assert len(targets) == 3


def test_colour_words_must_be_zero_or_one():
    recipe, options = trained_options("caption-clip?colour_words=2")
    with pytest.raises(ValueError, match="colour_words"):
        recipe.target(**options)


def test_the_easy_vqa_model_is_02cs_directory():
    recipe, options = trained_options("easy-vqa-colour")
    config = ColourModelConfig(epochs=4, batch_size=128, learning_rate=0.002, seed=0)
    assert recipe.target(**options) == cache_dir() / "colour_model" / f"easy-vqa-clip-{_key(config)}"
