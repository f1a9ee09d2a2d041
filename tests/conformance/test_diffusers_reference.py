"""Stable Diffusion 1.4's architecture at full size with random weights: our generation (CADS off
too) against a plain diffusers ``StableDiffusionPipeline`` call on the same checkpoint.

The UNet (860M parameters), VAE and CLIP text encoder take SD 1.4's recorded configs; images are
64 px with 2 steps, the least that runs every part of the sampling path (PNDM's first and later
steps, guidance, VAE decoding) on a CPU in about a minute. The tokenizer is SD 1.4's own: CLIP's BPE
(49,408 tokens, shipped with open_clip, written as ``vocab.json``/``merges.txt`` by
``write_clip_tokenizer_files``), so the prompts reach the text encoder as the real tokens.
"""

import gc
import json
import shutil
from importlib import resources

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.conformance

PROMPTS, SEEDS = ["A photo of a nurse", "A photo of an accountant"], [3, 11]
SETTINGS = dict(num_inference_steps=2, guidance_scale=7.5, height=64, width=64)


@pytest.fixture(scope="module")
def sd14_dir(tmp_path_factory):
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    from vlbias.models.conversion import write_clip_tokenizer_files

    record = json.loads(resources.files("vlbias").joinpath(
        "resources", "hf_configs", "CompVis--stable-diffusion-v1-4.json").read_text(encoding="utf-8"))
    files = write_clip_tokenizer_files(tmp_path_factory.mktemp("clip-bpe"))
    tokenizer = CLIPTokenizer.from_pretrained(files, **record["tokenizer"])
    text_config = record["text_encoder"]
    assert len(tokenizer) == text_config["vocab_size"]  # CLIP's real vocabulary, every id in the table
    assert tokenizer.tokenize("A photo of an accountant") == ["a</w>", "photo</w>", "of</w>", "an</w>", "accountant</w>"]
    torch.manual_seed(0)
    pipeline = StableDiffusionPipeline(
        unet=UNet2DConditionModel(**record["unet"]), vae=AutoencoderKL(**record["vae"]),
        text_encoder=CLIPTextModel(CLIPTextConfig(**text_config)), tokenizer=tokenizer,
        scheduler=PNDMScheduler(**record["scheduler"]), safety_checker=None, feature_extractor=None,
        requires_safety_checker=False)
    assert sum(p.numel() for p in pipeline.unet.parameters()) > 850e6  # SD 1.x's UNet, not a reduced one
    directory = tmp_path_factory.mktemp("sd14-random")
    pipeline.save_pretrained(directory)
    del pipeline
    gc.collect()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)  # gigabytes: gone with the module, not the session


def test_our_generation_equals_a_plain_pipeline_call(sd14_dir):
    from diffusers import StableDiffusionPipeline

    from vlbias.models import load_text_to_image
    from vlbias.t2i.cads import CADSConfig, with_cads

    ours = load_text_to_image(str(sd14_dir), device="cpu", half=False)
    assert ours.native_size == 512
    generated = ours.generate(PROMPTS, SEEDS, batch_size=2, progress=False, output_type="np", **SETTINGS)
    off = with_cads(ours, CADSConfig(noise_scale=0.0)).generate(PROMPTS, SEEDS, batch_size=2, progress=False,
                                                                output_type="np", **SETTINGS)
    del ours
    gc.collect()

    reference = StableDiffusionPipeline.from_pretrained(str(sd14_dir), safety_checker=None,
                                                        requires_safety_checker=False)
    reference.set_progress_bar_config(disable=True)
    with torch.inference_mode():
        plain = reference(prompt=PROMPTS, generator=[torch.Generator("cpu").manual_seed(s) for s in SEEDS],
                          output_type="np", **SETTINGS).images
    assert plain.shape == (2, 64, 64, 3) and np.ptp(plain) > 0.05  # a real image, not a constant
    np.testing.assert_allclose(np.stack(generated), plain, atol=1e-5)
    np.testing.assert_array_equal(np.stack(off), np.stack(generated))  # CADS off is plain sampling
