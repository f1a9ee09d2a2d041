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
import warnings
from pathlib import Path
from typing import Callable, ContextManager, Sequence

import torch
from PIL import Image
from tqdm import tqdm  # text bars: widgets would need ipywidgets

from ..device import resolve_device, resolve_dtype
from ..errors import ModelUnavailableError
from .base import TextToImageModel
from .identity import identify
from .spec import ModelSpec, locate, parse_spec, refuse_options
from .trained import trained_pipeline

#: generators are created here, whatever device the pipeline runs on (portable seeds)
GENERATOR_DEVICE = "cpu"

#: said when a pipeline is loaded in float16 on the CPU. Diffusers' own warning there says the pipeline
#: "cannot run"; with this PyTorch it runs, and the tests and the dress rehearsal run it on purpose
#: (issue 24), but slowly where the CPU has no float16 arithmetic (benchmarks/cpu_half.py)
CPU_HALF_WARNING = (
    "{spec}: float16 on the CPU. It runs, but a CPU without float16 arithmetic (no AVX512-FP16) has no fast "
    "float16 convolutions: Stable Diffusion 1.4 drew many times as slowly as in float32 "
    "(benchmarks/cpu_half.py measures it on this machine). Pass half=False (a notebook's `half` "
    "parameter; `--set half=false` for a run) to draw in float32 on a CPU.")


def load_text_to_image(spec: str | ModelSpec, device=None, half: bool | None = None,
                       attention_slicing: bool = False) -> "DiffusersTextToImage":
    """Load a diffusers text-to-image pipeline by spec, with the safety checker off.

    float32 unless ``half=True`` (fp16, on a GPU or MPS device), as for every model kind: ``None``
    no longer means fp16 on a GPU, so pass ``half=True`` for the papers' fp16 Stable Diffusion runs.
    ``attention_slicing`` trades speed for memory on small GPUs; by default PyTorch's fused
    scaled-dot-product attention (diffusers' default processor) is kept, which is faster and
    already memory-efficient.
    """
    from diffusers import DiffusionPipeline

    parsed = parse_spec(spec)
    refuse_options(parsed, "text-to-image pipelines")
    spec = parsed.raw  # errors quote the spelling given
    if parsed.source == "trained":  # trained in the book: its recipe names the directory and the pipeline class
        location, pipeline_class = trained_pipeline(parsed.name)
    else:
        location, pipeline_class = locate(parsed), DiffusionPipeline
    device = resolve_device(device)
    dtype = resolve_dtype(device, bool(half))
    try:
        # The safety checker is switched off on purpose: it blacks out images it flags (and
        # flags people unevenly), which would bias the very demographic statistics we measure.
        # Not loading it also saves memory and time.
        pipeline = pipeline_class.from_pretrained(location, dtype=dtype, **_no_safety_checker(location),
                                                  **_offline_hub(parsed))
    except (OSError, ValueError) as error:  # missing files, offline hub, unknown id
        raise ModelUnavailableError(
            f"Could not load text-to-image pipeline {spec!r}: {type(error).__name__}: {error}\n"
            "Download it first while online (e.g. `hf download CompVis/stable-diffusion-v1-4`) or give "
            "the path of a directory saved with save_pretrained; offline runs (HF_HUB_OFFLINE=1) only "
            "find pipelines already in the Hugging Face cache. Tests should use 'tiny:sd'.") from error
    pipeline.to(device)
    if device.type == "cpu" and dtype == torch.float16:
        warnings.warn(CPU_HALF_WARNING.format(spec=spec), RuntimeWarning, stacklevel=2)
    if attention_slicing:
        pipeline.enable_attention_slicing()
    pipeline.set_progress_bar_config(disable=True)  # our own bar counts batches instead
    model = DiffusersTextToImage(parsed.display, pipeline)
    model.identity = identify(parsed, model, None if parsed.source == "hf" else location)
    return model


def _offline_hub(parsed: ModelSpec) -> dict:
    """``local_files_only`` for a hub id when the hub is switched off (``HF_HUB_OFFLINE``, read now, not
    at import): diffusers otherwise asks the hub for the snapshot's files first and prints "Could not
    reach the Hub ... Using cached commit hash" and "Couldn't connect to the Hub" onto the page before
    reading the same local snapshot (seen in the rehearsal's 04a)."""
    import os

    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")
    return {"local_files_only": True} if offline and parsed.source == "hf" else {}


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
