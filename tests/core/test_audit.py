"""``python -m vlbias audit`` (vlbias.audit) and the model kinds it dispatches on (vlbias.models.kinds):
a card per model from the notebooks' own functions and caches, refusals that name what to fix, and a
failed measure that leaves the rest of the card standing."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
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
    # BLIP: the retrieval checkpoint is an image-text model (either head, a spec option), its captioner is none
    assert model_kind(str(tiny_checkpoint("blip"))) == model_kind("tiny:blip?head=contrastive") == "image-text"
    (tmp_path / "captioner").mkdir()
    (tmp_path / "captioner" / "config.json").write_text(json.dumps(
        {"model_type": "blip", "architectures": ["BlipForConditionalGeneration"]}))
    with pytest.raises(ValueError, match=r"BLIP BlipForConditionalGeneration checkpoint, of none of the kinds the book "
                                         r"measures: the image-text backend reads BLIP's retrieval checkpoints"):
        model_kind(str(tmp_path / "captioner"))
    assert model_kind("tiny:siglip2-naflex?max_num_patches=64") == "image-text"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no model_index.json, open_clip_config.json or config.json"):
        model_kind(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="is a toxicity classifier, not a model of a kind the book measures"):
        model_kind("asset:profanity-check")
    with pytest.raises(ModelUnavailableError, match="Cannot tell what kind of model 'someone/not-downloaded' is"):
        model_kind("someone/not-downloaded")  # offline, and not in the hub cache


def test_audit_refuses_bad_input_before_anything_runs(tmp_path, capsys, monkeypatch):
    out = tmp_path / "cards"
    with pytest.raises(ValueError, match=r"'tiny:mlm' is a language model, and no audit measure applies to it among "
                                         r"--parts markedness; the audit measures image-text, language, "
                                         r"text-to-image and vision-language models so far"):
        audit.audit_model("tiny:mlm", parts=["markedness"], root=ROOT, out_dir=out)
    with monkeypatch.context() as patched:  # a kind without any measure
        patched.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.kind != "language"))
        with pytest.raises(ValueError, match=r"'tiny:mlm' is a language model, and no audit measure applies to it; "
                                             r"the audit measures image-text, text-to-image and vision-language "
                                             r"models so far"):
            audit.audit_model("tiny:mlm", root=ROOT, out_dir=out)
    with pytest.raises(ValueError, match=r"--parts colourfoil: no such part; the parts are colorfoil, harms, markedness, t2i"):
        audit.audit_model("tiny:clip", parts=["colourfoil"], root=ROOT, out_dir=out)
    with pytest.raises(ValueError, match=r"no audit measure applies to it among --parts t2i"):
        audit.audit_model("tiny:clip", parts=["t2i"], root=ROOT, out_dir=out)
    # the command line: one error line, exit status 2, and no card for the good spec given first
    assert cli(["audit", "tiny:clip", "./no-such-checkpoint", "--project-dir", str(ROOT), "--out", str(out)]) == 2
    assert "error: Model directory './no-such-checkpoint' does not exist" in capsys.readouterr().err
    assert cli(["audit", "tiny:clip", "tiny:mlm", "--parts", "markedness", "--project-dir", str(ROOT), "--out",
                str(out)]) == 2
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
    assert not card.failures and len(card.limits) == 3
    frame = card.results_frame().set_index(["measure", "group"])
    # the intersections: race and gender, on each family's labels; the two genders of a race make up the race
    both = frame.loc["unmarked rate by race and gender (race labels)"]
    assert len(both) == 14 and both.loc[["White, Female", "White, Male"], "n"].sum() == 1080
    # the text encoder's WEAT: one row per test, d ranked closest to 0, its permutation p in the note
    weat = frame.loc["text-encoder WEAT effect size"]
    assert len(weat) >= 5 and set(weat["order"]) == {"absolute"} and weat["note"].str.startswith("permutation p = ").all()
    # the demo's face world: 7,560 validation pictures, 1,080 of each race, 840 of each age
    assert frame.loc[("unmarked rate (race labels)", "White"), "n"] == 1080
    assert frame.loc[("unmarked rate (age labels)", "0-2"), "n"] == 840
    # a model not trained here has no control: its claims are judged on its own intervals
    assert card.findings and {row["verdict"] for row in card.findings} <= {"supports", "contradicts", "cannot tell"}
    assert all(not row["control"] for row in card.findings)
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
def test_the_demo_books_cards_rank_its_models_in_their_planted_order(demo_book):
    """The demo book's model cards (05a, one page per model, after 01a, 01b, 02b and 04b) rank the
    planted-reporting mini-CLIP below the uniform-reporting control on every family's default-group
    gap (closest to 0 first), for gender, whose reporting gap is the widest (15% against 85%), beyond
    both intervals; and the profession model trained on the labour statistics' shares first on VRBS
    over its even-shares control, its rho positive beyond its interval. The leaderboard page shows it."""
    from vlbias.cards import leaderboard, read_cards

    cards = read_cards(demo_book.project / "outputs" / "demo" / "cards")
    planted, control = "trained:face-clip", "trained:face-clip?uniform_named=0.5"
    professions, even = "trained:profession-diffusion", "trained:profession-diffusion?share_scale=0"
    captioner, uniform = "trained:face-captioner", "trained:face-captioner?uniform_named=0.9"
    assert sorted(card.model["spec"] for card in cards) == sorted([planted, control, professions, even,
                                                                    "asset:smollm2-135m", captioner, uniform])
    assert all(not card.failures for card in cards), [card.failures for card in cards]
    board = leaderboard(cards)
    for family in ("race", "gender", "age"):
        rows = board[board["measure"] == f"default-group unmarked gap ({family})"].set_index("spec")
        assert rows.loc[control, "rank"] == 1 and rows.loc[planted, "rank"] == 2, rows
    gender = board[board["measure"] == "default-group unmarked gap (gender)"].set_index("spec")
    assert bool(gender.loc[control, "separated"]) and gender.loc[control, "ci_high"] < gender.loc[planted, "ci_low"]
    # the face-world captioners (01d's measures): the planted one leaves White and Male unmarked, by likelihood
    # and in its descriptions, beyond the control's intervals; with two genders the gap is the rates' difference
    for name in ("default-group unmarked gap by likelihood ({})", "default-group unnamed gap in descriptions ({})"):
        for family in ("race", "gender"):
            rows = board[board["measure"] == name.format(family)].set_index("spec")
            assert rows.loc[uniform, "rank"] == 1 and rows.loc[captioner, "rank"] == 2, rows
            assert rows.loc[captioner, "ci_low"] > rows.loc[uniform, "ci_high"], rows
    generative = board[board["spec"] == captioner].set_index(["measure", "group"])
    rate = "unmarked rate by likelihood (gender labels)"
    assert generative.loc[("default-group unmarked gap by likelihood (gender)", "Male"), "estimate"] == pytest.approx(
        generative.loc[(rate, "Male"), "estimate"] - generative.loc[(rate, "Female"), "estimate"])
    assert not any("by likelihood (age)" in measure for measure in board["measure"])  # summed: unmarked by construction
    t2i = board.set_index(["measure", "spec"])
    assert t2i.loc[("VRBS", professions), "rank"] == 1 and t2i.loc[("VRBS", even), "rank"] == 2
    rho = "Spearman's rho against labour statistics"
    assert t2i.loc[(rho, professions), "ci_low"] > 0 and t2i.loc[(rho, professions), "rank"] == 1
    # CADS's paired change, on the same seeds, for both profession models
    cads = board[board["measure"] == "VRBS change under CADS (s=1)"].set_index("spec")
    assert set(cads.index) == {professions, even}
    assert ((cads["ci_low"] <= cads["estimate"]) & (cads["estimate"] <= cads["ci_high"])).all(), cads
    # each card is a page titled with its model, and the leaderboard page ranks them all
    html = demo_book.project / "_build" / "html" / "book" / "generated"
    for spec in (planted, control, professions, even):
        page = (html / "05a_model_card" / f"{audit.card_path('.', spec).stem}.html").read_text(encoding="utf-8")
        assert f"Model card: {spec}" in page and "Findings: paper vs ours" in page
    board_page = (html / "05b_leaderboard.html").read_text(encoding="utf-8")
    assert "face mini-CLIP, uniform reporting" in board_page and "vlbiasSort" in board_page


@pytest.mark.slow
def test_the_demo_books_cards_judge_each_planted_model_as_its_pages_do(demo_book):
    """A card and a page never disagree: each row of the planted mini-CLIP's card is a row of 01a's or 01b's
    box, with the same numbers (one function computes both); its control's card finds nothing planted behind
    the unmarked claims; and the leaderboard says which planted pairs sit in their planted order."""
    import json

    from vlbias.cards import read_cards

    cards = {card.model["spec"]: card for card in read_cards(demo_book.project / "outputs" / "demo" / "cards")}
    planted, control = "trained:face-clip", "trained:face-clip?uniform_named=0.5"

    def box(name):
        cells = json.loads((demo_book.project / "book" / "generated" / f"{name}.ipynb").read_text())["cells"]
        html = "".join("".join(o.get("data", {}).get("text/html", "")) for c in cells for o in c.get("outputs", []))
        return html[html.index("Findings: paper vs ours"):]

    pages = [box("01a_self_similarity"), box("01b_markedness")]
    found = audit.card_findings(cards[planted])
    assert {row.verdict for row in found} <= {"recovered", "not recovered", "not planted"}
    part_one = {"white_least", "female_more", "white_unmarked", "male_unmarked", "middle_unmarked"}
    rows = [row for row in found if row.key in part_one]
    assert len(rows) >= 6
    for row in rows:
        assert any(row.ours in page and row.control in page and row.contrast in page for page in pages), row
    # a dual encoder's card also takes 02b's colour-foil measure; the face world plants no colour words
    assert {row.verdict for row in found if row.key == "above_chance"} == {"not planted"}
    unmarked = [row for row in audit.card_findings(cards[control]) if "unmarked" in row.claim]
    assert len(unmarked) == 3 and {row.verdict for row in unmarked} == {"not planted"}
    # a control's card is never judged against itself: its one control is 01a's other control of its recipe
    assert {row.control_spec for row in audit.card_findings(cards[control])} == {
        "", "trained:face-clip?world_varied_race_variety=0.2"}
    assert all(row.control == "" for row in unmarked)
    pairs = audit.planted_pairs(cards.values())
    face = pairs[pairs["model"] == planted]
    assert set(face["control"]) == {control, "trained:face-clip?world_varied_race_variety=0.2"}
    assert (face[face["claim"].str.contains("unmarked")]["in planted order beyond the intervals"] == "yes").all()
    board = (demo_book.project / "_build" / "html" / "book" / "generated" / "05b_leaderboard.html").read_text()
    assert "Does each trained pair sit in its planted order?" in board and "planted claims sit in their planted" in board


@pytest.mark.slow
def test_re_auditing_a_model_of_the_demo_book_reads_caches_only(demo_book, demo_cache, tmp_path, monkeypatch):
    """Audited again after the demo book, the planted mini-CLIP's card computes nothing: no encoder
    call, on any measure of its kind, and the same results as the book's card."""
    from vlbias.cards import read_card

    calls = _counting(monkeypatch)
    card, _ = audit.audit_model("trained:face-clip", "demo", root=demo_book.project, out_dir=tmp_path, progress=False)
    assert calls == [], calls
    book_card = read_card(audit.card_path(demo_book.project / "outputs" / "demo" / "cards", "trained:face-clip"))
    assert card.to_json()["results"] == book_card.to_json()["results"]


