"""Scale-out of ``python -m vlbias precompute`` on Ray: 2 workers of one thread against 1 (issue 14).

Two stages of the demo notebooks, made heavier so that each run takes about a minute:

- embedding: 01a's image embeddings of a FairFace copy in the real format (``--per-cell`` images
  per race x gender x age cell, written here), with a randomly initialised CLIP of ``--width``
  (a local directory spec, built here), in the notebooks' cache chunks of 512 images;
- generation: 04a's plain run with ``tiny:sd`` (``--images`` per profession, 4 steps, 32 px,
  batches of 8).

Each stage runs from an empty cache five ways: today's single process with all threads (the
notebook's own call); precompute on a local Ray instance with 1 worker of 1 thread and with 2
workers of 1 thread each; and, as a reference without any engine, the same units in 1 and in 2
plain OS processes of one thread (each imports, loads the model and runs its fixed share of the
units as an actor does). Times are wall-clock for the whole stage, actor start-up and model
loading included (``ray.init`` is not: it is paid once per run); the ratios are of runs measured
here, one after another. Goal: 2 workers at least 1.7x as fast as 1.

``--gpu``: the same comparison on a GPU machine (one actor per GPU share against one), with the
stage sizes scaled up; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

REPO = Path(__file__).resolve().parents[1]


def build_clip(directory: Path, width: int, layers: int) -> None:
    """A randomly initialised transformers CLIP, ``width`` wide, on 32 px images in patches of 4."""
    import torch
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    from vlbias.models.tiny import image_text as tiny

    tokenizer, vocab_size = tiny._clip_tokenizer(directory)
    vision = tiny._tower(image_size=32, patch_size=4, hidden_size=width, intermediate_size=4 * width,
                         num_hidden_layers=layers, num_attention_heads=max(1, width // 32))
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(text_config=tiny._clip_text_tower(vocab_size), vision_config=vision,
                                 projection_dim=64))
    model.save_pretrained(directory)
    CLIPProcessor(image_processor=tiny._clip_image_processor(), tokenizer=tokenizer).save_pretrained(directory)


def write_profile(path: Path, clip_dir: Path, data_dir: Path, out_dir: Path, images: int, device: str) -> None:
    import yaml

    profile = {"env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLBIAS_PROGRESS_BARS": "off",
                       "HF_HUB_DISABLE_PROGRESS_BARS": "1"},
               "defaults": {"seed": 0, "device": device},
               "notebooks": {
                   "01a_self_similarity": {"model_spec": str(clip_dir), "model_specs": [str(clip_dir)],
                                           "data_root": str(data_dir), "batch_size": 64},
                   "04a_generation": {"t2i_spec": "tiny:sd", "images_per_profession": images,
                                      "num_inference_steps": 4, "height": 32, "width": 32, "batch_size": 8,
                                      "output_dir": str(out_dir)}}}
    path.write_text(yaml.safe_dump(profile))


def single_process(stage: str, profile: Path) -> float:
    """The notebook's own call in this process, all threads: today's run."""
    from vlbias import precompute as pc
    from vlbias.embeddings import embed_images
    from vlbias.models import load_image_text_model, load_text_to_image
    from vlbias.t2i.generation import generate_to_disk

    work = pc.build_work(str(profile), [stage], REPO)
    (stage,) = work.stages
    started = time.perf_counter()
    if stage.kind == "image-embeddings":
        from vlbias.data import load_dataset

        dataset = load_dataset(**stage.call["dataset"])
        embed_images(load_image_text_model(stage.spec, **stage.load), dataset, batch_size=stage.call["batch_size"],
                     progress=False)
    else:
        generate_to_disk(load_text_to_image(stage.spec, **stage.load), stage.call["jobs"], stage.call["run_dir"],
                         batch_size=stage.call["batch_size"], progress=False, **stage.call["settings"])
    return time.perf_counter() - started


def on_ray(stage: str, profile: Path, workers: int, gpu: bool) -> tuple[float, int, float]:
    """(seconds, items computed, seconds until the first chunk was done: actor start-up and model load)."""
    from vlbias import precompute as pc

    started, first = time.perf_counter(), []

    def note(line: str) -> None:
        if " chunks done" in line and not first:
            first.append(time.perf_counter() - started)

    summary = pc.precompute(str(profile), [stage], REPO, workers=workers, threads=None if gpu else 1,
                            gpu_fraction=1.0 / workers if gpu else pc.DEFAULT_GPU_FRACTION,
                            write=note, progress_every_s=0)
    assert not summary["failures"], summary["failures"]
    return time.perf_counter() - started, summary["computed"], first[0]


PLAIN_WORKER = """
import pickle, sys
from vlbias import precompute as pc
work_file, share, of = sys.argv[1:4]
with open(work_file, "rb") as file:
    work = pickle.load(file)
