import multiprocessing
import os
import signal
import time

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.t2i.generation import generate_to_disk, prompt_jobs, read_manifest
from vlbias.models.base import TextToImageModel


class FakePipeline(TextToImageModel):
    """Image pixels are a function of (prompt, seed); can be told to die after some calls."""

    spec = "fake:t2i"

    def __init__(self, die_after_calls=None):
        self.calls = []
        self.die_after_calls = die_after_calls

    def generate(self, prompts, seeds, **kwargs):
        if self.die_after_calls is not None and len(self.calls) >= self.die_after_calls:
            raise KeyboardInterrupt("simulated kill")
        self.calls.append(list(zip(prompts, seeds)))
        return [Image.fromarray(np.full((4, 4, 3), (len(p) * 7 + s) % 256, np.uint8)) for p, s in zip(prompts, seeds)]


def jobs(n=10):
    return pd.DataFrame({"profession": [f"p{i % 3}" for i in range(n)], "prompt": [f"A photo of p{i % 3}" for i in range(n)],
                         "seed": list(range(100, 100 + n))})


def test_killed_run_resumes_without_regenerating(tmp_path):
    killed = FakePipeline(die_after_calls=2)
    with pytest.raises(KeyboardInterrupt):
        generate_to_disk(killed, jobs(), tmp_path, batch_size=3, progress=False, num_inference_steps=2)
    assert len(read_manifest(tmp_path)) == 6  # two finished batches survive
    resumed = FakePipeline()
    manifest = generate_to_disk(resumed, jobs(), tmp_path, batch_size=3, progress=False, num_inference_steps=2)
    assert [pair for call in resumed.calls for pair in call] == [(f"A photo of p{i % 3}", 100 + i) for i in range(6, 10)]
    assert manifest.job_id.tolist() == list(range(10))
    assert manifest.num_inference_steps.tolist() == [2] * 10
    for row in manifest.itertuples():
        pixel = np.asarray(Image.open(tmp_path / row.file))[0, 0, 0]
        assert pixel == (len(row.prompt) * 7 + row.seed) % 256
    assert not list(tmp_path.glob(".*.tmp"))


def test_changed_settings_are_refused(tmp_path):
    generate_to_disk(FakePipeline(), jobs(3), tmp_path, progress=False, num_inference_steps=2)
    with pytest.raises(ValueError, match="settings changed"):
        generate_to_disk(FakePipeline(), jobs(3), tmp_path, progress=False, num_inference_steps=2, guidance_scale=7.5)
    with pytest.raises(ValueError, match="num_inference_steps=.*settings changed"):
        generate_to_disk(FakePipeline(), jobs(3), tmp_path, progress=False, num_inference_steps=4)
    generate_to_disk(FakePipeline(), jobs(3), tmp_path / "none", progress=False, num_inference_steps=2, height=None)
    generate_to_disk(FakePipeline(), jobs(4), tmp_path / "none", progress=False, num_inference_steps=2, height=None)
    other_model = FakePipeline()
    other_model.spec = "fake:other"
    with pytest.raises(ValueError, match="model=.*settings changed"):
        generate_to_disk(other_model, jobs(3), tmp_path, progress=False, num_inference_steps=2)


def test_prompt_jobs_seeds_are_stable_when_subjects_are_added():
    two = prompt_jobs(["nurse", "pilot"], "A photo of a {profession}", 3, seed=2)
    three = prompt_jobs(["nurse", "pilot", "cook"], "A photo of a {profession}", 3, seed=2)
    assert two.equals(three.iloc[:6])
    assert two.prompt.tolist()[3] == "A photo of a pilot" and two.seed.tolist() == [2000000, 2000001, 2000002, 2001000, 2001001, 2001002]
    assert three.seed.is_unique


def test_a_folder_holding_other_jobs_is_refused_and_a_prefix_is_reused(tmp_path):
    generate_to_disk(FakePipeline(), jobs(6), tmp_path, progress=False, num_inference_steps=2)
    shorter = FakePipeline()
    manifest = generate_to_disk(shorter, jobs(4), tmp_path, progress=False, num_inference_steps=2)
    assert shorter.calls == [] and manifest.job_id.tolist() == [0, 1, 2, 3]
    reseeded = jobs(6).assign(seed=lambda j: j.seed + 1)
    with pytest.raises(ValueError, match="job list changed"):
        generate_to_disk(FakePipeline(), reseeded, tmp_path, progress=False, num_inference_steps=2)


