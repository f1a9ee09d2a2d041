"""Language-model backend on the tiny fixtures, checked against hand-written forward passes."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from vlbias.errors import ModelUnavailableError
from vlbias.models import load_language_model, tiny_checkpoint
from vlbias.models.language import infer_kind, locate_local, sample_seed, sample_token

CONTEXTS = [
    "The nurse said {slot} was tired.",
    "{slot} is a doctor.",
    "After a very long shift at the hospital, the surgeon told us that {slot} would rest.",
]
CANDIDATES = ["he", "she", "they"]


@pytest.fixture(scope="module")
def mlm():
    return load_language_model("tiny:mlm", device="cpu")


@pytest.fixture(scope="module")
def causal():
    return load_language_model("tiny:causal-lm", device="cpu")


def log_softmax(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1)


@torch.no_grad()
def manual_causal_logprob(model, ids: list[int], first_scored: int) -> float:
    """Sum of log P(ids[t] | ids[:t]) for t >= first_scored, one unpadded forward pass."""
    logprobs = log_softmax(model.model(torch.tensor([ids])).logits[0])
    return float(sum(logprobs[t - 1, ids[t]] for t in range(first_scored, len(ids))))


# --------------------------------------------------------------------------- loading

@pytest.mark.parametrize("name, kind", [("mlm", "masked"), ("causal-lm", "causal")])
def test_tiny_checkpoint_round_trips_through_its_directory(name, kind):
    by_spec = load_language_model(f"tiny:{name}", device="cpu")
    by_path = load_language_model(str(tiny_checkpoint(name)), device="cpu")
    assert by_spec.kind == by_path.kind == kind
    state, other = by_spec.model.state_dict(), by_path.model.state_dict()
    assert state.keys() == other.keys()
    assert all(torch.equal(state[key], other[key]) for key in state)
    assert len(by_spec.tokenizer) == len(by_path.tokenizer)


def test_kind_is_inferred_from_the_config():
    from transformers import BertConfig, GPT2Config, LlamaConfig, RobertaConfig

    assert infer_kind(BertConfig()) == "masked"  # BERT also has a causal head class
    assert infer_kind(RobertaConfig()) == "masked"
    assert infer_kind(GPT2Config()) == "causal"
    assert infer_kind(LlamaConfig()) == "causal"
    assert infer_kind(BertConfig(architectures=["BertLMHeadModel"])) == "causal"


def test_gguf_files_are_located(tmp_path):
    (tmp_path / "model-q8.gguf").write_bytes(b"")
    by_dir, by_file = locate_local(tmp_path), locate_local(tmp_path / "model-q8.gguf")
    assert (by_dir.path, by_dir.gguf_file) == (str(tmp_path), "model-q8.gguf")
    assert (by_file.path, by_file.gguf_file) == (str(tmp_path), "model-q8.gguf")
    (tmp_path / "other.gguf").write_bytes(b"")
    with pytest.raises(ValueError, match="several .gguf"):
        locate_local(tmp_path)


def test_unavailable_hub_id_fails_fast_with_a_clear_message():
    start = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match="no-such-org/no-such-model") as error:
        load_language_model("no-such-org/no-such-model", device="cpu")
    assert time.perf_counter() - start < 60  # offline hub calls must not retry for minutes
    assert "download" in str(error.value)


# --------------------------------------------------------------------------- masked LM

@torch.no_grad()
def test_masked_fill_equals_log_softmax_at_the_mask(mlm):
    scores = mlm.fill_logprobs(CONTEXTS, CANDIDATES, progress=False)
    tokenizer = mlm.tokenizer
    candidate_ids = tokenizer.convert_tokens_to_ids(CANDIDATES)
    assert tokenizer.unk_token_id not in candidate_ids
    for row, context in enumerate(CONTEXTS):
        encoded = tokenizer(context.replace("{slot}", tokenizer.mask_token), return_tensors="pt")
        position = encoded["input_ids"][0].tolist().index(tokenizer.mask_token_id)
        expected = log_softmax(mlm.model(**encoded).logits[0, position])[candidate_ids]
        np.testing.assert_allclose(scores[row], expected.numpy(), atol=1e-5)


def test_masked_slot_distribution_is_normalised_and_matches_fill(mlm):
    distribution = mlm.slot_logprobs(CONTEXTS, progress=False)
    assert distribution.shape == (len(CONTEXTS), len(mlm.tokenizer))
    np.testing.assert_allclose(np.logaddexp.reduce(distribution, axis=1), 0.0, atol=1e-5)
    ids = mlm.tokenizer.convert_tokens_to_ids(CANDIDATES)
    np.testing.assert_allclose(mlm.fill_logprobs(CONTEXTS, CANDIDATES, progress=False), distribution[:, ids], atol=1e-6)


def test_masked_fill_rejects_multi_token_candidates(mlm):
    with pytest.raises(ValueError, match="zebra"):
        mlm.fill_logprobs(CONTEXTS, ["she", "zebra"], progress=False)


@torch.no_grad()
def test_pseudo_log_likelihood_equals_masking_each_token(mlm):
    texts = ["the nurse is here", "a man", "the engineer said she was a good pilot"]
    tokenizer = mlm.tokenizer
    for text, value in zip(texts, mlm.sequence_logprob(texts, batch_size=4, progress=False)):
        ids = tokenizer(text)["input_ids"]
        expected = 0.0
        for position in range(1, len(ids) - 1):  # skip [CLS] and [SEP]
            masked = list(ids)
            masked[position] = tokenizer.mask_token_id
            expected += log_softmax(mlm.model(torch.tensor([masked])).logits[0, position])[ids[position]].item()
        assert value == pytest.approx(expected, abs=1e-4)


def test_masked_batches_equal_one_at_a_time(mlm):
    one_by_one = mlm.fill_logprobs(CONTEXTS, CANDIDATES, batch_size=1, progress=False)
    batched = mlm.fill_logprobs(CONTEXTS, CANDIDATES, batch_size=3, progress=False)
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    texts = ["a man", "the engineer said she was a good pilot"]
    np.testing.assert_allclose(mlm.sequence_logprob(texts, batch_size=64, progress=False),
                               mlm.sequence_logprob(texts, batch_size=1, progress=False), atol=1e-4)


def test_masked_models_do_not_generate(mlm):
    with pytest.raises(TypeError):
        mlm.generate(["The nurse said"], progress=False)


# --------------------------------------------------------------------------- causal LM

def test_causal_fill_equals_manual_sum_over_candidate_tokens(causal):
    scores = causal.fill_logprobs(CONTEXTS, CANDIDATES, progress=False)
    tokenizer, bos = causal.tokenizer, causal.tokenizer.bos_token_id
    for row, context in enumerate(CONTEXTS):
        before = context.split("{slot}")[0]
        for column, candidate in enumerate(CANDIDATES):
            # the full sentence up to the candidate, tokenised as one string
            prefix = [bos] + tokenizer.encode(before.rstrip(" "))
            full = [bos] + tokenizer.encode(before + candidate)
            assert full[:len(prefix)] == prefix and len(full) - len(prefix) == len(candidate) + before.endswith(" ")
            expected = manual_causal_logprob(causal, full, len(prefix))
            assert scores[row, column] == pytest.approx(expected, abs=1e-4)


def test_causal_fill_reads_one_token_candidates_from_one_pass_per_context():
    """SmolLM2's byte-level BPE makes " she", " he" and " they" one token each: all three are read from
    one forward pass of the text before the slot, a longer candidate is scored as a continuation, and
    every score equals the unpadded forward pass of prefix + candidate (by hand, one text at a time)."""
    model = load_language_model("asset:smollm2-135m", device="cpu")
    contexts = ["The nurse said that {slot} would be late.", "I asked the chief executive whether {slot} could help."]
    candidates = ["she", "he", "they", "nobody at all"]
    assert [len(model.encode_word(c, after_space=True)) for c in candidates] == [1, 1, 1, 3]
    calls = []
    forward = model.logprobs
    model.logprobs = lambda ids, mask: calls.append(tuple(ids.shape)) or forward(ids, mask)
    scores = model.fill_logprobs(contexts, candidates, batch_size=2, progress=False)
    # one pass for both contexts' three pronouns, one for the two longer candidates (8 pairs: 4 passes before)
    assert len(calls) == 2
    for row, context in enumerate(contexts):
        prefix = model.causal_slot_prefix(context)
        for column, candidate in enumerate(candidates):
            expected = manual_causal_logprob(model, prefix + model.encode_word(candidate, True), len(prefix))
            assert scores[row, column] == pytest.approx(expected, abs=1e-4)


def test_causal_fill_ignores_text_after_the_slot_and_matches_sequence_difference(causal):
    a = causal.fill_logprobs(["The nurse said {slot} was tired."], CANDIDATES, progress=False)
    b = causal.fill_logprobs(["The nurse said {slot}"], CANDIDATES, progress=False)
    np.testing.assert_allclose(a, b, atol=1e-6)
    whole = causal.sequence_logprob([f"The nurse said {c}" for c in CANDIDATES] + ["The nurse said"], progress=False)
    np.testing.assert_allclose(a[0], whole[:-1] - whole[-1], atol=1e-4)


def test_causal_slot_distribution_is_normalised(causal):
    distribution = causal.slot_logprobs(CONTEXTS, progress=False)
    assert distribution.shape[0] == len(CONTEXTS)
    np.testing.assert_allclose(np.logaddexp.reduce(distribution, axis=1), 0.0, atol=1e-5)
    # without merges only a single character right after the text is one token
    glued = ["Hello{slot}", "The nurse said:{slot}"]
    ids = causal.tokenizer.convert_tokens_to_ids(["x", "y"])
    np.testing.assert_allclose(causal.fill_logprobs(glued, ["x", "y"], progress=False),
                               causal.slot_logprobs(glued, progress=False)[:, ids], atol=1e-6)


def test_causal_sequence_logprob_equals_manual_sum(causal):
    texts = ["The nurse is here.", "a", "The engineer said she was a good pilot."]
    values = causal.sequence_logprob(texts, batch_size=2, progress=False)
    for text, value in zip(texts, values):
        ids = [causal.tokenizer.bos_token_id] + causal.tokenizer.encode(text)
        assert value == pytest.approx(manual_causal_logprob(causal, ids, 1), abs=1e-4)


def test_causal_batches_equal_one_at_a_time(causal):
    one_by_one = causal.fill_logprobs(CONTEXTS, CANDIDATES, batch_size=1, progress=False)
    batched = causal.fill_logprobs(CONTEXTS, CANDIDATES, batch_size=5, progress=False)
    np.testing.assert_allclose(batched, one_by_one, atol=1e-4)
    texts = ["a", "The engineer said she was a good pilot.", "The nurse is here."]
    np.testing.assert_allclose(causal.sequence_logprob(texts, batch_size=3, progress=False),
                               causal.sequence_logprob(texts, batch_size=1, progress=False), atol=1e-4)


# --------------------------------------------------------------------------- generation

def test_generation_is_seeded(causal):
    prompts = ["The nurse said", "Hi"]
    first = causal.generate(prompts, max_new_tokens=12, seed=3, progress=False)
    assert first == causal.generate(prompts, max_new_tokens=12, seed=3, progress=False)
    assert first != causal.generate(prompts, max_new_tokens=12, seed=4, progress=False)
    assert [len(samples) for samples in first] == [1, 1]
    assert all(isinstance(text, str) and text for samples in first for text in samples)


def test_generation_does_not_depend_on_the_batch(causal):
    alone = causal.generate(["Hi"], max_new_tokens=12, num_return_sequences=2, seed=7, top_p=0.9, progress=False)
    batched = causal.generate(["The engineer said that", "a", "Hi"], max_new_tokens=12, num_return_sequences=2,
                              seed=7, top_p=0.9, batch_size=4, progress=False)
    assert batched[2] == alone[0]
    assert alone[0][0] != alone[0][1]  # the two samples of one prompt differ


@torch.no_grad()
def test_greedy_generation_with_left_padding_equals_uncached_argmax(causal):
    """Temperature 0 (and a vanishing top_p) is greedy: check the cached, left-padded loop."""
    prompt, steps = "Hi", 8
    ids = [causal.tokenizer.bos_token_id] + causal.tokenizer.encode(prompt)
    new = []
    for _ in range(steps):
        token = int(causal.model(torch.tensor([ids + new])).logits[0, -1].argmax())
        if token == causal.tokenizer.eos_token_id:
            break
        new.append(token)
    expected = causal.tokenizer.decode(new, skip_special_tokens=True)
    padded_batch = ["A much longer prompt than the other one", prompt]
    assert causal.generate(padded_batch, max_new_tokens=steps, temperature=0, progress=False)[1] == [expected]
    assert causal.generate(padded_batch, max_new_tokens=steps, top_p=1e-9, progress=False)[1] == [expected]


# --------------------------------------------------------------------------- GGUF (the SmolLM2 path)

@torch.no_grad()
def test_gguf_file_loads_with_the_weights_it_was_written_from():
    directory = tiny_checkpoint("gguf-lm")
    (gguf_file,) = directory.glob("*.gguf")
    by_spec = load_language_model("tiny:gguf-lm", device="cpu")
    by_file = load_language_model(str(gguf_file), device="cpu")
    reference = load_language_model(str(directory / "reference"), device="cpu")
    assert by_spec.kind == by_file.kind == reference.kind == "causal"
    assert type(by_spec.model).__name__ == "LlamaForCausalLM"
    ids = torch.tensor([[0] + by_spec.tokenizer.encode("The nurse said she was tired.", add_special_tokens=False)])
    expected = reference.model(ids).logits  # q/k rows were permuted on writing; loading must undo it
    assert torch.allclose(by_spec.model(ids).logits, expected, atol=1e-5)
    assert torch.allclose(by_file.model(ids).logits, expected, atol=1e-5)


def test_gguf_read_once_parses_the_file_once_and_loads_the_same_tokenizer_and_weights(monkeypatch):
    """SmolLM2's conversion (vlbias.assets.smollm2_dir) loads its GGUF file under gguf_read_once:
    transformers then parses the file once instead of three times (tokenizer, config, weights), and
    loads what it loads without it."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vlbias.assets import gguf_read_once

    (gguf_file,) = tiny_checkpoint("gguf-lm").glob("*.gguf")
    parses, original = [], gguf.GGUFReader
    monkeypatch.setattr(gguf, "GGUFReader", lambda *args, **kwargs: parses.append(args) or original(*args, **kwargs))

    def load():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name)
        return tokenizer, model

    tokenizer, model = load()
    assert len(parses) == 3
    parses.clear()
    counting = gguf.GGUFReader
    with gguf_read_once():
        once_tokenizer, once_model = load()
    assert len(parses) == 1 and gguf.GGUFReader is counting  # and the reader is put back after the block
    text = "The nurse said she was tired."
    assert once_tokenizer.encode(text) == tokenizer.encode(text)
    expected = model.state_dict()
    assert all(torch.equal(value, expected[name]) for name, value in once_model.state_dict().items())


