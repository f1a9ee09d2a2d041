"""Issue 26, item 1: SigLIP, SigLIP 2, Chinese-CLIP and BLIP's two heads through our spec path against
transformers' own forward of each, one full-size build per checkpoint.

SigLIP. Each checkpoint is built at full size from its recorded config (``resources/hf_configs``) with random weights
(:mod:`vlbias.rehearsal`, as the full profile's mirror builds it), a learned-looking scale and bias set (SigLIP's
initialisation, t = log 10 and b = -10: transformers initialises both at 0, which would hide a missing bias).
The reference is scored first, on the model in memory, as transformers documents SigLIP's zero-shot call and
as its zero-shot pipeline runs it: per image, ``model(**processor(text=candidates, images=image,
padding="max_length", max_length=64, truncation=True)).logits_per_image``, and ``sigmoid`` of it as the
probabilities; for SigLIP 2 on the texts lowercased, as its documentation says to preprocess them (it was trained
on lowercased text), which the test shows changes the logits. SigLIP 2's NaFlex checkpoint (``Siglip2Model``) is
called the same way, its processor keeping each image's aspect ratio in at most 256 patches. Then the checkpoint is
saved with its processor, freed, and read by our loader. Our cosines
times ``exp(logit_scale)`` plus ``logit_bias`` (``model.logits``) equal the reference logits, our
``model.probabilities`` its sigmoid, with the same decisions.

Tokenizers: SigLIP's SentencePiece model and Gemma's BPE (SigLIP 2) are not available offline. SigLIP runs a
unigram model trained here in ``SiglipTokenizer`` (T5's layout: <pad> 0, </s> 1 also the padding, <unk> 2),
SigLIP 2 a BPE stand-in in ``GemmaTokenizer`` (Gemma's layout, byte fallback), each with the hub's values
(``model_input_names`` input_ids only, SigLIP 2's end-of-sequence and right padding); their ids index the real
32,000- and 256,000-row embedding tables.

Chinese-CLIP: the documented zero-shot call (``logits_per_image``, texts padded to the longest), on Chinese
captions, through a stand-in Chinese vocabulary in ``BertTokenizer`` (BERT's Chinese layout, every CJK
ideograph from U+4E00 a token, filled to the real 21,128 rows). BLIP: ``BlipForImageTextRetrieval`` with
``use_itm_head=True`` per (image, text) pair (BLIP reports ``softmax(itm_score)[:, 1]``) and with
``use_itm_head=False`` (the contrastive cosines), both heads of one saved checkpoint read back by our loader;
its tokenizer is BERT-uncased's real WordPiece (the MiniLM package) with [DEC] and [ENC]. BLIP's vision config
initialises with std 1e-10 (trained weights replace it): with such weights every image embeds alike and no
comparison could fail, so the test redraws the vision tower's matrices with std 0.02.
"""

import gc

import numpy as np
import pytest
import torch
from PIL import Image

from vlbias import rehearsal
from vlbias.models import load_image_text_model
from vlbias.models import image_text
from vlbias.models.conversion import recorded_hf_config

pytestmark = pytest.mark.conformance

SIGLIP = ["google/siglip-base-patch16-224", "google/siglip2-base-patch16-224", "google/siglip2-base-patch16-naflex"]
# a caption and its foils per image; the lengths differ so that padding matters
CANDIDATES = [["A red bus driving down a street past a park.", "A blue bus driving down a street past a park.",
               "A green bus driving down a street."],
              ["a white dog lying on the grass", "a black dog lying on the grass", "a brown dog"]]
CANDIDATES_ZH = [["一辆红色的公交车在公园旁边的街道上行驶", "一辆蓝色的公交车在公园旁边的街道上行驶", "一辆绿色的公交车"],
                 ["一只白色的狗躺在草地上", "一只黑色的狗躺在草地上", "一只棕色的狗"]]
TOLERANCE = 5e-5  # cosines, fp32, different batch shapes and padding


def sample_images():
    """Two noise images, neither square nor of the models' input size (so resizing is exercised)."""
    rng = np.random.default_rng(1)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in [(300, 220), (240, 320)]]


def build(hub_id, work):
    """The checkpoint's class at full size with seeded random weights and its processor, as the rehearsal's
    mirror builds them (:mod:`vlbias.rehearsal`)."""
    recorded = recorded_hf_config(hub_id)
    model = rehearsal.hub_model(recorded)
    processor = rehearsal.hub_processor(recorded, rehearsal.hub_tokenizer(recorded, work))
    return recorded, model, processor


