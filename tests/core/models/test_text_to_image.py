"""Text-to-image backend on the tiny Stable Diffusion fixture."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from vlbias.errors import ModelUnavailableError
from vlbias.models import load_text_to_image, tiny_checkpoint

STEPS = 3  # enough for the scheduler's multistep path; tiny images take milliseconds per step


@pytest.fixture(scope="module")
def sd():
    return load_text_to_image("tiny:sd", device="cpu")


def pixels(image) -> np.ndarray:
    return np.asarray(image, dtype=np.int16)


def test_tiny_pipeline_round_trips_through_its_directory(sd):
    by_path = load_text_to_image(str(tiny_checkpoint("sd")), device="cpu")
    for component in ("unet", "vae", "text_encoder"):
        state = getattr(sd.pipeline, component).state_dict()
        other = getattr(by_path.pipeline, component).state_dict()
        assert state.keys() == other.keys()
        assert all(torch.equal(state[key], other[key]) for key in state), component
    assert type(sd.pipeline).__name__ == "StableDiffusionPipeline"


def test_safety_checker_is_off(sd):
    assert sd.pipeline.safety_checker is None
    assert not sd.safety_checker_enabled
    assert sd.pipeline.config.requires_safety_checker is False
    index = json.loads((tiny_checkpoint("sd") / "model_index.json").read_text())
    assert index["safety_checker"] == [None, None]


def same_within_one_level(a, b) -> bool:
    return np.abs(pixels(a).astype(int) - pixels(b).astype(int)).max() <= 1


def test_image_depends_only_on_its_prompt_and_seed(sd):
    alone = sd.generate(["A photo of a nurse"], [11], num_inference_steps=STEPS, progress=False)[0]
    prompts = ["A photo of a doctor", "A photo of a nurse", "A photo of a pilot"]
    in_batch = sd.generate(prompts, [5, 11, 7], num_inference_steps=STEPS, batch_size=3, progress=False)
    split = sd.generate(prompts, [5, 11, 7], num_inference_steps=STEPS, batch_size=2, progress=False)
    # float32 kernels sum in batch-dependent order: decoded values differ by ~1e-6, which can
    # flip an 8-bit level, never more
    assert same_within_one_level(alone, in_batch[1])
    assert all(same_within_one_level(a, b) for a, b in zip(in_batch, split))
    assert pixels(alone).std() > 0  # a real picture, not a blank one


def test_seed_is_the_pipelines_own_cpu_generator_seed(sd):
    """A recorded seed reproduces the image with the bare diffusers call."""
    ours = sd.generate(["A photo of a teacher"], [123], num_inference_steps=STEPS, progress=False)[0]
    with torch.inference_mode():
        bare = sd.pipeline("A photo of a teacher", generator=torch.Generator("cpu").manual_seed(123),
                           num_inference_steps=STEPS, guidance_scale=7.5).images[0]
    assert np.array_equal(pixels(ours), pixels(bare))


def bare_pipeline(sd, prompt, seed, guidance_scale):
    with torch.inference_mode():
        return sd.pipeline(prompt, generator=torch.Generator("cpu").manual_seed(seed), num_inference_steps=STEPS,
                           guidance_scale=guidance_scale).images[0]


def test_each_seed_gives_the_bare_pipelines_image_for_that_seed(sd):
    first, second = sd.generate(["A photo of a nurse"] * 2, [1, 2], num_inference_steps=STEPS, batch_size=2,
                                progress=False)
    assert same_within_one_level(first, bare_pipeline(sd, "A photo of a nurse", 1, 7.5))
    assert same_within_one_level(second, bare_pipeline(sd, "A photo of a nurse", 2, 7.5))
    assert np.abs(pixels(first) - pixels(second)).mean() > 1  # and the seeds do matter


@pytest.mark.parametrize("guidance_scale", [1.0, 3.0])
def test_guidance_scale_and_prompt_reach_the_pipeline(sd, guidance_scale):
    prompts = ["A photo of a nurse", "A photo of a ceo"]
    images = sd.generate(prompts, [3, 3], num_inference_steps=STEPS, guidance_scale=guidance_scale, progress=False)
    for prompt, image in zip(prompts, images):
        assert same_within_one_level(image, bare_pipeline(sd, prompt, 3, guidance_scale))
    default = sd.generate(prompts[:1], [3], num_inference_steps=STEPS, progress=False)[0]
    assert not same_within_one_level(images[0], default)   # 7.5 by default: another image
    if guidance_scale > 1:  # the tiny model's weak text conditioning shows only when guidance amplifies it
        assert not same_within_one_level(images[0], images[1])  # the prompt matters too


def test_sizes_follow_height_and_width(sd):
    assert sd.native_size == 32
    (native,) = sd.generate(["a"], [0], num_inference_steps=2, progress=False)
    assert native.size == (32, 32)
    (wide,) = sd.generate(["a"], [0], num_inference_steps=2, height=48, width=64, progress=False)
    assert wide.size == (64, 48) and wide.mode == "RGB"


def test_one_seed_per_prompt_is_required(sd):
    with pytest.raises(ValueError, match="one seed per prompt"):
        sd.generate(["a", "b"], [1], num_inference_steps=2, progress=False)


def test_unavailable_hub_id_fails_fast_with_a_clear_message():
    start = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match="no-such-org/no-such-pipeline") as error:
        load_text_to_image("no-such-org/no-such-pipeline", device="cpu")
    assert time.perf_counter() - start < 60  # offline hub calls must not retry for minutes
    assert "download" in str(error.value)


def test_an_offline_hub_id_is_read_from_the_local_cache_without_asking_the_hub(monkeypatch):
    """With HF_HUB_OFFLINE set (read at the call), a hub id loads with local_files_only, so diffusers does
    not print "Could not reach the Hub" onto the page before reading the same snapshot (the rehearsal's
    04a); online, or for a local directory, nothing is passed."""
    from vlbias.models.spec import parse_spec
    from vlbias.models.text_to_image import _offline_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _offline_hub(parse_spec("CompVis/stable-diffusion-v1-4")) == {"local_files_only": True}
    assert _offline_hub(parse_spec("tiny:sd")) == {}
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert _offline_hub(parse_spec("CompVis/stable-diffusion-v1-4")) == {}
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert _offline_hub(parse_spec("CompVis/stable-diffusion-v1-4")) == {}


def test_float16_on_the_cpu_says_how_to_draw_in_float32():
    """Diffusers warns that a float16 pipeline "cannot run" on the CPU; it runs, many times as slowly
    as float32 (benchmarks/cpu_half.py), so the loader says which parameter draws in float32 instead."""
    import warnings

    with pytest.warns(RuntimeWarning, match=r"tiny:sd: float16 on the CPU.*half=False"):
        half = load_text_to_image("tiny:sd", device="cpu", half=True)
    assert half.pipeline.unet.dtype == torch.float16
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        full = load_text_to_image("tiny:sd", device="cpu", half=False)
    assert full.pipeline.unet.dtype == torch.float32
