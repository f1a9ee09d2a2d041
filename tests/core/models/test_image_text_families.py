"""SigLIP, SigLIP 2, Chinese-CLIP and BLIP's two heads (issue 26, item 1) on their ``tiny:`` fixtures.

Each fixture is loaded through the path a downloaded checkpoint takes and compared with a second load of the
same files by transformers itself, run with its own processor the way each family's documentation scores.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from vlbias.models import tiny_checkpoint
from vlbias.models.image_text import (BlipContrastiveEncoder, BlipMatcher, HFDualEncoder, HFSiglipEncoder,
                                      load_image_text_model)

TEXTS = ["a photo of a nurse", "a red apple", "a photo of a woman who is a doctor"]
TEXTS_ZH = ["一个人", "七个人在上下", "中万丁"]  # ideographs the tiny vocabulary holds (its first 500)

_models: dict[tuple, object] = {}


def tiny(name: str, head: str | None = None):
    if (name, head) not in _models:
        _models[name, head] = load_image_text_model(f"tiny:{name}", head=head)
    return _models[name, head]


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)) for _ in range(3)]


@pytest.mark.parametrize("name, head, wrapper, kind", [
    ("siglip", None, HFSiglipEncoder, "dual"), ("siglip2", None, HFSiglipEncoder, "dual"),
    ("chinese-clip", None, HFDualEncoder, "dual"), ("blip", None, BlipMatcher, "pairwise"),
    ("blip", "contrastive", BlipContrastiveEncoder, "dual")])
def test_families_load_their_saved_weights(name, head, wrapper, kind):
    model = tiny(name, head)
    assert type(model) is wrapper and model.kind == kind
    saved = load_file(str(tiny_checkpoint(name) / "model.safetensors"))
    state = model.model.state_dict()
    for key, tensor in saved.items():
        torch.testing.assert_close(state[key], tensor, rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("name", ["siglip", "siglip2"])
def test_siglip_logits_and_probabilities_equal_transformers(name, images):
    from transformers import AutoProcessor, SiglipModel

    model = tiny(name)
    directory = tiny_checkpoint(name)
    reference = SiglipModel.from_pretrained(directory).eval()
    processor = AutoProcessor.from_pretrained(directory)
    with torch.no_grad():  # SigLIP's documented call: texts padded to max_length
        inputs = processor(text=TEXTS, images=images, padding="max_length", max_length=16, return_tensors="pt")
        want = reference(**inputs).logits_per_image.numpy()
    cosines = model.score(images, TEXTS, progress=False)
    assert model.max_length == 16 and np.ptp(want) > 1e-3
    np.testing.assert_allclose(model.logits(cosines), want, atol=1e-4)
    np.testing.assert_allclose(model.probabilities(cosines), 1 / (1 + np.exp(-want)), rtol=1e-4)
    # the logit is increasing in the cosine: the ranking of candidates is the same either way
    np.testing.assert_array_equal(np.argsort(cosines, axis=1), np.argsort(want, axis=1))


def test_siglip_text_embeddings_do_not_depend_on_their_batch():
    model = tiny("siglip")
    alone = model.encode_texts(TEXTS[:1], progress=False)
    with_longer = model.encode_texts(TEXTS, progress=False)[:1]
    np.testing.assert_allclose(alone, with_longer, atol=1e-6)


def test_siglip_preprocessing_is_a_square_resize_recorded_in_the_identity():
    siglip, siglip2 = tiny("siglip"), tiny("siglip2")
    for model in (siglip, siglip2):
        assert model.preprocess_id.startswith("SiglipImageProcessor:")
        assert "size=(('height', 32), ('width', 32))" in model.preprocess_id and "crop" not in model.preprocess_id
    assert "resample=3" in siglip.preprocess_id and "resample=2" in siglip2.preprocess_id  # SigLIP 2: bilinear
    assert type(siglip2.tokenizer).__name__ == "GemmaTokenizer"


def test_chinese_clip_scores_equal_transformers(images):
    from transformers import AutoProcessor, ChineseCLIPModel

    model = tiny("chinese-clip")
    directory = tiny_checkpoint("chinese-clip")
    reference = ChineseCLIPModel.from_pretrained(directory).eval()
    processor = AutoProcessor.from_pretrained(directory)
    assert processor.tokenizer.unk_token_id not in processor.tokenizer(TEXTS_ZH)["input_ids"][0]
    with torch.no_grad():
        output = reference(**processor(text=TEXTS_ZH, images=images, padding=True, return_tensors="pt"))
    want = output.logits_per_image.numpy() / reference.logit_scale.exp().item()
    got = model.score(images, TEXTS_ZH, progress=False)
    assert np.ptp(want) > 1e-4
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_blip_heads_equal_transformers(images):
    from transformers import AutoProcessor, BlipForImageTextRetrieval

    directory = tiny_checkpoint("blip")
    reference = BlipForImageTextRetrieval.from_pretrained(directory).eval()
    processor = AutoProcessor.from_pretrained(directory)
    with torch.no_grad():
        itm = np.array([[reference(**processor(images=image, text=text, return_tensors="pt")).itm_score[0].numpy()
                         for text in TEXTS] for image in images])
        contrastive = reference(**processor(images=images, text=TEXTS, padding=True, return_tensors="pt"),
                                use_itm_head=False).itm_score.numpy()
    matcher, dual = tiny("blip"), tiny("blip", "contrastive")
    got = matcher.score(images, TEXTS, progress=False)
    np.testing.assert_allclose(got, itm[..., 1] - itm[..., 0], atol=1e-5)
    probability = np.exp(itm[..., 1]) / np.exp(itm).sum(-1)  # BLIP's reported match score
    np.testing.assert_allclose(1 / (1 + np.exp(-got)), probability, atol=1e-6)
    np.testing.assert_allclose(dual.score(images, TEXTS, progress=False), contrastive, atol=1e-5)
    assert matcher.identity.key() != dual.identity.key()  # one checkpoint, two heads, never one cache entry


def test_bad_options_and_checkpoints_have_clear_errors(tmp_path):
    with pytest.raises(ValueError, match=r"head='bogus'.*'itm'.*'contrastive'"):
        load_image_text_model("tiny:blip", head="bogus")
    with pytest.raises(ValueError, match=r"head= applies to 'blip' checkpoints only.*'siglip'"):
        load_image_text_model("tiny:siglip", head="itm")
    with pytest.raises(ValueError, match="head= applies to BLIP checkpoints only"):
        load_image_text_model("open_clip:ViT-B-32/openai", head="itm")
    config = json.loads((tiny_checkpoint("blip") / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "architectures": ["BlipForConditionalGeneration"]}))
    with pytest.raises(ValueError, match="BlipForConditionalGeneration checkpoint.*BlipForImageTextRetrieval"):
        load_image_text_model(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "owlvit"}))
    with pytest.raises(ValueError, match=r"'owlvit' checkpoint.*blip.*chinese_clip.*siglip"):
        load_image_text_model(str(tmp_path))


def test_a_softmax_model_has_no_sigmoid_probabilities():
    model = load_image_text_model("tiny:open-clip")
    assert model.logit_bias is None
    with pytest.raises(TypeError, match="softmax"):
        model.probabilities(np.zeros((1, 1)))


def test_open_clip_siglip_probabilities_equal_open_clip(images):
    import open_clip

    model = load_image_text_model("tiny:open-clip-siglip")
    assert model.logit_bias == pytest.approx(-10.0) and "resize_mode=squash" in model.preprocess_id
    directory = tiny_checkpoint("open-clip-siglip")
    reference, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{directory}")
    tokenizer = open_clip.get_tokenizer(f"local-dir:{directory}")
    with torch.no_grad():  # open_clip's SigLIP logits: scale * cosine + bias, read as sigmoid probabilities
        image_features, text_features, scale, bias = reference.eval()(
            torch.stack([preprocess(image) for image in images]), tokenizer(TEXTS))
        want = (scale * image_features @ text_features.T + bias).numpy()
    cosines = model.score(images, TEXTS, progress=False)
    np.testing.assert_allclose(model.logits(cosines), want, atol=1e-4)
    np.testing.assert_allclose(model.probabilities(cosines), 1 / (1 + np.exp(-want)), rtol=1e-4)