def test_each_measure_gives_the_papers_published_numbers_as_reference_rows_named_as_its_results():
    """The reference rows are the shipped published tables, rescaled to the card's units (shares, not
    percentages) and named as the measure's own results, so a card's page puts them side by side."""
    rows = {measure.name: measure.reference() for measure in audit.MEASURES}
    white = [r for r in rows["markedness"] if r["measure"] == "unmarked rate (race labels)" and r["group"] == "White"]
    assert [r["estimate"] for r in white] == [pytest.approx(0.479)] and white[0]["model"] == "CLIP ViT-B/32"
    assert "Figure 4" in white[0]["source"]
    # one group's rows only, never an intersection the paper reports under the family's labels
    assert not [r for r in rows["markedness"] if "," in (r["group"] or "")]
    clip = {r["measure"]: r["estimate"] for r in rows["colorfoil"] if r["model"] == "CLIP"}
    # Table 1 prints accuracy in percent and F1 as a fraction
    assert 0 < clip["ColorFoil accuracy (coco, k=1)"] < 1 and 0 < clip["ColorFoil F1 (coco, k=1)"] <= 1
    assert len([r for r in rows["colorfoil"] if r["measure"] == "ColorFoil accuracy (flickr30k, k=4)"]) == 7  # seven models
    t2i = {(r["measure"], r["model"]): r["estimate"] for r in rows["occupational bias"]}
    assert t2i == {("VRBS", "SD 1.4"): 0.68, ("VRBS", "SD 2.1"): 0.71,
                   ("Spearman's rho against labour statistics", "SD 1.4"): 0.72}  # plain sampling only
    assert all("published" in r["source"] for group in rows.values() for r in group)
    assert {r["measure"] for r in rows["self-similarity"]} == {"self-similarity (race)", "self-similarity (gender)"}
    # SEAT's rows: Caliskan et al.'s word-vector d, one per test, in the groups the card's rows carry
    seat = {r["group"]: r["estimate"] for r in rows["language-model SEAT"]}
    assert len(seat) == 10 and seat["WEAT6: Male names vs Female names / Career vs Family"] == pytest.approx(1.81)


