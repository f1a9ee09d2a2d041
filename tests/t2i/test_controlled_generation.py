"""Part IV as a controlled experiment: the trained diffusion model behind Part IV's interface, its
training reproduced, the amplification slope against an independent fit, and the planted signal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from vlbias.models import load_text_to_image, parse_spec
from vlbias.models.trained import trained_checkpoint
from vlbias.models.world_diffusion import DiffusionTrainingConfig, train_world_diffusion
from vlbias.t2i import controlled as ct
from vlbias.t2i.cads import CADSConfig, with_cads
from vlbias.t2i.generation import generate_to_disk

#: a few training steps on a small world: enough to exercise every path in seconds
SMALL = "trained:world-diffusion?steps=4&batch_size=8&train_per_kind=4"


@pytest.fixture(scope="module")
def small_model():
    return load_text_to_image(SMALL, device="cpu")


def test_training_reproduces_bit_for_bit_under_its_seed(tmp_path):
    """Stated tolerance: exactly equal tensors on one machine (training runs on one torch thread)."""
    from safetensors.torch import load_file

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(6, 16, 16, 3), dtype=np.uint8)
    kinds = ["circle", "star", "circle", "star", "ring", "ring"]
    weights = []
    for name, seed in (("first", 0), ("second", 0), ("other seed", 1)):
        config = DiffusionTrainingConfig(steps=3, batch_size=4, seed=seed)
        directory = train_world_diffusion(tmp_path / name, pixels, kinds, config)
        weights.append(load_file(directory / "unet" / "diffusion_pytorch_model.safetensors")
                       | load_file(directory / "text_encoder" / "model.safetensors"))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])


def test_trained_spec_loads_behind_the_text_to_image_interface(small_model, tmp_path):
    assert small_model.weights_id.startswith(parse_spec(SMALL).canonical + "@sha256:")
    assert small_model.native_size == 8 and not small_model.safety_checker_enabled
    jobs = ct.kind_jobs(2, kinds=["circle", "star"])
    assert jobs["prompt"].tolist() == ["a photo of a circle"] * 2 + ["a photo of a star"] * 2
    manifest = generate_to_disk(small_model, jobs, tmp_path / "run", batch_size=3, progress=False,
                                num_inference_steps=3, guidance_scale=2.0)
    assert len(manifest) == 4 and (manifest["model"] == SMALL).all()
    # an image depends on its prompt and seed only, not on its batch
    alone = small_model.generate(jobs["prompt"][2:3], jobs["seed"][2:3], num_inference_steps=3, guidance_scale=2.0,
                                 progress=False)[0]
    from PIL import Image

    on_disk = np.asarray(Image.open(tmp_path / "run" / manifest["file"][2]))
    assert np.abs(on_disk.astype(int) - np.asarray(alone).astype(int)).max() <= 1


def test_cads_hooks_the_trained_denoiser_and_switched_off_changes_nothing(small_model):
    prompts, seeds = ["a photo of a star"] * 2, [5, 6]
    settings = dict(num_inference_steps=4, guidance_scale=3.0, progress=False)
    plain = [np.asarray(i) for i in small_model.generate(prompts, seeds, **settings)]
    off = [np.asarray(i) for i in with_cads(small_model, CADSConfig(noise_scale=0.0)).generate(prompts, seeds,
                                                                                               **settings)]
    noisy = [np.asarray(i) for i in with_cads(small_model, CADSConfig(noise_scale=2.0, tau1=0.0, tau2=1.0)
                                              ).generate(prompts, seeds, **settings)]
    assert all(np.array_equal(a, b) for a, b in zip(plain, off))
    assert not all(np.array_equal(a, b) for a, b in zip(plain, noisy))


def test_pipeline_refuses_another_size_by_name(small_model):
    with pytest.raises(ValueError, match="draws 8 x 8 pixels; got height=16"):
        small_model.generate(["a photo of a star"], [0], num_inference_steps=2, height=16, width=16, progress=False)


def test_bad_training_settings_name_the_setting():
    with pytest.raises(ValueError, match="prompt_dropout"):
        DiffusionTrainingConfig(prompt_dropout=1.0)
    with pytest.raises(ValueError, match="image_size"):
        DiffusionTrainingConfig(image_size=7)


def test_planted_reference_comes_from_the_spec():
    reference = ct.planted_reference("trained:world-diffusion?share_spread=0.4")
    assert reference.min() == pytest.approx(0.3) and reference.max() == pytest.approx(0.7) and len(reference) == 12
    with pytest.raises(ValueError, match="model_spec must be the trained: spec"):
        ct.planted_reference("tiny:sd")


def test_amplification_slope_is_the_least_squares_slope():
    rng = np.random.default_rng(1)
    planted = np.linspace(0.1, 0.9, 12)
    generated = np.clip(0.5 + 1.3 * (planted - 0.5) + rng.normal(0, 0.05, 12), 0, 1)
    assert ct.amplification_slope(generated, planted) == pytest.approx(stats.linregress(planted, generated).slope)
    assert ct.amplification_slope(planted, planted) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="reference: every share is the same"):
        ct.amplification_slope(generated, np.full(12, 0.5))


def test_bootstrap_slope_interval_holds_the_slope_of_the_counted_shares():
    kinds = [f"k{i}" for i in range(6)]
    reference = pd.Series(np.linspace(0.2, 0.7, 6), index=kinds)
    # 40 images per kind, red exactly at twice the distance from 0.5 (slope 2), clipped inside [0, 1]
    red = np.round(40 * np.clip(0.5 + 2 * (reference - 0.5), 0, 1)).astype(int)
    labels = pd.DataFrame([{"kind": k, "perceived": "red" if i < red[k] else "blue"} for k in kinds for i in range(40)])
    result = ct.bootstrap_slope(labels, reference, n_boot=300, seed=0)
    expected = stats.linregress(reference, red / 40).slope
    assert result["estimate"] == pytest.approx(expected)
    assert result["ci_low"] < expected < result["ci_high"] and result["n_boot"] == 300


@pytest.mark.slow
def test_planted_signal_generated_shares_follow_the_planted_shares(tmp_path, demo_cache):
    """The cause is planted: the model sees "a photo of a {kind}" with red in 10% to 90% of the
    pictures, never the word. At the demo settings (the default spec, 48 images per kind, 10 DDIM
    steps, guidance 3) the generated share of red per kind, labelled by the world's mini-CLIP, ranks
    the kinds as the planted shares do beyond the control (the same recipe with every kind half red, on
    the same seeds): the interval of rho planted minus control lies above 0, as 04e's box judges it. The
    models are those the demo book trained (its cache), so they are trained once per session. The
    placebo, the control's labels in the planted model's place: not recovered."""
    from vlbias import book
    from vlbias.models import load_image_text_model
    from vlbias.t2i import bias as t2i_bias, findings as t2i_findings

    annotator = load_image_text_model("trained:world-clip?share_spread=0", device="cpu")
    reference = ct.planted_reference("trained:world-diffusion")
    labels, grids = {}, {}
    for spec in ("trained:world-diffusion", "trained:world-diffusion?share_spread=0"):
        grids[spec], results = ct.sampler_grid(ct.guidance_runs(load_text_to_image(spec, device="cpu"), [3.0],
                                                         num_inference_steps=10), annotator, ct.kind_jobs(48),
                                        tmp_path, reference, n_boot=200)
        labels[spec] = results["guidance 3"]["manifest"]
    changes = pd.DataFrame(columns=["run", "measure"])
    published = book.published(t2i_bias.SOURCE_TABLE)

    def ranking(model, control):
        return t2i_findings.controlled_findings(grids[model], "guidance 3", changes, "none", published, "trained:world-diffusion",
                                                labels[model], labels[control], "trained:world-diffusion?share_spread=0",
                                                reference, n_boot=500)[0]

    found = ranking("trained:world-diffusion", "trained:world-diffusion?share_spread=0")
    assert found.verdict == "recovered" and found.estimates["contrast"].low > 0
    assert ranking("trained:world-diffusion?share_spread=0", "trained:world-diffusion").verdict == "not recovered"
    assert trained_checkpoint("world-diffusion").exists()


@pytest.mark.slow
def test_controlled_generation_page(demo_book):
    html, _, images = demo_book.page("04e_controlled_generation")
    assert "Demo output" in html and images >= 4
    for column in ("generated share", "VRBS", "slope", "diversity", "Spearman's ρ", "final loss"):
        assert column in html
    # the planted ranking against its control, amplification at every guidance scale of the sweep, the power
    assert "planted − control" in html and "✔ recovered" in html and "at guidance 5" in html
    assert "this world plants no such cause" in html and "Power" in html