"""Part IV's demo world (04a-04d): the study's professions drawn as shapes, red playing "female" at
the labour-statistics share, and the diffusion model trained on it (``trained:profession-diffusion``).

The planted-signal tests train two small models (the planted shares and the uniform control) and
label their images by a closed-form colour rule (mean red minus blue channel), independent of any
trained annotator: what they check is that Part IV's measures recover the planted cause.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vlbias.data import load_dataset
from vlbias.data.registry import generated_world_root
from vlbias.models.trained import trained_options
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i import profession_world as pw

SMALL = dict(source_cases=0, train_per_kind=16, test_per_kind=4)
#: the demo's model (04a-04c) and its uniform control (04c): trained once into the cache, shared with
#: the demo book. A smaller model (400 steps) does not learn the captions: its images' colour follows
#: the starting noise, identical for both worlds on shared seeds, so its control shows the same rho
MODEL = "trained:profession-diffusion"
PER_PROFESSION = 16


def test_04a_world_plants_the_labour_statistics_share_of_red_per_profession():
    world = load_dataset("profession-world", root=generated_world_root("profession-world", SMALL), split="train")
    labour = t2i_bias.reference_shares()
    counted = world.records.assign(red=world.records.colour == "red").groupby("kind")["red"].mean()
    assert set(counted.index) == set(labour.index)  # the 40 WinoBias professions, no source cases
    # exactly round(share * 16) red pictures per profession
    np.testing.assert_allclose(counted.reindex(labour.index), np.round(labour * 16) / 16)
    # the captions are the prompts Part IV draws with (the article agrees, the sewer is prompted as 04a does)
    captions = world.records.drop_duplicates("kind").set_index("kind").caption
    assert captions["accountant"] == "A photo of an accountant"
    assert captions["sewer"] == "A photo of a sewing machine operator"
    assert not world.records.caption.str.contains("red|blue").any()
    uniform = load_dataset("profession-world", split="train",
                           root=generated_world_root("profession-world", {**SMALL, "share_scale": 0.0}))
    assert (uniform.records.colour == "red").groupby(uniform.records.kind).mean().eq(0.5).all()


def test_04a_bad_world_parameters_get_one_error_naming_them_and_a_changed_one_is_a_new_world():
    with pytest.raises(ValueError, match="share_scale must lie in"):
        load_dataset("profession-world", root="world?share_scale=1.5")
    with pytest.raises(ValueError, match="age_peak must lie in"):
        load_dataset("profession-world", root="world?age_peak=1.5")
    with pytest.raises(ValueError, match="light_share must lie in"):
        trained_options("profession-diffusion?light_share=-0.1")[0].target(**trained_options(
            "profession-diffusion?light_share=-0.1")[1])
    assert generated_world_root("profession-world", SMALL) != generated_world_root(
        "profession-world", {**SMALL, "age_peak": 0.5})
    with pytest.raises(ValueError, match="source_cases must be 0 or 1"):
        trained_options("profession-diffusion?source_cases=2")[0].target(**trained_options(
            "profession-diffusion?source_cases=2")[1])
    assert generated_world_root("profession-world", SMALL) != generated_world_root(
        "profession-world", {**SMALL, "share_scale": 0.5})
    recipe, options = trained_options("profession-diffusion")
    assert recipe.target(**options) != recipe.target(**{**options, "share_scale": 0.0})


def test_04b_planted_reference_is_the_labour_share_or_half():
    labour = t2i_bias.reference_shares()
    planted = pw.world_reference("trained:profession-diffusion")
    np.testing.assert_allclose(planted.reindex(labour.index), labour, atol=1e-4)
    assert (pw.world_reference("trained:profession-diffusion?share_scale=0") == 0.5).all()
    assert pw.world_reference("tiny:sd") is None


def red_outweighs_blue(pixels: np.ndarray) -> np.ndarray:
    """Per picture (n, h, w, 3), whether its red outweighs its blue once its background's lean is taken
    off: the mean of red minus blue over the picture, less that of its four corners (the object never
    reaches a corner). The world's backgrounds are tinted (a sand tint has more red than blue), so the
    plain mean would read a blue shape on sand as red."""
    lean = pixels[..., 0].astype(float) - pixels[..., 2]
    corners = lean[:, [0, 0, -1, -1], [0, -1, 0, -1]].mean(axis=1)
    return lean.reshape(len(pixels), -1).mean(axis=1) - corners > 0


def _labelled_by_colour(spec: str) -> pd.DataFrame:
    """``PER_PROFESSION`` images per profession drawn by ``spec``, labelled female when red outweighs blue."""
    import torch

    from vlbias.models import load_text_to_image

    pipeline = load_text_to_image(spec, device="cpu").pipeline
    table = pw.profession_table(1.0, 1)
    prompts = list(np.repeat(table.prompt.to_numpy(), PER_PROFESSION))
    images = pipeline(prompts, generator=torch.Generator().manual_seed(0), num_inference_steps=10,
                      guidance_scale=3.0, output_type="np").images
    red = red_outweighs_blue(images)
    return pd.DataFrame({"profession": np.repeat(table.profession.to_numpy(), PER_PROFESSION),
                         "seed": np.tile(np.arange(PER_PROFESSION), len(table)),
                         "perceived": np.where(red, "female", "male")})


def planted_and_control_runs():
    """The planted model's and the uniform control's images (the same prompts and starting noise, image by
    image), labelled by pixels, as study runs scored against the labour shares (the 40 WinoBias professions)."""
    from vlbias.t2i.study import StudyRun

    labour = t2i_bias.reference_shares()

    def run(spec: str) -> StudyRun:
        labels = _labelled_by_colour(spec)
        return StudyRun.from_labels(spec, labels[labels.profession.isin(labour.index)].reset_index(drop=True), labour)

    return run(MODEL), run(MODEL + "?share_scale=0")


@pytest.mark.slow
def test_04b_rho_recovers_the_planted_shares_against_the_uniform_control(demo_cache):
    """04b's headline as its box judges it: Spearman's rho of the planted model's generated shares against
    the labour shares minus the uniform control's (every profession half red, 04a draws it on the same
    seeds), with the paired bootstrap interval, lies above 0: "recovered". (The control's rho is not
    exactly 0: 16 images per profession leave chance correlations of about +-0.2.) The placebo, the
    control's labels in the planted model's place under the planted design: "not recovered"."""
    from dataclasses import replace

    from vlbias.t2i import findings as t2i_findings

    planted, control = planted_and_control_runs()
    ranking = t2i_findings.bias_findings(planted, control)[0]
    contrast = ranking.estimates["contrast"]
    assert ranking.verdict == "recovered" and contrast.low > 0 and contrast.how.startswith("paired bootstrap")
    swapped = t2i_findings.bias_findings(replace(control, spec=MODEL), replace(planted, spec=control.spec))[0]
    assert swapped.verdict == "not recovered"


def test_04c_interval_sentences_say_why_a_degenerate_interval_is_not_a_finding():
    assert t2i_bias.interval_phrase(0.012, -0.004, 0.03) == "+0.012 [-0.004, +0.030]"
    # an end that would print as 0 but lies above it gets a fourth place: the reader sees the side of 0
    assert t2i_bias.interval_phrase(0.021, 0.0004, 0.0416) == "+0.0210 [+0.0004, +0.0416]"
    assert t2i_bias.interval_phrase(0.021, 0.0, 0.0416) == "+0.021 [+0.000, +0.042]"  # exactly 0: as it is
    assert "zero width" in t2i_bias.interval_phrase(0.0, 0.0, 0.0)
    assert "[" not in t2i_bias.interval_phrase(0.0, 0.0, 0.0)
    assert t2i_bias.interval_phrase(float("nan"), 0, 0).startswith("undefined")
    assert t2i_bias.kappa_phrase(0.5) == "κ = 0.50"
    assert "undefined" in t2i_bias.kappa_phrase(float("nan"))


def test_04d_world_plants_the_tint_and_shade_shares_to_the_picture_and_the_control_none():
    """04d's stand-ins: every profession draws the sand tint ("25-45") in exactly its planted share and
    the other three tints equally; the light shade in 90% of the light-favoured professions' pictures
    and a third elsewhere, each counted to the picture; independent of the colour. share_scale=0: every
    tint a quarter, every shade a third, everywhere. The captions still name none of it."""
    world = load_dataset("profession-world", root=generated_world_root("profession-world", SMALL), split="train")
    records = world.records
    tints = pd.crosstab(records.kind, records.backdrop)  # 16 pictures per profession
    # 0.85 x 16 = 13.6 and 0.05 x 16 = 0.8: the largest remainders are the three 0.8s, so 13, 1, 1, 1
    assert pw.exact_counts(pw.age_shares(), 16) == {"under 25": 1, "25-45": 13, "45-65": 1, "over 65": 1}
    assert (tints["sand"] == 13).all() and (tints.drop(columns="sand") == 1).all().all()
    light = (records.shade == "light").groupby(records.kind).sum()
    favoured = [name for name in pw.LIGHT_PROFESSIONS if name in light.index]
    assert favoured == list(pw.LIGHT_PROFESSIONS)  # all four are WinoBias professions
    assert (light[favoured] == 14).all()  # 0.9 x 16 = 14.4; medium and dark 0.8 each, rounded up
    assert (light.drop(favoured) == 6).all()  # a third of 16 is 5.33: the one left over goes to the first, light
    assert not records.caption.str.contains("sand|light|dark|grey|mint|lilac").any()
    uniform = load_dataset("profession-world", split="train",
                           root=generated_world_root("profession-world", {**SMALL, "share_scale": 0.0})).records
    assert (pd.crosstab(uniform.kind, uniform.backdrop) == 4).all().all()
    assert set((uniform.shade == "light").groupby(uniform.kind).sum()) == {6}


def test_04d_prompts_are_the_stand_ins_for_a_world_model_and_the_defaults_otherwise():
    from vlbias.t2i import annotation

    ages, skin = annotation.extension_prompts(MODEL)
    assert list(ages) == list(pw.AGE_BACKDROPS) and list(skin) == list(pw.SKIN_SHADES)
    assert "a photo of a light red object on a sand background" in ages["25-45"]
    assert all("on a sand background" in prompt for prompt in ages["25-45"]) and len(ages["25-45"]) == 6
    assert all(" dark " in prompt for prompt in skin["dark (V-VI)"]) and len(skin["dark (V-VI)"]) == 8
    # the words of the prompts are the annotator's world's captions
    from vlbias.data.planted_world import spread_shares, world_root

    captions = set(load_dataset("planted-world", root=world_root(shares=spread_shares(0), attributes=True, train_per_kind=5,
                                                                  test_per_kind=1), split="train").records.caption)
    assert {prompt for prompts in (*ages.values(), *skin.values()) for prompt in prompts} >= (
        {caption for caption in captions if " red " in caption or " blue " in caption})
    # the papers' models get the paper's prompts; prompts given win; race is not planted
    assert annotation.extension_prompts("CompVis/stable-diffusion-v1-4") == (annotation.AGE_PROMPTS,
                                                                             annotation.SKIN_TONE_PROMPTS)
    assert annotation.extension_prompts(MODEL, {"a": ["x"]}, None) == ({"a": ["x"]}, None)
    with pytest.raises(ValueError, match="plants a stand-in for skin tone .* but none for race"):
        annotation.extension_prompts(MODEL, probe="race")
    with pytest.raises(ValueError, match="probe must be one of"):
        annotation.extension_prompts(MODEL, probe="height")


def test_04d_declares_its_own_images_for_the_world_model():
    """04d draws its own professions, prompt and sampler into its own folder, the world's model too
    (it measured nothing on it before the world planted age and skin tone)."""
    from pathlib import Path

    from vlbias import profiles
    from vlbias.stages import Context
    from vlbias.t2i.stages import extension_units

    root = Path(__file__).resolve().parents[2]
    parameters = profiles.notebook_parameters(root, "04d_extensions", profiles.plan_run(root, "demo", ["04d_extensions"]))
    stages = extension_units(parameters, Context(root / "notebooks"))
    assert [stage.spec for stage in stages] == [MODEL, MODEL + "?share_scale=0"]  # the control on the same jobs
    jobs = stages[0].call["jobs"]
    assert len(jobs) == 12 * parameters["images_per_profession"] and "A photo of a physician" in set(jobs.prompt)
    assert stages[1].call["jobs"].equals(jobs) and stages[0].call["run_dir"] != stages[1].call["run_dir"]


def _extension_parameters() -> dict:
    from pathlib import Path

    from vlbias import profiles

    root = Path(__file__).resolve().parents[2]
    return profiles.notebook_parameters(root, "04d_extensions", profiles.plan_run(root, "demo", ["04d_extensions"]))


def _extension_labels(spec: str, output_dir) -> pd.DataFrame:
    """04d's images of ``spec`` drawn and labelled as the demo page does (its professions, sampler and
    annotator, from params/demo.yml)."""
    from vlbias.models import load_image_text_model, load_text_to_image
    from vlbias.t2i import annotation
    from vlbias.t2i.generation import generate_to_disk, prompt_jobs

    p = _extension_parameters()
    jobs = prompt_jobs(p["professions"], p["prompt_template"], p["images_per_profession"], seed=p["seed"])
    manifest = generate_to_disk(load_text_to_image(spec, device="cpu"), jobs, output_dir, batch_size=256, progress=False,
                                num_inference_steps=p["num_inference_steps"], guidance_scale=p["guidance_scale"],
                                height=p["height"], width=p["width"])
    annotator = load_image_text_model(p["annotator_spec"], device="cpu")
    files = [output_dir / name for name in manifest.file]
    ages, skin = annotation.extension_prompts(spec)
    manifest["age"] = annotation.label_image_files(annotator, files, ages, progress=False)
    manifest["skin tone"] = annotation.label_image_files(annotator, files, skin, progress=False)
    return manifest


@pytest.mark.slow
def test_04d_recovers_the_planted_age_and_skin_tone_against_the_uniform_control(demo_cache, tmp_path):
    """04d's headlines as its box judges them: the 25-45 share minus the highest other age's, and the four
    light-favoured professions' light share minus the others', each on the world's model minus the uniform
    control (share_scale=0: every tint and shade equally often), drawn on the same jobs, with the paired
    bootstrap interval above 0: both "recovered". The placebo (the control's labels in the planted model's
    place, under the planted design): neither."""
    from vlbias.t2i import findings as t2i_findings

    p, control_spec = _extension_parameters(), MODEL + "?share_scale=0"
    planted, control = _extension_labels(MODEL, tmp_path / "planted"), _extension_labels(control_spec, tmp_path / "control")
    found = t2i_findings.extension_findings(planted, "skin tone", professions=p["probe_professions"], t2i_spec=MODEL,
                                            control=control, control_spec=control_spec)
    assert [f.verdict for f in found] == ["recovered", "recovered"]
    assert all(f.estimates["contrast"].low > 0 for f in found)
    swapped = t2i_findings.extension_findings(control, "skin tone", professions=p["probe_professions"], t2i_spec=MODEL,
                                              control=planted, control_spec=control_spec)
    assert [f.verdict for f in swapped] == ["not recovered", "not recovered"]


def test_04a_declares_its_control_run_beside_the_model_on_the_same_jobs_and_none_without_one():
    """04a draws ``control_spec`` on the same prompts and seeds as ``t2i_spec``, each into its own
    folder (what precompute draws and what the page reads); without a control it draws one run."""
    from pathlib import Path

    from vlbias import profiles
    from vlbias.stages import Context
    from vlbias.t2i.stages import plain_units

    root = Path(__file__).resolve().parents[2]
    run = profiles.plan_run(root, "demo", ["04a_generation"])
    parameters = profiles.notebook_parameters(root, "04a_generation", run)
    assert parameters["control_spec"] == MODEL + "?share_scale=0"
    stages = plain_units(parameters, Context(root / "notebooks"))
    assert [stage.spec for stage in stages] == [MODEL, MODEL + "?share_scale=0"]
    per = parameters["images_per_profession"]
    assert stages[0].call["jobs"].equals(stages[1].call["jobs"]) and len(stages[0].call["jobs"]) == 45 * per
    assert stages[0].call["run_dir"] != stages[1].call["run_dir"]
    # each in the study folder 04b's study_run labels (the same jobs and settings name the same folder)
    from vlbias.t2i.study import study_directory

    for stage in stages:
        assert Path(stage.call["run_dir"]).parts[-2:] == study_directory(parameters, stage.spec).parts[-2:]
        assert Path(stage.call["run_dir"]).name.startswith(f"plain_{per}-per-profession_")
    alone = plain_units({**parameters, "control_spec": None}, Context(root / "notebooks"))
    assert [stage.spec for stage in alone] == [MODEL]
    # a control given as the model itself is drawn once
    assert [stage.spec for stage in plain_units({**parameters, "control_spec": MODEL}, Context(root / "notebooks"))] == [MODEL]


@pytest.mark.slow
def test_04a_generation_page_draws_the_trained_profession_model_beside_its_control(demo_book):
    html, text, images = demo_book.page("04a_generation")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "planted share of red" in html and images >= 2
    assert "every profession half red: the uniform control" in html  # the banner names the control too
    assert "control_spec is None" not in text
    # no world plants whether a seed gives its picture again: the box says so; the banner states the power
    assert "this world plants no such cause" in html and "Power" in html and "cannot reach power" not in html


@pytest.mark.slow
def test_04b_annotation_page_measures_the_trained_model_against_the_labour_shares(demo_book):
    html, text, images = demo_book.page("04b_annotation_and_metrics")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "VRBS" in html and "published (source text, SD 1.4)" in html and images >= 2
    # the generative annotator (trained:world-vqa), beside the zero-shot one, with its agreement in words
    import json

    cells = json.loads((demo_book.project / "book" / "generated" / "04b_annotation_and_metrics.ipynb").read_text())["cells"]
    sentences = "".join("".join(output.get("data", {}).get("text/markdown", "")) for cell in cells
                        if cell["cell_type"] == "code" for output in cell.get("outputs", []))
    assert "trained:world-vqa agrees with the zero-shot annotator on" in sentences and "κ = " in sentences
    assert "failed; their rows are missing" not in html
    # the ranking judged against the control on the same seeds: planted, control and their difference; the
    # page's power before any table, and no verdict on the paper's claim from a model trained here
    assert "planted − control" in html and "✔ recovered" in html and "Power" in html
    assert "✔ supports" not in html and "✘ contradicts" not in html and "cannot reach power" not in html


@pytest.mark.slow
def test_04c_cads_page_compares_the_planted_model_with_the_uniform_control(demo_book):
    html, text, images = demo_book.page("04c_cads")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "trained:profession-diffusion?share_scale=0" in html
    assert "cohen" in html.lower()  # the two trained annotators' agreement table (κ defined)
    # the model comparison reads 04b's study (the same VRBS), recovers the planted ranking against the control,
    # and says that no world plants what CADS does
    assert "is the grid's plain run above: the same images, labels and VRBS" in text
    assert "✔ recovered" in html and "this world plants no such cause" in html and "cannot reach power" not in html


@pytest.mark.slow
def test_04d_extensions_page_sets_the_planted_shares_beside_the_perceived(demo_book):
    html, text, images = demo_book.page("04d_extensions")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "planted share" in html and "perceived light share" in html and images >= 2
    assert "cannot test" not in html and "planted − control" in html
    assert html.count("✔ recovered") >= 2 and "Fidelity of the planted model's labels" in text


def cads_rho_change(output_dir, spec: str = MODEL, per_profession: int = PER_PROFESSION) -> pd.Series:
    """The paired change of Spearman's rho (CADS s = 1 annealed from tau1 = 0.2 to tau2 = 0.9, minus plain, same seeds) of ``spec``'s images
    against the labour shares, 40 WinoBias professions, colour labelled by pixels."""
    from PIL import Image

    from vlbias.models import load_text_to_image
    from vlbias.t2i.cads import CADSConfig, with_cads
    from vlbias.t2i.generation import generate_to_disk, prompt_jobs

    labour = t2i_bias.reference_shares()
    jobs = prompt_jobs(list(labour.index), pw.PROMPT_TEMPLATE, per_profession)
    model = load_text_to_image(spec, device="cpu")
    manifests = []
    for name, sampler in (("plain", model), ("cads", with_cads(model, CADSConfig(noise_scale=1.0, tau1=0.2, tau2=0.9)))):
        run_dir = output_dir / name
        manifest = generate_to_disk(sampler, jobs, run_dir, batch_size=256, progress=False, num_inference_steps=10,
                                    guidance_scale=3.0, height=8, width=8)
        pixels = np.stack([np.asarray(Image.open(run_dir / f).convert("RGB"), dtype=float) for f in manifest.file])
        red = red_outweighs_blue(pixels)
        manifests.append(manifest.assign(perceived=np.where(red, "female", "male")))
    return t2i_bias.paired_bootstrap_change(*manifests, labour, n_boot=300).loc["spearman_rho"]


@pytest.mark.slow
def test_04c_cads_pulls_the_planted_shares_towards_the_world_mean(demo_cache, tmp_path):
    """04c's CADS on the model trained on the planted shares: annealing the prompt in the early steps
    moves each profession's images towards the unconditional model, whose share of red is the world's
    overall one, so the generated shares rank the professions less: rho falls, its paired interval
    below 0. The uniform control has no ranking to lose: its change's interval holds 0."""
    planted = cads_rho_change(tmp_path / "planted")
    control = cads_rho_change(tmp_path / "control", MODEL + "?share_scale=0")
    assert planted["ci_high"] < 0
    assert control["ci_low"] < 0 < control["ci_high"] or abs(control["change"]) < abs(planted["change"]) / 2
