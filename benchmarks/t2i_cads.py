"""Text-to-image throughput (images per second) and the overhead of CADS's denoiser hook.

Randomly initialised pipelines in the Stable Diffusion 1.x layout (no weights are needed to time
them): ``tiny`` (the test fixture, 32 px), ``small`` (a 4x wider UNet at 64 px) on the CPU, and
``full`` (SD 1.x's own UNet, VAE and text-encoder sizes at 512 px; GPU only, half precision).
Each configuration is timed plain, with CADS annealing part of the steps (τ1 = 0.6, τ2 = 0.9) and
with CADS on every step (τ1 = 0, τ2 = 1, the worst case), interleaved and best of ``--repeats``.
On a shared CPU, time this process's CPU time on one thread: other jobs' load then does not enter
the ratio (wall time under a changing load can move it by tens of percent either way).

    python benchmarks/t2i_cads.py                      # CPU: tiny and small
    python benchmarks/t2i_cads.py --sizes small --threads 1 --clock cpu   # a busy machine
    python benchmarks/t2i_cads.py --sizes full --device cuda --steps 50 --batch 8
"""

from __future__ import annotations

import argparse
import time

import torch

from vlbias.t2i.cads import CADSConfig, with_cads
from vlbias.models import load_text_to_image


def build(size: str, device: str):
    """A tiny:sd pipeline whose UNet (and for ``full`` also VAE and text encoder) are swapped for
    randomly initialised ones of the requested size."""
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    half = device == "cuda"
    model = load_text_to_image("tiny:sd", device="cpu", half=False)
    pipeline = model.pipeline
    torch.manual_seed(0)
    if size == "small":
        pipeline.register_modules(unet=UNet2DConditionModel(
            sample_size=32, block_out_channels=(64, 128), layers_per_block=1, cross_attention_dim=32,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            attention_head_dim=8, norm_num_groups=32))
    elif size == "full":
        vocab = pipeline.text_encoder.config.vocab_size
        tokenizer = pipeline.tokenizer
        pipeline.register_modules(
            unet=UNet2DConditionModel(sample_size=64, cross_attention_dim=768),  # SD 1.x's layout (860M)
            vae=AutoencoderKL(block_out_channels=(128, 256, 512, 512), layers_per_block=2, latent_channels=4,
                              down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                              sample_size=512),
            text_encoder=CLIPTextModel(CLIPTextConfig(vocab_size=vocab, hidden_size=768, intermediate_size=3072,
                                                      num_hidden_layers=12, num_attention_heads=12,
                                                      max_position_embeddings=77, bos_token_id=tokenizer.bos_token_id,
                                                      eos_token_id=tokenizer.eos_token_id,
                                                      pad_token_id=tokenizer.pad_token_id)))
    pipeline.to(device, torch.float16 if half else torch.float32)
    return model


#: ``wall``: elapsed time (GPUs, quiet machines); ``cpu``: this process's CPU time, which other jobs'
#: load on a shared machine does not inflate (with ``--threads 1`` it counts the work itself)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def images_per_second(model, steps: int, batch: int, repeats: int, clock=time.perf_counter) -> float:
    prompts, seeds = [f"A photo of a worker {k}" for k in range(batch)], list(range(batch))
    best = float("inf")
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = clock()
        model.generate(prompts, seeds, num_inference_steps=steps, batch_size=batch, progress=False)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, clock() - start)
    return batch / best


def hook_share(model, batch: int, repeats: int) -> tuple[float, float]:
    """Seconds per call of the CADS hook alone and of one denoiser call it precedes (guided batch of
    2·batch rows at t = 0.9, where CADS acts), each the best of ``repeats`` rounds, interleaved."""
    from vlbias.t2i.cads import _ConditionAnnealer

    pipeline, denoiser = model.pipeline, model.denoiser
    pipeline._guidance_scale = 7.5
    latent = denoiser.config.sample_size
    latents = torch.randn(2 * batch, denoiser.config.in_channels, latent, latent)
    condition = torch.randn(2 * batch, 77, denoiser.config.cross_attention_dim)
    timestep = torch.tensor(900)
    annealer = _ConditionAnnealer(pipeline, CADSConfig(tau1=0.0, tau2=1.0, noise_scale=0.25), list(range(batch)))
    best_hook = best_denoiser = float("inf")
    with torch.inference_mode():
        for _ in range(repeats):
            start = time.perf_counter()
            denoiser(latents, timestep, encoder_hidden_states=condition)
            best_denoiser = min(best_denoiser, time.perf_counter() - start)
            for _ in range(20):
                start = time.perf_counter()
                annealer(denoiser, (latents, timestep), {"encoder_hidden_states": condition})
                best_hook = min(best_hook, time.perf_counter() - start)
    return best_hook, best_denoiser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["tiny", "small"], choices=["tiny", "small", "full"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or this process's CPU time (a shared CPU: use with --threads 1)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (1 on a shared machine: the ratio then does not depend on neighbours' load)")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="flush subnormal floats to zero on the CPU (random weights can drive activations into "
                             "the subnormal range, where CPU arithmetic is many times slower)")
    parser.add_argument("--hook-only", action="store_true",
                        help="time the hook against one denoiser call instead of whole generations (robust on a busy machine)")
    args = parser.parse_args()
    if "full" in args.sizes and args.device == "cpu":
        raise SystemExit("the full-size pipeline is for a GPU: pass --device cuda (CPU: --sizes tiny small)")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.flush_denormal and not torch.set_flush_denormal(True):
        raise SystemExit("--flush-denormal: this CPU cannot flush subnormals (no SSE3)")

    samplers = {"plain": None, "CADS τ1=0.6 τ2=0.9": CADSConfig(tau1=0.6, tau2=0.9, noise_scale=0.25),
                "CADS every step": CADSConfig(tau1=0.0, tau2=1.0, noise_scale=0.25)}
    print(f"device {args.device}, {args.steps} steps, batch {args.batch}, best of {args.repeats}, "
          f"{torch.get_num_threads()} thread(s), subnormals {'flushed' if args.flush_denormal else 'kept'}, "
          f"{args.clock} clock")
    print(f"{'pipeline':<8} {'sampler':<20} {'images/s':>9} {'overhead':>9}")
    if args.hook_only:
        for size in args.sizes:
            hook, denoiser = hook_share(build(size, args.device), args.batch, args.repeats)
            print(f"{size:<8} hook {1e3 * hook:.3f} ms, denoiser call {1e3 * denoiser:.1f} ms: "
                  f"{hook / denoiser:+.2%} per annealed step")
        return
    for size in args.sizes:
        base = build(size, args.device)
        models = {name: base if config is None else with_cads(base, config) for name, config in samplers.items()}
        images_per_second(base, 2, args.batch, 1)  # warm-up
        rates = {name: 0.0 for name in models}
        for _ in range(args.repeats):  # interleaved, so drifts in machine load hit every sampler alike
            for name, model in models.items():
                rates[name] = max(rates[name], images_per_second(model, args.steps, args.batch, 1, CLOCKS[args.clock]))
        for name, rate in rates.items():
            overhead = rates["plain"] / rate - 1
            print(f"{size:<8} {name:<20} {rate:>9.2f} {overhead:>+8.1%}")


if __name__ == "__main__":
    main()
