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


def _labelled_by_colour(spec: str) -> pd.DataFrame:
    """``PER_PROFESSION`` images per profession drawn by ``spec``, labelled female when red outweighs blue."""
    import torch

    from vlbias.models import load_text_to_image

    pipeline = load_text_to_image(spec, device="cpu").pipeline
    table = pw.profession_table(1.0, 1)
    prompts = list(np.repeat(table.prompt.to_numpy(), PER_PROFESSION))
    images = pipeline(prompts, generator=torch.Generator().manual_seed(0), num_inference_steps=10,
                      guidance_scale=3.0, output_type="np").images
    red = (images[..., 0] - images[..., 2]).reshape(len(images), -1).mean(axis=1) > 0
    return pd.DataFrame({"profession": np.repeat(table.profession.to_numpy(), PER_PROFESSION),
                         "seed": np.tile(np.arange(PER_PROFESSION), len(table)),
                         "perceived": np.where(red, "female", "male")})


def planted_and_control_rho() -> tuple[pd.Series, pd.Series]:
    """Spearman's rho (estimate, ci_low, ci_high) of the planted model's and the uniform control's
    images against the labour shares, the 40 WinoBias professions, colour labelled by pixels."""
    labour = t2i_bias.reference_shares()

    def rho(spec: str) -> pd.Series:
        labels = _labelled_by_colour(spec)
        labels = labels[labels.profession.isin(labour.index)]
        return t2i_bias.bootstrap_bias_scores(labels, labour, n_boot=300).loc["spearman_rho"]

    return rho(MODEL), rho(MODEL + "?share_scale=0")


@pytest.mark.slow
def test_04b_rho_recovers_the_planted_shares_and_the_uniform_control_shows_none(demo_cache):
    """04b's headline: Spearman's rho between generated and labour shares is positive beyond its
    bootstrap interval for the model trained on the planted shares; the model trained on the uniform
    control (every profession half red, 04c's comparison) ranks the professions far less, its whole
    interval below the planted model's. (Its rho is not exactly 0: 16 images per profession leave
    chance correlations of about +-0.2, and the percentile interval of rho is narrow.)"""
    planted, control = planted_and_control_rho()
    assert planted["ci_low"] > 0 and planted["estimate"] > 0.5
    assert control["ci_high"] < planted["ci_low"]
    assert abs(control["estimate"]) < 0.4


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


def test_04d_extensions_are_not_run_on_a_world_that_plants_no_age_or_skin_tone():
    from vlbias.t2i.stages import extension_units

    parameters = {"t2i_spec": "trained:profession-diffusion"}
    assert extension_units(parameters, None) == []


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
    assert stages[0].call["jobs"].equals(stages[1].call["jobs"]) and len(stages[0].call["jobs"]) == 45 * 6
    assert stages[0].call["run_dir"] != stages[1].call["run_dir"]
    alone = plain_units({**parameters, "control_spec": None}, Context(root / "notebooks"))
    assert [stage.spec for stage in alone] == [MODEL]


@pytest.mark.slow
def test_04a_generation_page_draws_the_trained_profession_model_beside_its_control(demo_book):
    html, text, images = demo_book.page("04a_generation")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "planted share of red" in html and images >= 2
    assert "every profession half red: the uniform control" in html  # the banner names the control too
    assert "control_spec is None" not in text


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


@pytest.mark.slow
def test_04c_cads_page_compares_the_planted_model_with_the_uniform_control(demo_book):
    html, text, images = demo_book.page("04c_cads")
    assert "models trained on a planted world" in html and "tiny:" not in html
    assert "trained:profession-diffusion?share_scale=0" in html
    assert "cohen" in html.lower()  # the two trained annotators' agreement table (κ defined)


@pytest.mark.slow
def test_04d_extensions_page_says_why_nothing_is_labelled(demo_book):
    html, text, images = demo_book.page("04d_extensions")
    assert "plants gender only" in text and images == 0


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
        red = (pixels[..., 0] - pixels[..., 2]).reshape(len(pixels), -1).mean(axis=1) > 0
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