def save_and_free(model, processor, directory):
    """Save the checkpoint as the hub holds it and free the in-memory copy (one full-size copy at a time)."""
    model.save_pretrained(directory, max_shard_size="500MB")
    processor.save_pretrained(directory)
    del model
    gc.collect()


def known_words(tokenizer, texts) -> bool:
    """No text of ``texts`` falls back to the unknown token: the stand-in vocabularies cover the captions."""
    ids = tokenizer(texts)["input_ids"]
    return tokenizer.unk_token_id not in {i for row in ids for i in row}


def reference_logits(model, processor, images, candidates, lowercase=False):
    """transformers' SigLIP call: texts padded to 64 tokens, one forward pass per image with its candidates;
    ``lowercase``: the texts lowercased first, as SigLIP 2's documentation says to (it was trained so)."""
    rows = []
    with torch.inference_mode():
        for image, texts in zip(images, candidates):
            texts = [text.lower() for text in texts] if lowercase else texts
            inputs = processor(text=texts, images=image, padding="max_length", max_length=64, truncation=True,
                               return_tensors="pt")
            assert "attention_mask" not in inputs  # as the hub tokenizers: SigLIP attends to its padding
            rows.append(model(**inputs).logits_per_image[0].numpy())
    return np.array(rows)


def padding_changes_embeddings(model, processor, texts) -> bool:
    """Whether padding to the batch's longest text, instead of to 64 tokens, changes SigLIP's text embeddings
    (it pools the last position): the check that our path pads as the reference does can fail."""
    with torch.inference_mode():
        longest = model.get_text_features(**processor.tokenizer(texts, padding=True, return_tensors="pt")).pooler_output
        full = model.get_text_features(**processor.tokenizer(texts, padding="max_length", max_length=64,
                                                             return_tensors="pt")).pooler_output
    return not torch.allclose(longest, full, atol=1e-3)


@pytest.mark.parametrize("hub_id", SIGLIP)
def test_siglip_spec_path_equals_transformers(hub_id, tmp_path):
    recorded, model, processor = build(hub_id, tmp_path)
    with torch.no_grad():
        model.logit_scale.fill_(np.log(10.0))
        model.logit_bias.fill_(-10.0)
    assert known_words(processor.tokenizer, [text for row in CANDIDATES for text in row])
    images = sample_images()
    siglip2 = hub_id.startswith("google/siglip2")
    want = reference_logits(model, processor, images, CANDIDATES, lowercase=siglip2)
    if siglip2:  # the cased texts score otherwise: reading them lowercased is a choice the test can catch
        assert np.abs(reference_logits(model, processor, images, CANDIDATES) - want).max() > 1e-3
    assert padding_changes_embeddings(model, processor, CANDIDATES[0])
    save_and_free(model, processor, tmp_path / "checkpoint")
    del model

    ours = load_image_text_model(str(tmp_path / "checkpoint"), device="cpu")
    naflex = recorded["model_class"] == "Siglip2Model"
    assert type(ours).__name__ == ("HFSiglip2Encoder" if naflex else "HFSiglipEncoder")
    assert ours.kind == "dual" and ours.max_length == 64 and ours.lowercase == siglip2
    tokenizer = recorded["tokenizer"]
    assert type(ours.tokenizer).__name__ == tokenizer.get("loaded_as", tokenizer["class"])
    if naflex:  # aspect ratio kept: at most 256 patches of 16 px, the images' own grids
        assert "max_num_patches=256" in ours.preprocess_id and "patch_size=16" in ours.preprocess_id
    else:  # resized to the square input, no crop: the identity's preprocessing says so
        assert "size=(('height', 224), ('width', 224))" in ours.preprocess_id and "crop" not in ours.preprocess_id
    assert ours.logit_scale == pytest.approx(10.0) and ours.logit_bias == pytest.approx(-10.0)
    got = ours.score_candidates(images, CANDIDATES, batch_size=4, progress=False)
    assert np.ptp(want) > 1e-3  # distinct candidates score apart: the comparison can fail
    np.testing.assert_allclose(ours.logits(got), want, atol=TOLERANCE * ours.logit_scale)
    np.testing.assert_allclose(ours.probabilities(got), 1 / (1 + np.exp(-want)), rtol=TOLERANCE * ours.logit_scale)
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))
    # one text's embedding does not depend on the batch it is padded in
    alone = ours.encode_texts(CANDIDATES[0][:1], progress=False)
    together = ours.encode_texts(CANDIDATES[0], progress=False)[:1]
    np.testing.assert_allclose(alone, together, atol=TOLERANCE)


