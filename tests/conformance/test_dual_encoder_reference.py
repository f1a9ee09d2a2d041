"""Section 2 of issue 9: ColorFoil's other dual encoders (ALIGN, AltCLIP, CLIPSeg, GroupViT) through our
spec path against the ColorFoil notebook's way of scoring.

Each model is built at full size from the hub checkpoint's recorded config (``resources/hf_configs``)
with random weights, in the class the hub checkpoint is saved as (CLIPSeg's is
``CLIPSegForImageSegmentation``: our loader must find its CLIP towers under the ``clip.`` prefix). The
reference is scored first, on the model in memory, as the ColorFoil notebook scores a dual encoder:
per image, ``model(**processor(text=[caption, *foils], images=image, padding=True)).logits_per_image``
(the released notebook itself was not available; this is the models' documented zero-shot call, the
one the notebook's CLIP scoring in ``test_clip_reference.py`` also follows). Then the checkpoint is
saved with its processor, the in-memory model freed (one full-size copy at a time: AltCLIP is 3.5 GB
in fp32), and our loader reads the directory. Our cosines times the model's logit scale (ALIGN: one
over its temperature) equal the reference logits to float tolerance, with the same decisions.

Tokenizers: ALIGN's BERT-uncased WordPiece ships inside the MiniLM package and CLIPSeg and GroupViT
use CLIP's BPE (shipped with open_clip), so those three run with their real vocabularies. XLM-R's
SentencePiece model (AltCLIP) is not available offline: the test uses the rehearsal's unigram stand-in
in the same tokenizer class (``XLMRobertaTokenizer``, XLM-R's special-token ids, pad = 1 so that
RoBERTa-style position ids are exercised; letters, digits and punctuation as pieces); the ids index the
real 250,002-row embedding table. The models, tokenizers and processors are built by
:mod:`vlbias.rehearsal`, the same code that writes the full profile's mirror.
"""

import gc

import numpy as np
import pytest
import torch
from PIL import Image

from vlbias import rehearsal
from vlbias.models import load_image_text_model
from vlbias.models.conversion import recorded_hf_config

pytestmark = pytest.mark.conformance

# a caption and its foils per image; the lengths differ so that both paths pad
CANDIDATES = [["A red bus driving down a street past a park.", "A blue bus driving down a street past a park.",
               "A green bus driving down a street past a park."],
              ["a white dog lying on the grass", "a black dog lying on the grass", "a brown dog lying on the grass"]]
TOLERANCE = 5e-5  # cosines, fp32, different batch shapes and padding


def sample_images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in [(320, 240), (256, 300)]]


def build(hub_id, directory):
    """The hub checkpoint's class at full size with seeded random weights, its processor, and the module
    whose forward the notebook calls (CLIPSeg: the ``clip`` part of the segmentation checkpoint): built as
    the rehearsal's mirror builds it (:mod:`vlbias.rehearsal`)."""
    recorded = recorded_hf_config(hub_id)
    model = rehearsal.hub_model(recorded)
    processor = rehearsal.hub_processor(recorded, rehearsal.hub_tokenizer(recorded, directory))
    scored = model.clip if recorded["model_class"] == "CLIPSegForImageSegmentation" else model
    return model, scored, processor


DUAL_ENCODERS = ["kakaobrain/align-base", "BAAI/AltCLIP", "CIDAS/clipseg-rd64-refined", "nvidia/groupvit-gcc-yfcc"]


def logit_scale(scored) -> float:
    """What turns a cosine into the model's logit: exp(logit_scale), or ALIGN's 1 / temperature."""
    if hasattr(scored, "temperature"):
        return 1.0 / scored.temperature.item()
    return scored.logit_scale.exp().item()


def reference_logits(scored, processor, images, candidates):
    """The ColorFoil notebook: one processor call and one forward pass per image with its candidates."""
    rows = []
    with torch.inference_mode():
        for image, texts in zip(images, candidates):
            # the processor's own padding where it has one (ALIGN: to 64 tokens), else to the longest
            padding = {} if "padding" in getattr(processor, "text_kwargs", {}) else {"padding": True}
            inputs = processor(text=texts, images=image, return_tensors="pt", **padding)
            rows.append(scored(**inputs).logits_per_image[0].numpy())
    return np.array(rows)


@pytest.mark.parametrize("hub_id", DUAL_ENCODERS)
def test_dual_encoder_spec_path_equals_the_colorfoil_notebook(hub_id, tmp_path):
    model, scored, processor = build(hub_id, tmp_path)
    images = sample_images()
    want = reference_logits(scored, processor, images, CANDIDATES)
    scale = logit_scale(scored)
    reference_state = {key: value.flatten()[:4096].clone() for key, value in list(scored.state_dict().items())[:4]}
    model.save_pretrained(tmp_path / "checkpoint", max_shard_size="500MB")  # read back shard by shard
    processor.save_pretrained(tmp_path / "checkpoint")
    del model, scored
    gc.collect()

    ours = load_image_text_model(str(tmp_path / "checkpoint"), device="cpu")
    assert ours.kind == "dual" and ours.dtype == "float32"
    for key, value in reference_state.items():  # the weights were read, not freshly initialised
        torch.testing.assert_close(ours.model.state_dict()[key].flatten()[:4096], value, rtol=0, atol=0)
    got = ours.score_candidates(images, CANDIDATES, batch_size=4, progress=False)
    assert np.ptp(want) > 1e-3  # distinct candidates score apart: the comparison can fail
    np.testing.assert_allclose(got * scale, want, atol=TOLERANCE * scale)
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))
