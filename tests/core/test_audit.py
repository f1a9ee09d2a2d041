"""``python -m vlbias audit`` (vlbias.audit) and the model kinds it dispatches on (vlbias.models.kinds):
a card per model from the notebooks' own functions and caches, refusals that name what to fix, and a
failed measure that leaves the rest of the card standing."""

import json
from pathlib import Path

import pytest

from vlbias import audit
from vlbias.__main__ import main as cli
from vlbias.cards import read_card
from vlbias.errors import ModelUnavailableError
from vlbias.models.image_text import DualEncoder, HFDualEncoder, OpenClipModel, PairwiseMatcher
from vlbias.models.kinds import model_kind

ROOT = Path(__file__).resolve().parents[2]


def test_model_kind_reads_registries_and_checkpoint_files(tmp_path):
    from vlbias.models import tiny_checkpoint

    assert model_kind("tiny:clip") == "image-text" and model_kind("tiny:mlm") == "language"
    assert model_kind("trained:face-clip") == "image-text" and model_kind("trained:world-diffusion") == "text-to-image"
    assert model_kind("ViT-B-32/openai") == "image-text"
    # local directories, by their files: a diffusers pipeline, a transformers checkpoint
    assert model_kind(str(tiny_checkpoint("sd"))) == "text-to-image"
    assert model_kind(str(tiny_checkpoint("vilt"))) == "image-text"
    assert model_kind(str(tiny_checkpoint("causal-lm"))) == "language"
    (tmp_path / "classifier").mkdir()
    (tmp_path / "classifier" / "config.json").write_text(json.dumps(
        {"model_type": "roberta", "architectures": ["RobertaForSequenceClassification"]}))
    with pytest.raises(ValueError, match=r"'roberta' checkpoint \(RobertaForSequenceClassification\), of none of the "
                                         r"kinds the book measures: image-text backends exist for align, altclip"):
        model_kind(str(tmp_path / "classifier"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no model_index.json, open_clip_config.json or config.json"):
        model_kind(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="is a toxicity classifier, not a model of a kind the book measures"):
        model_kind("asset:profanity-check")
    with pytest.raises(ModelUnavailableError, match="Cannot tell what kind of model 'someone/not-downloaded' is"):
        model_kind("someone/not-downloaded")  # offline, and not in the hub cache


def test_audit_refuses_bad_input_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "cards"
    with pytest.raises(ValueError, match=r"'tiny:mlm' is a language model, and no audit measure applies to it; the "
                                         r"audit measures image-text and text-to-image models so far"):
        audit.audit_model("tiny:mlm", root=ROOT, out_dir=out)
    with pytest.raises(ValueError, match=r"--parts colourfoil: no such part; the parts are colorfoil, harms, markedness, t2i"):
        audit.audit_model("tiny:clip", parts=["colourfoil"], root=ROOT, out_dir=out)
    with pytest.raises(ValueError, match=r"no audit measure applies to it among --parts t2i"):
        audit.audit_model("tiny:clip", parts=["t2i"], root=ROOT, out_dir=out)
    # the command line: one error line, exit status 2, and no card for the good spec given first
    assert cli(["audit", "tiny:clip", "./no-such-checkpoint", "--project-dir", str(ROOT), "--out", str(out)]) == 2
    assert "error: Model directory './no-such-checkpoint' does not exist" in capsys.readouterr().err
    assert cli(["audit", "tiny:clip", "tiny:mlm", "--project-dir", str(ROOT), "--out", str(out)]) == 2
    assert "'tiny:mlm' is a language model" in capsys.readouterr().err
    assert not out.exists()


def _counting(monkeypatch):
    """Count every call that makes an image-text model compute (embeddings, scores)."""
    calls = []
    for cls in (DualEncoder, HFDualEncoder, OpenClipModel, PairwiseMatcher):
        for name in ("encode_images", "encode_texts", "score", "score_candidates"):
            if name in vars(cls):
                original = vars(cls)[name]

                def counted(self, *args, _original=original, _name=f"{cls.__name__}.{name}", **kwargs):
                    calls.append(_name)
                    return _original(self, *args, **kwargs)

                monkeypatch.setattr(cls, name, counted)
    return calls


def test_an_audit_writes_a_card_from_the_demo_profile_and_a_second_audit_reads_caches_only(tmp_path, monkeypatch):
    card, path = audit.audit_model("tiny:clip", "demo", parts=["markedness"], root=ROOT, out_dir=tmp_path,
                                   progress=False)
    assert path == tmp_path / "tiny_clip.json" and read_card(path).to_json() == card.to_json()
    assert card.model["kind"] == "image-text" and card.model["weights"].startswith("sha256:")
    assert card.provenance["profile"] == "demo" and card.provenance["data"]["fairface"].startswith("fairface/")
    assert not card.failures and len(card.limits) == 2
    frame = card.results_frame().set_index(["measure", "group"])
    # the demo's face world: 756 validation pictures, 108 of each race, 84 of each age
    assert frame.loc[("unmarked rate (race labels)", "White"), "n"] == 108
    assert frame.loc[("unmarked rate (age labels)", "0-2"), "n"] == 84
    gap = frame.loc[("default-group unmarked gap (gender)", "Male")]
    male, female = frame.loc[("unmarked rate (gender labels)", "Male")], frame.loc[("unmarked rate (gender labels)", "Female")]
    assert gap["estimate"] == pytest.approx(male["estimate"] - female["estimate"])  # two groups: the gap is their difference
    assert gap["ci_low"] <= gap["estimate"] <= gap["ci_high"] and gap["order"] == "absolute"
    assert {"self-similarity (race)", "self-similarity (gender)"} <= set(frame.index.get_level_values(0))
    calls = _counting(monkeypatch)
    again, _ = audit.audit_model("tiny:clip", "demo", parts=["markedness"], root=ROOT, out_dir=tmp_path, progress=False)
    assert calls == [], calls
    assert again.to_json()["results"] == card.to_json()["results"]


def test_a_failing_measure_leaves_a_failure_row_and_the_rest_of_the_card(tmp_path, monkeypatch):
    def broken(spec, parameters, progress):
        raise RuntimeError("the data set is not here")

    failing = audit.AuditMeasure("broken measure", "markedness", "image-text", "01b_markedness", broken, "none")
    monkeypatch.setattr(audit, "MEASURES", (failing, *audit.MEASURES))
    card, path = audit.audit_model("tiny:clip", "demo", parts=["markedness"], root=ROOT, out_dir=tmp_path,
                                   progress=False)
    assert card.failures == [{"measure": "broken measure", "error": "RuntimeError: the data set is not here"}]
    assert any(result.measure.startswith("unmarked rate") for result in card.results)
    assert read_card(path).failures == card.failures


def test_card_file_names_keep_specs_apart():
    names = {audit.card_path("cards", spec).name for spec in
             ("trained:face-clip", "trained:face-clip?uniform_named=0.5", "ViT-B-32/openai", "openai/clip-vit-base-patch32")}
    assert names == {"trained_face-clip.json", "trained_face-clip_uniform_named_0.5.json", "ViT-B-32_openai.json",
                     "openai_clip-vit-base-patch32.json"}


@pytest.mark.slow
def test_the_leaderboard_ranks_the_demo_face_clips_in_their_planted_order(demo_book, demo_cache, tmp_path,
                                                                          monkeypatch):
    """Audited after the demo book (whose 01a and 01b embedded the face world with both models), the
    planted-reporting mini-CLIP leaves the groups its captions name least unmarked more often than
    the uniform-reporting control, in every family; for gender, whose reporting gap is the widest
    (15% against 85%), beyond both intervals. And the audit computed nothing the book had not."""
    from vlbias.cards import leaderboard, read_cards

    planted, control = "trained:face-clip", "trained:face-clip?uniform_named=0.5"
    calls = _counting(monkeypatch)
    for spec in (planted, control):
        audit.audit_model(spec, "demo", parts=["markedness"], root=demo_book.project, out_dir=tmp_path, progress=False)
    assert calls == [], calls
    board = leaderboard(read_cards(tmp_path))
    for family in ("race", "gender", "age"):
        rows = board[board["measure"] == f"default-group unmarked gap ({family})"].set_index("spec")
        assert rows.loc[control, "rank"] == 1 and rows.loc[planted, "rank"] == 2, rows  # closest to 0 first
    gender = board[board["measure"] == "default-group unmarked gap (gender)"].set_index("spec")
    assert bool(gender.loc[control, "separated"]) and gender.loc[control, "ci_high"] < gender.loc[planted, "ci_low"]


@pytest.mark.slow
def test_the_leaderboard_ranks_the_demo_profession_models_in_their_planted_order(demo_book, demo_cache, tmp_path):
    """The text-to-image audit reads the images the demo book drew (04a, 04b: the same folder) and
    ranks the model trained on the labour statistics' shares above the uniform control (every
    profession half red) on VRBS, and its rho is positive beyond its interval."""
    from vlbias.cards import leaderboard, read_cards

    planted, control = "trained:profession-diffusion", "trained:profession-diffusion?share_scale=0"
    for spec in (planted, control):
        card, _ = audit.audit_model(spec, "demo", root=demo_book.project, out_dir=tmp_path, progress=False)
        assert not card.failures, card.failures
    board = leaderboard(read_cards(tmp_path)).set_index(["measure", "spec"])
    assert board.loc[("VRBS", planted), "rank"] == 1 and board.loc[("VRBS", control), "rank"] == 2
    rho = board.loc[("Spearman's rho against labour statistics", planted)]
    assert rho["ci_low"] > 0, rho
