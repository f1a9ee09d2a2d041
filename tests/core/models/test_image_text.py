"""Image-text backends, checked against forwards through the libraries' own models.

Every ``tiny:`` fixture is built into this session's fresh cache, loaded back through the same
path a downloaded checkpoint takes, and compared with an independent computation: a second
load of the checkpoint by transformers or open_clip directly, run with its own processor.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from vlbias.models import parse_spec, tiny_checkpoint
from vlbias.models.image_text import (DualEncoder, HFDualEncoder, HFPairwiseMatcher, ModelUnavailableError,
                                      OpenClipModel, PairwiseMatcher, load_image_text_model)

# spec name -> (wrapper class, class of the wrapped model)
BACKENDS = {
    "clip": (HFDualEncoder, "CLIPModel"),
    "open-clip": (OpenClipModel, "CLIP"),
    "align": (HFDualEncoder, "AlignModel"),
    "groupvit": (HFDualEncoder, "GroupViTModel"),
    "vilt": (HFPairwiseMatcher, "ViltForImageAndTextRetrieval"),
    "bridgetower": (HFPairwiseMatcher, "BridgeTowerForImageAndTextRetrieval"),
}
DUAL = ["clip", "open-clip", "align", "groupvit"]
PAIRWISE = ["vilt", "bridgetower"]
TEXTS = ["a photo of a nurse", "a photo of a man", "a red apple", "a photo of a woman who is a doctor"]

_models: dict[str, object] = {}


def tiny(name: str):
    """One loaded wrapper per fixture for the whole module; loading is not what most tests test."""
    if name not in _models:
        _models[name] = load_image_text_model(f"tiny:{name}")
    return _models[name]


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    # one size for all: ViLT and BridgeTower pad mixed sizes within a batch
    return [Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)) for _ in range(5)]


def _weights_file(directory: Path) -> Path:
    for name in ("open_clip_model.safetensors", "model.safetensors"):
        if (directory / name).is_file():
            return directory / name
    raise AssertionError(f"no weights file in {directory}")


def _wrapped(model) -> torch.nn.Module:
    return model.model


# --------------------------------------------------------------------------- loading


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_tiny_round_trip(name, images):
    wrapper_class, model_class = BACKENDS[name]
    directory = tiny_checkpoint(name)
    by_tiny = tiny(name)
    by_path = load_image_text_model(str(directory))
    for model in (by_tiny, by_path):
        assert type(model) is wrapper_class
        assert type(_wrapped(model)).__name__ == model_class
        assert model.kind == ("pairwise" if name in PAIRWISE else "dual")
    assert by_tiny.spec == f"tiny:{name}" and by_path.spec == str(directory)

    # the loaded weights are the saved ones, tensor for tensor
    saved = load_file(str(_weights_file(directory)))
    state = _wrapped(by_tiny).state_dict()
    assert set(saved) <= set(state)
    for key, tensor in saved.items():
        torch.testing.assert_close(state[key].float(), tensor.float(), rtol=0, atol=0, msg=key)

    # and both routes compute the same scores
    np.testing.assert_allclose(by_tiny.score(images[:2], TEXTS[:2], progress=False),
                               by_path.score(images[:2], TEXTS[:2], progress=False), rtol=0, atol=1e-6)


def test_tiny_builds_are_deterministic(tmp_path):
    from vlbias.models.tiny import tiny_builder

    tiny_builder("clip").build(tmp_path)
    rebuilt = load_file(str(tmp_path / "model.safetensors"))
    cached = load_file(str(tiny_checkpoint("clip") / "model.safetensors"))
    assert rebuilt.keys() == cached.keys()
    for key in cached:
        assert torch.equal(rebuilt[key], cached[key]), key


def test_repr_and_preprocess_id():
    clip, open_clip_model, vilt = tiny("clip"), tiny("open-clip"), tiny("vilt")
    assert "tiny:clip" in repr(clip) and "dual" in repr(clip)
    assert "tiny:vilt" in repr(vilt) and "pairwise" in repr(vilt)
    assert clip.has_embeddings and not vilt.has_embeddings
    ids = {clip.preprocess_id, open_clip_model.preprocess_id, vilt.preprocess_id}
    assert len(ids) == 3
    assert clip.preprocess_id.startswith("CLIPImageProcessor:") and "32" in clip.preprocess_id


def test_parse_spec_routes_open_clip_and_hub_ids():
    assert parse_spec("ViT-B-32/openai").source == "open_clip"
    assert (parse_spec("ViT-B-32/openai").name, parse_spec("ViT-B-32/openai").tag) == ("ViT-B-32", "openai")
    assert parse_spec("openai/clip-vit-base-patch32").source == "hf"
    assert parse_spec("tiny:clip").source == "tiny"


@pytest.mark.parametrize("spec", ["openai/clip-vit-base-patch32", "nonsense-org/no-such-model-xyz-123",
                                  "ViT-B-32/openai", "hf-hub:nonsense-org/no-such-open-clip"])
def test_unavailable_hub_ids_fail_fast_and_say_what_to_do(spec):
    from huggingface_hub import try_to_load_from_cache

    if spec == "openai/clip-vit-base-patch32" and isinstance(try_to_load_from_cache(spec, "config.json"), str):
        pytest.skip("this machine has the checkpoint in its Hugging Face cache")
    start = time.perf_counter()
    with pytest.raises(ModelUnavailableError) as caught:
        load_image_text_model(spec)
    assert time.perf_counter() - start < 60  # offline hub calls must not retry for minutes
    message = str(caught.value)
    assert repr(spec) in message
    assert "no local copy" in message and "network access" in message and "local checkpoint directory" in message


def test_bad_specs_have_clear_errors(tmp_path):
    with pytest.raises(KeyError, match="tiny:no-such"):
        load_image_text_model("tiny:no-such")
    with pytest.raises(FileNotFoundError, match="neither"):
        load_image_text_model(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="'bert' checkpoint"):
        load_image_text_model(str(tmp_path))
    with pytest.raises(ValueError, match="Known tags"):
        load_image_text_model("open_clip:ViT-B-32/no-such-tag")


# --------------------------------------------------------------------------- dual encoders


def _reference_cosines(name: str, images, texts) -> np.ndarray:
    """Cosines from a fresh load of the checkpoint, run with the library's own processor."""
    directory = tiny_checkpoint(name)
    with torch.no_grad():
        if name == "open-clip":
            import open_clip

            model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{directory}")
            tokenizer = open_clip.get_tokenizer(f"local-dir:{directory}")
            model.eval()
            image_features = model.encode_image(torch.stack([preprocess(image) for image in images]))
            text_features = model.encode_text(tokenizer(texts))
        else:
            import transformers
            from transformers import AutoProcessor

            model = getattr(transformers, BACKENDS[name][1]).from_pretrained(directory).eval()
            processor = AutoProcessor.from_pretrained(directory)
            inputs = processor(text=texts, images=images, padding=True, truncation=True, return_tensors="pt")
            output = model(**inputs)
            image_features, text_features = output.image_embeds, output.text_embeds
    image_features = image_features / image_features.norm(dim=-1, keepdim=True)
    text_features = text_features / text_features.norm(dim=-1, keepdim=True)
    return (image_features @ text_features.T).numpy()


