"""``trained:world-diffusion``: a small text-to-image diffusion model trained on a planted world.

Part IV's controlled experiment. The model learns pictures of the world
(:mod:`vlbias.data.planted_world`) from captions "a photo of a {kind}" that never name the colour,
so any colour it draws for a kind comes from the pictures alone: the planted share of red per
kind is the cause, and the generated share is the effect Part IV measures.

The design is chosen to train in about a minute on one CPU core:

* pixel space at ``image_size`` (8 by default): the world's 32-px pictures, box-filtered down;
* a diffusers ``UNet2DConditionModel`` (two levels of 16 and 32 channels, cross-attention at
  the lower level and in the middle), trained with DDPM's noise-prediction loss on 1000 steps of
  a cosine schedule, the prompt dropped to "" with probability ``prompt_dropout`` so that
  classifier-free guidance works;
* a tiny ``CLIPTextModel`` (one layer, 32 wide) with a WordPiece tokenizer, trained jointly;
* the saved weights are a moving average over the last hundred or so steps (EMA);
* DDIM sampling (deterministic given the starting noise).

:class:`WorldDiffusionPipeline` is a diffusers ``DiffusionPipeline`` with the call signature of
Stable Diffusion's (``prompt``, ``generator``, ``num_inference_steps``, ``guidance_scale``,
``negative_prompt``, ``height``, ``width``, ``output_type``) and the same classifier-free-guidance
batch layout ``[unconditional; conditional]``, so Part IV's ``DiffusersTextToImage`` wrapper, the
generation manifest and the CADS hook on ``pipeline.unet`` apply to it unchanged.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..data.base import sha256_hex
from ..data.planted_world import (
    CAPTION_TEMPLATE,
    small_pictures,
    spread_shares,
    world_defaults,
    world_parameters,
    world_root,
)
from ..paths import build_once, cache_dir
from .trained import register_trained

#: bump when the same options would train different weights
WORLD_DIFFUSION_VERSION = 1
#: tokens per prompt (padded): "[CLS] a photo of a crescent [SEP]" is 7
MAX_PROMPT_TOKENS = 12

@dataclass(frozen=True)
class DiffusionTrainingConfig:
    """Everything the trained weights depend on, besides the data."""

    #: 600: 04e's headline (rho of the generated shares at guidance 3, 48 pictures per kind) is 0.92 as
    #: at 1,000 steps, in 60% of the training time (benchmarks/README.md, issue 22's speed); the model
    #: follows the planted shares less closely without guidance (rho 0.72 against 0.84)
    steps: int = 600
    batch_size: int = 64
    learning_rate: float = 3e-3
    image_size: int = 8
    prompt_dropout: float = 0.1
    #: the saved weights are an exponential moving average of the trained ones (0: the last step's)
    ema_decay: float = 0.99
    channels: tuple[int, int] = (16, 32)
    text_width: int = 32
    seed: int = 0

    def __post_init__(self):
        if self.image_size < 4 or self.image_size % 2:
            raise ValueError(f"image_size must be an even number of pixels >= 4, got {self.image_size!r}")
        if not 0 <= self.ema_decay < 1:
            raise ValueError(f"ema_decay must lie in [0, 1), got {self.ema_decay!r}")
        if not 0 <= self.prompt_dropout < 1:
            raise ValueError(f"prompt_dropout must lie in [0, 1), got {self.prompt_dropout!r}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be positive, got {self.steps!r} and {self.batch_size!r}")


#: the options of ``trained:world-diffusion`` and their defaults, read from where they are defined:
#: the world's (:func:`vlbias.data.planted_world.world_defaults`) and the training's (the dataclass)
WORLD_DIFFUSION_DEFAULTS = {name: {**world_defaults(), **asdict(DiffusionTrainingConfig())}[name] for name in (
    "share_spread", "seed", "steps", "batch_size", "learning_rate", "train_per_kind", "image_size", "prompt_dropout",
    "ema_decay")}


# ----------------------------------------------------------------------------------------- the pipeline

@lru_cache(maxsize=1)
def world_diffusion_pipeline_class() -> type:
    """:class:`WorldDiffusionPipeline`, defined on first use: importing this module (which every
    ``trained:`` spec does) then does not import diffusers."""
    import torch
    from diffusers import DiffusionPipeline, ImagePipelineOutput
    from diffusers.utils.torch_utils import randn_tensor

    class WorldDiffusionPipeline(DiffusionPipeline):
        """Text-conditional pixel-space diffusion: tokenizer, text encoder, UNet, DDIM scheduler."""

        model_cpu_offload_seq = "text_encoder->unet"
        _optional_components = ["safety_checker"]

        def __init__(self, unet, text_encoder, tokenizer, scheduler, safety_checker=None,
                     requires_safety_checker: bool = False):
            super().__init__()
            # no safety checker: the world has nothing to hide, and Part IV never filters images
            self.register_modules(unet=unet, text_encoder=text_encoder, tokenizer=tokenizer, scheduler=scheduler,
                                  safety_checker=safety_checker)
            self.register_to_config(requires_safety_checker=requires_safety_checker)
            self.vae_scale_factor = 1  # pixel space: the UNet's sample is the picture
            self._guidance_scale = 1.0

        @property
        def guidance_scale(self) -> float:
            return self._guidance_scale

        @property
        def do_classifier_free_guidance(self) -> bool:
            return self._guidance_scale > 1.0

        def encode_prompt(self, prompts: list[str]):
            """(n, MAX_PROMPT_TOKENS, width) last hidden states of the text encoder."""
            tokens = self.tokenizer(list(prompts), padding="max_length", max_length=MAX_PROMPT_TOKENS,
                                    truncation=True, return_tensors="pt")
            return self.text_encoder(tokens.input_ids.to(self.device)).last_hidden_state

        @torch.no_grad()
        def __call__(self, prompt, generator=None, num_inference_steps: int = 20, guidance_scale: float = 1.0,
                     negative_prompt=None, height: int | None = None, width: int | None = None, eta: float = 0.0,
                     output_type: str = "pil", return_dict: bool = True):
            prompts = [prompt] if isinstance(prompt, str) else list(prompt)
            size = self.unet.config.sample_size
            if (height or size) != size or (width or size) != size:
                raise ValueError(f"this model draws {size} x {size} pixels; got height={height}, width={width}")
            self._guidance_scale = float(guidance_scale)
            condition = self.encode_prompt(prompts)
            if self.do_classifier_free_guidance:
                negatives = [""] * len(prompts) if negative_prompt is None else (
                    [negative_prompt] * len(prompts) if isinstance(negative_prompt, str) else list(negative_prompt))
                condition = torch.cat([self.encode_prompt(negatives), condition])  # [unconditional; conditional]
            shape = (len(prompts), self.unet.config.in_channels, size, size)
            sample = randn_tensor(shape, generator=generator, device=self.device, dtype=self.unet.dtype)
            self.scheduler.set_timesteps(num_inference_steps, device=self.device)
            for t in self.scheduler.timesteps:
                model_input = torch.cat([sample] * 2) if self.do_classifier_free_guidance else sample
                noise = self.unet(model_input, t, encoder_hidden_states=condition).sample
                if self.do_classifier_free_guidance:
                    unconditional, conditional = noise.chunk(2)
                    noise = unconditional + self._guidance_scale * (conditional - unconditional)
                sample = self.scheduler.step(noise, t, sample, eta=eta).prev_sample
            images = (sample / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1).float().cpu().numpy()
            if output_type == "pil":
                images = self.numpy_to_pil(images)
            elif output_type != "np":
                raise ValueError(f"output_type must be 'pil' or 'np', got {output_type!r}")
            return ImagePipelineOutput(images=images) if return_dict else (images,)

    return WorldDiffusionPipeline


def load_world_diffusion_pipeline(directory: str | Path, **kwargs):
    """The saved :class:`WorldDiffusionPipeline` in ``directory`` (``from_pretrained``'s keywords pass on)."""
    return world_diffusion_pipeline_class().from_pretrained(directory, **kwargs)


# ----------------------------------------------------------------------------------------- training

def _new_components(config: DiffusionTrainingConfig, directory: Path, extra_words=()):
    """Randomly initialised UNet, text encoder, tokenizer and DDIM scheduler, seeded by ``config.seed``;
    ``extra_words`` join the vocabulary after the world's kinds and colours (each one token)."""
    import torch
    from diffusers import DDIMScheduler, UNet2DConditionModel
    from transformers import BertTokenizer, CLIPTextConfig, CLIPTextModel

    from ..data.planted_world import COLOURS, KINDS
    from .tiny.tokenizers import write_wordpiece_vocab

    vocabulary = directory / "_vocabulary"
    write_wordpiece_vocab(vocabulary, extra_words=sorted(set(KINDS) | set(COLOURS)) + sorted(set(extra_words)))
    tokenizer = BertTokenizer.from_pretrained(vocabulary, model_max_length=MAX_PROMPT_TOKENS)
    shutil.rmtree(vocabulary)
    torch.manual_seed(config.seed)
    # the pooled output is unused (the UNet reads every token), but CLIP pools at the end-of-text
    # token: BERT's [SEP] here, as in the mini-CLIP
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=config.text_width, intermediate_size=2 * config.text_width,
        num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=MAX_PROMPT_TOKENS,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id))
    low, high = config.channels
    unet = UNet2DConditionModel(
        sample_size=config.image_size, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=(low, high), down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=config.text_width,
        attention_head_dim=8, norm_num_groups=8)
    # cosine noise schedule (better than linear at few pixels); sampling from t = 999, as SD's
    scheduler = DDIMScheduler(num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2", clip_sample=True,
                              set_alpha_to_one=False, steps_offset=1, prediction_type="epsilon",
                              timestep_spacing="trailing")
    return unet, text_encoder, tokenizer, scheduler