def test_gguf_tokenizer_keeps_merges_and_specials():
    model = load_language_model("tiny:gguf-lm", device="cpu")
    tokenizer = model.tokenizer
    assert tokenizer.convert_ids_to_tokens(tokenizer.encode(" she said he", add_special_tokens=False)) == [
        "Ġshe", "Ġs", "a", "i", "d", "Ġhe"]
    assert tokenizer.bos_token_id == tokenizer.eos_token_id == 0
    # " she" is one token, so its fill score is its entry in the next-token distribution
    context = ["The nurse said {slot} was tired."]
    ids = tokenizer.convert_tokens_to_ids(["Ġhe", "Ġshe"])
    np.testing.assert_allclose(model.fill_logprobs(context, ["he", "she"], progress=False),
                               model.slot_logprobs(context, progress=False)[:, ids], atol=1e-6)


@pytest.mark.parametrize("spec", ["tiny:causal-lm", "tiny:gguf-lm"])  # learned positions / RoPE + GQA
@torch.no_grad()
def test_sampling_with_cache_and_left_padding_equals_uncached_sampling(spec):
    """The same per-sequence draws on full, unpadded forward passes give the same text."""
    causal = load_language_model(spec, device="cpu")
    prompt, steps, seed = "Hi", 12, 5
    generator = torch.Generator().manual_seed(sample_seed(seed, prompt, 0))
    ids = [causal.tokenizer.bos_token_id] + causal.tokenizer.encode(prompt)
    new = []
    for _ in range(steps):
        token = sample_token(causal.model(torch.tensor([ids + new])).logits[0, -1], 1.0, 0.95, generator)
        if token == causal.tokenizer.eos_token_id:
            break
        new.append(token)
    expected = causal.tokenizer.decode(new, skip_special_tokens=True)
    padded_batch = ["A much longer prompt than the other one", prompt]
    assert causal.generate(padded_batch, max_new_tokens=steps, top_p=0.95, seed=seed, progress=False)[1] == [expected]
