"""``python -m vlbias precompute`` on a local Ray instance of 2 CPU workers, against a single process.

The reference is computed here the way the notebooks compute it (their cells' calls, in this process,
one thread), in a cache and an output folder of its own. Precompute must write the same arrays and
images (byte for byte: on one thread the tiny models are deterministic), leave nothing for the
notebook-side calls to compute (their models' forward passes raise), and survive a worker that
dies in the middle of a forward pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vlbias import precompute as pc
from vlbias.cache import (
    cache_key,
    chunk_path,
    compute_chunked,
    entry_dir,
    only_chunks,
    read_chunk,
)
from vlbias.stages import Stage
from vlbias.t2i.generation import generate_to_disk, read_manifest

REPO = Path(__file__).resolve().parents[2]
#: the tiny-model profile (the demo before it trained its models): the machinery's tests stay small and fixed
TINY_PROFILE = str(Path(__file__).parent / "tiny_profile.yml")
EMBEDDED = ["tiny:clip", "tiny:open-clip"]            # 01a's model_spec and model_specs (demo)
SCORED = ["tiny:clip", "tiny:vilt"]                   # a dual encoder and a pairwise matcher
ONLY = ["01a_self_similarity", "02b_colorfoil_evaluation", "04a_generation"]
# 04a's demo settings, with fewer images so the test stays short: 45 professions x 1 = 6 batches of 8
GENERATION = {"images_per_profession": 1, "batch_size": 8, "num_inference_steps": 4, "guidance_scale": 7.5,
              "height": 32, "width": 32}


def assignments(out_dir: Path, broken: Path | None = None) -> list[str]:
    specs = SCORED + ([str(broken)] if broken else [])
    return [f"04a_generation.output_dir={out_dir}",
            *(f"04a_generation.{key}={value}" for key, value in GENERATION.items() if key != "guidance_scale"),
            f"02b_colorfoil_evaluation.model_specs=[{', '.join(specs)}]"]



def generation_dir(out_dir: Path) -> Path:
    """Where 04a draws tiny:sd's study at :data:`GENERATION` (the folder its stage and page both name)."""
    from vlbias.t2i.study import study_directory

    return study_directory({**GENERATION, "output_dir": out_dir, "prompt_template": "A photo of a {profession}",
                            "seed": 0}, "tiny:sd")


def notebook_calls(out_dir: Path, forbid_forward: bool = False) -> dict:
    """What the notebooks' cells compute (01a's embeddings, 02b's scores, 04a's images), in this process.

    ``forbid_forward``: every model's forward pass raises, so the call must find everything cached.
    """
    from vlbias.colorfoil import construction, evaluation
    from vlbias.data import load_dataset
    from vlbias.embeddings import embed_images
    from vlbias.models import load_image_text_model, load_text_to_image
    from vlbias.t2i.bias import study_professions
    from vlbias.t2i.generation import generate_to_disk, prompt_jobs

    def forbidden(*args, **kwargs):
        raise AssertionError("a model forward pass ran: precompute left something to compute")

    def load(loader, spec, *forward):
        model = loader(spec, device="cpu")
        for name in forward if forbid_forward else ():
            setattr(model, name, forbidden)
        return model

    result = {}
    fairface = load_dataset("fairface", root="fixture", split="train", padding="1.25")
    for spec in EMBEDDED:  # 01a: embed_images(model, dataset, batch_size=batch_size, decode_workers=...)
        result[spec] = embed_images(load(load_image_text_model, spec, "encode_images"), fairface, batch_size=64,
                                    progress=False)
    # 02b's cells with the notebook's defaults
    datasets = {"coco": load_dataset("coco", root="fixture", split="val2017"),
                "flickr30k": load_dataset("flickr30k", root="fixture", split=["val", "test"])}
    benchmarks = construction.benchmarks_for(datasets, None, foil_type_name="colour", construction="ours",
                                             caption_choices={"coco": "first_with_word", "flickr30k": "all"},
                                             colour_selection="css3",
                                             targets=["blue", "black", "red", "pink", "yellow", "grey", "orange",
                                                      "white", "green", "brown"], max_foils=4, seed=0,
                                             max_pairs=None, progress=False)
    datasets, _ = construction.with_foils(datasets, benchmarks, "colour")
    for spec in SCORED:
        model = load(load_image_text_model, spec, "score_candidates", "encode_images", "encode_texts")
        for name, dataset in datasets.items():
            result[spec, name] = evaluation.score_benchmark(model, dataset, benchmarks[name], max_foils=4,
                                                            batch_size=16, progress=False)
    professions = study_professions(include_source_cases=True)
    jobs = prompt_jobs(list(professions.profession), "A photo of a {profession}", GENERATION["images_per_profession"],
                       seed=0, articles="follow")
    run_dir = generation_dir(out_dir)
    settings = {k: GENERATION[k] for k in ("num_inference_steps", "guidance_scale", "height", "width")}
    result["manifest"] = generate_to_disk(load(load_text_to_image, "tiny:sd", "generate"), jobs, run_dir,
                                          batch_size=GENERATION["batch_size"], progress=False, **settings)
    result["images"] = {name: (run_dir / name).read_bytes() for name in result["manifest"].file}
    return result


