"""Section 3 of issue 9: the offline preflight of a profile."""

from pathlib import Path

import pytest

from vlbias import plan, profiles
from vlbias.__main__ import main
from vlbias.stages import throughputs

ROOT = Path(__file__).resolve().parents[2]
DIFFUSION = "diffusion steps/s (512 px, fp16)"


def merged(name: str, profile: str = "full", **changes) -> dict:
    """What notebook ``name`` runs with under ``profile``, with ``changes``."""
    run = profiles.plan_run(ROOT, profile, [name])
    return {**profiles.notebook_parameters(ROOT, name, run), **changes}


def planned(name: str, parameters: dict, timeout_s: float = 1e9):
    return plan.plan_notebook(plan.declaration(name), parameters, timeout_s, ROOT / "notebooks", set())


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_missing_data_exits_non_zero_with_download_instructions(no_data, capsys):
    code = main(["plan", "--profile", "full", "--only", "01a_self_similarity", "--only", "01b_markedness",
                 "--project-dir", str(ROOT)])
    out = capsys.readouterr().out
    assert code == 1
    assert "fairface (train) is missing" in out and "hf download HuggingFaceM4/FairFace" in out
    assert out.count("hf download HuggingFaceM4/FairFace") == 1  # explained once, then "see above"
    assert "ViT-B-32-quickgelu/openai (QuickGELU" in out and "ViT-B-32/laion2b_s34b_b79k (GELU)" in out
    assert "86,744 image embeddings, cached by an earlier notebook" in out


def test_present_data_and_known_models_pass(no_data, capsys):
    code = main(["plan", "--profile", "full", "--only", "01a_self_similarity", "--set", "data_root=fixture",
                 "--project-dir", str(ROOT)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "present" in out and "Ready:" in out


def test_model_specs_are_resolved_or_reported():
    assert plan.resolve_model("openai/clip-vit-base-patch32")["problem"] == ""
    assert "not a hub id recorded" in plan.resolve_model("openai/clip-vit-base-patch23")["problem"]
    assert "trained with GELU" in plan.resolve_model("ViT-B-32-quickgelu/laion2b_s34b_b79k")["problem"]
    assert "unknown tag" in plan.resolve_model("ViT-B-32/opnai")["problem"]
    assert plan.resolve_model("tiny:clip")["resolved"] == "tiny random fixture"


def test_every_full_profile_hub_id_is_recorded():
    plans = plan.make_plan("full", project_dir=ROOT)
    hub = [row for p in plans for row in p.models if row["resolved"].startswith("hub id")]
    assert hub and all(not row["problem"] for row in hub)


def test_workload_and_timeouts():
    from vlbias.t2i.bias import study_professions

    parameters = merged("04a_generation", images_per_profession=100, num_inference_steps=50)
    generation = planned("04a_generation", parameters, timeout_s=1800)
    images = len(study_professions(include_source_cases=True)) * 100
    expected = images * 50 / throughputs()[DIFFUSION] / 3600
    assert generation.gpu_hours == pytest.approx(expected)
    assert not generation.timeout_ok and any("raise timeouts: 04a_generation" in p for p in generation.problems)
    roomy = planned("04a_generation", parameters, timeout_s=expected * 3600 * 2)
    assert roomy.timeout_ok and not roomy.problems


def test_the_full_model_cards_timeout_holds_the_stable_diffusion_cards_own_draws():
    """Found by the rehearsal (05a stopped at the default hour on SD 1.4's card): the card draws 04b's study a
    second time without guidance (4,500 images at 50 steps) even where a book run left 04b's images, so at
    the plan's assumed throughput its notebook needs hours; its timeout must hold that with the plan's headroom."""
    from vlbias.t2i.bias import study_professions

    card = merged("04b_annotation_and_metrics")
    images = len(study_professions(include_source_cases=card["include_source_cases"])) * card["images_per_profession"]
    unguided_s = images * card["num_inference_steps"] / throughputs()[DIFFUSION]
    assert unguided_s > 3600  # more than the default timeout, which 05a had
    timeout = profiles.plan_run(ROOT, "full", ["05a_model_card"]).timeout("05a_model_card")
    assert timeout >= plan.TIMEOUT_HEADROOM * unguided_s


def test_estimates_say_so_and_name_their_source(no_data, capsys):
    main(["plan", "--profile", "full", "--only", "02b_colorfoil_evaluation", "--project-dir", str(ROOT)])
    out = capsys.readouterr().out
    assert "ESTIMATES" in out and "resources/plan_throughputs.json: Estimates, not measurements" in out
    assert "GPU-hours (estimate)" in out and "an assumed 150/s" in out
    assert "~0.7 GB, estimate: resources/hub_models.json" in out  # kakaobrain/align-base, not in any hub cache
    assert "openai-community/gpt2: hub id" in out  # the blind baseline's model is resolved too
    assert throughputs()["pairwise matches/s"]["vilt"] == 150.0


def test_the_demo_profile_plans_without_problems(no_data):
    """The demo needs no download: generated worlds, models trained in the book, package assets
    (asset:profanity-check), and 01c's planted world instead of FairFace."""
    plans = plan.make_plan("demo", project_dir=ROOT)
    assert [problem for p in plans for problem in p.problems] == []
    resolved = {row["spec"]: row["resolved"] for p in plans for row in p.models}
    assert "profanity_check" in resolved["asset:profanity-check"]
    assert resolved["trained:face-clip"] == "trained in the book (image-text)"
    assert resolved["trained:profession-diffusion"] == "trained in the book (text-to-image)"
    assert not any(spec.startswith("tiny:") for spec in resolved)
    assert not any(row["dataset"] == "fairface" for p in plans if p.name.startswith("01c") for row in p.data)


def test_the_model_comparison_is_counted():
    """Each compared model's plain run, and its CADS run where asked, is drawn and labelled."""
    from vlbias.t2i.bias import study_professions

    parameters = merged("04c_cads", images_per_profession=10, num_inference_steps=20, t2i_specs=["a/b", "c/d", "e/f"],
                        cads_t2i_specs=["a/b"], comparison_images_per_profession=4)
    alone = planned("04c_cads", {**parameters, "t2i_specs": [], "cads_t2i_specs": []})
    compared = planned("04c_cads", parameters)
    images = 4 * len(study_professions(include_source_cases=False)) * 4  # 4 runs: 3 models plain, a/b with CADS
    annotator_rate = throughputs()["image embeddings/s"]["ViT-L-14"]
    extra = images * 20 / throughputs()[DIFFUSION] / 3600 + images / annotator_rate / 3600
    assert compared.gpu_hours - alone.gpu_hours == pytest.approx(extra)
    lines = [line for line in compared.work if "folder model-comparison_" in line]
    assert len(lines) == 4 and sum("model-comparison_plain" in line for line in lines) == 3


def test_04d_is_planned_with_its_own_professions_and_prompt_not_as_04a_run():
    tiny = str(ROOT / "tests" / "core" / "tiny_profile.yml")  # the tiny-model profile: 04d draws images there
    plans = {p.name: p for p in plan.make_plan(tiny, ["04a_generation", "04b_annotation_and_metrics",
                                                       "04d_extensions"], project_dir=ROOT)}
    # 04b reads 04a's images; 04d draws its own 12 professions x 4 ("A competent ..."), its notebook's defaults
    assert ("generation", "tiny:sd") not in plans["04b_annotation_and_metrics"].stages
    assert ("generation", "tiny:sd") in plans["04d_extensions"].stages
    assert "tiny:sd: 48 images (12 professions, folder competent) at 4 steps" in " ".join(plans["04d_extensions"].work)
