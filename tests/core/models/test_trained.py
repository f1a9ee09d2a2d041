"""``trained:`` specs: parsed by the one spec parser, options checked, training reproducible, loaded
through the same loader as any saved checkpoint."""

from __future__ import annotations

import copy
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


def _weights(directory):
    return load_file(directory / "model.safetensors")


def test_side_by_side_training_gives_the_weights_of_training_one_after_another(tmp_path, monkeypatch):
    """Two mini-CLIPs and the world-diffusion model trained in two worker processes at once equal,
    tensor for tensor, the same three trained here one after another (each trains on one torch
    thread either way). Specs naming the same options train once; other specs are passed over."""
    from vlbias.models.trained import build_trained

    specs = [f"trained:{SMALL}", f"trained:{SMALL}&seed=1", "trained:world-diffusion?steps=4&train_per_kind=4",
             "trained:world-clip?train_per_kind=12&epochs=1&red_named=0.2", "tiny:clip"]  # the 4th is the 1st
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "one-after-another"))
    alone = [trained_checkpoint(parse_spec(spec).name) for spec in specs[:3]]
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "side-by-side"))
    built = build_trained(specs, workers=2)
    assert list(built) == specs[:4] and built[specs[0]] == built[specs[3]]
    for spec, directory in zip(specs[:2], alone[:2]):
        ours, theirs = _weights(built[spec]), _weights(directory)
        assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours), spec
    unet = "unet/diffusion_pytorch_model.safetensors"
    ours, theirs = load_file(built[specs[2]] / unet), load_file(alone[2] / unet)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    # a second call finds them built and starts no worker
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", None)
    assert build_trained(specs, workers=2) == built


def test_workers_default_to_the_cores_the_process_is_given(monkeypatch):
    from vlbias.device import cpu_budget

    monkeypatch.setenv("VLBIAS_CPUS", "3")
    assert cpu_budget() == 3
    monkeypatch.delenv("VLBIAS_CPUS")
    assert cpu_budget() == len(os.sched_getaffinity(0))
    for bad in ("0", "two"):
        monkeypatch.setenv("VLBIAS_CPUS", bad)
        with pytest.raises(ValueError, match="VLBIAS_CPUS=.*whole number of cores"):
            cpu_budget()


def test_caption_tokens_equal_the_tokenizers_own_padded_batch(tmp_path):
    """The mini-CLIP trainer tokenizes each distinct caption once (:class:`CaptionTokens`); every batch
    it builds is the tokenizer's own ``padding=True`` batch, key for key and id for id, whatever the
    captions' lengths and repeats."""
    from transformers import BertTokenizer

    from vlbias.models.mini_clip import CaptionTokens
    from vlbias.models.tiny.tokenizers import write_wordpiece_vocab

    write_wordpiece_vocab(tmp_path, extra_words=["red", "blue", "circle", "square", "photo"])
    tokenizer = BertTokenizer.from_pretrained(tmp_path, model_max_length=16)
    tokens = CaptionTokens(tokenizer)
    batches = [["a photo of a red circle", "blue", "a photo of a blue square with red", "blue"],
               ["red"], ["a photo of a red circle", "a circle"], ["zebra circle", "Red Circle"]]
    for captions in batches:
        ours, theirs = tokens(captions), tokenizer(captions, padding=True, return_tensors="pt")
        assert list(ours) == list(theirs)
        assert all(torch.equal(ours[name], theirs[name]) for name in theirs), captions
    assert len(tokens.encoded) == 7  # each distinct caption encoded once


def test_foreach_adamw_and_ema_update_bit_for_bit_as_the_per_tensor_loop():
    """The trainers step AdamW with ``foreach=True`` and average with ``torch._foreach_lerp_`` (faster on a
    CPU: one call for every tensor); both give the weights of the per-tensor loop they replaced exactly,
    so the models trained in the book did not change (checked on 01c's mini-CLIP and 04e's diffusion
    model as well, against their earlier checkpoints)."""
    torch.manual_seed(0)
    template = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(4, 8), torch.nn.Flatten(),
                                   torch.nn.Linear(8 * 6 * 6, 5))
    models = [copy.deepcopy(template) for _ in range(2)]
    optimizers = [torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, foreach=foreach)
                  for model, foreach in zip(models, (False, True))]
    averages = [[p.detach().clone() for p in model.parameters()] for model in models]
    for step in range(6):
        x = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(step))
        for index, (model, optimizer) in enumerate(zip(models, optimizers)):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
            with torch.no_grad():
                if index == 0:
                    for mean, parameter in zip(averages[0], model.parameters()):
                        mean.lerp_(parameter, 1 - 0.99)
                else:
                    torch._foreach_lerp_(averages[1], list(model.parameters()), 1 - 0.99)
    loop, together = (list(model.parameters()) for model in models)
    assert all(torch.equal(a, b) for a, b in zip(loop, together))
    assert all(torch.equal(a, b) for a, b in zip(*averages))
    assert not torch.equal(loop[0], template[0].weight)  # the weights did move