def chunk_rows(cache: Path) -> dict[str, np.ndarray]:
    """Every verified chunk of the embedding and ColorFoil caches, by path inside the cache."""
    rows = {}
    for path in sorted([*cache.glob("embeddings/*/chunk_*.npz"), *cache.glob("colorfoil/*/chunk_*.npz")]):
        with np.load(path) as stored:
            start, stop = int(stored["start"]), int(stored["stop"])
        rows[str(path.relative_to(cache))], problem = read_chunk(path, start, stop)
        assert problem is None, (path, problem)
    return rows


@pytest.fixture(scope="module")
def single_thread():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the Ray workers run one thread each: same arithmetic, same bits
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, single_thread):
    """The single-process run, in a cache of its own."""
    cache, out_dir = tmp_path_factory.mktemp("single-cache"), tmp_path_factory.mktemp("single-out")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLBIAS_CACHE_DIR", str(cache))
        values = notebook_calls(out_dir)
    return {"cache": cache, "values": values, "chunks": chunk_rows(cache)}


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def run_precompute(tmp_path: Path, monkeypatch, lines: list[str], broken=None) -> tuple[dict, Path, Path]:
    cache, out_dir = tmp_path / "ray-cache", tmp_path / "ray-out"
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(cache))
    summary = pc.precompute(TINY_PROFILE, ONLY, REPO, assignments(out_dir, broken), workers=2, threads=1,
                            write=lines.append, progress_every_s=0)
    return summary, cache, out_dir


def assert_same_as_reference(reference: dict, cache: Path, out_dir: Path, monkeypatch) -> None:
    chunks = chunk_rows(cache)
    assert chunks.keys() == reference["chunks"].keys()  # same keys: same entries, same chunk files
    for name, rows in chunks.items():
        expected = reference["chunks"][name]
        assert rows.dtype == expected.dtype and rows.tobytes() == expected.tobytes(), name
    run_dir = generation_dir(out_dir)
    # rows arrive in the order the workers finish: the same rows, read as the notebook reads them
    manifest = read_manifest(run_dir).sort_values("job_id", ignore_index=True)
    expected = reference["values"]["manifest"]
    assert len(manifest) == len(expected) == 45
    pd.testing.assert_frame_equal(manifest, expected)
    for name, png in reference["values"]["images"].items():
        assert (run_dir / name).read_bytes() == png, name
    # the notebooks' calls now find everything: no forward pass runs, and they give the same values
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(cache))
    cached = notebook_calls(out_dir, forbid_forward=True)
    for key, value in cached.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, reference["values"][key])


