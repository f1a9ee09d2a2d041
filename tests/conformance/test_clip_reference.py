"""Section 2 of issue 9: our open_clip path against the markedness release's Hugging Face CLIP path.

Each full-profile CLIP spec is built at full size with random weights (open_clip ships the
architecture configs and CLIP's BPE vocabulary), loaded through our spec path (``ViT-B-32/openai``,
the weights served from memory instead of the hub), and compared with Hugging Face's ``CLIPModel``
and ``CLIPProcessor`` (the markedness release's code path) holding the same weights, converted to
their layout. The same weights through a GELU build differ: this is the check that catches a model
built with the wrong activation (issue 9, item 1). ``ViT-B-32/laion2b_s34b_b79k`` (trained with GELU)
is compared with the LAION checkpoint's Hugging Face layout, whose config says GELU. ``openai/clip-vit-base-patch32`` through our
Hugging Face path is compared with the ColorFoil notebook's way of scoring (``logits_per_image`` of
the caption and its foils).
"""

import functools
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import open_clip
import open_clip.factory
import pytest
import torch
from PIL import Image

from vlbias.models import load_image_text_model
from vlbias.models.conversion import open_clip_to_hf_clip, recorded_hf_config, write_clip_tokenizer_files
from vlbias.models.image_text import _features

pytestmark = pytest.mark.conformance

TEXTS = ["a photo of a person", "a photo of a White person", "a photo of a 70 or more years old person",
         "A red bus driving down a street past a park."]
TOLERANCE = 5e-5  # fp32, different kernels and summation orders


def sample_images(n=3):
    rng = np.random.default_rng(0)
    sizes = [(320, 240), (200, 300), (224, 224)][:n]
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


def hf_clip_reference(hub_id: str, state: dict, directory: Path):
    """Hugging Face ``CLIPModel`` + ``CLIPProcessor`` with the recorded hub config and ``state``."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizerFast

    recorded = recorded_hf_config(hub_id)
    with torch.device("meta"):  # no random init to throw away: the weights come from ``state``
        model = CLIPModel(CLIPConfig(**recorded["config"]))
    missing, unexpected = model.load_state_dict(open_clip_to_hf_clip(state), strict=False, assign=True)
    assert not unexpected and all("position_ids" in key for key in missing), (missing, unexpected)
    for module in model.modules():  # position ids are non-persistent buffers, not weights
        if getattr(module, "position_ids", None) is not None and module.position_ids.is_meta:
            length = module.position_ids.shape[-1]
            module.register_buffer("position_ids", torch.arange(length).expand((1, -1)), persistent=False)
    assert not any(tensor.is_meta for tensor in [*model.parameters(), *model.buffers()])
    model.eval()
    processor_values = {k: v for k, v in recorded["image_processor"].items() if k != "class"}
    tokenizer_dir = write_clip_tokenizer_files(directory / "tokenizer")
    tokenizer = CLIPTokenizerFast.from_pretrained(tokenizer_dir,
                                                  model_max_length=recorded["tokenizer"]["model_max_length"])
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(**processor_values), tokenizer=tokenizer)
    return model, processor


def reference_embeddings(model, processor, images, texts, pixels=None):
    """The markedness release's way: CLIPProcessor, get_*_features, L2-normalised (``pixels``: use
    these instead of the processor's, to compare the networks on identical inputs)."""
    if pixels is None:
        pixels = processor(images=images, return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        image = _features(model.get_image_features(pixel_values=pixels))
        text = _features(model.get_text_features(**processor(text=texts, padding=True, return_tensors="pt")))
    return [(x / x.norm(dim=-1, keepdim=True)).numpy() for x in (image, text)]


def our_pixels(ours, images):
    return torch.stack([ours.transform(image) for image in images])


def check_preprocessing(ours, processor, images, ours_embeddings, reference_embeddings):
    """open_clip's transform and CLIPProcessor agree to one 8-bit level per pixel; the embeddings then
    differ by that rounding only, which moves no decision here."""
    theirs = processor(images=images, return_tensors="pt")["pixel_values"]
    std = torch.tensor(processor.image_processor.image_std).view(1, 3, 1, 1)
    levels = ((our_pixels(ours, images) - theirs).abs() * std * 255).max().item()
    assert levels <= 1.5, levels
    assert np.abs(ours_embeddings - reference_embeddings).max() < 0.02


CASES = [
    ("ViT-B-32", "openai", "openai/clip-vit-base-patch32"),
    ("ViT-B-16", "openai", "openai/clip-vit-base-patch16"),
    ("ViT-L-14", "openai", "openai/clip-vit-large-patch14"),
    # Part I's fourth model and Part IV's second annotator: trained with GELU, built with GELU
    ("ViT-B-32", "laion2b_s34b_b79k", "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"),
]


@pytest.fixture(scope="module", autouse=True)
def _remove_case_folders():
    """The cases' folders (a 580 MB checkpoint among them) go with the module, so a run leaves nothing
    in the temporary folder."""
    yield
    clip_case.cache_clear()
    for folder in _CASE_FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)