def training_pictures(pixels: np.ndarray, image_size: int) -> np.ndarray:
    """:func:`small_pictures` scaled to [-1, 1], channels first: (n, 3, size, size) float32."""
    return (small_pictures(pixels, image_size).astype(np.float32) / 127.5 - 1.0).transpose(0, 3, 1, 2)


def train_world_diffusion(target: str | Path, pixels: np.ndarray, kinds: list[str], config: DiffusionTrainingConfig,
                          about: dict | None = None, captions: list[str] | None = None, extra_words=()) -> Path:
    """``target``, holding a :class:`WorldDiffusionPipeline` trained on ``pixels`` (uint8, n x s x s x 3)
    captioned "a photo of a {kind}" (``kinds``, one per picture); trained on first use.

    DDPM training: a random timestep per picture, the noisy picture from the scheduler's
    ``add_noise``, the squared error of the predicted noise; the caption is replaced by "" with
    probability ``prompt_dropout``. The weights saved are the exponential moving average of the
    trained ones (``ema_decay``), which samples better than the last step's. One torch thread and
    one seeded generator for every random draw: the same inputs give the same weights bit for bit
    on one machine. ``captions`` (one per picture) replace "a photo of a {kind}" where given, and
    ``extra_words`` join the vocabulary (Part IV's profession world). ``training.json`` holds
    ``about``, the loss every 100 steps and the time taken.
    """
    def build(staging: Path) -> None:
        pipeline, history, seconds = _train(staging, pixels, kinds, config, captions, extra_words)
        pipeline.save_pretrained(staging)
        (staging / "training.json").write_text(json.dumps(
            {**(about or {}), "config": asdict(config), "train_images": len(kinds), "history": history,
             "seconds": seconds}, indent=1))

    return build_once(target, build, ".world-diffusion-", threads=1)