def test_a_cards_findings_are_the_rows_its_measures_pages_computed():
    """A card's findings are stored rows (each computed by the function the measure's page calls for its
    own box), read back unchanged; a card without any says why; the leaderboard's box and its planted pairs
    read the same rows."""
    from vlbias.cards import Card, Result
    from vlbias.findings import Claim, Design, Estimate, finding_record, judge

    def card(spec="m", findings=(), results=(), note=""):
        return Card(model={"spec": spec, "kind": "image-text", "weights": "w"},
                    provenance={"vlbias_version": "0", "profile": "demo", "date": "2026-12-03T10:00:00+00:00"},
                    results=list(results), findings=[finding_record(f) for f in findings], note=note)

    claim = Claim("white", "White left unmarked more often", "White 47.9%", causes=("white_unmarked",))
    planted = Design("trained:face-clip", "trained:face-clip?uniform_named=0.5", True, frozenset({"white_unmarked"}))
    rows = [judge(claim, Estimate(0.3, 0.2, 0.4), planted, Estimate(0.1, 0.0, 0.2), Estimate(0.2, 0.1, 0.3)),
            judge(claim, Estimate(0.3, 0.2, 0.4), planted, Estimate(0.28, 0.2, 0.36), Estimate(0.02, -0.05, 0.09))]
    found = audit.card_findings(card("trained:face-clip", rows))
    assert found == rows and [f.verdict for f in found] == ["recovered", "not recovered"]
    nothing = audit.card_findings(card(results=[Result("self-similarity (race)", "markedness", 0.6, 0.5, 0.7, group="W")]))
    assert [f.verdict for f in nothing] == ["cannot test"] and "self-similarity (race)" in nothing[0].ours
    older = audit.card_findings(card(note="schema version 1: written before cards stored the findings"))
    assert older[0].ours.startswith("schema version 1")
    named = audit.board_findings([card("trained:face-clip", rows)], {"trained:face-clip": "my model"})
    assert named[0].claim == "my model: White left unmarked more often" and named[0].contrast == rows[0].contrast
    pairs = audit.planted_pairs([card("trained:face-clip", rows), card("ViT-B-32/openai", [judge(
        claim, Estimate(0.3, 0.2, 0.4), Design("ViT-B-32/openai"))])], {"trained:face-clip?uniform_named=0.5": "control"})
    assert pairs["in planted order beyond the intervals"].tolist() == ["yes", "no"] and set(pairs["control"]) == {"control"}
    assert audit.planted_pairs_sentence(pairs).startswith("1 of the 2 planted claims sit in their planted order")
    assert "No card in this folder was judged against a control" in audit.planted_pairs_sentence(pairs.iloc[:0])