@pytest.mark.parametrize("name", DUAL)
def test_dual_encoder_scores_are_cosines(name, images):
    model = tiny(name)
    image_embeddings = model.encode_images(images, progress=False)
    text_embeddings = model.encode_texts(TEXTS, progress=False)
    assert image_embeddings.dtype == np.float32 and text_embeddings.dtype == np.float32
    assert image_embeddings.shape[0] == len(images) and text_embeddings.shape[0] == len(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(image_embeddings, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(text_embeddings, axis=1), 1, atol=1e-5)

    scores = model.score(images, TEXTS, progress=False)
    assert scores.shape == (len(images), len(TEXTS)) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, image_embeddings @ text_embeddings.T, atol=1e-6)
    np.testing.assert_allclose(scores, _reference_cosines(name, images, TEXTS), atol=1e-5)
    assert np.ptp(scores) > 1e-4  # a constant score would pass the comparisons above vacuously


@pytest.mark.parametrize("name", DUAL)
def test_dual_encoder_candidates_and_batching(name, images, monkeypatch):
    model = tiny(name)
    candidates = [[TEXTS[(i + j) % 3] for j in range(3)] for i in range(len(images))]
    full = model.score(images, TEXTS, progress=False)

    embedded: list[str] = []
    original = model._embed_texts
    monkeypatch.setattr(model, "_embed_texts", lambda texts: embedded.extend(texts) or original(texts))
    chosen = model.score_candidates(images, candidates, progress=False)
    assert sorted(embedded) == sorted(set(TEXTS[:3]))  # each distinct text embedded once
    monkeypatch.undo()

    expected = np.array([[full[i, TEXTS.index(text)] for text in row] for i, row in enumerate(candidates)])
    assert chosen.shape == (len(images), 3)
    np.testing.assert_allclose(chosen, expected, atol=1e-6)

    np.testing.assert_allclose(model.score(images, TEXTS, batch_size=1, progress=False),
                               model.score(images, TEXTS, batch_size=5, progress=False), atol=1e-5)


@pytest.mark.parametrize("name", ["clip", "open-clip"])
def test_long_texts_are_truncated_not_fatal(name, images):
    model = tiny(name)
    long_text = "a photo of a person who is " * 40  # far past CLIP's 77 tokens
    scores = model.score(images[:1], [long_text, long_text + "more words"], progress=False)
    assert np.isfinite(scores).all()
    assert scores[0, 0] == pytest.approx(scores[0, 1], abs=1e-6)  # the tail was cut off