def _train(staging: Path, pixels: np.ndarray, kinds: list[str], config: DiffusionTrainingConfig,
           captions: list[str] | None = None, extra_words=()):
    import torch

    unet, text_encoder, tokenizer, scheduler = _new_components(config, staging, extra_words)
    images = torch.from_numpy(training_pictures(pixels, config.image_size))
    if captions is None:
        captions = [CAPTION_TEMPLATE.format(kind) for kind in kinds]
    names = sorted(set(captions))  # the same order as the kinds' under the one template
    prompts = [""] + names  # row 0: the dropped prompt
    tokens = tokenizer(prompts, padding="max_length", max_length=MAX_PROMPT_TOKENS, return_tensors="pt").input_ids
    index = {caption: 1 + i for i, caption in enumerate(names)}
    prompt_of = torch.tensor([index[caption] for caption in captions])
    generator = torch.Generator().manual_seed(config.seed)
    parameters = list(unet.parameters()) + list(text_encoder.parameters())
    # foreach: one call updates every tensor, bit for bit as the per-tensor loop (tests/core/models/test_trained.py)
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=0.0, foreach=True)
    # a short warm-up, then cosine decay: stable at this learning rate and ends on small steps
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 100) * 0.5 * (
        1 + np.cos(np.pi * min(step, config.steps) / config.steps)))
    alphas = scheduler.alphas_cumprod
    average = [p.detach().clone() for p in parameters]
    unet.train()
    text_encoder.train()
    history, losses, started = [], [], time.monotonic()
    for step in range(config.steps):
        batch = torch.randint(len(images), (config.batch_size,), generator=generator)
        dropped = torch.rand(config.batch_size, generator=generator) < config.prompt_dropout
        which = torch.where(dropped, 0, prompt_of[batch])
        timesteps = torch.randint(scheduler.config.num_train_timesteps, (config.batch_size,), generator=generator)
        noise = torch.randn(images[batch].shape, generator=generator)
        scale = alphas[timesteps].sqrt().view(-1, 1, 1, 1)
        noisy = scale * images[batch] + (1 - alphas[timesteps]).sqrt().view(-1, 1, 1, 1) * noise
        condition = text_encoder(tokens).last_hidden_state[which]  # 13 prompts encoded, then indexed
        loss = torch.nn.functional.mse_loss(unet(noisy, timesteps, encoder_hidden_states=condition).sample, noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        with torch.no_grad():
            torch._foreach_lerp_(average, parameters, 1 - config.ema_decay)  # mean.lerp_(parameter, w), every tensor
        losses.append(float(loss.detach()))
        if (step + 1) % 100 == 0 or step + 1 == config.steps:
            history.append({"step": step + 1, "loss": float(np.mean(losses)),
                            "seconds": round(time.monotonic() - started, 1)})
            losses = []
    with torch.no_grad():
        for mean, parameter in zip(average, parameters):
            parameter.copy_(mean)
    unet.eval()
    text_encoder.eval()
    pipeline = world_diffusion_pipeline_class()(unet=unet, text_encoder=text_encoder, tokenizer=tokenizer,
                                                scheduler=scheduler)
    return pipeline, history, round(time.monotonic() - started, 1)


def _world_diffusion_recipe(share_spread: float, seed: int, steps: int, batch_size: int, learning_rate: float,
                            train_per_kind: int, image_size: int, prompt_dropout: float,
                            ema_decay: float) -> tuple[dict, DiffusionTrainingConfig, dict, Path]:
    """(world parameters, training config, ``about``, target directory) of these options."""
    world = dict(shares=spread_shares(share_spread), train_per_kind=train_per_kind, seed=seed)
    config = DiffusionTrainingConfig(steps=steps, batch_size=batch_size, learning_rate=learning_rate,
                                     image_size=image_size, prompt_dropout=prompt_dropout, ema_decay=ema_decay,
                                     seed=seed)
    about = {"version": WORLD_DIFFUSION_VERSION, "world": world_parameters(**world)}
    key = sha256_hex(json.dumps({**about, "config": asdict(config)}, sort_keys=True))[:16]
    return world, config, about, cache_dir() / "trained" / f"world-diffusion-{key}"


def explain_world_diffusion(share_spread: float, seed: int, steps: int, batch_size: int, train_per_kind: int,
                            image_size: int, **_) -> str:
    """One sentence: what ``trained:world-diffusion?...`` is and which cause its world plants."""
    low, high = 50 * (1 - share_spread), 50 * (1 + share_spread)
    planted = ("every kind half red: no share is planted" if share_spread == 0 else
               f"red's share per kind planted from {low:.0f}% to {high:.0f}%")
    return (f"a diffusion model of {image_size}×{image_size}-pixel pictures trained here ({steps} steps of {batch_size} "
            f"pictures, seed {seed}) on {train_per_kind} pictures per kind of the planted world, captions never "
            f"naming the colour; {planted}")


#: the cause behind Part IV's claims that the planted world can plant (:func:`world_diffusion_plants`)
KIND_SHARES = "kind_shares"


def world_diffusion_plants(share_spread: float, **_) -> dict[str, str]:
    """The cause behind Part IV's claims that ``trained:world-diffusion?...`` was trained with, in words:
    red's share per kind spread around a half (``kind_shares``, when ``share_spread`` is above 0; 0 is
    the control, every kind half red). Nothing in the world sets whether sampling amplifies the shares,
    or what guidance or CADS does."""
    if not share_spread > 0:
        return {}
    low, high = 50 * (1 - share_spread), 50 * (1 + share_spread)
    return {KIND_SHARES: f"red's share per kind planted from {low:.0f}% to {high:.0f}% in the training pictures"}


@register_trained("world-diffusion", "text-to-image", WORLD_DIFFUSION_DEFAULTS,
                  pipeline_class=world_diffusion_pipeline_class,
                  target=lambda **options: _world_diffusion_recipe(**options)[3], explain=explain_world_diffusion,
                  plants=world_diffusion_plants)
def world_diffusion(**options) -> Path:
    """A pixel-space text-to-image diffusion model trained on a planted world, captions never naming the colour."""
    from ..data import load_dataset

    world, config, about, target = _world_diffusion_recipe(**options)
    if (target / "training.json").exists():
        return target
    train = load_dataset("planted-world", root=world_root(**world), split="train")
    return train_world_diffusion(target, train.pixels, list(train.records["kind"]), config, about)
