"""``tiny:`` generative vision-language fixtures: one random model per family of
:data:`vlbias.models.vision_language.VISION_LANGUAGE_BACKENDS`.

Each is the family's own ``*ForConditionalGeneration`` class at width 32 with 1-2 layers per tower, its
own processor class (image processor, tokenizer, chat template where the family has one), saved with
``save_pretrained`` so that :func:`vlbias.models.load_vision_language_model` reads it as it reads a hub
checkpoint. Images are small (28 px, patch 14), so a forward pass takes milliseconds.

The tokenizers are byte-level BPE vocabularies without merges (every character a token) plus the family's
special tokens, in ``tokenizers``' own format: what they share with the real ones is the special tokens,
the way a pair of texts is typed (PaliGemma's prefix 0, suffix 1) and whether a BOS is added. The chat
templates are the families' published ones (see :data:`CHAT_TEMPLATES`).
"""

from __future__ import annotations

from pathlib import Path

import torch

from . import register_tiny

TINY_HIDDEN = 32
IMAGE_SIZE = 28
PATCH = 14

#: the chat templates of the hub checkpoints the fixtures stand for. LLaVA-1.5 (``llava-hf/llava-1.5-7b-hf``'s
#: chat_template.json), LLaVA-NeXT Mistral (``llava-hf/llava-v1.6-mistral-7b-hf``) and Qwen2-VL-2B-Instruct
#: (its tokenizer_config.json) as quoted in openvino.genai's ``src/cpp/src/tokenizer.cpp`` table of known
#: templates; Idefics3/SmolVLM: transformers' own ``processing_smolvlm.DEFAULT_CHAT_TEMPLATE`` (read at build
#: time), which SmolVLM's checkpoints carry; LLaVA-OneVision: llava-hf's template for its Qwen2 models.
CHAT_TEMPLATES = {
    "llava": (
        "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}"
        "{% endif %}{# Render all images first #}{% for content in message['content'] | selectattr('type', "
        "'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != "
        "'assistant' %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
        "{{ content['text'] + ' '}}{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', "
        "'equalto', 'text') %}{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"),
    "llava_next": (
        "{% for message in messages %}{% if message['role'] == 'system' %}{{ '<<SYS>>\n' + message['content'][0]"
        "['text'] + '\n<</SYS>>\n\n' }}{% elif message['role'] == 'user' %}{{ '[INST] ' }}{# Render all images "
        "first #}{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}"
        "{% endfor %}{# Render all text next #}{% for content in message['content'] | selectattr('type', 'equalto', "
        "'text') %}{{ content['text'] }}{% endfor %}{{' [/INST]' }}{% elif message['role'] == 'assistant' %}"
        "{{ ' ' + message['content'][0]['text'] + '<\\\\s> '}}{% else %}{{ raise_exception('Only user and assistant "
        "roles are supported!') }}{% endif %}{% endfor %}"),
    "llava_onevision": (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + ' '}}{# Render all images first #}"
        "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>' }}{% endfor %}"
        "{# Render all video then #}{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}"
        "{{ '<video>' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}{% for content "
        "in message['content'] | selectattr('type', 'equalto', 'text') %}{{ '\n' + content['text'] }}{% endfor %}"
        "{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{% generation %}"
        "{{ '\n' + content['text'] }}{% endgeneration %}{% endfor %}{% endif %}{{'<|im_end|>'}}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"),
    "qwen2_vl": (
        "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in "
        "messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
        "assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
        "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] "
        "== 'image' or 'image' in content or 'image_url' in content %}{% set image_count.value = image_count.value "
        "+ 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|>"
        "<|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = "
        "video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|>"
        "<|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}"
        "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"),
}
CHAT_TEMPLATES["qwen2_5_vl"] = CHAT_TEMPLATES["qwen2_vl"]


def chat_template(family: str) -> str:
    """The chat template of ``family`` (Idefics3 and SmolVLM share transformers' SmolVLM template)."""
    if family in ("idefics3", "smolvlm"):
        from transformers.models.smolvlm.processing_smolvlm import DEFAULT_CHAT_TEMPLATE

        return DEFAULT_CHAT_TEMPLATE
    return CHAT_TEMPLATES[family]


