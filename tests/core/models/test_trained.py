"""``trained:`` specs: parsed by the one spec parser, options checked, training reproducible, loaded
through the same loader as any saved checkpoint."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from vlbias.models import load_image_text_model, parse_spec
from vlbias.models.trained import trained_checkpoint, trained_options

SMALL = "world-clip?epochs=1&train_per_kind=12&red_named=0.2"


def test_spec_parser_knows_trained_models():
    parsed = parse_spec("trained:world-clip?red_named=0.1")
    assert (parsed.source, parsed.name) == ("trained", "world-clip?red_named=0.1")


def test_options_take_defaults_and_the_defaults_types():
    recipe, options = trained_options("world-clip?red_named=0.1&epochs=3")
    assert options["red_named"] == 0.1 and options["blue_named"] == recipe.defaults["blue_named"]
    assert options["epochs"] == 3 and isinstance(options["epochs"], int)
    assert trained_options("world-clip")[1] == recipe.defaults


def test_bad_options_name_the_option_and_the_known_ones():
    with pytest.raises(ValueError, match="no option 'colour_named'.*red_named="):
        trained_options("world-clip?colour_named=0.1")
    with pytest.raises(ValueError, match="epochs='many' is not a int"):
        trained_options("world-clip?epochs=many")
    with pytest.raises(KeyError, match="Known: .*world-clip"):
        trained_options("no-such-recipe")


def test_training_reproduces_bit_for_bit_under_its_seed(tmp_path, monkeypatch):
    """Two trainings from empty caches give identical weights (same machine, same thread count).

    Stated tolerance: exactly equal tensors. Across machines or thread counts float summation order
    may differ; the book's numbers then agree to the tolerance of the measures, not bit for bit.
    """
    weights = []
    for cache in ("first", "second"):
        monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / cache))
        weights.append(load_file(trained_checkpoint(SMALL) / "model.safetensors"))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "third"))
    other_seed = load_file(trained_checkpoint(SMALL + "&seed=1") / "model.safetensors")
    assert not all(torch.equal(weights[0][k], other_seed[k]) for k in other_seed)


def test_a_trained_spec_is_built_once_and_loads_like_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path))
    model = load_image_text_model(f"trained:{SMALL}", device="cpu")
    directory = trained_checkpoint(SMALL)
    stamp = os.stat(directory / "model.safetensors").st_mtime_ns
    again = load_image_text_model(f"trained:{SMALL}", device="cpu")
    assert os.stat(directory / "model.safetensors").st_mtime_ns == stamp
    assert model.weights_id == again.weights_id
    direct = load_image_text_model(str(directory), device="cpu")
    # one identity for one set of files, whichever spec reached them (a fingerprint of the directory)
    assert direct.cache_identity() == model.cache_identity() and model.identity.weights.startswith("sha256:")
    texts = ["a photo of a red circle", "a photo of a star"]
    assert np.allclose(model.encode_texts(texts), direct.encode_texts(texts))
