"""The memory a checkpoint's weights take once loaded, counted from its files (precompute's actors)."""

from __future__ import annotations

import contextlib

import pytest
import torch
from safetensors.torch import save_file

from vlbias.models import load_text_to_image, tiny_checkpoint
from vlbias.models.footprint import (checkpoint_directory, directory_weights_gb, safetensors_bytes, weight_files,
                                     weights_gb)


def test_each_floating_tensor_counts_at_the_loaded_precision_and_integers_at_their_own(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file({"a": torch.zeros(3, 4, dtype=torch.float16), "b": torch.zeros(5), "c": torch.zeros(2, dtype=torch.bfloat16),
               "ids": torch.zeros(7, dtype=torch.int64)}, str(path), metadata={"format": "pt"})
    floats = 3 * 4 + 5 + 2
    assert safetensors_bytes(path, half=False) == floats * 4 + 7 * 8
    assert safetensors_bytes(path, half=True) == floats * 2 + 7 * 8


def test_a_variant_beside_its_plain_file_is_not_counted_and_bin_files_only_without_safetensors(tmp_path):
    unet, vae, text = tmp_path / "unet", tmp_path / "vae", tmp_path / "text_encoder"
    for folder in (unet, vae, text):
        folder.mkdir()
    tensor = {"w": torch.zeros(10)}
    save_file(tensor, str(unet / "diffusion_pytorch_model.safetensors"))
    save_file(tensor, str(unet / "diffusion_pytorch_model.fp16.safetensors"))   # beside its plain file: left out
    save_file(tensor, str(vae / "diffusion_pytorch_model.fp16.safetensors"))    # alone: what a variant load reads
    (vae / "diffusion_pytorch_model.bin").write_bytes(b"x" * 100)               # safetensors here: left out
    (text / "pytorch_model.bin").write_bytes(b"x" * 1000)                       # no safetensors: its size
    assert sorted(path.relative_to(tmp_path).as_posix() for path in weight_files(tmp_path)) == [
        "text_encoder/pytorch_model.bin", "unet/diffusion_pytorch_model.safetensors",
        "vae/diffusion_pytorch_model.fp16.safetensors"]
    assert directory_weights_gb(tmp_path, half=False) * 1e9 == pytest.approx(2 * 10 * 4 + 1000)
    assert directory_weights_gb(tmp_path / "unet" / "..", half=True) * 1e9 == pytest.approx(2 * 10 * 2 + 1000)


def loaded_bytes(model) -> int:
    """What the loaded pipeline's components hold: every tensor of their state dicts."""
    return sum(tensor.numel() * tensor.element_size() for name in ("unet", "vae", "text_encoder")
               for tensor in getattr(model.pipeline, name).state_dict().values())


@pytest.mark.parametrize("half", [False, True])
def test_the_count_equals_what_the_loaded_pipeline_holds(half):
    directory = tiny_checkpoint("sd")
    with pytest.warns(RuntimeWarning, match="float16 on the CPU") if half else contextlib.nullcontext():
        model = load_text_to_image(str(directory), device="cpu", half=half)
    assert weights_gb(str(directory), half=half) * 1e9 == pytest.approx(loaded_bytes(model), rel=1e-9)


def test_a_hub_id_is_counted_from_the_snapshot_its_refs_name_and_is_unknown_where_not_here(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    repo = tmp_path / "hub" / "models--some-org--some-model"
    for revision, size in (("old", 3), ("abc123", 8)):
        (repo / "snapshots" / revision / "unet").mkdir(parents=True)
        save_file({"w": torch.zeros(size)}, str(repo / "snapshots" / revision / "unet" / "model.safetensors"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    assert checkpoint_directory("some-org/some-model") == repo / "snapshots" / "abc123"
    assert weights_gb("some-org/some-model") * 1e9 == pytest.approx(8 * 4)
    assert weights_gb("some-org/not-downloaded") is None
    assert weights_gb("tiny:sd") is None and weights_gb("trained:profession-diffusion") is None