#: each family's special tokens: (bos, eos, pad, others); ``bos_added``: whether the tokenizer writes BOS
#: before a text itself (Llama's and OPT's do; PaliGemma's processor writes it; the Qwen and SmolLM
#: templates open with their own tokens)
SPECIAL_TOKENS = {
    "llama": dict(bos="<s>", eos="</s>", pad="<pad>", bos_added=True, others=["<image>"]),
    "qwen": dict(bos=None, eos="<|im_end|>", pad="<|endoftext|>", bos_added=False,
                 others=["<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
                         "<image>", "<video>"]),
    "smollm": dict(bos="<|im_start|>", eos="<end_of_utterance>", pad="<|im_end|>", bos_added=False,
                   others=["<image>", "<fake_token_around_image>", "<global-img>"]
                   + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]),
    "gemma": dict(bos="<bos>", eos="<eos>", pad="<pad>", bos_added=False, others=["<image>"]),
    "opt": dict(bos="</s>", eos="</s>", pad="<pad>", bos_added=True, others=["<image>"]),
}


def byte_level_tokenizer(style: str):
    """A byte-level BPE tokenizer without merges plus ``SPECIAL_TOKENS[style]``, in ``tokenizers``' format:
    a pair of texts is typed 0 then 1 (PaliGemma's prefix and suffix), BOS is prepended where the family's
    tokenizer prepends it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from .tokenizers import bytes_to_unicode

    tokens = SPECIAL_TOKENS[style]
    specials = list(dict.fromkeys(t for t in [tokens["pad"], tokens["bos"], tokens["eos"]] if t))
    vocab = {token: index for index, token in enumerate(specials + list(bytes_to_unicode().values()))}
    backend = Tokenizer(models.BPE(vocab, [], fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    bos = tokens["bos"]
    if tokens["bos_added"]:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A:0", pair=f"{bos} $A:0 $B:1", special_tokens=[(bos, vocab[bos])])
    else:
        backend.post_processor = processors.TemplateProcessing(single="$A:0", pair="$A:0 $B:1")
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials + tokens["others"]])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos, eos_token=tokens["eos"],
                                   pad_token=tokens["pad"], model_max_length=512)


def _llama_text(vocab_size: int, ids: dict):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab_size, hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                       bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"])


def _clip_vision(**extra):
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                            image_size=IMAGE_SIZE, patch_size=PATCH, projection_dim=TINY_HIDDEN, **extra)


def _siglip_vision(**extra):
    from transformers import SiglipVisionConfig

    return SiglipVisionConfig(hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, image_size=IMAGE_SIZE, patch_size=PATCH, **extra)


def _save(directory: Path, model_class, config, processor, ids: dict) -> None:
    """Draw the model's weights (seed 0) and save it with its processor; generation stops at the family's
    end-of-turn token."""
    torch.manual_seed(0)
    model = model_class(config)
    model.generation_config.eos_token_id = ids["eos"]
    model.generation_config.pad_token_id = ids["pad"]
    model.generation_config.bos_token_id = None
    model.save_pretrained(directory)
    processor.save_pretrained(directory)


def _ids(tokenizer, style: str) -> dict:
    tokens = SPECIAL_TOKENS[style]
    return {"eos": tokenizer.convert_tokens_to_ids(tokens["eos"]), "pad": tokenizer.convert_tokens_to_ids(tokens["pad"]),
            "bos": tokenizer.convert_tokens_to_ids(tokens["bos"]) if tokens["bos"] else None}


def _clip_image_processor():
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})


@register_tiny("llava", "vision-language", version=1,
               description="random LLaVA-1.5 (CLIP vision tower, Llama text, 2 layers each) with LLaVA-1.5's chat template")
def build_tiny_llava(directory: Path) -> None:
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tokenizer = byte_level_tokenizer("llama")
    processor = LlavaProcessor(_clip_image_processor(), tokenizer, patch_size=PATCH, vision_feature_select_strategy="default",
                               num_additional_image_tokens=1, chat_template=chat_template("llava"))
    ids = _ids(tokenizer, "llama")
    config = LlavaConfig(vision_config=_clip_vision(), text_config=_llama_text(len(tokenizer), ids),
                         image_token_index=processor.image_token_id, vision_feature_layer=-2,
                         vision_feature_select_strategy="default")
    _save(directory, LlavaForConditionalGeneration, config, processor, ids)


@register_tiny("llava-next", "vision-language", version=1,
               description="random LLaVA-NeXT (any-resolution tiles of 28 px) with LLaVA-NeXT Mistral's chat template")
def build_tiny_llava_next(directory: Path) -> None:
    from transformers import (LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextImageProcessor,
                              LlavaNextProcessor)

    tokenizer = byte_level_tokenizer("llama")
    pinpoints = [[IMAGE_SIZE, IMAGE_SIZE], [IMAGE_SIZE, 2 * IMAGE_SIZE], [2 * IMAGE_SIZE, IMAGE_SIZE]]
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": IMAGE_SIZE}, image_grid_pinpoints=pinpoints,
                                              crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaNextProcessor(image_processor, tokenizer, patch_size=PATCH, vision_feature_select_strategy="default",
                                   num_additional_image_tokens=1, chat_template=chat_template("llava_next"))
    ids = _ids(tokenizer, "llama")
    config = LlavaNextConfig(vision_config=_clip_vision(), text_config=_llama_text(len(tokenizer), ids),
                             image_token_index=processor.image_token_id, image_grid_pinpoints=pinpoints,
                             vision_feature_layer=-2, vision_feature_select_strategy="default")
    _save(directory, LlavaNextForConditionalGeneration, config, processor, ids)


def _qwen2_text(vocab_size: int, ids: dict):
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=vocab_size, hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                       eos_token_id=ids["eos"], pad_token_id=ids["pad"])


@register_tiny("llava-onevision", "vision-language", version=1,
               description="random LLaVA-OneVision (SigLIP vision tower, Qwen2 text) with its chat template")
def build_tiny_llava_onevision(directory: Path) -> None:
    from transformers import (LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration,
                              LlavaOnevisionImageProcessor, LlavaOnevisionProcessor, LlavaOnevisionVideoProcessor)

    tokenizer = byte_level_tokenizer("qwen")
    pinpoints = [[IMAGE_SIZE, IMAGE_SIZE], [IMAGE_SIZE, 2 * IMAGE_SIZE], [2 * IMAGE_SIZE, IMAGE_SIZE]]
    image_processor = LlavaOnevisionImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                                   image_grid_pinpoints=pinpoints)
    video_processor = LlavaOnevisionVideoProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaOnevisionProcessor(image_processor, tokenizer, video_processor, num_image_tokens=(IMAGE_SIZE // PATCH) ** 2,
                                        vision_feature_select_strategy="full", chat_template=chat_template("llava_onevision"))
    ids = _ids(tokenizer, "qwen")
    config = LlavaOnevisionConfig(vision_config=_siglip_vision(), text_config=_qwen2_text(len(tokenizer), ids),
                                  image_token_index=processor.image_token_id,
                                  video_token_index=processor.video_token_id, image_grid_pinpoints=pinpoints,
                                  vision_feature_layer=-1, vision_feature_select_strategy="full")
    _save(directory, LlavaOnevisionForConditionalGeneration, config, processor, ids)


def _build_qwen_vl(directory: Path, family: str) -> None:
    import transformers

    prefix = {"qwen2_vl": "Qwen2VL", "qwen2_5_vl": "Qwen2_5_VL"}[family]
    tokenizer = byte_level_tokenizer("qwen")
    pixels = {"min_pixels": 4 * IMAGE_SIZE * IMAGE_SIZE, "max_pixels": 16 * IMAGE_SIZE * IMAGE_SIZE}
    image_processor = transformers.Qwen2VLImageProcessor(patch_size=PATCH, merge_size=2, **pixels)
    video_processor = transformers.Qwen2VLVideoProcessor(patch_size=PATCH, merge_size=2, **pixels)
    processor = getattr(transformers, f"{prefix}Processor")(image_processor, tokenizer, video_processor,
                                                             chat_template=chat_template(family))
    ids = _ids(tokenizer, "qwen")
    vision = dict(depth=2, hidden_size=TINY_HIDDEN, num_heads=4, patch_size=PATCH, spatial_merge_size=2,
                  temporal_patch_size=2)
    if family == "qwen2_vl":
        vision |= dict(embed_dim=TINY_HIDDEN, mlp_ratio=2)
    else:
        vision |= dict(intermediate_size=64, out_hidden_size=TINY_HIDDEN, window_size=2 * 2 * PATCH,
                       fullatt_block_indexes=[1])
    text = dict(vocab_size=len(tokenizer), hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                rope_parameters={"rope_type": "default", "mrope_section": [1, 1, 2], "rope_theta": 10000.0},
                bos_token_id=None, eos_token_id=ids["eos"], pad_token_id=ids["pad"])
    config = getattr(transformers, f"{prefix}Config")(vision_config=vision, text_config=text,
                                                      image_token_id=processor.image_token_id,
                                                      video_token_id=processor.video_token_id,
                                                      vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"))
    _save(directory, getattr(transformers, f"{prefix}ForConditionalGeneration"), config, processor, ids)


@register_tiny("qwen2-vl", "vision-language", version=1,
               description="random Qwen2-VL (2 vision blocks, 2 text layers, M-RoPE) with Qwen2-VL's chat template")
def build_tiny_qwen2_vl(directory: Path) -> None:
    _build_qwen_vl(directory, "qwen2_vl")


@register_tiny("qwen2.5-vl", "vision-language", version=1,
               description="random Qwen2.5-VL (windowed and full vision attention, 2 text layers) with its chat template")
def build_tiny_qwen2_5_vl(directory: Path) -> None:
    _build_qwen_vl(directory, "qwen2_5_vl")


@register_tiny("idefics3", "vision-language", version=1,
               description="random Idefics3, as SmolVLM (image split into 28 px tiles plus a global view), with "
                           "SmolVLM's chat template")
def build_tiny_idefics3(directory: Path) -> None:
    from transformers import (Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor,
                              Idefics3Processor, Idefics3VisionConfig)

    tokenizer = byte_level_tokenizer("smollm")
    image_processor = Idefics3ImageProcessor(size={"longest_edge": 2 * IMAGE_SIZE},
                                             max_image_size={"longest_edge": IMAGE_SIZE})
    scale_factor = 2
    processor = Idefics3Processor(image_processor, tokenizer, image_seq_len=(IMAGE_SIZE // PATCH) ** 2 // scale_factor ** 2,
                                  chat_template=chat_template("idefics3"))
    ids = _ids(tokenizer, "smollm")
    vision = Idefics3VisionConfig(hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, image_size=IMAGE_SIZE, patch_size=PATCH)
    config = Idefics3Config(vision_config=vision, text_config=_llama_text(len(tokenizer), ids),
                            image_token_id=processor.image_token_id, scale_factor=scale_factor, pad_token_id=ids["pad"])
    _save(directory, Idefics3ForConditionalGeneration, config, processor, ids)


@register_tiny("paligemma", "vision-language", version=1,
               description="random PaliGemma (SigLIP vision tower, Gemma text); no chat template: prefix, then suffix")
def build_tiny_paligemma(directory: Path) -> None:
    from transformers import (GemmaConfig, PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor,
                              SiglipImageProcessor)

    tokenizer = byte_level_tokenizer("gemma")
    image_processor = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    image_processor.image_seq_length = (IMAGE_SIZE // PATCH) ** 2
    processor = PaliGemmaProcessor(image_processor, tokenizer)  # adds <image>, <loc....> and <seg...> tokens
    ids = _ids(tokenizer, "gemma")
    text = GemmaConfig(vocab_size=len(tokenizer), hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=8, max_position_embeddings=512,
                       bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"])
    config = PaliGemmaConfig(vision_config=_siglip_vision(projection_dim=TINY_HIDDEN), text_config=text,
                             image_token_index=processor.image_token_id, projection_dim=TINY_HIDDEN)
    _save(directory, PaliGemmaForConditionalGeneration, config, processor, ids)


@register_tiny("blip-2", "vision-language", version=1,
               description="random BLIP-2 (ViT, Q-Former with 4 queries, OPT text); no chat template: prompt, then text")
def build_tiny_blip_2(directory: Path) -> None:
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, Blip2QFormerConfig,
                              Blip2VisionConfig, BlipImageProcessor, OPTConfig)

    tokenizer = byte_level_tokenizer("opt")
    queries = 4
    image_processor = BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = Blip2Processor(image_processor, tokenizer, num_query_tokens=queries)
    ids = _ids(tokenizer, "opt")
    vision = Blip2VisionConfig(hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                               image_size=IMAGE_SIZE, patch_size=PATCH)
    qformer = Blip2QFormerConfig(hidden_size=TINY_HIDDEN, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, encoder_hidden_size=TINY_HIDDEN)
    text = OPTConfig(vocab_size=len(tokenizer), hidden_size=TINY_HIDDEN, ffn_dim=64, num_hidden_layers=2,
                     num_attention_heads=4, word_embed_proj_dim=TINY_HIDDEN, max_position_embeddings=512,
                     bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"])
    config = Blip2Config(vision_config=vision.to_dict(), qformer_config=qformer.to_dict(), text_config=text.to_dict(),
                         num_query_tokens=queries,
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    _save(directory, Blip2ForConditionalGeneration, config, processor, ids)
