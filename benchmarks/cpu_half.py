"""Stable Diffusion on a CPU: float16 against float32, the same pipeline and images, in one run.

The full profile draws in float16 (``half: true``), as diffusers runs Stable Diffusion on a GPU, and the
dress rehearsal (issue 24) keeps that on the CPU so that the float16 paths run. A CPU without float16
arithmetic (no AVX512-FP16) has no fast float16 convolution: this script times one pipeline loaded by
its spec through the book's loader in both precisions, drawing the same prompts and seeds at the
rehearsal's size, and prints the ratio, so that ``make rehearsal PART=4 SET=half=false`` can be weighed.

    HF_HOME=rehearsal/mirror python benchmarks/cpu_half.py CompVis/stable-diffusion-v1-4 --threads 1
    python benchmarks/cpu_half.py tiny:sd --images 4

(the first reads the rehearsal's mirror: random weights at full size; ``make rehearsal`` builds it).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vlbias.models import load_text_to_image  # noqa: E402


def draw_seconds(spec: str, half: bool, prompts: list[str], steps: int, side: int) -> tuple[float, np.ndarray]:
    """Seconds per image (after one warm-up image) and the images as one uint8 array."""
    model = load_text_to_image(spec, device="cpu", half=half)
    model.generate(prompts[:1], [0], num_inference_steps=steps, height=side, width=side, progress=False)
    started = time.perf_counter()
    images = model.generate(prompts, list(range(len(prompts))), num_inference_steps=steps, height=side,
                            width=side, batch_size=1, progress=False)
    seconds = (time.perf_counter() - started) / len(prompts)
    del model
    return seconds, np.stack([np.asarray(image) for image in images])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", nargs="?", default="tiny:sd")
    parser.add_argument("--images", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2, help="denoising steps (the rehearsal's: 2)")
    parser.add_argument("--size", type=int, default=64, help="the images' side in pixels (the rehearsal's: 64)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    prompts = [f"A photo of a {job}" for job in ("doctor", "nurse", "pilot", "cashier")][:args.images]
    prompts += prompts[-1:] * (args.images - len(prompts))
    half_s, half_images = draw_seconds(args.spec, True, prompts, args.steps, args.size)
    full_s, full_images = draw_seconds(args.spec, False, prompts, args.steps, args.size)
    levels = float(np.mean(np.abs(half_images.astype(int) - full_images.astype(int))))
    print(f"{args.spec}, {args.images} image(s) at {args.size} px, {args.steps} steps, "
          f"{torch.get_num_threads()} thread(s), {torch.__version__}:")
    print(f"  float16 {half_s:.2f} s an image, float32 {full_s:.2f} s: float16 takes {half_s / full_s:.1f}x as long")
    print(f"  mean |float16 - float32| {levels:.2f} of 255 levels per pixel")


if __name__ == "__main__":
    main()
