"""``tiny:`` image-text fixtures: small random checkpoints saved by the libraries' own code.

Each builder writes weights, tokenizer files and image-processor config exactly as a hub
checkpoint's local copy holds them, so loading a fixture runs the real loaders. Sizes are
chosen for speed on a CPU (width 32, two layers, 32-pixel images), not for meaning.
"""

from __future__ import annotations

from pathlib import Path

import torch

from . import register_tiny
from .tokenizers import (gemma_stand_in_vocabulary, write_byte_level_bpe, write_cjk_wordpiece_vocab,
                         write_sentencepiece_model, write_wordpiece_vocab)

SEED = 0
IMAGE_SIZE = 32
PATCH_SIZE = 8
WIDTH = 32
LAYERS = 2
HEADS = 2
PROJECTION = 16
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

CLIP_SPECIALS = ["<|startoftext|>", "<|endoftext|>"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def _tower(**overrides) -> dict:
    """A two-layer, width-32 transformer config in Hugging Face's key names."""
    config = dict(hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS)
    config.update(overrides)
    return config


def _clip_text_tower(vocab_size: int) -> dict:
    # eos_token_id other than 2 makes CLIP pool at the first end-of-text token, as new configs do
    return _tower(vocab_size=vocab_size, max_position_embeddings=77, bos_token_id=0, eos_token_id=1,
                  pad_token_id=1)


def _clip_tokenizer(directory: Path):
    """A CLIPTokenizer over the byte-level vocabulary, capped at CLIP's 77 tokens."""
    from transformers import CLIPTokenizer

    vocab_size = write_byte_level_bpe(directory, style="clip", special_tokens=CLIP_SPECIALS)
    tokenizer = CLIPTokenizer.from_pretrained(directory, model_max_length=77)
    return tokenizer, vocab_size


def _clip_image_processor():
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                              crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})


@register_tiny("clip", "image-text", version=1,
               description="transformers CLIPModel, width 32, 2 layers, 32px images, patch 8")