def test_audit_ray_points_each_measures_notebook_at_the_audited_model(tmp_path):
    measures = audit.measures_for("image-text")
    notebooks, assignments = audit.precompute_assignments("trained:face-clip?uniform_named=0.5", measures, ROOT)
    assert notebooks == ["01a_self_similarity", "01b_markedness", "02b_colorfoil_evaluation"]
    assert assignments == ['01a_self_similarity.model_spec="trained:face-clip?uniform_named=0.5"',
                           '01a_self_similarity.model_specs=["trained:face-clip?uniform_named=0.5"]',
                           '01b_markedness.model_spec="trained:face-clip?uniform_named=0.5"',
                           '01b_markedness.model_specs=["trained:face-clip?uniform_named=0.5"]',
                           '02b_colorfoil_evaluation.model_specs=["trained:face-clip?uniform_named=0.5"]']
    # the assignments are the runner's own --set syntax: the plan gives each notebook the audited model only
    from vlbias import profiles

    run = profiles.plan_run(ROOT, "demo", notebooks, assignments)
    assert run.parameters["02b_colorfoil_evaluation"]["model_specs"] == ["trained:face-clip?uniform_named=0.5"]
    assert audit.precompute_assignments("tiny:sd", audit.measures_for("text-to-image"), ROOT)[1] == [
        '04b_annotation_and_metrics.t2i_spec="tiny:sd"', '04c_cads.t2i_spec="tiny:sd"']


def test_audit_ray_computes_the_heavy_stages_on_ray_and_the_card_then_reads_caches_only(tmp_path, monkeypatch):
    """``audit --ray``: precompute's executor embeds the face world with the audited model on a local Ray
    instance; the card written afterwards embeds no picture (only its few dozen prompts, which no
    stage declares heavy)."""
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    lines = []
    # a small local instance, as the precompute tests start theirs: precompute_audit uses a running one
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False)
    try:
        summaries = audit.precompute_audit(["tiny:clip"], "demo", ["markedness"], root=ROOT, write=lines.append)
        assert ray.is_initialized()  # the audit leaves a Ray instance it did not start running
    finally:
        ray.shutdown()
    assert summaries["tiny:clip"]["computed"] > 0 and not summaries["tiny:clip"]["failures"], lines
    assert lines[0] == "[audit] tiny:clip: the heavy stages of 01a_self_similarity, 01b_markedness on Ray"
    calls = _counting(monkeypatch)
    card, _ = audit.audit_model("tiny:clip", "demo", parts=["markedness"], root=ROOT, out_dir=tmp_path, progress=False)
    assert calls and set(calls) == {"DualEncoder.encode_texts"} and not card.failures, calls


