"""Stable Diffusion on a CPU: float16 against float32, the same pipeline and images, in one run.

The full profile draws in float16 (``half: true``), as diffusers runs Stable Diffusion on a GPU, and the
dress rehearsal (issue 24) keeps that on the CPU so that the float16 paths run. A CPU without float16
arithmetic (no AVX512-FP16) has no fast float16 convolution: this script times one pipeline loaded by
its spec through the book's loader in both precisions, draws the same prompts and seeds at the
rehearsal's size in turn, batch by batch, and prints the ratio of the median times, so that
``make rehearsal PART=4 SET=half=false`` can be weighed.

    HF_HOME=rehearsal/mirror python benchmarks/cpu_half.py CompVis/stable-diffusion-v1-4 --threads 1
    python benchmarks/cpu_half.py tiny:sd --batch-size 4

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


def draw(model, prompts: list[str], seeds: list[int], steps: int, side: int) -> tuple[float, np.ndarray]:
    """Seconds per image for one batch (one ``generate`` call, as a notebook's batch), and the images."""
    started = time.perf_counter()
    images = model.generate(prompts, seeds, num_inference_steps=steps, height=side, width=side,
                            batch_size=len(prompts), progress=False)
    return (time.perf_counter() - started) / len(prompts), np.stack([np.asarray(image) for image in images])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", nargs="?", default="tiny:sd")
    parser.add_argument("--batches", type=int, default=2, help="batches drawn in each precision")
    parser.add_argument("--batch-size", type=int, default=8, help="images per batch (params/full.yml: 8)")
    parser.add_argument("--steps", type=int, default=2, help="denoising steps (the rehearsal's: 2)")
    parser.add_argument("--size", type=int, default=64, help="the images' side in pixels (the rehearsal's: 64)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    jobs = ("doctor", "nurse", "pilot", "cashier", "lawyer", "farmer", "teacher", "janitor")
    # both precisions loaded, warmed up, then drawn in turn, batch by batch: a machine whose load drifts
    # slows both alike, so the ratio holds where the absolute times do not
    models = {half: load_text_to_image(args.spec, device="cpu", half=half) for half in (True, False)}
    for model in models.values():
        draw(model, ["A photo of a doctor"], [0], args.steps, args.size)
    seconds, images = {True: [], False: []}, {True: [], False: []}
    for batch in range(args.batches):
        seeds = list(range(batch * args.batch_size, (batch + 1) * args.batch_size))
        prompts = [f"A photo of a {jobs[seed % len(jobs)]}" for seed in seeds]
        for half, model in models.items():
            took, drawn = draw(model, prompts, seeds, args.steps, args.size)
            seconds[half].append(took)
            images[half].append(drawn)
    half_s, full_s = float(np.median(seconds[True])), float(np.median(seconds[False]))
    half_images, full_images = np.concatenate(images[True]), np.concatenate(images[False])
    levels = float(np.mean(np.abs(half_images.astype(int) - full_images.astype(int))))
    print(f"{args.spec}, {args.batches} batch(es) of {args.batch_size} at {args.size} px, {args.steps} steps, "
          f"{torch.get_num_threads()} thread(s), {torch.__version__}:")
    print(f"  median per batch: float16 {half_s:.2f} s an image, float32 {full_s:.2f} s: float16 takes {half_s / full_s:.1f}x as long")
    print(f"  mean |float16 - float32| {levels:.2f} of 255 levels per pixel")


if __name__ == "__main__":
    main()