def test_chinese_clip_spec_path_equals_transformers(tmp_path):
    recorded, model, processor = build("OFA-Sys/chinese-clip-vit-base-patch16", tmp_path)
    assert len(processor.tokenizer) == model.config.text_config.vocab_size  # the stand-in fills the real table
    assert known_words(processor.tokenizer, [text for row in CANDIDATES_ZH for text in row])
    images = sample_images()
    scale = model.logit_scale.exp().item()
    want = []
    with torch.inference_mode():  # the documented zero-shot call, per image with its candidates
        for image, texts in zip(images, CANDIDATES_ZH):
            inputs = processor(text=texts, images=image, padding=True, return_tensors="pt")
            want.append(model(**inputs).logits_per_image[0].numpy())
    want = np.array(want)
    save_and_free(model, processor, tmp_path / "checkpoint")
    del model

    ours = load_image_text_model(str(tmp_path / "checkpoint"), device="cpu")
    assert type(ours.model).__name__ == "ChineseCLIPModel" and ours.kind == "dual"
    assert type(ours.tokenizer).__name__.startswith("BertTokenizer")
    assert "do_center_crop=False" in ours.preprocess_id
    got = ours.score_candidates(images, CANDIDATES_ZH, batch_size=4, progress=False)
    assert np.ptp(want) > 1e-3
    np.testing.assert_allclose(got * scale, want, atol=TOLERANCE * scale)
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))


def redraw_blip_vision(model) -> None:
    """Redraw the vision tower's matrices and embeddings with std 0.02 (see the module docstring)."""
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in model.vision_model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.02)


def test_blip_heads_equal_transformers(tmp_path):
    recorded, model, processor = build("Salesforce/blip-itm-base-coco", tmp_path)
    assert len(processor.tokenizer) == model.config.text_config.vocab_size  # BERT-uncased, [DEC], [ENC]
    assert processor.tokenizer.bos_token_id == model.config.text_config.bos_token_id
    redraw_blip_vision(model)
    images = sample_images()
    with torch.inference_mode():
        # BLIP's image-text matching: one pair per forward pass, the softmax's match column
        itm = np.array([[model(**processor(images=image, text=text, return_tensors="pt"), use_itm_head=True)
                         .itm_score[0].numpy() for text in texts] for image, texts in zip(images, CANDIDATES)])
        # the contrastive head: the image against its candidates
        contrastive = np.array([model(**processor(images=image, text=texts, padding=True, return_tensors="pt"),
                                      use_itm_head=False).itm_score[0].numpy()
                                for image, texts in zip(images, CANDIDATES)])
    match_probability = torch.softmax(torch.from_numpy(itm), dim=-1)[..., 1].numpy()
    save_and_free(model, processor, tmp_path / "checkpoint")
    del model

    matcher = load_image_text_model(str(tmp_path / "checkpoint"), device="cpu")  # the default head: ITM
    assert matcher.kind == "pairwise" and matcher.identity.architecture == "BlipForImageTextRetrieval|head=itm"
    got = matcher.score_candidates(images, CANDIDATES, batch_size=4, progress=False)
    assert np.ptp(itm[..., 1] - itm[..., 0]) > 1e-3
    np.testing.assert_allclose(got, itm[..., 1] - itm[..., 0], atol=1e-4)
    np.testing.assert_allclose(1 / (1 + np.exp(-got)), match_probability, atol=1e-5)
    np.testing.assert_array_equal(got.argmax(1), match_probability.argmax(1))
    identity = matcher.identity
    del matcher
    gc.collect()

    # the head is a loader option (vlbias.models' wrapper does not pass it on yet)
    dual = image_text.load_image_text_model(str(tmp_path / "checkpoint"), device="cpu", head="contrastive")
    assert dual.kind == "dual" and dual.identity.key() != identity.key()
    got = dual.score_candidates(images, CANDIDATES, batch_size=4, progress=False)
    assert np.ptp(contrastive) > 1e-3
    np.testing.assert_allclose(got, contrastive, atol=TOLERANCE)
    np.testing.assert_array_equal(got.argmax(1), contrastive.argmax(1))