def build_tiny_clip(directory: Path) -> None:
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    tokenizer, vocab_size = _clip_tokenizer(directory)
    text = _clip_text_tower(vocab_size)
    vision = _tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    torch.manual_seed(SEED)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=PROJECTION))
    model.save_pretrained(directory)
    CLIPProcessor(image_processor=_clip_image_processor(), tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("open-clip", "image-text", version=1,
               description="open_clip CLIP, width 32, 2 layers, 32px images, bundled SimpleTokenizer")
def build_tiny_open_clip(directory: Path) -> None:
    _open_clip(directory)


@register_tiny("open-clip-siglip", "image-text", version=1,
               description="open_clip CLIP with SigLIP's learned logit bias and square resize, width 32, 32px images")
def build_tiny_open_clip_siglip(directory: Path) -> None:
    # what open_clip's SigLIP tags add to a CLIP: a logit bias (init -10, scale log 10) and a resize without crop
    _open_clip(directory, {"init_logit_bias": -10.0, "init_logit_scale": 2.302585}, resize_mode="squash")


def _open_clip(directory: Path, extra: dict | None = None, resize_mode: str = "shortest") -> None:
    import open_clip
    from open_clip.push_to_hf_hub import save_config_for_hf
    from safetensors.torch import save_file

    model_config = {
        "embed_dim": PROJECTION,
        "vision_cfg": {"image_size": IMAGE_SIZE, "patch_size": PATCH_SIZE, "width": WIDTH,
                       "layers": LAYERS, "head_width": WIDTH // HEADS},
        # the bundled SimpleTokenizer has 49408 tokens, so the embedding table must too
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": WIDTH, "heads": HEADS,
                     "layers": LAYERS},
        **(extra or {}),
    }
    torch.manual_seed(SEED)
    model = open_clip.CLIP(**model_config)
    open_clip.set_model_preprocess_cfg(model, {"size": IMAGE_SIZE, "mean": CLIP_MEAN, "std": CLIP_STD,
                                               "interpolation": "bicubic", "resize_mode": resize_mode})
    # the files push_to_hf_hub.save_for_hf writes, less the tokenizer (SimpleTokenizer ships
    # with open_clip, and get_tokenizer picks it when text_cfg names no hf_tokenizer_name)
    save_file(model.state_dict(), str(directory / "open_clip_model.safetensors"))
    save_config_for_hf(model, directory / "open_clip_config.json", model_config=model_config)


@register_tiny("vilt", "image-text", version=1,
               description="ViltForImageAndTextRetrieval, width 32, 2 layers, 32px images, WordPiece")
def build_tiny_vilt(directory: Path) -> None:
    from transformers import (BertTokenizer, ViltConfig, ViltForImageAndTextRetrieval,
                              ViltImageProcessor, ViltProcessor)

    vocab_size = write_wordpiece_vocab(directory)
    tokenizer = BertTokenizer.from_pretrained(directory, model_max_length=40)
    config = ViltConfig(**_tower(vocab_size=vocab_size, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE,
                                 max_position_embeddings=40))
    torch.manual_seed(SEED)
    ViltForImageAndTextRetrieval(config).save_pretrained(directory)
    image_processor = ViltImageProcessor(size={"shortest_edge": IMAGE_SIZE}, size_divisor=PATCH_SIZE)
    ViltProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("bridgetower", "image-text", version=1,
               description="BridgeTowerForImageAndTextRetrieval, width 32, 2 layers, 32px images")
def build_tiny_bridgetower(directory: Path) -> None:
    from transformers import (BridgeTowerConfig, BridgeTowerForImageAndTextRetrieval,
                              BridgeTowerImageProcessor, BridgeTowerProcessor, RobertaTokenizer)

    vocab_size = write_byte_level_bpe(directory, style="gpt2", special_tokens=ROBERTA_SPECIALS)
    tokenizer = RobertaTokenizer.from_pretrained(directory, model_max_length=512)
    text = _tower(vocab_size=vocab_size, max_position_embeddings=514, pad_token_id=1, bos_token_id=0,
                  eos_token_id=2)
    # the vision tower uses hidden_size // 64 attention heads, so it needs width 64 for one head
    vision = dict(hidden_size=64, num_hidden_layers=LAYERS, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    config = BridgeTowerConfig(text_config=text, vision_config=vision, hidden_size=WIDTH,
                               num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                               intermediate_size=2 * WIDTH)
    torch.manual_seed(SEED)
    BridgeTowerForImageAndTextRetrieval(config).save_pretrained(directory)
    # BridgeTower's processor reads crop_size as a shortest edge (as the hub config has it)
    image_processor = BridgeTowerImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                                crop_size={"shortest_edge": IMAGE_SIZE},
                                                size_divisor=PATCH_SIZE)
    BridgeTowerProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("align", "image-text", version=1,
               description="transformers AlignModel, EfficientNet scaled to 0.1, BERT width 32, 32px images")
def build_tiny_align(directory: Path) -> None:
    from transformers import AlignConfig, AlignModel, AlignProcessor, BertTokenizer, EfficientNetImageProcessor

    vocab_size = write_wordpiece_vocab(directory)
    tokenizer = BertTokenizer.from_pretrained(directory, model_max_length=64)
    text = _tower(vocab_size=vocab_size, max_position_embeddings=64)
    # ALIGN's image embedding is EfficientNet's pooled output itself, whose width (32 at these
    # coefficients) the text projection must match
    vision = dict(image_size=IMAGE_SIZE, width_coefficient=0.1, depth_coefficient=0.1)
    torch.manual_seed(SEED)
    model = AlignModel(AlignConfig(text_config=text, vision_config=vision, projection_dim=32))
    # the default std-0.02 init shrinks activations through the tiny EfficientNet to ~1e-30,
    # which float32 cannot normalise; He init keeps them at unit scale
    for module in model.vision_model.modules():
        if isinstance(module, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(module.weight)
    model.save_pretrained(directory)
    image_processor = EfficientNetImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                                 crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                                 do_center_crop=False, rescale_offset=True,
                                                 image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    AlignProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("groupvit", "image-text", version=1,
               description="transformers GroupViTModel, width 32, two grouping stages, 32px images")
def build_tiny_groupvit(directory: Path) -> None:
    from transformers import CLIPProcessor, GroupViTConfig, GroupViTModel

    tokenizer, vocab_size = _clip_tokenizer(directory)
    text = _clip_text_tower(vocab_size)
    vision = _tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, depths=[1, 1], num_group_tokens=[8, 0],
                    num_output_groups=[4, 4])
    torch.manual_seed(SEED)
    model = GroupViTModel(GroupViTConfig(text_config=text, vision_config=vision, projection_dim=PROJECTION,
                                         projection_intermediate_dim=2 * WIDTH))
    model.save_pretrained(directory)
    CLIPProcessor(image_processor=_clip_image_processor(), tokenizer=tokenizer).save_pretrained(directory)


def _siglip(directory: Path, tokenizer, vocab_size: int, resample: int) -> None:
    """A SiglipModel with ``tokenizer`` and a square resize without crop, as the hub checkpoints have it (16 text
    positions here, 64 there)."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    text = _tower(vocab_size=vocab_size, max_position_embeddings=16, pad_token_id=tokenizer.pad_token_id,
                  eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    vision = _tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    torch.manual_seed(SEED)
    model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
    with torch.no_grad():  # transformers initialises both at 0; trained checkpoints have a scale and a bias
        model.logit_scale.fill_(2.3)
        model.logit_bias.fill_(-5.0)
    model.save_pretrained(directory)
    image_processor = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, resample=resample,
                                           image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("siglip", "image-text", version=1,
               description="transformers SiglipModel, width 32, 2 layers, 32px images, SentencePiece stand-in")
def build_tiny_siglip(directory: Path) -> None:
    from transformers import SiglipTokenizer

    spiece = write_sentencepiece_model(directory / "spiece.model")
    # as the hub checkpoints: input_ids only (SigLIP attends to its padding), 16 tokens (the tower's positions)
    tokenizer = SiglipTokenizer(str(spiece), model_max_length=16, model_input_names=["input_ids"])
    _siglip(directory, tokenizer, len(tokenizer), resample=3)


@register_tiny("siglip2", "image-text", version=1,
               description="SigLIP 2's fixed-resolution layout: SiglipModel with a Gemma BPE stand-in, 32px images")
def build_tiny_siglip2(directory: Path) -> None:
    from transformers import GemmaTokenizer

    vocab, merges = gemma_stand_in_vocabulary()
    # the values transformers' SigLIP 2 conversion gives Gemma's tokenizer (bilinear resize below, as there)
    tokenizer = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=False, add_eos_token=True,
                               padding_side="right", model_input_names=["input_ids"])
    _siglip(directory, tokenizer, len(vocab), resample=2)


@register_tiny("siglip2-naflex", "image-text", version=1,
               description="SigLIP 2's NaFlex layout: Siglip2Model, patches of 8 px, at most 16 per image, aspect "
                           "ratio kept, Gemma BPE stand-in")
def build_tiny_siglip2_naflex(directory: Path) -> None:
    from transformers import GemmaTokenizer, Siglip2Config, Siglip2ImageProcessor, Siglip2Model, Siglip2Processor

    vocab, merges = gemma_stand_in_vocabulary()
    # saved as the hub's are (Gemma's tokenizer class); transformers 5 reads it back as Siglip2Tokenizer
    tokenizer = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=False, add_eos_token=True,
                               padding_side="right", model_input_names=["input_ids"])
    text = _tower(vocab_size=len(vocab), max_position_embeddings=16, pad_token_id=tokenizer.pad_token_id,
                  eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    vision = _tower(patch_size=PATCH_SIZE, num_patches=16)
    torch.manual_seed(SEED)
    model = Siglip2Model(Siglip2Config(text_config=text, vision_config=vision))
    with torch.no_grad():
        model.logit_scale.fill_(2.3)
        model.logit_bias.fill_(-5.0)
    model.save_pretrained(directory)
    image_processor = Siglip2ImageProcessor(patch_size=PATCH_SIZE, max_num_patches=16, resample=2,
                                            image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    Siglip2Processor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("chinese-clip", "image-text", version=1,
               description="transformers ChineseCLIPModel, width 32, 2 layers, 32px images, CJK WordPiece stand-in")
def build_tiny_chinese_clip(directory: Path) -> None:
    from transformers import (BertTokenizer, ChineseCLIPConfig, ChineseCLIPImageProcessor, ChineseCLIPModel,
                              ChineseCLIPProcessor)

    vocab_size = write_cjk_wordpiece_vocab(directory)
    tokenizer = BertTokenizer(str(directory / "vocab.txt"), model_max_length=52)
    text = _tower(vocab_size=vocab_size, max_position_embeddings=52)
    vision = _tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    torch.manual_seed(SEED)
    ChineseCLIPModel(ChineseCLIPConfig(text_config=text, vision_config=vision,
                                       projection_dim=PROJECTION)).save_pretrained(directory)
    # Chinese-CLIP resizes to the square input without cropping
    image_processor = ChineseCLIPImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, do_center_crop=False,
                                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    ChineseCLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)


@register_tiny("blip", "image-text", version=1,
               description="BlipForImageTextRetrieval (ITM and contrastive heads), width 32, 2 layers, 32px images")
def build_tiny_blip(directory: Path) -> None:
    from transformers import BertTokenizer, BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    write_wordpiece_vocab(directory)
    # BLIP's BERT tokenizer: [DEC] as beginning of sequence and [ENC], appended to the WordPiece vocabulary
    tokenizer = BertTokenizer(str(directory / "vocab.txt"), bos_token="[DEC]", additional_special_tokens=["[ENC]"],
                              model_max_length=40)
    text = _tower(vocab_size=len(tokenizer), max_position_embeddings=40, encoder_hidden_size=WIDTH,
                  bos_token_id=tokenizer.bos_token_id, pad_token_id=tokenizer.pad_token_id,
                  sep_token_id=tokenizer.sep_token_id)
    # BLIP's vision config initialises with std 1e-10 (trained weights replace it): random images would then all
    # embed alike, so the fixture draws them with BERT's 0.02
    vision = _tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, initializer_range=0.02)
    torch.manual_seed(SEED)
    config = BlipConfig(text_config=text, vision_config=vision, image_text_hidden_size=PROJECTION)
    BlipForImageTextRetrieval(config).save_pretrained(directory)
    image_processor = BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    BlipProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory)