worker = pc.Worker(1, {})
for position, index in work.units[int(share)::int(of)]:
    result = worker.run(work.stages[position], position, index)
    assert not result["error"], result["error"]
"""


def plain_processes(stage: str, profile: Path, processes: int) -> float:
    """The same units in ``processes`` plain OS processes of one thread each, no Ray: unit k goes to
    process k mod ``processes``. Each process starts Python, imports, loads the model and runs its
    units as a Ray actor does (the plan is made once, here, as precompute's driver makes it): what
    the machine gives for the work without any engine, so that Ray's own cost or gain is visible."""
    import pickle

    from vlbias import precompute as pc

    work = pc.build_work(str(profile), [stage], REPO)
    work_file = profile.with_name("work.pickle")
    work_file.write_bytes(pickle.dumps(work))
    env = {**os.environ, **pc._worker_env(1, {})}
    started = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-c", PLAIN_WORKER, str(work_file), str(k), str(processes)],
                                 env=env) for k in range(processes)]
    codes = [child.wait() for child in children]
    assert codes == [0] * processes, codes
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-cell", type=int, default=24, help="FairFace images per cell (126 cells)")
    parser.add_argument("--width", type=int, default=128, help="the CLIP's vision width (4 layers)")
    parser.add_argument("--images", type=int, default=6, help="generated images per profession (45 professions)")
    parser.add_argument("--stages", nargs="+", default=["embedding", "generation"])
    parser.add_argument("--gpu", action="store_true", help="on a GPU machine: workers share the GPU(s)")
    args = parser.parse_args()
    if args.gpu:
        args.per_cell, args.width, args.images = max(args.per_cell, 400), max(args.width, 768), max(args.images, 40)

    import ray
    import torch

    torch.set_num_threads(os.cpu_count() or 1)  # the single-process run uses every core, as a notebook does

    scratch = Path(tempfile.mkdtemp(prefix="vlbias-scale-out-"))
    os.environ["VLBIAS_CACHE_DIR"] = str(scratch / "cache-setup")
    from vlbias.data.registry import write_fixture

    clip_dir, data_dir = scratch / "clip", scratch / "fairface"
    build_clip(clip_dir, args.width, 4)
    write_fixture("fairface", data_dir, per_cell=args.per_cell)
    stages = {"embedding": "01a_self_similarity", "generation": "04a_generation"}
    started = time.perf_counter()
    ray.init(num_gpus=None if args.gpu else 0, include_dashboard=False, log_to_driver=False)
    ray_start = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at the start; ray.init took {ray_start:.1f} s; "
          f"torch threads in the single process: {torch.get_num_threads()}")
    print(f"{'stage':<11} {'items':>6} {'single, all threads':>20} {'Ray 1 x 1':>10} {'Ray 2 x 1':>10} "
          f"{'Ray 2 v 1':>10} {'plain 1 x 1':>12} {'plain 2 x 1':>12} {'plain 2 v 1':>12} {'Ray 2 v single':>15}")
    try:
        for name in args.stages:
            times, items, firsts = {}, None, {}
            for run in ("single", 1, 2, "plain 1", "plain 2"):
                folder = scratch / f"{name}-{run}".replace(" ", "-")
                os.environ["VLBIAS_CACHE_DIR"] = str(folder / "cache")
                profile = folder / "profile.yml"
                folder.mkdir()
                write_profile(profile, clip_dir, data_dir, folder / "out", args.images, "cuda" if args.gpu else "cpu")
                if run == "single":
                    times[run] = single_process(stages[name], profile)
                elif isinstance(run, str):
                    times[run] = plain_processes(stages[name], profile, int(run.split()[1]))
                elif args.gpu and name == "generation" and run == 2 and ray.cluster_resources().get("GPU", 0) < 2:
                    times[run] = None  # Stable Diffusion takes a whole GPU: two workers need two GPUs
                else:
                    times[run], items, firsts[run] = on_ray(stages[name], profile, run, args.gpu)

            def shown(seconds, width=8):
                return f"{seconds:>{width}.1f} s" if seconds else f"{'n/a':>{width + 2}}"

            def ratio(slow, fast, width=9):
                return f"{slow / fast:>{width}.2f}x" if slow and fast else f"{'n/a':>{width + 1}}"

            print(f"{name:<11} {items:>6,} {shown(times['single'], 18)} {shown(times[1])} {shown(times[2])} "
                  f"{ratio(times[1], times[2])} {shown(times['plain 1'], 10)} {shown(times['plain 2'], 10)} "
                  f"{ratio(times['plain 1'], times['plain 2'], 11)} {ratio(times['single'], times[2], 14)}", flush=True)
            print(f"{'':<11} first chunk done after (start-up, model load, one chunk): "
                  + ", ".join(f"{run} worker(s) {seconds:.1f} s" for run, seconds in firsts.items()), flush=True)
    finally:
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