def test_killed_real_pipeline_resumes_to_the_same_files(tmp_path):
    """tiny:sd killed after its first batch: the rerun draws only the rest, and every file equals
    the one an uninterrupted run writes."""
    from vlbias.models import load_text_to_image

    sd = load_text_to_image("tiny:sd", device="cpu")
    work = prompt_jobs(["nurse", "plumber"], "A photo of a {profession}", 3, seed=1)
    settings = dict(num_inference_steps=2, height=32, width=32)
    generate_to_disk(sd, work, tmp_path / "whole", batch_size=2, progress=False, **settings)

    class DiesAfterOneBatch:
        spec, identity, calls = sd.spec, sd.identity, 0  # the same weights, so the rerun resumes its folder

        def generate(self, prompts, seeds, **kwargs):
            DiesAfterOneBatch.calls += 1
            if DiesAfterOneBatch.calls > 1:
                raise KeyboardInterrupt("simulated kill")
            return sd.generate(prompts, seeds, **kwargs)

    with pytest.raises(KeyboardInterrupt):
        generate_to_disk(DiesAfterOneBatch(), work, tmp_path / "resumed", batch_size=2, progress=False, **settings)
    assert len(read_manifest(tmp_path / "resumed")) == 2
    manifest = generate_to_disk(sd, work, tmp_path / "resumed", batch_size=2, progress=False, **settings)
    for name in manifest.file:
        whole = np.asarray(Image.open(tmp_path / "whole" / name))
        assert np.array_equal(whole, np.asarray(Image.open(tmp_path / "resumed" / name))), name
    assert manifest.seed.tolist() == work.seed.tolist()


def test_other_weights_under_the_same_spec_are_refused_by_the_folder(tmp_path):
    """A rehearsal's random weights, an updated hub snapshot or a retrained local folder under the spec
    that drew a folder: refused with the weights named, the folder's images untouched; a CADS wrapper
    records its base model's weights."""
    from vlbias.models.identity import ModelIdentity
    from vlbias.t2i.cads import with_cads

    first, second = FakePipeline(), FakePipeline()
    first.identity = ModelIdentity("fake:t2i", "revision:" + "a" * 40)
    second.identity = ModelIdentity("fake:t2i", "revision:" + "b" * 40)
    manifest = generate_to_disk(first, jobs(2), tmp_path, progress=False, num_inference_steps=2)
    assert set(manifest["weights"]) == {"revision:" + "a" * 40}
    written = {path.name: path.stat().st_mtime_ns for path in tmp_path.glob("*.png")}
    with pytest.raises(ValueError, match=r"holds images drawn by other weights under the same spec \(\['revision:a{40}'\]\); "
                                         r"this run's model has revision:b{40}\. Use a new output folder"):
        generate_to_disk(second, jobs(3), tmp_path, progress=False, num_inference_steps=2)
    assert {path.name: path.stat().st_mtime_ns for path in tmp_path.glob("*.png")} == written
    assert len(generate_to_disk(first, jobs(3), tmp_path, progress=False, num_inference_steps=2)) == 3  # same weights resume
    from vlbias.t2i.generation import model_weights

    assert model_weights(with_cads(second, noise_scale=0.1)) == "revision:" + "b" * 40
    assert model_weights(FakePipeline()) == "spec:fake:t2i"  # nothing identified it: its spec


def test_run_directory_and_lazy_image_files(tmp_path):
    from vlbias.t2i.generation import ImageFiles, run_directory

    assert run_directory("out", "CompVis/stable-diffusion-v1-4", "cads(s=0.1,psi=1)").as_posix() == \
        "out/CompVis_stable-diffusion-v1-4/cads_s=0.1,psi=1"
    manifest = generate_to_disk(FakePipeline(), jobs(3), tmp_path, progress=False, num_inference_steps=2)
    files = ImageFiles(manifest, tmp_path)
    assert len(files) == 3 and files[1].mode == "RGB" and len(files[0:2]) == 2
    other = generate_to_disk(FakePipeline(), jobs(3), tmp_path / "b", progress=False, num_inference_steps=3)
    assert ImageFiles(other, tmp_path / "b").identity != files.identity


