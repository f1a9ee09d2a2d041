"""Stable Diffusion 3 through the text-to-image interface, and CADS on its two conditions, on the
tiny randomly initialised SD 3 fixture (MM-DiT transformer, flow matching, CLIP + CLIP + T5); the
same CADS checks on the tiny SDXL fixture, whose U-Net also takes a pooled text embedding."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from vlbias.models import load_text_to_image, tiny_checkpoint
from vlbias.models.text_to_image import _no_safety_checker
from vlbias.t2i.cads import CADSConfig, cads_gamma, cads_noise_seed, with_cads

STEPS = 4


@pytest.fixture(scope="module")
def sd3():
    return load_text_to_image("tiny:sd3", device="cpu")


def pixels(images):
    return [np.asarray(image, dtype=np.int16) for image in images]


def test_tiny_sd3_is_sd3_shaped_and_round_trips_through_its_directory(sd3):
    pipeline = sd3.pipeline
    assert type(pipeline).__name__ == "StableDiffusion3Pipeline"
    assert type(sd3.denoiser).__name__ == "SD3Transformer2DModel" and sd3.denoiser is pipeline.transformer
    assert type(pipeline.scheduler).__name__ == "FlowMatchEulerDiscreteScheduler"
    assert [type(pipeline.text_encoder).__name__, type(pipeline.text_encoder_2).__name__,
            type(pipeline.text_encoder_3).__name__] == ["CLIPTextModelWithProjection"] * 2 + ["T5EncoderModel"]
    # the offline T5 tokenizer: whole prompt words are single pieces, and every sequence ends with </s>
    ids = pipeline.tokenizer_3("a photo of a nurse").input_ids
    assert len(ids) == 6 and ids[-1] == pipeline.tokenizer_3.eos_token_id == 1
    assert pipeline.tokenizer_3.decode(ids, skip_special_tokens=True) == "a photo of a nurse"
    assert sd3.native_size == 32
    by_path = load_text_to_image(str(tiny_checkpoint("sd3")), device="cpu")
    for component in ("transformer", "vae", "text_encoder", "text_encoder_2", "text_encoder_3"):
        state, other = getattr(pipeline, component).state_dict(), getattr(by_path.pipeline, component).state_dict()
        assert state.keys() == other.keys() and all(torch.equal(state[k], other[k]) for k in state), component


def test_safety_checker_arguments_go_only_to_pipelines_that_have_one():
    assert _no_safety_checker(str(tiny_checkpoint("sd3"))) == {}
    assert _no_safety_checker(str(tiny_checkpoint("sd"))) == {"safety_checker": None, "requires_safety_checker": False}


def test_generation_is_deterministic_under_a_seed_and_independent_of_the_batch(sd3):
    prompts, seeds = ["A photo of a nurse", "A photo of a pilot", "A photo of a nurse"], [5, 11, 6]
    first = pixels(sd3.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False))
    again = pixels(sd3.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=3, progress=False))
    apart = pixels(sd3.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=1, progress=False))
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert all(np.abs(a - b).max() <= 1 for a, b in zip(first, apart))  # float32 summation order only
    assert first[0].shape == (32, 32, 3) and first[0].std() > 0
    assert np.abs(first[0] - first[2]).mean() > 0.5  # another seed, another image


@pytest.fixture(scope="module", params=["tiny:sd3", "tiny:sdxl"])
def pooled_model(request):
    return load_text_to_image(request.param, device="cpu")


def spy_on_denoiser(model, monkeypatch):
    """Record (timestep, token states, pooled embedding, SDXL's time_ids) as the denoiser receives
    them, after any forward pre-hook: SD 3's transformer takes everything by keyword, SDXL's U-Net
    takes the timestep second and the pooled embedding in added_cond_kwargs."""
    seen = []
    original = model.denoiser.forward

    def forward(*args, **kwargs):
        timestep = kwargs["timestep"] if "timestep" in kwargs else args[1]
        added = kwargs.get("added_cond_kwargs") or {}
        pooled = kwargs["pooled_projections"] if "pooled_projections" in kwargs else added["text_embeds"]
        time_ids = added.get("time_ids")
        seen.append((float(torch.as_tensor(timestep).flatten()[0]), kwargs["encoder_hidden_states"].clone(),
                     pooled.clone(), None if time_ids is None else time_ids.clone()))
        return original(*args, **kwargs)

    monkeypatch.setattr(model.denoiser, "forward", forward)
    return seen


@pytest.mark.parametrize("config", [CADSConfig(noise_scale=0.0), CADSConfig(tau1=1.0, tau2=1.0, noise_scale=0.5)])
def test_cads_at_noise_zero_is_plain_sampling_bit_for_bit(pooled_model, config):
    prompts, seeds = ["A photo of a nurse", "A photo of a cook"], [1, 2]
    plain = pixels(pooled_model.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False))
    off = pixels(with_cads(pooled_model, config).generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2,
                                                 progress=False))
    assert all(np.array_equal(a, b) for a, b in zip(plain, off))


def test_cads_anneals_token_states_and_pooled_embedding_per_the_schedule(pooled_model, monkeypatch):
    prompts, seeds, s = ["A photo of a nurse", "A photo of a plumber"], [7, 8], 0.5
    config = CADSConfig(tau1=0.3, tau2=0.9, noise_scale=s, rescale=False)
    seen = spy_on_denoiser(pooled_model, monkeypatch)
    pooled_model.generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    plain = list(seen)
    seen.clear()
    images = with_cads(pooled_model, config).generate(prompts, seeds, num_inference_steps=STEPS, batch_size=2, progress=False)
    assert [call[0] for call in seen] == [call[0] for call in plain] and len(seen) == STEPS

    generators = [torch.Generator().manual_seed(cads_noise_seed(seed)) for seed in seeds]
    gammas = []
    for (timestep, tokens, pooled, time_ids), (_, plain_tokens, plain_pooled, plain_time_ids) in zip(seen, plain):
        assert time_ids is None or torch.equal(time_ids, plain_time_ids)  # size conditioning: no text
        t = timestep / 1000  # SD 3 (flow matching) passes sigma * 1000, SDXL its DDPM timestep
        gamma = min(1.0, max(0.0, (0.9 - t) / 0.6))  # the linear ramp, written out
        assert gamma == pytest.approx(cads_gamma(t, 0.3, 0.9))
        gammas.append(gamma)
        assert torch.equal(tokens[:2], plain_tokens[:2]) and torch.equal(pooled[:2], plain_pooled[:2])  # unconditional
        if gamma == 1.0:
            assert torch.equal(tokens, plain_tokens) and torch.equal(pooled, plain_pooled)
            continue
        # per call: every image's token-state noise, then every image's pooled noise, from its own generator
        token_noise = torch.stack([torch.randn(plain_tokens.shape[1:], generator=g) for g in generators])
        pooled_noise = torch.stack([torch.randn(plain_pooled.shape[1:], generator=g) for g in generators])
        expected_tokens = math.sqrt(gamma) * plain_tokens[2:] + s * math.sqrt(1 - gamma) * token_noise
        expected_pooled = math.sqrt(gamma) * plain_pooled[2:] + s * math.sqrt(1 - gamma) * pooled_noise
        assert torch.allclose(tokens[2:], expected_tokens, atol=1e-5), timestep
        assert torch.allclose(pooled[2:], expected_pooled, atol=1e-5), timestep
    # the schedule was exercised on both sides: noisy early calls, clean late ones
    assert gammas[0] < 1.0 and gammas[-1] == 1.0
    assert np.abs(pixels(images)[0] - pixels(pooled_model.generate(prompts[:1], seeds[:1], num_inference_steps=STEPS,
                                                          progress=False))[0]).mean() > 0.1
    assert pooled_model.denoiser._forward_pre_hooks == {}  # removed after use


def test_rescaled_cads_keeps_each_pooled_rows_statistics(pooled_model, monkeypatch):
    seen = spy_on_denoiser(pooled_model, monkeypatch)
    pooled_model.generate(["A photo of a nurse"], [3], num_inference_steps=2, guidance_scale=1.0, progress=False)
    plain_pooled = seen[0][2]
    seen.clear()
    with_cads(pooled_model, CADSConfig(tau1=0.0, tau2=0.5, noise_scale=1.0, rescale=True)).generate(
        ["A photo of a nurse"], [3], num_inference_steps=2, guidance_scale=1.0, progress=False)
    annealed = seen[0][2]
    assert not torch.allclose(annealed, plain_pooled)
    assert float(annealed.mean()) == pytest.approx(float(plain_pooled.mean()), abs=1e-5)
    assert float(annealed.std()) == pytest.approx(float(plain_pooled.std()), rel=1e-4)


def test_cads_refuses_sd3_skip_layer_guidance_which_it_would_not_anneal(sd3):
    with pytest.raises(ValueError, match="skip_guidance_layers: SD 3's skip-layer guidance makes an extra"):
        with_cads(sd3, noise_scale=0.25).generate(["a photo of a nurse"], [0], num_inference_steps=STEPS,
                                                  skip_guidance_layers=[7, 8, 9])
