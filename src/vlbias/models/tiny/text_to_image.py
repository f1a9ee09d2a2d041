"""``tiny:`` text-to-image fixtures: random pipelines shaped like Stable Diffusion 1.x, XL and 3.

Each is saved with the pipeline's ``save_pretrained``, so that loading a fixture runs
:func:`vlbias.models.load_text_to_image`'s real code path; 32-pixel images, for speed on a CPU.
"""

from __future__ import annotations

from pathlib import Path
import torch

from . import register_tiny

@register_tiny("sd", "text-to-image", version=1,
               description="random Stable-Diffusion-1.x-shaped pipeline: 32-px images, 2-layer CLIP text encoder")
def build_tiny_sd(directory: Path) -> None:
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    from .tokenizers import write_byte_level_bpe

    directory = Path(directory)
    tokenizer_dir = directory / "_tokenizer_files"
    vocab_size = write_byte_level_bpe(tokenizer_dir, style="clip",
                                      special_tokens=["<|startoftext|>", "<|endoftext|>"])
    tokenizer = CLIPTokenizer(str(tokenizer_dir / "vocab.json"), str(tokenizer_dir / "merges.txt"),
                              model_max_length=77)  # SD pads prompts to this length
    torch.manual_seed(0)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=77, projection_dim=32,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id))
    unet = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=32)
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), layers_per_block=1,
        norm_num_groups=32, sample_size=32)
    # SD 1.4's own scheduler settings
    scheduler = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              num_train_timesteps=1000, skip_prk_steps=True, steps_offset=1,
                              set_alpha_to_one=False)
    pipeline = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                       scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                       requires_safety_checker=False)
    pipeline.save_pretrained(directory)
    for path in tokenizer_dir.iterdir():  # the saved pipeline has its own tokenizer/ copy
        path.unlink()
    tokenizer_dir.rmdir()


@register_tiny("sd3", "text-to-image", version=1,
               description="random Stable-Diffusion-3-shaped pipeline: MM-DiT transformer with flow matching, "
                           "two CLIP text encoders with projection and a T5 encoder; 32-px images")
def build_tiny_sd3(directory: Path) -> None:
    """SD 3's architecture at toy size: ``SD3Transformer2DModel`` (joint text-image attention),
    ``FlowMatchEulerDiscreteScheduler`` with SD 3's shift, CLIP-L/G-like ``CLIPTextModelWithProjection``
    pair (their pooled projections concatenated give ``pooled_prompt_embeds``) and a T5 encoder whose
    width is the joint attention width (the CLIP token states are zero-padded to it, as in SD 3)."""
    from diffusers import (AutoencoderKL, FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel,
                           StableDiffusion3Pipeline)
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, CLIPTokenizer, T5Config, T5EncoderModel

    from ..conversion import t5_stand_in_tokenizer

    from .tokenizers import write_byte_level_bpe

    directory = Path(directory)
    scratch = directory / "_tokenizer_files"
    vocab_size = write_byte_level_bpe(scratch / "clip", style="clip",
                                      special_tokens=["<|startoftext|>", "<|endoftext|>"])
    clip_tokenizer = CLIPTokenizer(str(scratch / "clip" / "vocab.json"), str(scratch / "clip" / "merges.txt"),
                                   model_max_length=77)
    t5_tokenizer = t5_stand_in_tokenizer(scratch / "t5")
    clip_width, projection, t5_width = 32, 32, 64  # SD 3: 768 and 1280 (CLIP), 4096 (T5)
    torch.manual_seed(0)

    def clip_encoder():
        return CLIPTextModelWithProjection(CLIPTextConfig(
            vocab_size=vocab_size, hidden_size=clip_width, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=77, projection_dim=projection,
            bos_token_id=clip_tokenizer.bos_token_id, eos_token_id=clip_tokenizer.eos_token_id,
            pad_token_id=clip_tokenizer.pad_token_id))

    text_encoder, text_encoder_2 = clip_encoder(), clip_encoder()
    text_encoder_3 = T5EncoderModel(T5Config(
        vocab_size=len(t5_tokenizer), d_model=t5_width, d_kv=16, d_ff=64, num_layers=2, num_heads=4,
        pad_token_id=t5_tokenizer.pad_token_id, eos_token_id=t5_tokenizer.eos_token_id,
        decoder_start_token_id=t5_tokenizer.pad_token_id))
    transformer = SD3Transformer2DModel(
        sample_size=16, patch_size=2, in_channels=4, out_channels=4, num_layers=2, attention_head_dim=8,
        num_attention_heads=4, joint_attention_dim=t5_width, caption_projection_dim=32,
        pooled_projection_dim=2 * projection, pos_embed_max_size=16)
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), layers_per_block=1, norm_num_groups=32,
        sample_size=32, use_quant_conv=False, use_post_quant_conv=False,
        scaling_factor=1.5305, shift_factor=0.0609)  # SD 3's latent scaling
    scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0)  # SD 3 Medium's scheduler
    pipeline = StableDiffusion3Pipeline(
        transformer=transformer, scheduler=scheduler, vae=vae, text_encoder=text_encoder, tokenizer=clip_tokenizer,
        text_encoder_2=text_encoder_2, tokenizer_2=clip_tokenizer, text_encoder_3=text_encoder_3,
        tokenizer_3=t5_tokenizer)
    pipeline.save_pretrained(directory)
    import shutil

    shutil.rmtree(scratch)  # the saved pipeline has its own tokenizer folders


@register_tiny("sdxl", "text-to-image", version=1,
               description="random Stable-Diffusion-XL-shaped pipeline: U-Net with text-time conditioning, "
                           "CLIP text encoder and CLIP text encoder with projection; 32-px images")
def build_tiny_sdxl(directory: Path) -> None:
    """SDXL's architecture at toy size: the two text encoders' penultimate states side by side are the
    cross-attention context, the second one's projection (``text_embeds``) and the size conditioning
    (``time_ids``) enter through the U-Net's added embedding."""
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

    from .tokenizers import write_byte_level_bpe

    directory = Path(directory)
    scratch = directory / "_tokenizer_files"
    vocab_size = write_byte_level_bpe(scratch, style="clip", special_tokens=["<|startoftext|>", "<|endoftext|>"])
    tokenizer = CLIPTokenizer(str(scratch / "vocab.json"), str(scratch / "merges.txt"), model_max_length=77)
    width, projection, time_dim = 32, 32, 8  # SDXL: 768 and 1280 wide, projection 1280, time_ids 256
    config = dict(vocab_size=vocab_size, hidden_size=width, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=77, projection_dim=projection,
                  bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                  pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    text_encoder = CLIPTextModel(CLIPTextConfig(**config))
    text_encoder_2 = CLIPTextModelWithProjection(CLIPTextConfig(**config))
    unet = UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=time_dim, projection_class_embeddings_input_dim=projection + 6 * time_dim,
        cross_attention_dim=2 * width, norm_num_groups=32)
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), layers_per_block=1, norm_num_groups=32,
        sample_size=32, scaling_factor=0.13025)  # SDXL's latent scaling
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       num_train_timesteps=1000, steps_offset=1, timestep_spacing="leading")
    pipeline = StableDiffusionXLPipeline(vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2,
                                         tokenizer=tokenizer, tokenizer_2=tokenizer, unet=unet, scheduler=scheduler)
    pipeline.save_pretrained(directory)
    import shutil

    shutil.rmtree(scratch)  # the saved pipeline has its own tokenizer folders
