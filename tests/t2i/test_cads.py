"""CADS against its formulas, on hand-picked values and inside the tiny Stable Diffusion pipeline."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vlbias.t2i.cads import (CADSConfig, anneal_condition, cads_gamma, cads_noise_seed, condition_annealing,
                              config_from_source_names, with_cads)
from vlbias.models import load_text_to_image

STEPS = 4  # PNDM then calls the denoiser at timesteps 751, 501, 501, 251, 1


@pytest.fixture(scope="module")
def sd():
    return load_text_to_image("tiny:sd", device="cpu")


def pixels(images):
    return [np.asarray(image, dtype=np.int16) for image in images]


@pytest.mark.parametrize("t, expected", [(0.0, 1.0), (0.5, 1.0), (0.6, 1.0), (0.675, 0.75), (0.75, 0.5),
                                         (0.825, 0.25), (0.9, 0.0), (0.95, 0.0), (1.0, 0.0)])
def test_gamma_is_one_below_tau1_zero_above_tau2_and_linear_between(t, expected):
    assert cads_gamma(t, 0.6, 0.9) == pytest.approx(expected, abs=1e-12)


def test_gamma_cosine_and_array_forms():
    ts = np.array([0.2, 0.6, 0.75, 0.9])
    assert cads_gamma(ts, 0.6, 0.9, "cosine") == pytest.approx([1.0, 1.0, 0.5, 0.0])
    # a quarter of the way: ½(1 + cos(π/4))
    assert cads_gamma(0.675, 0.6, 0.9, "cosine") == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))
    assert cads_gamma(0.5, 0.5, 0.5) == 1.0 and cads_gamma(0.51, 0.5, 0.5) == 0.0
    with pytest.raises(ValueError, match="tau1 <= tau2"):
        cads_gamma(0.5, 0.9, 0.6)


def test_update_without_rescaling_is_the_formula():
    y = torch.tensor([[[1.0, -2.0], [0.5, 3.0]]])
    n = torch.tensor([[[0.2, 0.4], [-1.0, 2.0]]])
    out = anneal_condition(y, 0.36, n, noise_scale=0.5, rescale=False)
    assert torch.allclose(out, 0.6 * y + 0.5 * 0.8 * n)


def test_rescaling_restores_each_rows_mean_and_std_and_psi_mixes():
    y = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 1.0, -1.0]]).reshape(2, 2, 2)
    n = torch.tensor([[4.0, -1.0, 0.0, 2.0], [1.0, 2.0, 3.0, 4.0]]).reshape(2, 2, 2)
    gamma, s = 0.25, 0.3
    raw = np.sqrt(gamma) * y.numpy() + s * np.sqrt(1 - gamma) * n.numpy()
    expected = np.empty_like(raw)
    for row in range(2):  # by hand, with numpy's sample std (ddof=1 like torch.std)
        r, orig = raw[row], y.numpy()[row]
        expected[row] = (r - r.mean()) / r.std(ddof=1) * orig.std(ddof=1) + orig.mean()
    full = anneal_condition(y, gamma, n, s, psi=1.0, rescale=True)
    assert np.allclose(full.numpy(), expected, atol=1e-6)
    assert np.allclose(full.mean(dim=(1, 2)).numpy(), y.mean(dim=(1, 2)).numpy(), atol=1e-6)
    half = anneal_condition(y, gamma, n, s, psi=0.5, rescale=True)
    assert np.allclose(half.numpy(), 0.5 * expected + 0.5 * raw, atol=1e-6)


def test_source_config_names_map_to_paper_parameters():
    config, mapping = config_from_source_names({"anneal_schedule": "cosine", "max_noise_level": 0.3,
                                                "diversity_weight": 0.7, "start_step": 10, "end_step": 40}, 50)
    assert (config.tau1, config.tau2, config.noise_scale, config.psi, config.schedule) == \
        (pytest.approx(0.2), pytest.approx(0.8), 0.3, 0.7, "cosine")
    assert set(mapping) == {"anneal_schedule", "max_noise_level", "diversity_weight", "start_step", "end_step"}
    with pytest.raises(ValueError, match="unknown"):
        config_from_source_names({"max_noise": 0.3}, 50)


def spy_on_denoiser(sd, monkeypatch):
    """Record the encoder_hidden_states and timestep the denoiser itself receives (after any hooks)."""
    seen = []
    original = sd.denoiser.forward

    def forward(sample, timestep, *args, **kwargs):
        seen.append((float(timestep), kwargs["encoder_hidden_states"].clone()))
        return original(sample, timestep, *args, **kwargs)

    monkeypatch.setattr(sd.denoiser, "forward", forward)
    return seen


def test_every_step_sees_the_formula_under_guidance_including_the_first(sd, monkeypatch):
    prompts, seeds = ["A photo of a nurse", "A photo of a plumber"], [7, 8]
    config = CADSConfig(tau1=0.3, tau2=0.9, noise_scale=0.5, rescale=False)
    seen = spy_on_denoiser(sd, monkeypatch)
    sd.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    plain = list(seen)
    seen.clear()
    with_cads(sd, config).generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    assert [t for t, _ in seen] == [t for t, _ in plain] == [751.0, 501.0, 501.0, 251.0, 1.0]

    generators = [torch.Generator().manual_seed(cads_noise_seed(s)) for s in seeds]
    for (timestep, annealed), (_, original) in zip(seen, plain):
        gamma = (0.9 - timestep / 1000) / 0.6 if timestep / 1000 > 0.3 else 1.0
        uncond, cond = original.chunk(2)
        assert torch.equal(annealed[:2], uncond)  # the unconditional half is never touched
        if gamma == 1.0:
            assert torch.equal(annealed[2:], cond)
            continue
        noise = torch.stack([torch.randn(cond.shape[1:], generator=g) for g in generators])
        expected = math.sqrt(gamma) * cond + 0.5 * math.sqrt(1 - gamma) * noise
        assert torch.allclose(annealed[2:], expected, atol=1e-6), timestep
    first_gamma = (0.9 - 0.751) / 0.6
    assert 0 < first_gamma < 1 and not torch.equal(seen[0][1], plain[0][1])


def test_branch_both_anneals_the_unconditional_half_with_its_own_noise(sd, monkeypatch):
    prompts, seeds = ["A photo of a nurse", "A photo of a plumber"], [7, 8]
    config = CADSConfig(tau1=0.3, tau2=0.9, noise_scale=0.5, rescale=False, branch="both")
    assert config.label().endswith(",branch=both)") and "branch" not in CADSConfig().label()
    seen = spy_on_denoiser(sd, monkeypatch)
    sd.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    plain = list(seen)
    seen.clear()
    with_cads(sd, config).generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    generators = [torch.Generator().manual_seed(cads_noise_seed(s)) for s in seeds]
    for (timestep, annealed), (_, original) in zip(seen, plain):
        gamma = (0.9 - timestep / 1000) / 0.6 if timestep / 1000 > 0.3 else 1.0
        if gamma == 1.0:
            assert torch.equal(annealed, original)
            continue
        # per image: its unconditional row's noise is drawn first, then its conditional row's
        draws = [(torch.randn(original.shape[1:], generator=g), torch.randn(original.shape[1:], generator=g))
                 for g in generators]
        noise = torch.stack([draws[0][0], draws[1][0], draws[0][1], draws[1][1]])
        expected = math.sqrt(gamma) * original + 0.5 * math.sqrt(1 - gamma) * noise
        assert torch.allclose(annealed, expected, atol=1e-6), timestep
    with pytest.raises(ValueError, match="branch"):
        CADSConfig(branch="uncond")


def test_without_guidance_every_row_is_annealed(sd, monkeypatch):
    seen = spy_on_denoiser(sd, monkeypatch)
    sd.generate(["a"], [3], num_inference_steps=2, guidance_scale=1.0, progress=False)
    (t0, plain), _ = seen[0], seen.clear()
    with condition_annealing(sd, CADSConfig(tau1=0.0, tau2=0.5, noise_scale=1.0, rescale=False), [3]) as hook:
        sd.generate(["a"], [3], num_inference_steps=2, guidance_scale=1.0, progress=False)
    assert plain.shape[0] == 1 and hook.trace[0] == (t0 / 1000, 0.0)
    noise = torch.randn(plain.shape[1:], generator=torch.Generator().manual_seed(cads_noise_seed(3)))
    assert torch.allclose(seen[0][1][0], noise, atol=1e-6)  # γ = 0, s = 1: pure noise


@pytest.mark.parametrize("config", [CADSConfig(noise_scale=0.0), CADSConfig(noise_scale=0.0, psi=0.3),
                                    CADSConfig(tau1=1.0, tau2=1.0, noise_scale=0.5)])
def test_switched_off_cads_reproduces_plain_sampling_bit_for_bit(sd, config):
    prompts, seeds = ["A photo of a nurse", "A photo of a plumber", "A photo of a cook"], [1, 2, 3]
    plain = sd.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False)
    off = with_cads(sd, config).generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(pixels(plain), pixels(off)))


def test_cads_changes_images_deterministically_and_independently_of_batching(sd):
    prompts, seeds = ["A photo of a nurse"] * 3, [1, 2, 3]
    cads = with_cads(sd, CADSConfig(tau1=0.2, tau2=0.9, noise_scale=1.0))
    plain = pixels(sd.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False))
    together = pixels(cads.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False))
    apart = pixels(cads.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=1, progress=False))
    # float32 kernels on a CPU round differently for other batch sizes (about 1e-6 in the
    # decoded image, plain sampling too): at most one level of 255 may flip
    assert all(np.abs(a - b).max() <= 1 and (a != b).mean() < 0.01 for a, b in zip(together, apart))
    again = pixels(cads.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False))
    assert all(np.array_equal(a, b) for a, b in zip(together, again))
    assert all(np.abs(a - b).mean() > 0.5 for a, b in zip(plain, together))
    assert sd.denoiser._forward_pre_hooks == {}  # removed after use
    assert "cads(tau1=0.2" in cads.spec


def test_invalid_parameters_are_refused():
    with pytest.raises(ValueError, match="psi"):
        CADSConfig(psi=1.5)
    with pytest.raises(ValueError, match="noise_scale"):
        CADSConfig(noise_scale=-0.1)


def test_half_precision_conditions_stay_half_and_follow_the_float32_formula():
    y = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0)).half()
    n = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    out = anneal_condition(y, 0.5, n, noise_scale=0.3, rescale=False)
    assert out.dtype == torch.float16
    assert torch.allclose(out.float(), math.sqrt(0.5) * y.float() + 0.3 * math.sqrt(0.5) * n, atol=2e-3)


def test_gamma_edges_types_and_messages():
    import warnings

    assert type(cads_gamma(0.7, 0.6, 0.9)) is float             # a scalar in, a float out
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # τ1 = τ2 divides by zero: silently
        step = cads_gamma(np.array([0.4, 0.5, 0.6]), 0.5, 0.5)
    assert step.dtype == np.float64 and step.tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="schedule must be one of"):
        cads_gamma(0.5, 0.6, 0.9, "cubic")


def test_anneal_defaults_rescale_fully_and_shapes_must_match():
    y = torch.tensor([[[1.0, -2.0], [0.5, 3.0]]])
    n = torch.tensor([[[0.2, 0.4], [-1.0, 2.0]]])
    assert torch.equal(anneal_condition(y, 0.36, n, 0.5), anneal_condition(y, 0.36, n, 0.5, psi=1.0, rescale=True))
    assert not torch.allclose(anneal_condition(y, 0.36, n, 0.5), anneal_condition(y, 0.36, n, 0.5, rescale=False))
    with pytest.raises(ValueError, match=r"condition's shape \(1, 2, 2\), got \(1, 2, 3\)"):
        anneal_condition(y, 0.5, torch.zeros(1, 2, 3), 0.5)


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_gamma_of_an_array_of_timesteps_is_the_formula_elementwise(schedule):
    import warnings

    t = np.array([0, 200, 350, 500, 650, 800, 999])
    ramp = np.clip((t - 200) / 600, 0, 1)
    expected = 1 - ramp if schedule == "linear" else 0.5 * (1 + np.cos(np.pi * ramp))
    gamma = cads_gamma(t, 200, 800, schedule)
    assert gamma.dtype == np.float64 and gamma == pytest.approx(expected, abs=1e-12)
    assert [cads_gamma(float(x), 200, 800, schedule) for x in t] == pytest.approx(expected, abs=1e-12)
    assert cads_gamma(350, 200, 800, schedule) == pytest.approx(expected[2]) and isinstance(
        cads_gamma(350, 200, 800, schedule), float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # tau1 = tau2: a step, without dividing by zero
        step = cads_gamma(t, 500, 500, schedule)
    assert step.dtype == np.float64 and step.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
