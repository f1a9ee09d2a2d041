"""SigLIP, SigLIP 2 (fixed resolution and NaFlex), Chinese-CLIP and BLIP's two heads (issue 26, item 1) on their ``tiny:`` fixtures.

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
from vlbias.models.image_text import (BlipContrastiveEncoder, BlipMatcher, HFDualEncoder, HFSiglip2Encoder,
                                      HFSiglipEncoder, load_image_text_model)

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
    ("siglip2-naflex", None, HFSiglip2Encoder, "dual"),
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
    with pytest.raises(ValueError, match="head= applies to 'blip' checkpoints only, and this is an open_clip model"):
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


def test_blips_head_is_chosen_in_the_spec_as_by_the_keyword(images):
    from vlbias import models

    by_spec = models.load_image_text_model("tiny:blip?head=contrastive")
    assert isinstance(by_spec, BlipContrastiveEncoder) and by_spec.kind == "dual"
    np.testing.assert_array_equal(by_spec.score(images, TEXTS, progress=False),
                                  tiny("blip", "contrastive").score(images, TEXTS, progress=False))
    # either spelling is one model, one cache; the matching head (the default) is another
    assert by_spec.identity.key() == tiny("blip", "contrastive").identity.key()
    assert by_spec.identity.spec == "tiny:blip?head=contrastive" and by_spec.spec == "tiny:blip?head=contrastive"
    assert isinstance(models.load_image_text_model("tiny:blip?head=itm"), BlipMatcher)
    with pytest.raises(ValueError, match=r"asks for head='contrastive' and the call for head='itm'"):
        models.load_image_text_model("tiny:blip?head=contrastive", head="itm")
    with pytest.raises(ValueError, match=r"heads= is no option of an image-text model; the options are head= \(blip\)"):
        models.load_image_text_model("tiny:blip?heads=itm")
    with pytest.raises(ValueError, match=r"head= applies to 'blip' checkpoints only.*'siglip'"):
        models.load_image_text_model("tiny:siglip?head=contrastive")
    with pytest.raises(ValueError, match="and this is an open_clip model"):
        models.load_image_text_model("ViT-B-32/openai?head=itm")


CASED = ["A Photo of a Nurse", "a RED apple", "A photo of a woman who is a Doctor"]


def test_siglip2_reads_its_texts_lowercased_as_it_was_trained(images):
    """SigLIP 2 was trained on lowercased text; transformers 5 reads the fixed-resolution checkpoints' tokenizer as
    GemmaTokenizer, which keeps the case, so our path lowercases: its scores are the reference's on lowercased
    texts, and those differ from the reference's on the cased texts (the lowercasing matters)."""
    from transformers import AutoProcessor, SiglipModel

    model = tiny("siglip2")
    assert model.lowercase and model.identity.architecture == "SiglipModel|lowercase"
    directory = tiny_checkpoint("siglip2")
    reference = SiglipModel.from_pretrained(directory).eval()
    processor = AutoProcessor.from_pretrained(directory)
    assert type(processor.tokenizer).__name__ == "GemmaTokenizer"

    def logits(texts):
        with torch.no_grad():
            inputs = processor(text=texts, images=images, padding="max_length", max_length=16, return_tensors="pt")
            return reference(**inputs).logits_per_image.numpy()

    got = model.logits(model.score(images, CASED, progress=False))
    np.testing.assert_allclose(got, logits([text.lower() for text in CASED]), atol=1e-4)
    assert np.abs(logits(CASED) - got).max() > 1e-3
    assert model.text_token_ids(CASED) == model.text_token_ids([text.lower() for text in CASED])
    # SigLIP's own tokenizer lowercases by itself: its identity is what it was
    assert not tiny("siglip").lowercase and tiny("siglip").identity.architecture == "SiglipModel"


def test_siglip2_naflex_equals_transformers_on_images_of_other_aspect_ratios():
    """NaFlex keeps each image's aspect ratio: images of three shapes make three patch grids in one batch,
    padded and masked; the reference is transformers' Siglip2Model on its image processor's output and its
    tokenizer as transformers 5 loads it (Siglip2Tokenizer, which lowercases)."""
    from transformers import AutoImageProcessor, AutoTokenizer, Siglip2Model

    rng = np.random.default_rng(2)
    shapes = [(40, 48), (24, 72), (64, 16)]
    images = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in shapes]
    model = tiny("siglip2-naflex")
    directory = tiny_checkpoint("siglip2-naflex")
    reference = Siglip2Model.from_pretrained(directory).eval()
    image_processor = AutoImageProcessor.from_pretrained(directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert type(tokenizer).__name__ == "Siglip2Tokenizer" and model.lowercase
    pixels = image_processor(images=images, return_tensors="pt")
    grids = pixels["spatial_shapes"].tolist()
    assert len({tuple(grid) for grid in grids}) == 3 and all(h * w <= 16 for h, w in grids)
    assert (pixels["pixel_attention_mask"].sum(1) < 16).any()  # some padded patches: the mask matters
    with torch.no_grad():
        want = reference(**pixels, **tokenizer(CASED, padding="max_length", max_length=16,
                                               return_tensors="pt")).logits_per_image.numpy()
    got = model.score(images, CASED, batch_size=3, progress=False)
    assert np.ptp(want) > 1e-3
    np.testing.assert_allclose(model.logits(got), want, atol=1e-4)
    # one image's embedding does not depend on the other shapes padded into its batch
    np.testing.assert_allclose(model.encode_images(images[:1], progress=False),
                               model.encode_images(images, progress=False)[:1], atol=1e-5)
    assert "max_num_patches=16" in model.preprocess_id and "patch_size=8" in model.preprocess_id


def test_naflex_patch_budget_is_a_spec_option_recorded_in_the_identity(images):
    from transformers import AutoImageProcessor, Siglip2Model

    default, wider = tiny("siglip2-naflex"), load_image_text_model("tiny:siglip2-naflex?max_num_patches=64")
    assert "max_num_patches=64" in wider.preprocess_id and wider.identity.key() != default.identity.key()
    directory = tiny_checkpoint("siglip2-naflex")
    pixels = AutoImageProcessor.from_pretrained(directory)(images=images, max_num_patches=64, return_tensors="pt")
    assert pixels["pixel_values"].shape[1] == 64
    with torch.no_grad():
        want = Siglip2Model.from_pretrained(directory).eval().get_image_features(**pixels).pooler_output
    want = torch.nn.functional.normalize(want, dim=-1).numpy()
    np.testing.assert_allclose(wider.encode_images(images, progress=False), want, atol=1e-5)
    assert np.abs(default.encode_images(images, progress=False) - want).max() > 1e-3
    for bad in ("0", "-3", "many", "1.5"):
        with pytest.raises(ValueError, match=r"max_num_patches must be a positive whole number"):
            load_image_text_model(f"tiny:siglip2-naflex?max_num_patches={bad}")
    with pytest.raises(ValueError, match=r"max_num_patches= applies to 'siglip2' checkpoints only.*'siglip'"):
        load_image_text_model("tiny:siglip2?max_num_patches=64")