def test_a_trained_models_run_folder_names_its_checkpoint_key_so_a_retrained_model_never_resumes_old_images(
        tmp_path, monkeypatch):
    """A ``trained:`` spec names a recipe and options, not weights: under new defaults (04a's model went
    from batches of 64 to 32) the same spec trains other weights. Its run folder ends with the checkpoint
    directory's key, computed without training, so the new model draws into a new folder."""
    from vlbias.models.trained import trained_options
    from vlbias.t2i.generation import run_directory

    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    spec = "trained:profession-diffusion?share_scale=0"
    recipe, options = trained_options(spec.removeprefix("trained:"))
    key = recipe.target(**options).name.rsplit("-", 1)[-1]
    assert len(key) == 16 and not (tmp_path / "cache" / "trained").exists()  # nothing was trained
    assert run_directory("out", spec).as_posix() == f"out/trained_profession-diffusion_share_scale=0_{key}/plain"
    # the options of the old default (batches of 64), spelled out, are another checkpoint and folder
    assert run_directory("out", spec + "&batch_size=64") != run_directory("out", spec)
    # a weights label (04e names its folders by the loaded weights) and other specs are left as they are
    assert run_directory("out", "trained:world-diffusion@sha256:0123|cpu").as_posix() == \
        "out/trained_world-diffusion_sha256_0123_cpu/plain"
    assert run_directory("out", "tiny:sd").as_posix() == "out/tiny_sd/plain"


def _pixels(folder, manifest):
    return {row.file: np.asarray(Image.open(folder / row.file)).tobytes() for row in manifest.itertuples()}


@pytest.mark.parametrize("cut", ["inside-the-last-row", "a-row-without-its-end"])
def test_a_cut_off_manifest_line_is_dropped_with_a_warning_and_its_job_redone(tmp_path, cut):
    generate_to_disk(FakePipeline(), jobs(6), tmp_path, batch_size=3, progress=False, num_inference_steps=2)
    path = tmp_path / "manifest.csv"
    text = path.read_text()
    if cut == "inside-the-last-row":  # killed while the last row was being written: job 5 is lost
        path.write_text(text[:-9])
        redone = [("A photo of p2", 105), ("A photo of p0", 106)]
    else:  # a row of job 6 without its newline, image never written
        path.write_text(text + "6,000006_seed106.png,p0,A photo")
        redone = [("A photo of p0", 106)]
    with pytest.warns(UserWarning, match="manifest.csv: dropped a cut-off last line"):
        assert len(read_manifest(tmp_path)) == 5 + (cut != "inside-the-last-row")
    rerun = FakePipeline()
    with pytest.warns(UserWarning, match="cut-off last line"):
        manifest = generate_to_disk(rerun, jobs(7), tmp_path, batch_size=3, progress=False, num_inference_steps=2)
    assert [pair for call in rerun.calls for pair in call] == redone
    assert manifest.job_id.tolist() == list(range(7))
    assert path.read_text().endswith("\n") and len(path.read_text().splitlines()) == 8  # header + 7 whole rows
    whole = generate_to_disk(FakePipeline(), jobs(7), tmp_path / "whole", batch_size=3, progress=False,
                             num_inference_steps=2)
    assert manifest.drop(columns="file").equals(whole.drop(columns="file"))
    assert _pixels(tmp_path, manifest) == _pixels(tmp_path / "whole", whole)


def test_a_manifest_file_outside_its_folder_is_refused(tmp_path):
    from vlbias.t2i.generation import ImageFiles

    generate_to_disk(FakePipeline(), jobs(2), tmp_path, progress=False, num_inference_steps=2)
    path = tmp_path / "manifest.csv"
    path.write_text(path.read_text().replace("000001_seed101.png", "../x.png"))
    with pytest.raises(ValueError, match=r"manifest.csv: file '../x.png' is not a plain file name inside its folder"):
        read_manifest(tmp_path)
    with pytest.raises(ValueError, match="not a plain file name"):
        ImageFiles(pd.DataFrame({"file": ["/etc/passwd"]}), tmp_path)