@pytest.mark.slow  # a Ray instance, its workers and the reference: about a minute on 2 quiet cores
def test_two_ray_workers_one_killed_mid_chunk_write_what_one_process_writes(reference, local_ray, tmp_path,
                                                                            monkeypatch):
    marker = tmp_path / "crash-once"
    marker.write_text("generation:3")  # the worker drawing batch 3 exits inside the diffusion forward, once
    monkeypatch.setenv(pc.CRASH_ONCE_ENV, str(marker))
    broken = tmp_path / "not-a-model"  # a local directory spec the preflight accepts and no loader can load
    broken.mkdir()
    lines: list[str] = []
    summary, cache, out_dir = run_precompute(tmp_path, monkeypatch, lines, broken=broken)
    monkeypatch.delenv(pc.CRASH_ONCE_ENV)
    # the broken model's two stages failed, with its reason, and every other stage ran
    assert sorted(summary["failures"]) == [f"pair-scores {broken} (coco)", f"pair-scores {broken} (flickr30k)"]
    assert any(f"FAILED pair-scores {broken}" in line for line in lines)
    # the crash happened; Ray restarted the dead actor and retried its unit: three processes finished units
    assert not marker.exists() and len({pid for _, pid in summary["processes"]}) == 3
    assert generation_dir(out_dir).is_dir() and not list(generation_dir(out_dir).glob(".*.tmp"))  # nothing half-written left behind
    # 2 embedding chunks, 6 score chunks (3 models x 2 data sets, one chunk each), 6 generation batches;
    # every item computed once: the lost batch was drawn again, nothing finished was redone
    pairs = sum(len(value) for key, value in reference["values"].items() if isinstance(key, tuple))
    assert summary["units"] == 14 and summary["computed"] == 2 * 252 + pairs + 45
    assert any("14/14 chunks done" in line and "images/s" in line and "ETA" in line for line in lines), lines
    assert_same_as_reference(reference, cache, out_dir, monkeypatch)
    # planned again, the finished generation batches are not redone (cache chunks are read and verified
    # by the workers, which need the model for the key: their computed count says whether they ran)
    again = pc.build_work(TINY_PROFILE, ONLY, REPO, assignments(out_dir))
    assert [work.kind for work in again.stages].count("generation") == 1 and again.finished == 6
    assert sorted({again.stages[position].kind for position, _ in again.units}) == ["image-embeddings", "pair-scores"]


# --------------------------------------------------------------------------- the hooks, without Ray


def test_only_chunks_fills_the_selected_chunks_of_the_callers_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path))
    key, calls = cache_key("squares", 1, n=10), []

    def compute(start, stop):
        calls.append((start, stop))
        return np.arange(start, stop, dtype=np.float64)[:, None] ** 2

    with only_chunks([1]) as selection:
        compute_chunked(key, 10, compute, chunk_size=4, progress=False)
        raise AssertionError("the block ends once the selected chunks are done")  # never reached
    assert calls == [(4, 8)] and selection.computed == [1] and selection.loaded == []
    assert selection.directory == entry_dir(key) and (selection.n_items, selection.chunk_size) == (10, 4)
    assert sorted(p.name for p in selection.directory.glob("chunk_*.npz")) == ["chunk_000001.npz"]
    with only_chunks([1, 7]) as again:  # 7 is past the end: ignored
        compute_chunked(key, 10, compute, chunk_size=4, progress=False)
    assert again.computed == [] and again.loaded == [1] and calls == [(4, 8)]
    with only_chunks([]) as probe:  # opens the entry, computes nothing
        compute_chunked(key, 10, compute, chunk_size=4, progress=False)
    assert probe.directory == selection.directory and calls == [(4, 8)]
    # a plain call (a notebook) computes only the chunks nobody computed, and reads chunk 1
    full = compute_chunked(key, 10, compute, chunk_size=4, progress=False)
    assert calls == [(4, 8), (0, 4), (8, 10)]
    np.testing.assert_array_equal(full[:, 0], np.arange(10.0) ** 2)
    rows, problem = read_chunk(chunk_path(selection.directory, 1), 4, 8)
    assert problem is None and rows[:, 0].tolist() == [16.0, 25.0, 36.0, 49.0]


class SeedColours:
    """A stand-in text-to-image model: each image is one colour computed from its seed."""

    spec = "stand-in"

    def __init__(self):
        self.drawn = []

    def generate(self, prompts, seeds, batch_size=4, progress=False, **settings):
        from PIL import Image

        self.drawn += list(seeds)
        return [Image.new("RGB", (4, 4), (seed % 256, 7, 11)) for seed in seeds]


def test_generate_to_disk_only_draws_the_given_jobs(tmp_path):
    jobs = pd.DataFrame({"prompt": [f"p{i}" for i in range(6)], "seed": [10 + i for i in range(6)]})
    model = SeedColours()
    manifest = generate_to_disk(model, jobs, tmp_path, batch_size=2, progress=False, only=[2, 3, 99], steps=1)
    assert model.drawn == [12, 13] and manifest.job_id.tolist() == [2, 3]
    manifest = generate_to_disk(model, jobs, tmp_path, batch_size=2, progress=False, steps=1)
    assert model.drawn == [12, 13, 10, 11, 14, 15] and manifest.job_id.tolist() == list(range(6))


