"""``tiny:`` language-model fixtures: a BERT masked LM, a GPT-2 causal LM and a Llama in a GGUF file.

Random weights saved by the libraries' own code (``save_pretrained``, ``gguf.GGUFWriter``), so that
loading a fixture runs :func:`vlbias.models.load_language_model`'s real code paths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from . import register_tiny

TINY_HIDDEN = 32


@register_tiny("mlm", "language", version=1,
               description="random 2-layer BERT masked LM; demo words are whole WordPiece tokens")
def build_tiny_mlm(directory: Path) -> None:
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    from .tokenizers import write_wordpiece_vocab

    vocab_size = write_wordpiece_vocab(directory)
    tokenizer = BertTokenizer(str(Path(directory) / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab_size, hidden_size=TINY_HIDDEN, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                        pad_token_id=tokenizer.pad_token_id)
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


@register_tiny("causal-lm", "language", version=1,
               description="random 2-layer GPT-2 with a byte-level BPE tokenizer (no merges)")
def build_tiny_causal_lm(directory: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    from .tokenizers import write_byte_level_bpe

    directory = Path(directory)
    vocab_size = write_byte_level_bpe(directory, style="gpt2", special_tokens=["<|endoftext|>"])
    tokenizer = GPT2Tokenizer(str(directory / "vocab.json"), str(directory / "merges.txt"))
    torch.manual_seed(0)
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = GPT2Config(vocab_size=vocab_size, n_embd=TINY_HIDDEN, n_layer=2, n_head=4, n_positions=256,
                        bos_token_id=endoftext, eos_token_id=endoftext)
    GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


#: merges for the GGUF fixture, so that " he" and " she" are single tokens as in real vocabularies
TINY_GGUF_MERGES = ("Ġ h", "Ġh e", "Ġ s", "Ġs h", "Ġsh e")
TINY_GGUF_FILE = "tiny-llama-f32.gguf"
GGUF_TOKEN_NORMAL, GGUF_TOKEN_CONTROL = 1, 3  # llama.cpp's token types


def llama_cpp_permute(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder q/k rows from Hugging Face's rotary layout to llama.cpp's (what its converter does).

    transformers undoes this when it reads a GGUF file, so writing without it would scramble
    the attention heads.
    """
    head_dim_half = weight.shape[0] // n_heads // 2
    return weight.reshape(n_heads, 2, head_dim_half, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


@register_tiny("gguf-lm", "language", version=1,
               description="random 2-layer Llama (grouped-query attention, tied embeddings) in a GGUF "
                           "file with a byte-level BPE vocabulary, like SmolLM2; the same weights are "
                           "in reference/ as a save_pretrained checkpoint")
def build_tiny_gguf_lm(directory: Path) -> None:
    import gguf
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from .tokenizers import bytes_to_unicode

    directory = Path(directory)
    merged = [merge.replace(" ", "") for merge in TINY_GGUF_MERGES]
    tokens = ["<|endoftext|>"] + list(bytes_to_unicode().values()) + merged
    eos = 0
    n_heads, n_kv_heads, head_dim = 4, 2, TINY_HIDDEN // 4
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokens), hidden_size=TINY_HIDDEN, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=n_heads, num_key_value_heads=n_kv_heads,
                         max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=True,
                         bos_token_id=eos, eos_token_id=eos)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory / "reference")

    writer = gguf.GGUFWriter(str(directory / TINY_GGUF_FILE), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(TINY_HIDDEN)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(n_heads)
    writer.add_head_count_kv(n_kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(getattr(config, "rope_theta", None) or 10000.0))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([GGUF_TOKEN_CONTROL] + [GGUF_TOKEN_NORMAL] * (len(tokens) - 1))
    writer.add_token_merges(list(TINY_GGUF_MERGES))
    writer.add_bos_token_id(eos)
    writer.add_eos_token_id(eos)
    writer.add_add_bos_token(False)

    state = {name: tensor.detach().float().numpy() for name, tensor in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    for layer in range(config.num_hidden_layers):
        hf, cpp = f"model.layers.{layer}.", f"blk.{layer}."
        writer.add_tensor(cpp + "attn_norm.weight", state[hf + "input_layernorm.weight"])
        writer.add_tensor(cpp + "attn_q.weight", llama_cpp_permute(state[hf + "self_attn.q_proj.weight"], n_heads))
        writer.add_tensor(cpp + "attn_k.weight", llama_cpp_permute(state[hf + "self_attn.k_proj.weight"], n_kv_heads))
        writer.add_tensor(cpp + "attn_v.weight", state[hf + "self_attn.v_proj.weight"])
        writer.add_tensor(cpp + "attn_output.weight", state[hf + "self_attn.o_proj.weight"])
        writer.add_tensor(cpp + "ffn_norm.weight", state[hf + "post_attention_layernorm.weight"])
        writer.add_tensor(cpp + "ffn_gate.weight", state[hf + "mlp.gate_proj.weight"])
        writer.add_tensor(cpp + "ffn_up.weight", state[hf + "mlp.up_proj.weight"])
        writer.add_tensor(cpp + "ffn_down.weight", state[hf + "mlp.down_proj.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    # complete the reference checkpoint with the tokenizer as transformers reads it from the file
    AutoTokenizer.from_pretrained(directory, gguf_file=TINY_GGUF_FILE).save_pretrained(directory / "reference")
