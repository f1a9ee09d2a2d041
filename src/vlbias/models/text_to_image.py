"""Text-to-image backend: diffusers pipelines (Stable Diffusion 1.x, 2.x, XL and 3).

One image per (prompt, seed). Every image gets its own ``torch.Generator`` seeded with its
seed, so image i depends only on ``prompts[i]`` and ``seeds[i]``, not on the batch it ran in
(up to one 8-bit level: float kernels may sum in a batch-dependent order).
The generators live on the CPU: the initial noise for a seed is then the same on any device
(diffusers draws it on the CPU and moves it), which makes recorded seeds portable.

The wrapped pipeline is exposed as ``.pipeline`` so that later interventions (e.g. CADS,
which anneals the text conditioning inside the denoising loop) can hook ``.denoiser`` or
pass step callbacks through ``generate(**pipeline_kwargs)``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager, Sequence

import torch
from PIL import Image
from tqdm import tqdm  # text bars: widgets would need ipywidgets

from ..device import resolve_device, resolve_dtype
from ..errors import ModelUnavailableError
from .base import TextToImageModel
from .spec import locate
from .tiny import register_tiny
from .trained import trained_pipeline

if TYPE_CHECKING:
    from transformers import T5TokenizerFast

#: generators are created here, whatever device the pipeline runs on (portable seeds)
GENERATOR_DEVICE = "cpu"


def load_text_to_image(spec: str, device=None, half: bool | None = None,
                       attention_slicing: bool = False) -> "DiffusersTextToImage":
    """Load a diffusers text-to-image pipeline by spec, with the safety checker off.

    ``attention_slicing`` trades speed for memory on small GPUs; by default PyTorch's fused
    scaled-dot-product attention (diffusers' default processor) is kept, which is faster and
    already memory-efficient.
    """
    from diffusers import DiffusionPipeline

    spec = str(spec)
    if spec.startswith("trained:"):  # trained in the book: its recipe names the directory and the pipeline class
        location, pipeline_class = trained_pipeline(spec.removeprefix("trained:"))
    else:
        location, pipeline_class = locate(spec), DiffusionPipeline
    device = resolve_device(device)
    dtype = resolve_dtype(device, half)
    try:
        # The safety checker is switched off on purpose: it blacks out images it flags (and
        # flags people unevenly), which would bias the very demographic statistics we measure.
        # Not loading it also saves memory and time.
        pipeline = pipeline_class.from_pretrained(location, dtype=dtype, **_no_safety_checker(location))
    except (OSError, ValueError) as error:  # missing files, offline hub, unknown id
        raise ModelUnavailableError(
            f"Could not load text-to-image pipeline {spec!r}: {type(error).__name__}: {error}\n"
            "Download it first while online (e.g. `hf download CompVis/stable-diffusion-v1-4`) or give "
            "the path of a directory saved with save_pretrained; offline runs (HF_HUB_OFFLINE=1) only "
            "find pipelines already in the Hugging Face cache. Tests should use 'tiny:sd'.") from error
    pipeline.to(device)
    if attention_slicing:
        pipeline.enable_attention_slicing()
    pipeline.set_progress_bar_config(disable=True)  # our own bar counts batches instead
    model = DiffusersTextToImage(spec, pipeline)
    if spec.startswith("trained:"):
        model.weights_id = f"{spec}@{Path(location).name}"  # retrained weights never reuse old caches
    return model


def _no_safety_checker(location: str) -> dict:
    """The arguments that switch a pipeline's safety checker off. Pipelines without one (SDXL, SD 3)
    would warn about arguments they do not take, so they are left out where the pipeline's
    ``model_index.json`` is here (a local directory or the hub cache) and names no safety checker;
    where it is not, they are passed, so that no checker is ever loaded by default."""
    import json

    from huggingface_hub import try_to_load_from_cache

    index = Path(location) / "model_index.json"
    if not index.is_file():
        cached = try_to_load_from_cache(location, "model_index.json") if "/" in location else None
        index = Path(cached) if isinstance(cached, str) else None
    if index is not None and "safety_checker" not in json.loads(index.read_text(encoding="utf-8")):
        return {}
    return {"safety_checker": None, "requires_safety_checker": False}


class DiffusersTextToImage(TextToImageModel):
    """A diffusers text-to-image pipeline behind the :class:`TextToImageModel` interface."""

    def __init__(self, spec: str, pipeline):
        self.spec = spec
        self.pipeline = pipeline

    def __repr__(self) -> str:
        return f"DiffusersTextToImage({self.spec!r}, {type(self.pipeline).__name__})"

    @property
    def denoiser(self):
        """The network called at every denoising step (``unet`` for SD 1.x/2.x/XL, ``transformer`` for SD 3): the place to hook
        interventions such as CADS, e.g. ``model.pipeline.unet = Wrapped(model.denoiser)``."""
        return getattr(self.pipeline, "unet", None) or getattr(self.pipeline, "transformer", None)

    @property
    def native_size(self) -> int | None:
        """The side in pixels the denoiser was trained at (512 for SD 1.x); None if unknown."""
        sample_size = getattr(getattr(self.denoiser, "config", None), "sample_size", None)
        scale = getattr(self.pipeline, "vae_scale_factor", None)
        if not isinstance(sample_size, int) or scale is None:
            return None  # the pipeline then picks its own default
        return int(sample_size * scale)

    @property
    def safety_checker_enabled(self) -> bool:
        return getattr(self.pipeline, "safety_checker", None) is not None

    def generate(self, prompts: Sequence[str], seeds: Sequence[int], num_inference_steps: int = 50,
                 guidance_scale: float = 7.5, height: int | None = None, width: int | None = None,
                 batch_size: int = 4, progress: bool = True, *,
                 batch_context: Callable[[list[int]], ContextManager] | None = None,
                 negative_prompt: str | None = None, **pipeline_kwargs) -> list[Image.Image]:
        """See :meth:`TextToImageModel.generate`. ``batch_context(batch_seeds)``, when given, is entered
        around each batch's pipeline call: samplers such as CADS hook the denoiser there.
        ``negative_prompt`` (one text for every image) replaces the empty unconditional prompt of
        classifier-free guidance; ``""`` is plain sampling."""
        if negative_prompt is not None and not isinstance(negative_prompt, str):
            raise TypeError(f"negative_prompt must be one text (or None), got {type(negative_prompt).__name__}")
        prompts, seeds = list(prompts), [int(s) for s in seeds]
        if len(prompts) != len(seeds):
            raise ValueError(f"Need one seed per prompt, got {len(prompts)} prompts and {len(seeds)} seeds.")
        height = height or self.native_size
        width = width or self.native_size
        images: list[Image.Image] = []
        batch_size = max(1, batch_size)
        for start in tqdm(range(0, len(prompts), batch_size), desc=f"generate ({self.spec})", disable=not progress):
            batch_prompts = prompts[start:start + batch_size]
            # one generator per image: its noise then does not depend on its neighbours in the batch
            batch_seeds = seeds[start:start + batch_size]
            generators = [torch.Generator(GENERATOR_DEVICE).manual_seed(s) for s in batch_seeds]
            context = batch_context(batch_seeds) if batch_context else contextlib.nullcontext()
            if negative_prompt is not None:  # the pipeline wants one per prompt when prompts are a list
                pipeline_kwargs["negative_prompt"] = [negative_prompt] * len(batch_prompts)
            with context, torch.inference_mode():
                output = self.pipeline(prompt=batch_prompts, generator=generators,
                                       num_inference_steps=num_inference_steps,
                                       guidance_scale=guidance_scale, height=height, width=width,
                                       **{"output_type": "pil", **pipeline_kwargs})
            images.extend(output.images)
        return images


# --------------------------------------------------------------------------- tiny fixture

@register_tiny("sd", "text-to-image", version=1,
               description="random Stable-Diffusion-1.x-shaped pipeline: 32-px images, 2-layer CLIP text encoder")
def build_tiny_sd(directory: Path) -> None:
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    from .tiny_tokenizers import write_byte_level_bpe

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


def _write_tiny_t5_tokenizer(directory: Path) -> "T5TokenizerFast":
    """A T5-style tokenizer built offline: a ``tokenizers`` Unigram model over the book's prompt
    words and single characters (T5's own special ids: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2; every
    sequence ends with ``</s>``), saved as ``tokenizer.json`` and wrapped by ``T5TokenizerFast``."""
    import string

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5TokenizerFast

    from .tiny_tokenizers import DEMO_WORDS

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
    directory.mkdir(parents=True, exist_ok=True)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer).save_pretrained(directory)  # writes tokenizer.json
    return T5TokenizerFast(tokenizer_file=str(directory / "tokenizer.json"), eos_token="</s>", unk_token="<unk>",
                           pad_token="<pad>", extra_ids=0, model_max_length=512)


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

    from .tiny_tokenizers import write_byte_level_bpe

    directory = Path(directory)
    scratch = directory / "_tokenizer_files"
    vocab_size = write_byte_level_bpe(scratch / "clip", style="clip",
                                      special_tokens=["<|startoftext|>", "<|endoftext|>"])
    clip_tokenizer = CLIPTokenizer(str(scratch / "clip" / "vocab.json"), str(scratch / "clip" / "merges.txt"),
                                   model_max_length=77)
    t5_tokenizer = _write_tiny_t5_tokenizer(scratch / "t5")
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

    from .tiny_tokenizers import write_byte_level_bpe

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