def test_the_model_cards_start_after_every_notebook_whose_measures_the_audit_runs():
    from vlbias.audit_stages import AUDITED_NOTEBOOKS, NOTEBOOKS

    assert sorted(AUDITED_NOTEBOOKS) == sorted({measure.notebook for measure in audit.MEASURES})
    assert NOTEBOOKS["05a_model_card"].reads == AUDITED_NOTEBOOKS


def test_a_measure_that_does_not_apply_is_a_limit_of_the_card_not_a_failure(tmp_path, monkeypatch):
    def matcher_only(spec, parameters, progress):
        raise audit.NotApplicable(f"{spec} is a pairwise model")

    measure = audit.AuditMeasure("text-only measure", "markedness", "image-text", "01b_markedness", matcher_only, "x")
    monkeypatch.setattr(audit, "MEASURES", (measure,))
    card, _ = audit.audit_model("tiny:clip", "demo", parts=["markedness"], root=ROOT, out_dir=tmp_path, progress=False)
    assert card.failures == [] and card.results == []
    assert card.limits == ["text-only measure: not measured: tiny:clip is a pairwise model"]


def test_a_language_models_card_has_its_stereotyping_slope_as_03a_computes_it(tmp_path, monkeypatch):
    """Part III's measure: the amplification slope of the model's P(she | she or he) on the labour
    statistics' female share over the 40 WinoBias occupations, with 03a's templates and scoring, equal
    to a least-squares fit (scipy) of the same shares."""
    from scipy import stats

    from vlbias.book import published
    from vlbias.harms import measures as harms
    from vlbias.models import load_language_model
    from vlbias.profiles import notebook_parameters, plan_run

    monkeypatch.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.name == "occupational stereotyping"))
    card, _ = audit.audit_model("tiny:causal-lm", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert card.model["kind"] == "language" and not card.failures, card.failures
    frame = card.results_frame().set_index("measure")
    slope = frame.loc["occupational stereotyping (amplification slope)"]
    p = notebook_parameters(ROOT, "03a_stereotyping", plan_run(ROOT, "demo", ["03a_stereotyping"]))
    occupations = published("winobias_bls_female_share")
    table = harms.stereotyping_table(load_language_model("tiny:causal-lm"), occupations.occupation,
                                     occupations.female_percent / 100, p["templates"], p["pronouns"],
                                     scoring=p["scoring"], progress=False)
    fit = stats.linregress(table["real female share"], table["model female share"])
    assert slope["estimate"] == pytest.approx(fit.slope) and slope["n"] == 40
    assert slope["ci_low"] < slope["estimate"] < slope["ci_high"] and slope["interval"] == "t 95%"
    assert frame.loc["occupational stereotyping (Pearson's r)", "estimate"] == pytest.approx(fit.rvalue)
    # 03a's two claims, judged by the slope's interval: above 0, and above 1
    claims = audit.card_findings(card)
    assert [f.claim[:24] for f in claims] == ["A model's share of 'she'", "It exaggerates the real "]
    assert claims[1].verdict == ("supports" if slope["ci_low"] > 1 else "contradicts" if slope["ci_high"] < 1
                                 else "cannot tell")


def test_a_colorfoil_card_compares_the_model_with_the_reference_pair_by_pair(tmp_path, monkeypatch):
    """With one foil, the accuracy difference from 02b's first model on the same pairs, its paired
    bootstrap interval and the exact McNemar p, equal to a McNemar test computed here (scipy's binomial
    test) on both models' per-pair answers."""
    from scipy import stats

    from vlbias.colorfoil import controls as cf_controls
    from vlbias.colorfoil.evaluation import correct_at

    captured = {}
    real = cf_controls.paired_model_table

    def spy(scores, **kw):
        captured.update(scores)
        return real(scores, **kw)

    monkeypatch.setattr(cf_controls, "paired_model_table", spy)
    monkeypatch.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.name == "colorfoil"))
    card, _ = audit.audit_model("tiny:clip", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert not card.failures, card.failures
    rows = {r.measure: r for r in card.results if r.measure.startswith("ColorFoil accuracy minus")}
    assert set(rows) == {"ColorFoil accuracy minus the reference's (coco, k=1)",
                         "ColorFoil accuracy minus the reference's (flickr30k, k=1)"}
    row = rows["ColorFoil accuracy minus the reference's (flickr30k, k=1)"]
    assert "reference trained:caption-clip?colour_words=1" in row.note
    ours, reference = (captured[name] for name in ("tiny:clip", "trained:caption-clip?colour_words=1"))
    right = [correct_at(matrix, 1)[1] for matrix in (ours, reference)]
    only_ours, only_reference = int((right[0] & ~right[1]).sum()), int((~right[0] & right[1]).sum())
    p = stats.binomtest(min(only_ours, only_reference), only_ours + only_reference, 0.5).pvalue \
        if only_ours + only_reference else 1.0
    assert f"exact McNemar p = {p:.3g}" in row.note
    assert row.estimate == pytest.approx(right[0].mean() - right[1].mean())
    assert row.ci_low <= row.estimate <= row.ci_high
    # F1's interval is the accuracy's Wilson interval through 2a / (1 + a), scipy's Wilson bounds by hand
    accuracy = next(r for r in card.results if r.measure == "ColorFoil accuracy (coco, k=1)")
    f1 = next(r for r in card.results if r.measure == "ColorFoil F1 (coco, k=1)")
    wilson = stats.binomtest(round(accuracy.estimate * accuracy.n), accuracy.n).proportion_ci(method="wilson")
    assert (f1.ci_low, f1.estimate, f1.ci_high) == pytest.approx(
        [2 * a / (1 + a) for a in (wilson.low, accuracy.estimate, wilson.high)], abs=1e-4)


def test_a_causal_language_models_card_has_03cs_erasure_per_scenario_and_a_masked_ones_says_it_does_not_apply(
        tmp_path, monkeypatch):
    from vlbias.profiles import notebook_parameters, plan_run

    monkeypatch.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.name == "erasure"))

    card, _ = audit.audit_model("tiny:causal-lm", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert not card.failures, card.failures
    rows = [r for r in card.results if r.measure.startswith("erasure index of women")]
    p = notebook_parameters(ROOT, "03c_erasure", plan_run(ROOT, "demo", ["03c_erasure"]))
    assert [r.group for r in rows] == list(p["scenarios"]) and {r.order for r in rows} == {"absolute"}
    masked, _ = audit.audit_model("tiny:mlm", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert not masked.failures and any(limit.startswith("erasure: not measured: tiny:mlm is a masked")
                                       for limit in masked.limits)


@pytest.mark.slow
def test_the_demo_language_models_erasure_is_the_share_of_women_among_its_stories_protagonists(demo_book, demo_cache):
    """SmolLM2-135M's card (05a, from 03c's cached stories): per scenario, the share of women among the
    detected protagonists minus 0.51, with the Wilson interval of those counts shifted by 0.51."""
    from vlbias.cards import read_card
    from vlbias.harms import measures as harms
    from vlbias.models import load_language_model
    from vlbias.profiles import notebook_parameters, plan_run
    from vlbias.stats import wilson_interval

    card = read_card(audit.card_path(demo_book.project / "outputs" / "demo" / "cards", "asset:smollm2-135m"))
    rows = {r.group: r for r in card.results if r.measure.startswith("erasure index of women")}
    p = notebook_parameters(demo_book.project, "03c_erasure", plan_run(demo_book.project, "demo", ["03c_erasure"]))
    stories = harms.generate_stories(load_language_model("asset:smollm2-135m"), p["scenarios"], p["n_per_scenario"],
                                     max_new_tokens=p["max_new_tokens"], temperature=p["temperature"], top_p=p["top_p"],
                                     seed=p["seed"], batch_size=p["batch_size"], use_chat_template=p["use_chat_template"],
                                     progress=False)  # the book's stories, from the cache
    checked = 0
    for scenario, texts in stories.groupby("scenario")["text"]:
        genders = [harms.protagonist_gender(text, p["gender_rule"]) for text in texts]
        women, detected = genders.count("female"), sum(g != "undetermined" for g in genders)
        assert rows[scenario].n == detected
        if detected:
            low, high = wilson_interval(women, detected)
            assert rows[scenario].estimate == pytest.approx(women / detected - 0.51)
            assert (rows[scenario].ci_low, rows[scenario].ci_high) == pytest.approx((low - 0.51, high - 0.51))
            checked += 1
    assert checked >= 3  # SmolLM2's stories name their protagonists' gender in most scenarios


def test_a_language_models_seat_is_the_effect_size_of_its_own_hidden_states(tmp_path, monkeypatch):
    """Part III's WEAT where the model gives embeddings: each Caliskan test in 03b's SEAT templates, one
    sentence a unit, on the last hidden state of a causal model's last token (a masked model's first).
    WEAT 7's d equals the effect size computed here with numpy from the model's representations of
    each sentence alone (no batch, no padding, no cache), and a backend without hidden states is a
    limit of the card, not a failure."""
    from vlbias.harms.measures import cached_sentence_embeddings
    from vlbias.models import load_language_model
    from vlbias.weat import SEAT_TEMPLATES, caliskan_tests, seat_sentences

    monkeypatch.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.name == "language-model SEAT"))
    card, _ = audit.audit_model("tiny:causal-lm", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert not card.failures, card.failures
    rows = {r.group: r for r in card.results if r.measure == audit.LANGUAGE_SEAT}
    assert len(rows) == 10 and {r.order for r in rows.values()} == {"absolute"}
    test = next(t for t in caliskan_tests() if t["id"] == "WEAT7")
    row = rows[f"WEAT7: {test['X_name']} vs {test['Y_name']} / {test['A_name']} vs {test['B_name']}"]
    model = load_language_model("tiny:causal-lm")
    vectors = {key: np.stack([model.sentence_embeddings([text], batch_size=1, progress=False)[0]
                              for text in seat_sentences(test[key], SEAT_TEMPLATES)]) for key in "XYAB"}
    unit = {key: value / np.linalg.norm(value, axis=1, keepdims=True) for key, value in vectors.items()}
    s = {key: (unit[key] @ unit["A"].T).mean(1) - (unit[key] @ unit["B"].T).mean(1) for key in "XY"}
    d = (s["X"].mean() - s["Y"].mean()) / np.concatenate([s["X"], s["Y"]]).std(ddof=1)
    assert row.estimate == pytest.approx(d, abs=1e-4) and row.n == 2 * 8 * len(SEAT_TEMPLATES)
    assert abs(d) > 0.05 and "permutation p = " in row.note  # the representations differ: the check can fail
    assert row.ci_low < row.estimate < row.ci_high and row.interval == "percentile bootstrap over words 95%"
    # the card's finding: 03b's claim, judged as 03b's box judges it (each test significant after Holm)
    finding = next(f for f in audit.card_findings(card) if "associations of the ten WEAT tests" in f.claim)
    notes = [r.note for r in rows.values()]
    holm = [float(note.split("Holm-adjusted ")[1].split(";")[0]) for note in notes]
    estimates = [r.estimate for r in rows.values()]
    positive = sum(p < 0.05 and d > 0 for p, d in zip(holm, estimates))
    negative = sum(p < 0.05 and d < 0 for p, d in zip(holm, estimates))
    assert finding.ours.startswith(f"{positive} of 10 complete tests positive with a Holm-adjusted p below 0.05")
    assert finding.verdict == ("contradicts" if negative else "supports" if positive == 10 else "cannot tell")
    assert finding.published.startswith("GloVe 840B: all 10, d from 1.06 to 1.81")
    # batched and padded equals one at a time, and the cache returns what was computed
    texts = [*seat_sentences(test["X"][:3], SEAT_TEMPLATES[:2]), "A much longer sentence than the others, to pad."]
    one_by_one = np.stack([model.sentence_embeddings([t], progress=False)[0] for t in texts])
    np.testing.assert_allclose(model.sentence_embeddings(texts, batch_size=4, progress=False), one_by_one, atol=1e-5)
    np.testing.assert_allclose(cached_sentence_embeddings(model, texts, batch_size=4, progress=False), one_by_one,
                               atol=1e-5)

    def no_hidden_states(self, texts, batch_size=16, progress=True):
        raise NotImplementedError("this backend has no hidden states")

    from vlbias.models.language import HFLanguageModel

    monkeypatch.setattr(HFLanguageModel, "sentence_embeddings", no_hidden_states)
    plain, _ = audit.audit_model("tiny:mlm", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert plain.failures == [] and plain.results == []
    assert plain.limits[0].startswith("language-model SEAT: not measured: tiny:mlm gives no sentence embeddings")


def test_guidances_change_is_vrbs_with_guidance_minus_without_on_the_same_jobs(tmp_path, monkeypatch):
    """A text-to-image card's guidance change: 04b's guidance scale against scale 1 on the same jobs.
    Planted: with guidance every profession's images are female at exactly the labour statistics'
    share (10 images a profession, shares rounded to tenths), without guidance half of them, so VRBS
    is 1 - mean |share - reference| by hand for each run, and the change is their difference. A
    profile that samples without guidance gets a limit, not a failure."""
    from vlbias.t2i.bias import reference_shares

    reference = reference_shares()
    tenths = (reference * 10).round().astype(int)

    def manifest(female_count):
        return pd.DataFrame([{"profession": name, "seed": seed, "perceived": "female" if seed < female_count(name) else "male"}
                             for name in reference.index for seed in range(10)])

    runs = {3.0: manifest(lambda name: tenths[name]), 1.0: manifest(lambda name: 5)}
    asked = []

    def planted_run(spec, parameters, **kwargs):  # 04b's study of the model at each guidance scale
        from types import SimpleNamespace

        asked.append(parameters["guidance_scale"])
        return SimpleNamespace(labels=runs[parameters["guidance_scale"]])

    from vlbias.t2i import study

    monkeypatch.setattr(study, "study_run", planted_run)
    monkeypatch.setattr(audit, "MEASURES", tuple(m for m in audit.MEASURES if m.name == "guidance change"))
    card, _ = audit.audit_model("tiny:sd", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert not card.failures, card.failures
    assert sorted(asked) == [1.0, 3.0]  # the demo's 04b guides at 3
    [row] = card.results
    with_guidance = 1 - np.mean(np.abs(tenths / 10 - reference))
    without = 1 - np.mean(np.abs(0.5 - reference))
    assert row.measure == "VRBS change under guidance (scale 3 vs 1)"
    assert row.estimate == pytest.approx(with_guidance - without) and row.n == len(reference)
    assert row.ci_low <= row.estimate <= row.ci_high and f"without {without:.3f}, with {with_guidance:.3f}" in row.note

    from vlbias import profiles

    real = profiles.notebook_parameters
    monkeypatch.setattr(profiles, "notebook_parameters",
                        lambda *args, **kwargs: {**real(*args, **kwargs), "guidance_scale": 1.0})
    plain, _ = audit.audit_model("tiny:sd", "demo", root=ROOT, out_dir=tmp_path, progress=False)
    assert plain.failures == [] and plain.results == []
    assert plain.limits == ["guidance change: not measured: 04b samples without guidance (guidance_scale 1): there is "
                            "no guided run to compare"]


def test_the_cards_declared_draws_are_the_ones_its_part_iv_measures_make(monkeypatch):
    """05a's generation stage (the plan's estimate, precompute's units) holds exactly the draws of the
    card's text-to-image measures: each ``generate_to_disk`` call of occupational bias, the guidance
    change and the CADS change, with the full profile's parameters, has a declared stage with the same
    folder, jobs, settings and CADS configuration, and no stage is declared that the card does not draw."""
    from types import SimpleNamespace

    from vlbias import profiles
    from vlbias.audit_stages import card_units
    from vlbias.stages import Context
    from vlbias.t2i import annotation, compare, generation

    drawn = []

    def capture(model, jobs, out_dir, batch_size=4, progress=True, only=None, **settings):
        cads = getattr(model, "config", None)
        drawn.append((str((ROOT / "notebooks" / out_dir).resolve()), jobs.reset_index(drop=True).to_dict("list"),
                      batch_size, settings, None if cads is None else cads.as_dict()))
        n = len(jobs)
        return jobs.reset_index(drop=True).assign(job_id=range(n), file=[f"{i:06d}.png" for i in range(n)])

    model = SimpleNamespace(spec="CompVis/stable-diffusion-v1-4")
    monkeypatch.setattr(audit, "_loaded", lambda kind, spec, device, half: model if kind == "text-to-image" else None)
    monkeypatch.setattr(generation, "generate_to_disk", capture)
    monkeypatch.setattr(compare, "generate_to_disk", capture)
    monkeypatch.setattr(annotation, "label_image_files",
                        lambda annotator, files, prompts, **kwargs: ["female" if i % 2 else "male" for i in range(len(files))])
    monkeypatch.setattr(compare, "embed_images", lambda annotator, images, **kwargs: np.random.default_rng(0).normal(size=(len(images), 4)))
    read = profiles.profile_parameters(ROOT, "full")
    for measure in audit.measures_for("text-to-image"):
        measure.run(model.spec, read(measure.notebook), False)

    card = {**read("05a_model_card"), "model_specs": [model.spec]}
    stages = card_units(card, Context(ROOT / "notebooks", parameters_of=read))
    declared = [(stage.call["run_dir"], stage.call["jobs"].reset_index(drop=True).to_dict("list"),
                 stage.call["batch_size"], stage.call["settings"], stage.call["cads"]) for stage in stages]
    assert len(drawn) == 5  # 04b's study twice (occupational bias, then guided), unguided, 04c's two noise scales
    assert sorted(map(repr, {repr(d): d for d in drawn}.values())) == sorted(map(repr, declared))
    assert {stage.n_items for stage in stages} == {4500, 1000} and len(stages) == 4
    assert card_units({**card, "parts": ["markedness"]}, Context(ROOT / "notebooks", parameters_of=read)) == []
    assert card_units(card, Context(ROOT / "notebooks")) == []  # no other notebook's parameters: nothing claimed


def test_the_plan_tells_a_cards_kind_offline_before_any_download(monkeypatch, tmp_path):
    """A card's draws are planned before its weights are downloaded: a hub id by the kind
    resources/hub_models.json records (every recorded kind but the text classifiers' maps to an
    interface), any other spec as the loaders would tell it; an unreadable spec is left to the plan's rows."""
    from vlbias.audit_stages import RECORDED_KINDS, planned_kind
    from vlbias.plan import hub_models

    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hub"))  # nothing downloaded
    recorded = {row["kind"] for name, row in hub_models().items() if not name.startswith("_")}
    assert recorded - set(RECORDED_KINDS) == {"text classifier"}
    assert planned_kind("CompVis/stable-diffusion-v1-4") == "text-to-image"
    assert planned_kind("runwayml/stable-diffusion-v1-5") == "text-to-image"  # a moved id, by its new name
    assert planned_kind("llava-hf/llava-1.5-7b-hf") == "vision-language"
    assert planned_kind("ViT-B-32/openai") == "image-text"
    assert planned_kind("trained:profession-diffusion?share_scale=0") == "text-to-image"
    assert planned_kind("no-such-org/no-such-model") is None
