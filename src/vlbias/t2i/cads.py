"""CADS: condition-annealed diffusion sampling (Sadat et al., ICLR 2024).

At diffusion time t (t = 1 is pure noise, t = 0 the end of sampling) the text condition y that
the denoiser sees is replaced by

    ŷ = √γ(t) · y + s · √(1 − γ(t)) · n,     n ~ N(0, I) drawn afresh at every step,

with γ(t) = 1 for t ≤ τ1, 0 for t ≥ τ2 and linear in between: early steps see a noisy condition
(more diverse layouts), late steps the clean one (faithful details). Optionally ŷ is rescaled to
the mean and standard deviation of y, and the rescaled and raw versions are mixed by ψ:
ŷ ← ψ · rescaled(ŷ) + (1 − ψ) · ŷ.

Where it acts: a forward pre-hook on the denoiser (``pipeline.unet``, or ``pipeline.transformer``
for Stable Diffusion 3) rewrites ``encoder_hidden_states`` on every call, the first step included (a
step-end callback could only change the steps after it). SD 3 is conditioned on two things, the
token states (``prompt_embeds``: both CLIP encoders' states, zero-padded to T5's width, followed by
T5's) and a pooled embedding (``pooled_prompt_embeds``, the two CLIP projections side by side, passed
as ``pooled_projections``); y is both, so both are annealed with the same γ(t), each with its own
noise and each rescaled to its own statistics. SDXL's U-Net gets its pooled embedding in
``added_cond_kwargs["text_embeds"]``, annealed the same way. Under flow matching the transformer gets
timestep = σ · num_train_timesteps with σ = 1 pure noise, so t = σ: the same reading of diffusion
time as for the DDPM-type schedulers of SD 1.x. (SD 3's optional skip-layer guidance makes an extra
conditional-only call that this hook does not anneal; it is off by default, and CADS refuses it.) Under classifier-free guidance diffusers' Stable Diffusion pipelines
run one batch ``[unconditional; conditional]``: by default only the conditional half is annealed
and the unconditional (empty-prompt) half stays as it is; ``CADSConfig(branch="both")`` anneals
both halves, each row with its own noise. Diffusion time is read from the timestep the
pipeline passes to the denoiser, t = timestep / num_train_timesteps, so the schedule follows the
scheduler's own timesteps (with few steps the first one may lie below 1: PNDM with 4 steps starts
at t = 0.751).

Noise n for an image comes from its own generator, seeded from the image's seed: an image still
depends only on its prompt and seed, whatever batch it ran in.

s = 0 switches CADS off (the hook passes the condition through untouched), as does τ1 ≥ 1 (then
γ = 1 at every t ≤ 1); both reproduce plain sampling bit for bit. With s = 0 the formula would
only shrink y by √γ, which rescaling with ψ = 1 undoes exactly in exact arithmetic; passing y
through makes that identity exact in floating point too.

The source text's ``cads_config`` names (``anneal_schedule``, ``max_noise_level``,
``diversity_weight``, ``start_step``, ``end_step``) map onto these parameters with
:func:`config_from_source_names`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
from PIL import Image

from ..models.base import TextToImageModel

if TYPE_CHECKING:
    import torch

SCHEDULES = ("linear", "cosine")
#: which half of a classifier-free-guidance batch is annealed: the conditional one (the paper's y;
#: the unconditional half is the null condition, not a condition) or both (what community
#: implementations such as sd-webui-cads do)
BRANCHES = ("cond", "both")
#: where the denoiser gets the pooled text embedding: SD 3's transformer as an argument
#: (``SD3Transformer2DModel.forward``), SDXL's U-Net inside ``added_cond_kwargs`` (beside the size
#: conditioning ``time_ids``, which is no text condition and is left alone)
POOLED_ARGUMENT = "pooled_projections"
ADDED_CONDITIONS, POOLED_ADDED_CONDITION = "added_cond_kwargs", "text_embeds"


def _pooled_embedding(kwargs: dict) -> torch.Tensor | None:
    if kwargs.get(POOLED_ARGUMENT) is not None:
        return kwargs[POOLED_ARGUMENT]
    return (kwargs.get(ADDED_CONDITIONS) or {}).get(POOLED_ADDED_CONDITION)


def _with_pooled_embedding(kwargs: dict, pooled: torch.Tensor) -> dict:
    if kwargs.get(POOLED_ARGUMENT) is not None:
        return {**kwargs, POOLED_ARGUMENT: pooled}
    return {**kwargs, ADDED_CONDITIONS: {**kwargs[ADDED_CONDITIONS], POOLED_ADDED_CONDITION: pooled}}


def cads_gamma(t, tau1: float, tau2: float, schedule: str = "linear"):
    """γ(t): 1 for t ≤ τ1, 0 for t ≥ τ2, and (τ2 − t) / (τ2 − τ1) in between.

    ``schedule="cosine"`` replaces the linear ramp by ½(1 + cos(π (t − τ1) / (τ2 − τ1))), the
    source text's ``anneal_schedule: 'cosine'``; the CADS paper's schedule is linear.
    A float for a scalar t, an array for an array.
    """
    if not tau1 <= tau2:
        raise ValueError(f"CADS needs tau1 <= tau2, got tau1={tau1}, tau2={tau2}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if isinstance(t, float):  # the hook's case, once per denoiser call: no numpy round trip
        if t <= tau1:
            return 1.0
        if t >= tau2:
            return 0.0
        ramp = (t - tau1) / (tau2 - tau1)
        return 1.0 - ramp if schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * ramp))
    t_array = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ramp = (t_array - tau1) / (tau2 - tau1) if tau2 > tau1 else np.ones_like(t_array)
        between = 1.0 - ramp if schedule == "linear" else 0.5 * (1.0 + np.cos(np.pi * ramp))
    gamma = np.where(t_array <= tau1, 1.0, np.where(t_array >= tau2, 0.0, between))
    return float(gamma) if gamma.ndim == 0 else gamma


def anneal_condition(y: torch.Tensor, gamma: float, noise: torch.Tensor, noise_scale: float,
                     psi: float = 1.0, rescale: bool = True) -> torch.Tensor:
    """ŷ = √γ·y + s·√(1−γ)·n for a batch of conditions y (rows = images), with optional rescaling.

    Rescaling gives each row of ŷ the mean and standard deviation of the same row of y (over all
    its tokens and channels) and mixes: ψ·rescaled + (1 − ψ)·ŷ. Computed in float32 and returned
    in y's dtype.
    """
    if y.shape != noise.shape:
        raise ValueError(f"noise must have the condition's shape {tuple(y.shape)}, got {tuple(noise.shape)}")
    y32, n32 = y.float(), noise.to(y.device).float()
    annealed = math.sqrt(gamma) * y32 + noise_scale * math.sqrt(1.0 - gamma) * n32
    if rescale:
        # per-row statistics accumulated in float64 and rounded to float32: a batched reduction may
        # sum in a batch-dependent order, and float64 keeps that below float32's rounding, so an
        # image does not depend on the batch it ran in (one vectorised pass instead of a loop per row)
        dims = tuple(range(1, y32.dim()))
        annealed64, y64 = annealed.double(), y32.double()
        scale = (y64.std(dim=dims, keepdim=True) / annealed64.std(dim=dims, keepdim=True)).float()
        shift = (y64.mean(dim=dims, keepdim=True)).float()
        centre = annealed64.mean(dim=dims, keepdim=True).float()
        rescaled = (annealed - centre) * scale + shift
        annealed = psi * rescaled + (1.0 - psi) * annealed
    return annealed.to(y.dtype)


@dataclass(frozen=True)
class CADSConfig:
    """CADS parameters with the paper's names: τ1 (``tau1``), τ2 (``tau2``), s (``noise_scale``),
    ψ (``psi``) and whether to rescale. Defaults follow the paper's Stable Diffusion settings.

    ``branch``: under classifier-free guidance, ``"cond"`` anneals only the conditional half (the
    paper's formula corrupts the condition y; the unconditional half is the null prompt), ``"both"``
    also the unconditional half, with its own noise (as community implementations do).
    """

    tau1: float = 0.6
    tau2: float = 0.9
    noise_scale: float = 0.25
    psi: float = 1.0
    rescale: bool = True
    schedule: str = "linear"
    branch: str = "cond"

    def __post_init__(self):
        if self.branch not in BRANCHES:
            raise ValueError(f"branch must be one of {BRANCHES} (which guidance branch gets the noise), "
                             f"got {self.branch!r}")
        cads_gamma(0.5, self.tau1, self.tau2, self.schedule)  # validates τ1 ≤ τ2 and the schedule
        if self.noise_scale < 0:
            raise ValueError(f"noise_scale s must be >= 0, got {self.noise_scale}")
        if not 0.0 <= self.psi <= 1.0:
            raise ValueError(f"psi mixes two conditions and must lie in [0, 1], got {self.psi}")

    @property
    def is_off(self) -> bool:
        """True when CADS cannot change anything: s = 0, or γ = 1 on the whole of t ∈ [0, 1]."""
        return self.noise_scale == 0 or self.tau1 >= 1.0

    def gamma(self, t):
        return cads_gamma(t, self.tau1, self.tau2, self.schedule)

    def label(self) -> str:
        """Short text for specs, manifests and table rows."""
        return (f"cads(tau1={self.tau1:g},tau2={self.tau2:g},s={self.noise_scale:g},psi={self.psi:g},"
                f"rescale={self.rescale},{self.schedule}" + ("" if self.branch == "cond" else f",branch={self.branch}")
                + ")")

    def as_dict(self) -> dict:
        return asdict(self)


def config_from_source_names(cads_config: dict, num_inference_steps: int) -> tuple[CADSConfig, dict[str, str]]:
    """A :class:`CADSConfig` from the source text's ``cads_config`` dictionary, and how each name was read.

    ``start_step``/``end_step`` count sampling steps from the pure-noise end (step 0 at t = 1):
    annealing starts at t = 1 − start_step/N (before it γ = 0, the noisiest condition), which is
    τ2, and ends at t = 1 − end_step/N (after it γ = 1), which is τ1. ``max_noise_level`` is the
    noise scale s (the noise's size where γ = 0). ``diversity_weight`` has no counterpart among the
    paper's parameters; we read it as ψ, the only remaining weight, and say so in the mapping.
    """
    steps = int(num_inference_steps)
    known = {"anneal_schedule", "max_noise_level", "diversity_weight", "start_step", "end_step"}
    unknown = set(cads_config) - known
    if unknown:
        raise ValueError(f"unknown cads_config names {sorted(unknown)}; known: {sorted(known)}")
    start, end = cads_config.get("start_step", 0), cads_config.get("end_step", steps)
    if not 0 <= start <= end <= steps:
        raise ValueError(f"need 0 <= start_step <= end_step <= num_inference_steps ({steps}), got {start}, {end}")
    config = CADSConfig(tau1=1.0 - end / steps, tau2=1.0 - start / steps,
                        noise_scale=float(cads_config.get("max_noise_level", CADSConfig.noise_scale)),
                        psi=float(cads_config.get("diversity_weight", CADSConfig.psi)),
                        schedule=cads_config.get("anneal_schedule", "linear"))
    mapping = {
        "anneal_schedule": "schedule of γ between τ1 and τ2 (the paper's is linear)",
        "start_step": f"τ2 = 1 − start_step/N = {config.tau2:g}",
        "end_step": f"τ1 = 1 − end_step/N = {config.tau1:g}",
        "max_noise_level": f"s = {config.noise_scale:g}",
        "diversity_weight": f"ψ = {config.psi:g} (our reading: the paper has no such name)",
    }
    return config, mapping


def cads_noise_seed(seed: int) -> int:
    """The seed of an image's CADS noise generator, derived from (and distinct from) its image seed."""
    return int(np.random.SeedSequence([int(seed), 0xCAD5]).generate_state(1, dtype=np.uint64)[0] >> 1)


class _ConditionAnnealer:
    """The forward pre-hook: rewrites the conditional ``encoder_hidden_states`` of each denoiser call."""

    def __init__(self, pipeline, config: CADSConfig, seeds: Sequence[int]):
        import torch

        self.pipeline = pipeline
        self.config = config
        self.generators = [torch.Generator("cpu").manual_seed(cads_noise_seed(s)) for s in seeds]
        scheduler_config = getattr(pipeline.scheduler, "config", {})
        self.num_train_timesteps = int(getattr(scheduler_config, "num_train_timesteps", 1000))
        #: (t, γ) of every denoiser call, for inspection
        self.trace: list[tuple[float, float]] = []

    def _guided(self) -> bool:
        guided = getattr(self.pipeline, "do_classifier_free_guidance", None)
        if guided is None:
            guided = getattr(self.pipeline, "guidance_scale", 1.0) > 1.0
        return bool(guided)

    def __call__(self, module, args, kwargs):
        import torch  # here, not at the top: the stage declarations import this module without torch

        if "encoder_hidden_states" in kwargs:
            condition = kwargs["encoder_hidden_states"]
        elif len(args) > 2:
            condition = args[2]
        else:
            raise TypeError("CADS found no encoder_hidden_states in the denoiser call")
        timestep = kwargs.get("timestep", args[1] if len(args) > 1 else None)
        t = float(torch.as_tensor(timestep).flatten()[0]) / self.num_train_timesteps
        gamma = self.config.gamma(t)
        self.trace.append((t, gamma))
        if self.config.is_off or gamma == 1.0:
            return None  # nothing to change: the call goes ahead untouched
        guided = self._guided()
        rows = condition.shape[0] // 2 if guided else condition.shape[0]
        if rows != len(self.generators):
            raise ValueError(f"CADS was set up for {len(self.generators)} images but the denoiser got {rows} "
                             "conditional rows (one image per prompt is supported)")
        halves = 2 if guided and self.config.branch == "both" else 1
        # SD 3's transformer and SDXL's U-Net also take a pooled text embedding, which conditions every
        # block through the timestep embedding: it is part of y and gets annealed with the same γ and
        # its own noise. SD 1.x/2.x U-Nets take token states only.
        pooled = _pooled_embedding(kwargs)
        parts = [condition] if pooled is None else [condition, pooled]
        new_parts = [self._anneal(part, gamma, rows, halves) for part in parts]
        # each image's noise comes from its own generator (unconditional row first, when annealed; the
        # token states' noise before the pooled embedding's)
        new_condition = new_parts[0]
        if "encoder_hidden_states" in kwargs:
            kwargs = {**kwargs, "encoder_hidden_states": new_condition}
        else:
            args = (*args[:2], new_condition, *args[3:])
        if pooled is not None:
            kwargs = _with_pooled_embedding(kwargs, new_parts[1])
        return args, kwargs

    def _anneal(self, condition: torch.Tensor, gamma: float, rows: int, halves: int) -> torch.Tensor:
        import torch

        kept = condition.shape[0] - halves * rows  # the unconditional half, unless it is annealed too
        draws = [[torch.randn(condition.shape[1:], generator=g, dtype=torch.float32) for _ in range(halves)]
                 for g in self.generators]
        noise = torch.stack([draws[image][half] for half in range(halves) for image in range(rows)])
        annealed = anneal_condition(condition[kept:], gamma, noise, self.config.noise_scale, self.config.psi,
                                    self.config.rescale)
        return torch.cat([condition[:kept], annealed]) if kept else annealed


@contextlib.contextmanager
def condition_annealing(model: TextToImageModel, config: CADSConfig, seeds: Sequence[int]) -> Iterator[_ConditionAnnealer]:
    """Within the block, every denoiser call of ``model.pipeline`` sees the CADS condition.

    ``seeds`` are the image seeds of the one pipeline call made inside the block, in order. The
    hook is removed on exit, also after an error.
    """
    denoiser = getattr(model, "denoiser", None)
    if denoiser is None:
        raise TypeError(f"{model!r} exposes no denoiser to hook; CADS needs a diffusers pipeline")
    annealer = _ConditionAnnealer(model.pipeline, config, seeds)
    handle = denoiser.register_forward_pre_hook(annealer, with_kwargs=True)
    try:
        yield annealer
    finally:
        handle.remove()


class CADSTextToImage(TextToImageModel):
    """A text-to-image model that samples with CADS; its ``spec`` names the CADS settings."""

    def __init__(self, model: TextToImageModel, config: CADSConfig):
        self.model = model
        self.config = config
        self.spec = f"{model.spec}+{config.label()}"

    def __repr__(self) -> str:
        return f"CADSTextToImage({self.model!r}, {self.config.label()})"

    @property
    def pipeline(self):
        return self.model.pipeline

    @property
    def denoiser(self):
        return self.model.denoiser

    def generate(self, prompts: Sequence[str], seeds: Sequence[int], num_inference_steps: int = 50,
                 guidance_scale: float = 7.5, height: int | None = None, width: int | None = None,
                 batch_size: int = 4, progress: bool = True, **pipeline_kwargs) -> list[Image.Image]:
        if pipeline_kwargs.get("skip_guidance_layers"):
            raise ValueError("skip_guidance_layers: SD 3's skip-layer guidance makes an extra conditional-only call "
                             "of the transformer that CADS does not anneal, so CADS would be applied to part of the "
                             "guidance only. Sample CADS without it (leave skip_guidance_layers unset, diffusers' "
                             "default), or sample plainly with it.")
        return self.model.generate(prompts, seeds, num_inference_steps=num_inference_steps,
                                   guidance_scale=guidance_scale, height=height, width=width,
                                   batch_size=batch_size, progress=progress,
                                   batch_context=lambda batch_seeds: condition_annealing(
                                       self.model, self.config, batch_seeds),
                                   **pipeline_kwargs)


def with_cads(model: TextToImageModel, config: CADSConfig | None = None, **parameters) -> TextToImageModel:
    """``model`` sampling with CADS (``config`` or keyword parameters of :class:`CADSConfig`)."""
    return CADSTextToImage(model, config or CADSConfig(**parameters))