def test_images_are_converted_to_rgb(images):
    model = tiny("clip")
    grey = images[0].convert("L")
    np.testing.assert_allclose(model.encode_images([grey], progress=False),
                               model.encode_images([grey.convert("RGB")], progress=False), atol=1e-6)


# --------------------------------------------------------------------------- pairwise matchers


def _reference_match_logit(name: str, image, text) -> float:
    import transformers
    from transformers import AutoProcessor

    directory = tiny_checkpoint(name)
    model = getattr(transformers, BACKENDS[name][1]).from_pretrained(directory).eval()
    processor = AutoProcessor.from_pretrained(directory)
    with torch.no_grad():
        logits = model(**processor(images=image, text=text, return_tensors="pt")).logits
    # ViLT: a single retrieval logit; BridgeTower: (no match, match)
    return float(logits[0, 1] if name == "bridgetower" else logits[0, 0])


@pytest.mark.parametrize("name", PAIRWISE)
def test_pairwise_matcher_scores_match_a_manual_forward(name, images):
    model = tiny(name)
    candidates = [[TEXTS[(i + j) % 4] for j in range(2)] for i in range(3)]
    chosen = model.score_candidates(images[:3], candidates, progress=False)
    assert chosen.shape == (3, 2) and chosen.dtype == np.float32
    for i, j in [(0, 0), (2, 1)]:
        assert chosen[i, j] == pytest.approx(_reference_match_logit(name, images[i], candidates[i][j]), abs=1e-5)

    full = model.score(images[:3], TEXTS, progress=False)
    expected = np.array([[full[i, TEXTS.index(text)] for text in row] for i, row in enumerate(candidates)])
    np.testing.assert_allclose(chosen, expected, atol=1e-5)
    np.testing.assert_allclose(model.score(images[:3], TEXTS, batch_size=1, progress=False),
                               model.score(images[:3], TEXTS, batch_size=5, progress=False), atol=1e-5)
    assert np.ptp(full) > 1e-6


@pytest.mark.parametrize("name", PAIRWISE)
def test_pairwise_matchers_have_no_embeddings(name, images):
    model = tiny(name)
    assert isinstance(model, PairwiseMatcher)
    for call in (lambda: model.encode_images(images[:1]), lambda: model.encode_texts(TEXTS[:1])):
        with pytest.raises(TypeError, match="pairwise matcher.*score\\(\\) or score_candidates\\(\\)"):
            call()


@pytest.mark.parametrize("name", ["clip", "vilt"])
def test_score_candidates_equals_score_of_each_pair(name, images):
    """Both kinds answer score() and score_candidates(); each candidate's score is that pair's score()."""
    model = tiny(name)
    candidates = [TEXTS[:3], TEXTS[1:4], [TEXTS[0], TEXTS[0], TEXTS[2]], [TEXTS[3], TEXTS[0], TEXTS[1]]]
    by_rows = model.score_candidates(images[:4], candidates, progress=False)
    assert by_rows.shape == (4, 3) and by_rows.dtype == np.float32
    full = model.score(images[:4], TEXTS, progress=False)
    assert full.shape == (4, len(TEXTS)) and full.dtype == np.float32
    for i, row in enumerate(candidates):
        for j, text in enumerate(row):
            assert by_rows[i, j] == pytest.approx(full[i, TEXTS.index(text)], abs=1e-5), (i, j)
    assert by_rows[2, 0] == pytest.approx(by_rows[2, 1], abs=1e-6)
    assert np.ptp(by_rows) > 1e-6  # not a constant


def test_dual_encoder_scores_are_cosines_of_its_embeddings(images):
    model = tiny("clip")
    assert isinstance(model, DualEncoder)
    a = model.encode_images(images[:4], progress=False)
    b = model.encode_texts(TEXTS, progress=False)
    a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(model.score(images[:4], TEXTS, progress=False), a @ b.T, atol=1e-5)


def test_candidate_lists_are_validated(images):
    model = tiny("clip")
    with pytest.raises(ValueError, match="candidate lists"):
        model.score_candidates(images[:2], [["a"]], progress=False)
    with pytest.raises(ValueError, match="same number"):
        model.score_candidates(images[:2], [["a"], ["a", "b"]], progress=False)
    with pytest.raises(TypeError, match="single string"):
        model.score(images[:1], "a photo", progress=False)


@pytest.mark.parametrize("name", ["clip", "open-clip", "vilt"])
def test_half_precision_path_runs_and_returns_float32(name, images):
    # the GPU default; on the CPU it only checks the casts, hence the loose tolerance
    half = load_image_text_model(f"tiny:{name}", device="cpu", half=True)
    # open_clip's fp16 keeps embeddings and LayerNorms in float32, as OpenAI's CLIP did
    assert half.dtype == "float16" and half.torch_dtype == torch.float16
    assert any(parameter.dtype == torch.float16 for parameter in _wrapped(half).parameters())
    scores = half.score(images[:2], TEXTS[:2], progress=False)
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, tiny(name).score(images[:2], TEXTS[:2], progress=False), atol=3e-3)
