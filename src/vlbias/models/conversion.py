"""Between open_clip's CLIP and Hugging Face's ``CLIPModel``: weights, tokenizer files, recorded configs.

The markedness release scores with Hugging Face's ``CLIPModel``/``CLIPProcessor``; the book runs the
same OpenAI weights through open_clip. :func:`open_clip_to_hf_clip` moves an open_clip state dict
into the Hugging Face layout, so that the conformance tests can run one set of random weights through
both code paths and compare. :func:`write_clip_tokenizer_files` writes CLIP's BPE vocabulary (shipped
with open_clip) as the ``vocab.json``/``merges.txt`` pair Hugging Face's CLIP tokenizer reads, and
:func:`recorded_hf_config` reads the hub checkpoints' config values recorded under
``resources/hf_configs/``.
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

import torch

from .tiny.tokenizers import bytes_to_unicode


def recorded_hf_config(hub_id: str) -> dict:
    """The recorded config, image-processor and tokenizer values of a hub checkpoint."""
    name = hub_id.replace("/", "--") + ".json"
    path = resources.files("vlbias").joinpath("resources", "hf_configs", name)
    if not path.is_file():
        known = sorted(p.name.removesuffix(".json").replace("--", "/")
                       for p in resources.files("vlbias").joinpath("resources", "hf_configs").iterdir())
        raise KeyError(f"No recorded config for {hub_id!r}; recorded: {', '.join(known)}.")
    return json.loads(path.read_text(encoding="utf-8"))


def _tower(state: dict, prefix: str, hf_prefix: str, layers: int) -> dict:
    out = {}
    for i in range(layers):
        src, dst = f"{prefix}resblocks.{i}.", f"{hf_prefix}encoder.layers.{i}."
        for kind in ("weight", "bias"):
            q, k, v = state[f"{src}attn.in_proj_{kind}"].chunk(3, dim=0)
            out[f"{dst}self_attn.q_proj.{kind}"] = q
            out[f"{dst}self_attn.k_proj.{kind}"] = k
            out[f"{dst}self_attn.v_proj.{kind}"] = v
            out[f"{dst}self_attn.out_proj.{kind}"] = state[f"{src}attn.out_proj.{kind}"]
            out[f"{dst}layer_norm1.{kind}"] = state[f"{src}ln_1.{kind}"]
            out[f"{dst}layer_norm2.{kind}"] = state[f"{src}ln_2.{kind}"]
            out[f"{dst}mlp.fc1.{kind}"] = state[f"{src}mlp.c_fc.{kind}"]
            out[f"{dst}mlp.fc2.{kind}"] = state[f"{src}mlp.c_proj.{kind}"]
    return out


def open_clip_to_hf_clip(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """An open_clip ViT CLIP state dict in Hugging Face ``CLIPModel``'s names and shapes.

    open_clip keeps q, k and v in one ``in_proj`` matrix and its projections as ``x @ P``; Hugging
    Face splits q/k/v and stores projections as ``Linear`` weights (``P`` transposed).
    """
    def count(prefix: str) -> int:
        return 1 + max(int(key[len(prefix):].split(".")[0]) for key in state if key.startswith(prefix))

    out = {
        "logit_scale": state["logit_scale"],
        "text_projection.weight": state["text_projection"].T.contiguous(),
        "visual_projection.weight": state["visual.proj"].T.contiguous(),
        "text_model.embeddings.token_embedding.weight": state["token_embedding.weight"],
        "text_model.embeddings.position_embedding.weight": state["positional_embedding"],
        "text_model.final_layer_norm.weight": state["ln_final.weight"],
        "text_model.final_layer_norm.bias": state["ln_final.bias"],
        "vision_model.embeddings.class_embedding": state["visual.class_embedding"],
        "vision_model.embeddings.position_embedding.weight": state["visual.positional_embedding"],
        "vision_model.embeddings.patch_embedding.weight": state["visual.conv1.weight"],
        "vision_model.pre_layrnorm.weight": state["visual.ln_pre.weight"],   # sic: Hugging Face's spelling
        "vision_model.pre_layrnorm.bias": state["visual.ln_pre.bias"],
        "vision_model.post_layernorm.weight": state["visual.ln_post.weight"],
        "vision_model.post_layernorm.bias": state["visual.ln_post.bias"],
    }
    out.update(_tower(state, "transformer.", "text_model.", count("transformer.resblocks.")))
    out.update(_tower(state, "visual.transformer.", "vision_model.", count("visual.transformer.resblocks.")))
    return out


def write_clip_tokenizer_files(directory: str | Path) -> Path:
    """``vocab.json`` and ``merges.txt`` of CLIP's BPE (49,408 tokens), from the vocabulary file that
    open_clip ships, in the order both tokenizers number it: bytes, bytes + ``</w>``, merges, then
    the start and end markers."""
    from open_clip.tokenizer import default_bpe

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lines = gzip.open(default_bpe()).read().decode("utf-8").split("\n")
    merges = [tuple(line.split()) for line in lines[1:49152 - 256 - 2 + 1]]
    symbols = list(bytes_to_unicode().values())
    vocabulary = symbols + [symbol + "</w>" for symbol in symbols] + ["".join(pair) for pair in merges]
    vocabulary += ["<|startoftext|>", "<|endoftext|>"]
    (directory / "vocab.json").write_text(json.dumps({token: i for i, token in enumerate(vocabulary)}),
                                          encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(pair) for pair in merges) + "\n",
                                          encoding="utf-8")
    return directory


def t5_stand_in_tokenizer(directory: str | Path) -> "T5TokenizerFast":
    """A stand-in for T5's SentencePiece tokenizer, built offline (no package carries T5's vocabulary): a ``tokenizers`` Unigram model over the book's prompt
    words and single characters (T5's own special ids: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2; every
    sequence ends with ``</s>``), saved as ``tokenizer.json`` and wrapped by ``T5TokenizerFast``."""
    import string

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5TokenizerFast

    from .tiny.tokenizers import DEMO_WORDS

    pieces = ["▁" + word for word in DEMO_WORDS] + list(string.ascii_lowercase + string.digits + string.punctuation)
    pieces += ["▁" + c for c in string.ascii_lowercase]
    # Unigram scores are log-probabilities: whole words score above the characters they are spelt with
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + [
        (piece, -1.0 if len(piece) > 2 else -5.0) for piece in dict.fromkeys(pieces)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=2))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                             special_tokens=[("</s>", 1)])
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(directory)  # writes tokenizer.json
    return T5TokenizerFast(tokenizer_file=str(directory / "tokenizer.json"), eos_token="</s>", unk_token="<unk>",
                           pad_token="<pad>", extra_ids=0, model_max_length=512)


def write_byte_level_bpe_files(directory: str | Path, words, leading: tuple[str, ...] = (),
                               trailing: tuple[str, ...] = ()) -> Path:
    """``vocab.json`` and ``merges.txt`` of a stand-in GPT-2/RoBERTa-style byte-level BPE: the
    ``leading`` special tokens, every byte, merges that build each of ``words`` after a space
    (``Ġ`` + word, one symbol at a time), then the ``trailing`` special tokens.

    GPT-2's and RoBERTa's own merge tables are not available offline; this keeps their format,
    pre-tokenizer and merge algorithm so that the conformance tests run the same tokenizer classes
    on a small vocabulary whose ids index the models' full embedding tables.
    """
    merges, merged = [], []
    for word in sorted(set(words)):
        symbol = bytes_to_unicode()[ord(" ")]
        for character in word:
            if (symbol, character) not in merges:
                merges.append((symbol, character))
                merged.append(symbol + character)
            symbol += character
    vocabulary = list(leading) + list(bytes_to_unicode().values()) + merged + list(trailing)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.json").write_text(json.dumps({token: i for i, token in enumerate(vocabulary)}),
                                          encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges),
                                          encoding="utf-8")
    return directory


def he_scaled_convolutions(model) -> None:
    """Redraw every convolution of a randomly initialised ``model`` with std sqrt(2 / fan_in). Hugging
    Face's init (std 0.02) shrinks EfficientNet-B7's activations (ALIGN's image tower) to about 1e-22 over
    its 55 blocks, and the image embedding's norm then underflows to 0 (NaN after normalising); He-scaled
    weights keep the signal's scale."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                fan_in = module.weight[0].numel()
                module.weight.normal_(0.0, (2.0 / fan_in) ** 0.5)