_CASE_FOLDERS: list[Path] = []


@functools.lru_cache(maxsize=1)  # one full-size pair in memory at a time; tests run B-32 first
def clip_case(architecture: str, tag: str, hub_id: str) -> SimpleNamespace:
    """Our model from the spec (random full-size weights: open_clip's download answered with nothing,
    so the build keeps its seeded random init), and the Hugging Face reference holding its weights."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(open_clip.factory, "download_pretrained", lambda *args, **kwargs: "served-in-memory")
        patch.setattr(open_clip.factory, "load_checkpoint", lambda *args, **kwargs: None)
        torch.manual_seed(0)
        ours = load_image_text_model(f"{architecture}/{tag}", device="cpu")
    state = ours.model.state_dict()
    directory = Path(tempfile.mkdtemp(prefix="vlbias-conformance-"))
    _CASE_FOLDERS.append(directory)
    model, processor = hf_clip_reference(hub_id, state, directory)
    return SimpleNamespace(ours=ours, state=state, model=model, processor=processor, directory=directory)


def normalised(tensor: torch.Tensor) -> np.ndarray:
    return (tensor / tensor.norm(dim=-1, keepdim=True)).numpy()


def test_gelu_build_of_openai_weights_differs_from_the_reference():
    """What ``ViT-B-32/openai`` built before issue 9 (plain GELU) does not give the reference's numbers;
    the QuickGELU build does."""
    case = clip_case(*CASES[0])
    images = sample_images(2)
    pixels = our_pixels(case.ours, images)
    want_images, want_texts = reference_embeddings(case.model, case.processor, images, TEXTS, pixels)
    tokens = open_clip.get_tokenizer("ViT-B-32")(TEXTS)
    gaps = {}
    for architecture in ("ViT-B-32-quickgelu", "ViT-B-32"):
        network = open_clip.create_model(architecture).eval()
        network.load_state_dict(case.state)
        with torch.inference_mode():
            got_images, got_texts = normalised(network.encode_image(pixels)), normalised(network.encode_text(tokens))
        gaps[architecture] = max(np.abs(got_images - want_images).max(), np.abs(got_texts - want_texts).max())
    assert gaps["ViT-B-32-quickgelu"] < TOLERANCE, gaps
    assert gaps["ViT-B-32"] > 20 * TOLERANCE, gaps


def test_hf_clip_spec_path_equals_the_colorfoil_notebook_scoring():
    """``openai/clip-vit-base-patch32`` through our loader against CLIPModel(**processor(text=[caption,
    foils], images=image)).logits_per_image, one image at a time as the ColorFoil notebook scores."""
    case = clip_case(*CASES[0])
    directory = case.directory / "checkpoint"
    case.model.save_pretrained(directory)
    case.processor.save_pretrained(directory)
    ours = load_image_text_model(str(directory), device="cpu")
    images = sample_images(2)
    candidates = [["A red bus.", "A blue bus.", "A green bus."],
                  ["a white dog on grass", "a black dog on grass", "a brown dog on grass"]]
    got = ours.score_candidates(images, candidates, batch_size=2, progress=False)
    scale = case.model.logit_scale.exp().item()
    for image, texts, row in zip(images, candidates, got):
        with torch.inference_mode():
            inputs = case.processor(text=texts, images=image, return_tensors="pt", padding=True)
            logits = case.model(**inputs).logits_per_image[0]
        np.testing.assert_allclose(row * scale, logits.numpy(), atol=TOLERANCE * scale)
        assert int(np.argmax(row)) == int(logits.softmax(-1).argmax())


@pytest.mark.parametrize("architecture, tag, hub_id", CASES)
def test_open_clip_spec_path_equals_hugging_face_clip(architecture, tag, hub_id):
    case = clip_case(architecture, tag, hub_id)
    assert case.ours.quick_gelu == (tag == "openai")  # the activation each tag's weights were trained with
    images = sample_images(1 if architecture == "ViT-L-14" else 2)
    # the networks on identical pixels: equal to float tolerance
    pixels = our_pixels(case.ours, images)
    want_images, want_texts = reference_embeddings(case.model, case.processor, images, TEXTS, pixels)
    with torch.inference_mode():
        got_images = normalised(case.ours.model.encode_image(pixels))
    np.testing.assert_allclose(got_images, want_images, atol=TOLERANCE)
    np.testing.assert_allclose(case.ours.encode_texts(TEXTS, progress=False), want_texts, atol=TOLERANCE)
    # each path with its own preprocessing: one 8-bit level apart at most
    processed_images, _ = reference_embeddings(case.model, case.processor, images, TEXTS[:1])
    check_preprocessing(case.ours, case.processor, images, case.ours.encode_images(images, progress=False),
                        processed_images)
