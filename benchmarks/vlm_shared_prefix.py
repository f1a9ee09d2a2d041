"""Generative VLM scoring: several texts about one image, one pass per pair against one pass per image.

01d scores 19 prompts against each face, 04b's annotators 6 answer phrasings against each image, 02d a
caption and its foils. ``log_likelihood`` reads the image and question once for all of an image's texts
where the family allows it (``vlbias.models.vision_language.SHARED_PREFIX_FAMILIES``); the alternative,
``_pairs``, runs the whole model, vision tower included, once per text. This script times both on one
model, one image and N texts, in this run, checks that they give the same scores, and prints the ratio.

    python benchmarks/vlm_shared_prefix.py tiny:qwen2-vl --texts 19
    HF_HOME=rehearsal/mirror python benchmarks/vlm_shared_prefix.py Qwen/Qwen2-VL-2B-Instruct --texts 6 --threads 1

(the second reads the rehearsal's mirror: random weights at full size; ``make rehearsal`` builds it).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from vlbias.models import load_vision_language_model  # noqa: E402

WORDS = ["white", "black", "East Asian", "Latino", "Middle Eastern", "man", "woman", "child", "old", "young"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("spec", nargs="?", default="tiny:qwen2-vl")
    parser.add_argument("--texts", type=int, default=19, help="texts about the one image (01d: 19)")
    parser.add_argument("--size", type=int, default=224, help="the image's side in pixels (FairFace: 224)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_vision_language_model(args.spec, device="cpu")
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (args.size, args.size, 3), dtype=np.uint8))
    texts = [f"a photo of a {WORDS[i % len(WORDS)]} person number {i}" for i in range(args.texts)]
    prompt = None  # 01d's default: the image alone, so the texts read as its caption
    rendered, _ = model.question(prompt)
    answers = model.answer_ids(texts, prompt)

    started = time.perf_counter()
    with torch.no_grad():
        pairs = np.asarray(model._pairs([image] * len(texts), answers, list(range(len(texts))), rendered,
                                        args.batch_size, False))
    pairs_s = time.perf_counter() - started
    started = time.perf_counter()
    shared = model.log_likelihood([image] * len(texts), texts, prompt=prompt, batch_size=args.batch_size,
                                  progress=False)
    shared_s = time.perf_counter() - started
    difference = float(np.max(np.abs(shared - pairs)))
    print(f"{args.spec} ({model.family}), {args.texts} texts about one {args.size} px image, batch {args.batch_size}, "
          f"{torch.get_num_threads()} thread(s):")
    print(f"  one pass per pair:  {pairs_s:8.2f} s")
    print(f"  one pass per image: {shared_s:8.2f} s  ({pairs_s / shared_s:.1f}x faster, measured in this run)")
    print(f"  largest score difference: {difference:.2e} (of scores around {np.mean(np.abs(pairs)):.1f})")
    if not np.allclose(shared, pairs, rtol=1e-5, atol=1e-3):
        raise SystemExit("the two paths disagree beyond float tolerance")


if __name__ == "__main__":
    main()