def test_progress_eta_from_each_kinds_rate():
    stage = Stage("image-embeddings", "m", ["01a"], {}, {}, n_items=40, unit_size=10)
    work = pc.Work(stages=[stage], units=[(0, i) for i in range(4)])
    lines = []
    meter = pc.Progress(work, workers=2, write=lines.append, every_s=0)
    assert meter.eta_s() is None  # no rate yet
    meter.update({"position": 0, "index": 0, "items": 10, "computed": 10, "seconds": 2.0})
    # 10 images in 2 worker-seconds, two workers: 10 images/s; 30 left: 3 s
    assert meter.rate("image-embeddings") == pytest.approx(10.0) and meter.eta_s() == pytest.approx(3.0)
    meter.update({"position": 0, "index": 1, "items": 10, "computed": 0, "seconds": 0.1})  # found cached
    assert meter.eta_s() == pytest.approx(2.0)
    assert "2/4 chunks done" in lines[-1] and "10.0 images/s (image-embeddings)" in lines[-1]


def test_the_demo_plan_becomes_cache_chunks_and_generation_batches(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    work = pc.build_work(TINY_PROFILE, ["01a_self_similarity", "01b_markedness", "04a_generation", "04b_annotation_and_metrics",
                                  "04c_cads", "04d_extensions"], REPO, [f"output_dir={tmp_path / 'out'}"])
    by_kind = {}
    for stage in work.stages:
        by_kind.setdefault(stage.kind, []).append(stage)
    # 01b embeds the same models as 01a: one stage each, serving both notebooks
    both = ["01a_self_similarity", "01b_markedness"]
    assert [(s.spec, s.notebooks, s.n_items, s.n_units) for s in by_kind["image-embeddings"]] == [
        ("tiny:clip", both, 252, 1), ("tiny:open-clip", both, 252, 1)]
    # 04b reads 04a's plain run: one stage; 45 professions x 4 images in batches of 16
    generation, *cads_notebook, extension = by_kind["generation"]
    # 04d: its 12 professions x 4 images, prompted "A competent ...", in a folder of its own
    assert (extension.notebooks, Path(extension.call["run_dir"]).name.split("_4-per-profession_")[0], extension.n_items,
            extension.n_units) == (["04d_extensions"], "competent", 48, 3)
    assert extension.call["jobs"].prompt.iloc[0] == "A competent doctor"
    assert generation.notebooks == ["04a_generation", "04b_annotation_and_metrics"]
    assert (generation.n_items, generation.n_units, generation.unit_items(11)) == (180, 12, 4)
    # 04c (demo): the grid at s = 0, 0.25, 1 with 4 images per profession (no source cases); the two
    # baselines on 6 professions; 3 models compared plain, 2 of them with CADS too, 2 images per profession
    from vlbias.t2i.bias import study_professions

    n = len(study_professions(include_source_cases=False))

    def named(stage):  # a study folder's sampler and images per profession (its digest of jobs and settings aside)
        name, _, rest = Path(stage.call["run_dir"]).name.rpartition("-per-profession_")
        return name.rstrip("_"), rest

    folders = [(s.spec, named(s)[0], s.n_items) for s in cads_notebook]
    cads = "cads_tau1=0.6,tau2=0.9,s={},psi=1,rescale=True,linear_"
    # the grid: the page's study (4 images per profession), plain and at each noise scale, in one digest
    grid = [stage for stage in cads_notebook if named(stage)[0].endswith("_4") and not named(stage)[0].startswith(
        ("intervention", "negative"))]
    assert [(s.spec, named(s)[0], s.n_items) for s in grid] == [
        ("tiny:sd", "plain_4", 4 * n), ("tiny:sd", cads.format(0.25) + "_4", 4 * n), ("tiny:sd", cads.format(1) + "_4", 4 * n)]
    assert len({named(s)[1] for s in grid}) == 1
    assert [folder for folder in folders if folder[1].startswith(("intervention", "negative"))] == [
        ("tiny:sd", "intervention=,_regardless_of_gender_4", 24), ("tiny:sd", "negative=gender_stereotype_4", 24)]
    # the model comparison: its own study, 2 images per profession, every model plain and two with CADS
    assert [folder for folder in folders if folder[1].endswith("_2")] == [
        ("tiny:sd", "plain_2", 2 * n), ("tiny:sd", cads.format(1) + "_2", 2 * n), ("tiny:sdxl", "plain_2", 2 * n),
        ("tiny:sd3", "plain_2", 2 * n), ("tiny:sd3", cads.format(1) + "_2", 2 * n)]
    assert all(s.unit_size == 16 and s.notebooks == ["04c_cads"] for s in cads_notebook)
    assert len(work.units) == 2 + 12 + sum(-(-items // 16) for _, _, items in folders) + 3
    assert not any(text.startswith("04c_cads: generation") for text in work.left)
    assert any("annotation" in text for text in work.left)


def test_precompute_refuses_what_the_preflight_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path / "no-data"))
    with pytest.raises(pc.PrecomputeError, match="fairface"):
        pc.build_work("full", ["01a_self_similarity"], REPO)
    with pytest.raises(pc.PrecomputeError, match="--workers"):
        pc.precompute(TINY_PROFILE, ["01a_self_similarity"], REPO, workers=0)


def test_the_command_line_names_a_bad_argument(capsys):
    from vlbias.__main__ import main

    assert main(["precompute", "--profile", "demo", "--gpu-fraction", "2", "--project-dir", str(REPO)]) == 1
    assert "--gpu-fraction must be in (0, 1], got 2.0" in capsys.readouterr().err


def test_plan_and_precompute_take_a_part_as_run_does(capsys):
    """``make rehearsal PART=3`` plans and precomputes Part III only: the whole profile's precompute drew Part IV's
    thousand images before Part III's first notebook could start."""
    import re

    from vlbias.__main__ import main

    main(["plan", "--profile", TINY_PROFILE, "--part", "3", "--project-dir", str(REPO)])
    planned = re.findall(r"^== (\w+):", capsys.readouterr().out, flags=re.MULTILINE)
    assert planned == ["03a_stereotyping", "03b_weat", "03c_erasure", "03d_toxicity", "03e_summary"]
    assert main(["precompute", "--profile", TINY_PROFILE, "--part", "3", "--project-dir", str(REPO)]) == 0
    described = re.findall(r"^  (?:left to the notebook: )?(\d\d\w+)", capsys.readouterr().out, flags=re.MULTILINE)
    assert described and all(name.startswith("03") for name in described), described


def test_the_book_side_never_imports_ray():
    import subprocess
    import sys

    code = ("import sys, vlbias, vlbias.precompute, vlbias.runner, vlbias.embeddings, vlbias.cache, vlbias.plan; "
            "import vlbias.__main__; print('ray' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.strip() == "False"  # precompute imports Ray inside its functions only


def test_04c_and_04d_images_are_precomputed_as_the_notebooks_draw_them(tmp_path, monkeypatch):
    """One stage per folder of 04c and 04d; the units, run in a worker, write the grid's images that
    04c's own call (``cads_grid``, on the page's study runs) draws, byte for byte, and then the notebooks'
    calls (the grid, the baselines, the model comparison, 04d's) draw nothing: every image is found, with
    the jobs and settings they ask for."""
    import torch

    from vlbias import profiles
    from vlbias.models import load_image_text_model
    from vlbias.models.text_to_image import DiffusersTextToImage
    from vlbias.t2i import bias as t2i_bias, runs as t2i_runs
    from vlbias.t2i.compare import cads_config, cads_grid, comparison_parameters, study_comparison
    from vlbias.t2i.generation import prompt_jobs, run_directory
    from vlbias.t2i.study import generation_settings, study_jobs

    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    torch.set_num_threads(1)
    settings = {"images_per_profession": 1, "num_inference_steps": 3, "height": 32, "width": 32, "batch_size": 16,
                "control_professions": 2, "comparison_images_per_profession": 1, "t2i_specs": ["tiny:sd", "tiny:sd3"],
                "cads_t2i_specs": ["tiny:sd3"], "n_boot": 10}
    scales = [0.0, 1.0]
    given = [f"04c_cads.output_dir={tmp_path / 'pre'}", f"04c_cads.noise_scales={scales}",
             *(f"04c_cads.{key}={value}" for key, value in settings.items())]
    given += [f"04d_extensions.output_dir={tmp_path / 'pre'}", "04d_extensions.images_per_profession=1"]
    work = pc.build_work(TINY_PROFILE, ["04c_cads", "04d_extensions"], REPO, given)
    run = profiles.plan_run(REPO, TINY_PROFILE, ["04c_cads", "04d_extensions"], given)
    page = {**profiles.notebook_parameters(REPO, "04c_cads", run), "device": "cpu"}
    page["output_dir"] = str(tmp_path / "pre")
    professions = list(t2i_bias.study_professions(include_source_cases=False).profession)
    # the grid: the page's study at its own size (the model comparison draws at the models' own sizes)
    grid = [stage for stage in work.stages if stage.spec == "tiny:sd" and stage.call["settings"]["height"] == 32
            and not Path(stage.call["run_dir"]).name.startswith(("intervention", "negative", "competent"))]
    names = sorted(Path(stage.call["run_dir"]).name.split("_1-per-profession_")[0].rstrip("_") for stage in grid)
    assert names == ["cads_tau1=0.6,tau2=0.9,s=1,psi=1,rescale=True,linear", "plain"], names
    assert sorted(stage.n_items for stage in grid) == [len(professions)] * 2

    worker = pc.Worker(1, {})
    for position, index in work.units:
        result = worker.run(work.stages[position], position, index)
        assert result["error"] is None and result["computed"] == work.stages[position].unit_items(index)

    # 04c's grid cell, in a folder of its own: what the notebook draws without precompute
    annotator = load_image_text_model("tiny:clip", device="cpu")
    _, drawn = cads_grid("tiny:sd", {**page, "output_dir": str(tmp_path / "own")}, scales, annotator=annotator)

    monkeypatch.setattr(DiffusersTextToImage, "generate",
                        lambda *args, **kwargs: pytest.fail("an image was drawn again: precompute missed it"))
    _, found = cads_grid("tiny:sd", page, scales, annotator=annotator)
    for s in scales:
        assert str(found[s]["run_dir"]) in {stage.call["run_dir"] for stage in grid}
        files = sorted(found[s]["manifest"].file)
        assert files == sorted(drawn[s]["manifest"].file) and len(files) == len(professions)
        for name in files:
            assert (found[s]["run_dir"] / name).read_bytes() == (drawn[s]["run_dir"] / name).read_bytes(), name
    first = drawn[0.0]["run_dir"] / sorted(drawn[0.0]["manifest"].file)[0]
    assert first.read_bytes() != (drawn[1.0]["run_dir"] / first.name).read_bytes()  # CADS did change the image
    # 04c's controls cell (its baselines) and model comparison, with the notebook's arguments: found, not drawn
    _, control_jobs = t2i_runs.control_jobs(study_jobs(page), page["control_professions"])
    model = __import__("vlbias.models", fromlist=["load_text_to_image"]).load_text_to_image("tiny:sd", device="cpu")
    for baseline_jobs, extra, folder in t2i_runs.control_baselines(control_jobs, page["intervention_suffix"],
                                                                   page["negative_prompt"]).values():
        at = {**generation_settings(page), **extra}
        manifest = generate_to_disk(model, baseline_jobs, run_directory(page["output_dir"], "tiny:sd",
                                                                        t2i_runs.named_folder(folder, baseline_jobs, at)),
                                    batch_size=16, progress=False, **at)
        assert len(manifest) == len(baseline_jobs) == 2
    ranking, runs, failures, _ = study_comparison(["tiny:sd", "tiny:sd3"], comparison_parameters(page),
                                                  cads_specs=["tiny:sd3"], cads=cads_config(page, page["comparison_noise_scale"]),
                                                  annotator=annotator)
    assert failures.empty and sorted(runs) == [("tiny:sd", "plain"), ("tiny:sd3", "CADS"), ("tiny:sd3", "plain")]
    assert all(len(found) == len(professions) for found in runs.values())
    # 04d's cell
    extension = {**profiles.notebook_parameters(REPO, "04d_extensions", run), "output_dir": str(tmp_path / "pre")}
    jobs = prompt_jobs(list(extension["professions"]), extension["prompt_template"], 1, seed=extension["seed"])
    at = generation_settings(extension)
    manifest = generate_to_disk(model, jobs, run_directory(extension["output_dir"], "tiny:sd",
                                                           t2i_runs.named_folder(t2i_runs.EXTENSION_FOLDER, jobs, at)),
                                batch_size=16, progress=False, **at)
    assert len(manifest) == len(jobs) == len(extension["professions"])


# --------------------------------------------------------------------------- actors and memory


def test_actors_are_as_many_as_the_nodes_memory_holds_models():
    assert pc.memory_fit(14.0, [24.0]) == 1
    assert pc.memory_fit(5.0, [14.0, 9.0]) == 2 + 1  # per node (23 GB in all would hold 4): a model is not split
    assert pc.memory_fit(30.0, [24.0]) == 0
    assert pc.memory_fit(None, [24.0]) is None
    assert pc.actor_count(10, None, 2, None) == 2
    assert pc.actor_count(10, None, 2, 1) == 1
    assert pc.actor_count(10, None, 2, 0) == 1   # too big for any node: one actor tries it
    assert pc.actor_count(1, None, 2, 5) == 1     # no more actors than units
    assert pc.actor_count(10, 4, 2, 5) == 2       # no more than the CPUs or GPUs hold
    assert pc.actor_count(10, 1, 2, 5) == 1       # --workers 1


def test_units_whose_model_leaves_room_for_fewer_actors_run_in_a_pool_of_their_own_after_the_others():
    # stage 0: an image-text model (2 GB in an actor), 1: SD 3 in float32 (15 GB), 2: unknown (tiny:),
    # 3: on a GPU; one node with 20 GB
    units = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (3, 0)]
    shares = {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.25}
    needs = {0: 2.0, 1: 15.0, 2: None, 3: None}
    assert pc.pools(units, shares, needs, [20.0], most=2) == [
        (0.0, None, [(0, 0), (2, 0), (0, 1)]), (0.25, None, [(3, 0)]), (0.0, 1, [(1, 0), (1, 1)])]
    # on a machine with 16 cores, room for 10 actors limits too, and the pool with more room runs first
    assert pc.pools(units, shares, needs, [20.0], most=16) == [
        (0.0, None, [(2, 0)]), (0.25, None, [(3, 0)]), (0.0, 10, [(0, 0), (0, 1)]), (0.0, 1, [(1, 0), (1, 1)])]


def test_an_actors_need_is_its_models_weights_at_the_stages_precision_and_its_overhead(monkeypatch):
    from vlbias.models import tiny_checkpoint
    from vlbias.models.footprint import directory_weights_gb

    directory = str(tiny_checkpoint("sd"))
    stage = pc.Stage("generation", directory, ["04a_generation"], {"device": "cpu", "half": True}, {}, 1, 1)
    assert pc.stage_memory_gb(stage) == pytest.approx(directory_weights_gb(directory, half=True) + pc.ACTOR_OVERHEAD_GB)
    stage.load["half"] = False
    assert pc.stage_memory_gb(stage) == pytest.approx(directory_weights_gb(directory, half=False) + pc.ACTOR_OVERHEAD_GB)
    assert pc.stage_memory_gb(pc.Stage("generation", "tiny:sd", [], {"half": False}, {}, 1, 1)) is None


def test_a_run_ended_by_rays_memory_monitor_is_one_error_that_says_how_to_rerun(monkeypatch):
    """Ray's memory monitor can still end a run (other work on the machine takes the memory): the driver
    gets Ray's OutOfMemoryError, and precompute says what happened and how to rerun, not Ray's traceback."""
    import sys
    import types

    class OutOfMemoryError(Exception):
        pass

    class RayActorError(Exception):
        pass

    class Pool:
        def __init__(self, actors):
            self.left = 1

        def submit(self, call, unit):
            pass

        def has_next(self):
            return self.left > 0

        def get_next_unordered(self):
            raise OutOfMemoryError("2 worker(s) were killed due to the node running low on memory.\nmore")

    class Actor:
        def options(self, **options):
            return self

        def remote(self, *args):
            return object()

    fake = types.SimpleNamespace(cluster_resources=lambda: {"CPU": 2.0}, nodes=lambda: [],
                                 remote=lambda cls: Actor(), put=lambda value: value, kill=lambda actor: None)
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.exceptions", types.SimpleNamespace(
        OutOfMemoryError=OutOfMemoryError, RayActorError=RayActorError))
    monkeypatch.setitem(sys.modules, "ray.util", types.SimpleNamespace(ActorPool=Pool))
    stage = pc.Stage("generation", "tiny:sd", ["04a_generation"], {"device": "cpu", "half": False}, {}, 4, 2)
    with pytest.raises(pc.PrecomputeError, match=r"memory monitor killed a worker.*running low on memory\.\)\. "
                                                 r"Finished chunks and images are kept: rerun with --workers 1"):
        pc.execute(pc.Work([stage], [(0, 0), (0, 1)]), write=lambda line: None)
