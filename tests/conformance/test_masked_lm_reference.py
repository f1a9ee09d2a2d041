"""The masked LM of the full profile (bert-base-uncased) at full size with random weights: our slot
scoring against the `fill-mask` pipeline, the reference code path for a masked LM's slot probabilities."""

import json
import shutil
from importlib import resources

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.conformance

CONTEXTS = ["The nurse said that {slot} would be late.", "When the carpenter arrived, {slot} started at once.",
            "I asked the accountant whether {slot} could help."]
PRONOUNS = ["she", "he", "they"]


def recorded(hub_id: str) -> dict:
    name = hub_id.replace("/", "--") + ".json"
    return json.loads(resources.files("vlbias").joinpath("resources", "hf_configs", name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    """bert-base-uncased's architecture and vocabulary, random weights, saved as a checkpoint directory."""
    from transformers import AutoConfig, BertForMaskedLM, BertTokenizer

    from vlbias import assets

    record = recorded("bert-base-uncased")
    try:
        vocab = assets.minilm_dir() / "vocab.txt"
    except FileNotFoundError as error:
        pytest.skip(str(error))
    directory = tmp_path_factory.mktemp("bert-base-uncased-random")
    tokenizer = BertTokenizer(str(vocab), **record["tokenizer"])
    config = AutoConfig.for_model(**record["config"])
    assert len(tokenizer) == config.vocab_size == 30522
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)  # gigabytes: gone with the module, not the session


def test_slot_scoring_equals_the_fill_mask_pipeline(bert_dir):
    from transformers import pipeline

    from vlbias.models import load_language_model

    ours = load_language_model(str(bert_dir), device="cpu", half=False)
    assert ours.kind == "masked" and ours.model.config.num_hidden_layers == 12
    logprobs = ours.fill_logprobs(CONTEXTS, PRONOUNS, progress=False)
    fill_mask = pipeline("fill-mask", model=str(bert_dir), tokenizer=str(bert_dir), device="cpu")
    for row, context in enumerate(CONTEXTS):
        reference = fill_mask(context.replace("{slot}", fill_mask.tokenizer.mask_token), targets=PRONOUNS,
                              top_k=len(PRONOUNS))
        by_word = {answer["token_str"]: answer["score"] for answer in reference}
        np.testing.assert_allclose(np.exp(logprobs[row]), [by_word[p] for p in PRONOUNS], rtol=1e-4, atol=1e-9)
    # and the whole distribution at the slot is the pipeline's softmax, not just the three pronouns
    top = fill_mask(CONTEXTS[0].replace("{slot}", "[MASK]"), top_k=5)
    distribution = np.exp(ours.slot_logprobs(CONTEXTS[:1], progress=False)[0])
    np.testing.assert_allclose(distribution[[answer["token"] for answer in top]], [a["score"] for a in top], rtol=1e-4)


def test_sentence_embeddings_are_the_cls_tokens_last_hidden_state(bert_dir):
    """SEAT's representation of a sentence for BERT (May et al., 2019): the last layer's hidden state of
    [CLS]. Reference: the masked-LM checkpoint through transformers' own BertModel, one sentence at a
    time (no padding), its ``last_hidden_state`` at position 0, which the tokenizer fills with [CLS]."""
    from transformers import AutoModel, AutoTokenizer

    from vlbias.models import load_language_model

    texts = ["This is Adam.", "Here is a much longer sentence about the family and the career.", "That is failure."]
    tokenizer, reference = AutoTokenizer.from_pretrained(bert_dir), AutoModel.from_pretrained(bert_dir).eval()
    with torch.inference_mode():
        want = []
        for text in texts:
            encoded = tokenizer(text, return_tensors="pt")
            assert encoded["input_ids"][0, 0] == tokenizer.cls_token_id
            want.append(reference(**encoded).last_hidden_state[0, 0].numpy())
    ours = load_language_model(str(bert_dir), device="cpu", half=False)
    got = ours.sentence_embeddings(texts, batch_size=3, progress=False)  # one padded batch
    assert got.shape == (3, 768)
    np.testing.assert_allclose(got, np.stack(want), atol=1e-4)
    assert np.abs(np.stack(want)[0] - np.stack(want)[2]).max() > 0.01  # sentences apart: the check can fail
