"""Item 1 of issue 9: an open_clip tag trained with QuickGELU builds QuickGELU, whatever the spelling."""

import pytest
import torch

from vlbias.models.image_text import open_clip_architecture


@pytest.mark.parametrize("name, tag, built", [
    ("ViT-B-32", "openai", "ViT-B-32-quickgelu"),
    ("ViT-B-32-quickgelu", "openai", "ViT-B-32-quickgelu"),
    ("ViT-B-16", "openai", "ViT-B-16-quickgelu"),
    ("ViT-L-14", "openai", "ViT-L-14-quickgelu"),
    ("RN50", "openai", "RN50-quickgelu"),
    ("ViT-B-32", "laion400m_e32", "ViT-B-32-quickgelu"),   # LAION-400M ViTs were trained with QuickGELU too
    ("ViT-B-32", "laion2b_s34b_b79k", "ViT-B-32"),          # LAION-2B: plain GELU
])
def test_quick_gelu_tags_build_the_quick_gelu_architecture(name, tag, built):
    assert open_clip_architecture(name, tag) == (built, False)


def test_quick_gelu_name_with_gelu_weights_is_refused():
    with pytest.raises(ValueError, match="trained with GELU"):
        open_clip_architecture("ViT-B-32-quickgelu", "laion2b_s34b_b79k")


def test_spec_path_builds_quick_gelu_for_openai_weights(monkeypatch):
    """``ViT-B-32/openai`` through the loader: weights served locally, activation QuickGELU, and
    the architecture is part of the cache identity (old GELU caches are not reused)."""
    import open_clip.factory

    from vlbias.models import load_image_text_model

    loaded = {}
    monkeypatch.setattr(open_clip.factory, "download_pretrained", lambda *a, **k: "served-in-memory")
    monkeypatch.setattr(open_clip.factory, "load_checkpoint",
                        lambda model, path, **k: loaded.setdefault("model", model))
    model = load_image_text_model("ViT-B-32/openai", device="cpu")
    assert loaded["model"] is model.model
    assert model.quick_gelu and model.architecture == "ViT-B-32-quickgelu"
    activations = {type(m).__name__ for m in model.model.modules() if "GELU" in type(m).__name__}
    assert activations == {"QuickGELU"}
    assert "ViT-B-32-quickgelu" in model.weights_id and model.weights_id.endswith("|float32")


def test_open_clip_mismatch_warning_is_an_error(monkeypatch):
    """If open_clip ever builds an activation other than the tag's, the load stops (it only warns)."""
    import open_clip.factory

    from vlbias.models import image_text

    monkeypatch.setattr(open_clip.factory, "download_pretrained", lambda *a, **k: "served-in-memory")
    monkeypatch.setattr(open_clip.factory, "load_checkpoint", lambda *a, **k: None)
    monkeypatch.setattr(image_text, "open_clip_architecture", lambda name, tag: (name, False))  # the old behaviour
    with pytest.raises(UserWarning, match="QuickGELU mismatch"):
        image_text.OpenClipModel("ViT-B-32/openai", "ViT-B-32", "openai", torch.device("cpu"), torch.float32)