class SlowPipeline(FakePipeline):
    def generate(self, prompts, seeds, **kwargs):
        time.sleep(0.01)  # long enough for two runs to meet on one job
        return super().generate(prompts, seeds, **kwargs)


def _generate_in_process(folder, start_together, drawn):
    start_together.wait()
    model = SlowPipeline()
    generate_to_disk(model, jobs(24), folder, batch_size=2, progress=False, num_inference_steps=2)
    drawn.put(sum(len(call) for call in model.calls))


def test_two_runs_on_one_folder_share_the_jobs_and_equal_one_run(tmp_path, hang_guard):
    context = multiprocessing.get_context("fork")
    start_together, drawn = context.Barrier(2), context.Queue()
    runs = [context.Process(target=_generate_in_process, args=(tmp_path / "shared", start_together, drawn))
            for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        hang_guard.join(run, 1.0, "a generation process sharing the folder")
    assert [run.exitcode for run in runs] == [0, 0]
    assert drawn.get(timeout=5) + drawn.get(timeout=5) == 24, "every job drawn once"
    shared = read_manifest(tmp_path / "shared").sort_values("job_id").reset_index(drop=True)
    alone = generate_to_disk(FakePipeline(), jobs(24), tmp_path / "alone", batch_size=2, progress=False,
                             num_inference_steps=2)
    assert shared.equals(alone)
    assert _pixels(tmp_path / "shared", shared) == _pixels(tmp_path / "alone", alone)
    assert len((tmp_path / "shared" / "manifest.csv").read_text().splitlines()) == 25


def _killed_generation(folder, kill_at):
    """Generate 10 jobs in batches of 3 and SIGKILL this process at ``kill_at``."""
    class Dies(FakePipeline):
        def generate(self, prompts, seeds, **kwargs):
            if kill_at == "drawing-batch-3" and len(self.calls) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().generate(prompts, seeds, **kwargs)

    real_replace = os.replace

    def replace_then_die(source, target):
        real_replace(source, target)
        if kill_at == "before-recording-batch-2" and str(target).endswith("000003_seed103.png"):
            os.kill(os.getpid(), signal.SIGKILL)  # an image of batch 2 on disk, its row not

    os.replace = replace_then_die
    generate_to_disk(Dies(), jobs(10), folder, batch_size=3, progress=False, num_inference_steps=2)


@pytest.mark.parametrize("kill_at, survivors", [("drawing-batch-3", 6), ("before-recording-batch-2", 3)])
def test_sigkill_during_generation_resumes_to_the_files_of_an_uninterrupted_run(tmp_path, kill_at, survivors, hang_guard):
    child = multiprocessing.get_context("fork").Process(target=_killed_generation, args=(tmp_path / "k", kill_at))
    child.start()
    hang_guard.join(child, 1.0, f"a generation process killed at {kill_at}")
    assert child.exitcode == -signal.SIGKILL
    assert len(read_manifest(tmp_path / "k")) == survivors
    resumed = FakePipeline()
    manifest = generate_to_disk(resumed, jobs(10), tmp_path / "k", batch_size=3, progress=False, num_inference_steps=2)
    assert [seed for call in resumed.calls for _, seed in call] == list(range(100 + survivors, 110))
    whole = generate_to_disk(FakePipeline(), jobs(10), tmp_path / "w", batch_size=3, progress=False,
                             num_inference_steps=2)
    assert manifest.equals(whole) and _pixels(tmp_path / "k", manifest) == _pixels(tmp_path / "w", whole)
def test_articles_follow_the_word_and_the_literal_template_stays_available():
    from vlbias.t2i.generation import indefinite_article, subject_prompt

    cases = {"accountant": "an", "HVAC installer": "an", "editor": "an", "attendant": "an", "auditor": "an",
             "nurse": "a", "university professor": "a", "hour worker": "an", "MRI technician": "an",
             "CEO": "a", "housekeeper": "a", "X-ray technician": "an", "one-man band": "a"}
    assert {word: indefinite_article(word) for word in cases} == cases
    assert subject_prompt("A photo of a {profession}", "accountant") == "A photo of an accountant"
    assert subject_prompt("A photo of a {profession}", "HVAC installer") == "A photo of an HVAC installer"
    assert subject_prompt("a {profession} at work", "editor") == "an editor at work"
    assert subject_prompt("An image of a {profession}", "nurse") == "An image of a nurse"
    assert subject_prompt("A competent {profession}", "accountant") == "A competent accountant"
    assert subject_prompt("A photo of a {profession}", "accountant", articles="literal") == "A photo of a accountant"
    jobs = prompt_jobs(["accountant", "nurse"], "A photo of a {profession}", 1)
    assert jobs.prompt.tolist() == ["A photo of an accountant", "A photo of a nurse"]


def test_sewer_is_drawn_as_a_person_who_sews():
    jobs = prompt_jobs(["sewer", "tailor"], "A photo of a {profession}", 2)
    assert jobs.profession.tolist() == ["sewer"] * 2 + ["tailor"] * 2  # the reference share still joins
    assert set(jobs.prompt[jobs.profession == "sewer"]) == {"A photo of a sewing machine operator"}
    kept = prompt_jobs(["sewer"], "A photo of a {profession}", 1, prompt_words={})
    assert kept.prompt.tolist() == ["A photo of a sewer"]


class DriftingPipeline(FakePipeline):
    """FakePipeline's pictures, with one pixel moved by ``drift`` levels: a model that does not redraw
    the same picture from the same seed."""

    def __init__(self, drift):
        super().__init__()
        self.drift = drift

    def generate(self, prompts, seeds, **kwargs):
        images = [np.asarray(image).copy() for image in super().generate(prompts, seeds, **kwargs)]
        for image in images:
            image[0, 0, 0] = (int(image[0, 0, 0]) + self.drift) % 256
        return [Image.fromarray(image) for image in images]


def test_redraw_check_draws_the_first_images_again_and_measures_their_pixel_differences(tmp_path):
    from vlbias.t2i.findings import reproducibility_findings
    from vlbias.t2i.generation import redraw_check

    manifest = generate_to_disk(FakePipeline(), jobs(6), tmp_path, batch_size=4, progress=False, num_inference_steps=2)
    model = FakePipeline()
    same = redraw_check(model, manifest, tmp_path, n=4, batch_size=4, num_inference_steps=2)
    assert model.calls == [[(f"A photo of p{i % 3}", 100 + i) for i in range(4)]]  # the first batch, from its seeds
    assert same["max_difference"].tolist() == [0] * 4 and same["mean_difference"].tolist() == [0.0] * 4
    assert reproducibility_findings(same)[0].verdict == "supports"
    # one channel of one pixel of 16 moved by 9 levels: the largest difference 9, the mean 9 / 48
    drifted = redraw_check(DriftingPipeline(9), manifest, tmp_path, n=2, batch_size=4, num_inference_steps=2)
    assert drifted["max_difference"].tolist() == [9, 9] and np.allclose(drifted["mean_difference"], 9 / 48)
    finding = reproducibility_findings(drifted)[0]
    assert finding.verdict == "contradicts" and "0 identical to the pixel; largest difference 9 of 255" in finding.ours
    assert reproducibility_findings(redraw_check(DriftingPipeline(2), manifest, tmp_path, n=1))[0].verdict == "supports"
    # no world plants whether a seed gives its picture again: on a model trained here the row says so
    trained = reproducibility_findings(drifted, "trained:profession-diffusion")[0]
    assert trained.verdict == "not planted" and "largest difference 9 of 255" in trained.ours
    assert "exact: all 2 images drawn again" in trained.ours
    assert len(read_manifest(tmp_path)) == 6  # nothing written
    with pytest.raises(ValueError, match="n=0"):
        redraw_check(model, manifest, tmp_path, n=0)
    with pytest.raises(ValueError, match="manifest is empty"):
        redraw_check(model, manifest.iloc[:0], tmp_path)
