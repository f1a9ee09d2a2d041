"""The "Findings: paper vs ours" box (``vlbias.findings``): verdicts reached from intervals; on a model
trained here, a planted cause judged only against its control."""

import html
import math
import re

import pytest

from vlbias.findings import (FULL_PROFILE_ONLY, Claim, Design, Estimate, Finding, design, difference_verdict,
                             finding_from_record, finding_record, findings_box, judge, order_verdict)


@pytest.mark.parametrize("higher, lower, verdict", [
    ((0.5, 0.7), (0.2, 0.4), "supports"), ((0.2, 0.4), (0.5, 0.7), "contradicts"),
    ((0.3, 0.6), (0.5, 0.7), "cannot tell"), ((0.5, 0.7), (0.4, 0.5), "cannot tell"),  # touching: not beyond
    ((float("nan"), 0.7), (0.1, 0.2), "cannot tell"),
])
def test_order_verdict_needs_the_intervals_apart(higher, lower, verdict):
    assert order_verdict(higher, lower) == verdict


def test_difference_verdict_reads_the_sign_of_the_whole_interval():
    assert [difference_verdict(*interval) for interval in ((0.1, 0.3), (-0.3, -0.1), (-0.1, 0.2), (0.0, 0.2))] == [
        "supports", "contradicts", "cannot tell", "cannot tell"]


def text(box) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", box.data)))).strip()


CLAIM = Claim("male", "Male images are left unmarked more often than Female images", "Male 26.6%, Female 15.2%",
              "Male's rate minus Female's", causes=("male_unmarked",), scale=100, unit=" points", digits=1)
CAUSES = {"male_unmarked": "captions that leave Male unnamed", "male_varied": "Male pictures that vary more"}


def planted_design(control="trained:control", plants=("male_unmarked",), control_plants=()) -> Design:
    return Design("trained:planted", control, True, frozenset(plants), frozenset(control_plants), CAUSES)


GAP, SMALLER, NONE = Estimate(0.30, 0.22, 0.37), Estimate(0.15, 0.08, 0.21), Estimate(0.02, -0.03, 0.07)


def test_a_paper_model_is_judged_by_its_own_interval():
    full = Design("ViT-B-32/openai")
    assert [judge(CLAIM, estimate, full).verdict for estimate in (GAP, Estimate(-0.2, -0.3, -0.1), NONE)] == [
        "supports", "contradicts", "cannot tell"]
    found = judge(CLAIM, GAP, full)
    assert found.ours == "+30.0 points [+22.0, +37.0]" and not found.recovery and found.control == ""


def test_a_planted_cause_counts_only_against_its_control():
    # the planted model's own gap is large, but the control has one almost as large: not recovered
    control, contrast = Estimate(0.27, 0.20, 0.34), Estimate(0.03, -0.02, 0.08)
    found = judge(CLAIM, GAP, planted_design(), control, contrast)
    assert found.verdict == "not recovered" and found.recovery
    assert found.contrast == "+3.0 points [-2.0, +8.0]" and found.control == "+27.0 points [+20.0, +34.0]"
    assert "The control has a gap of its own" in found.note and "nothing its world plants explains it" in found.note
    assert judge(CLAIM, GAP, planted_design(), SMALLER, Estimate(0.15, 0.06, 0.24)).verdict == "recovered"
    # the wrong side of 0 is no recovery either
    assert judge(CLAIM, GAP, planted_design(), SMALLER, Estimate(-0.15, -0.24, -0.06)).verdict == "not recovered"


def test_the_controls_own_gap_is_named_when_its_world_plants_a_cause():
    claim = Claim("male", CLAIM.text, causes=("male_unmarked", "male_varied"))
    found = judge(claim, GAP, planted_design(plants=("male_unmarked", "male_varied"), control_plants=("male_varied",)),
                  SMALLER, Estimate(0.15, 0.06, 0.24))
    assert found.verdict == "recovered"
    assert "its world plants Male pictures that vary more, a cause behind this claim" in found.note
    assert "The contrast isolates captions that leave Male unnamed; Male pictures that vary more" in found.note


def test_what_the_world_does_not_plant_gets_no_verdict_on_the_paper():
    found = judge(CLAIM, GAP, planted_design(plants=()), SMALLER, Estimate(0.15, 0.06, 0.24))
    assert found.verdict == "not planted" and "This world plants nothing behind this claim" in found.note
    assert found.ours == "+30.0 points [+22.0, +37.0]"  # the numbers stand


def test_bad_designs_are_said_not_failed():
    same = judge(CLAIM, GAP, planted_design(control="trained:planted"), GAP, Estimate(0.0, 0.0, 0.0))
    assert same.verdict == "no contrast" and "The control is the planted model: no contrast." in same.note
    alone = judge(CLAIM, GAP, planted_design(control=None))
    assert alone.verdict == "recovered" and "No control: the verdict is about the planted model alone" in alone.note
    assert judge(CLAIM, NONE, planted_design(control=None)).verdict == "not recovered"
    assert "the page recovered 1 on the planted model alone, with no control" in text(findings_box([alone]))
    undefined = judge(CLAIM, Estimate(float("nan"), how="no pictures"), planted_design())
    assert undefined.verdict == "cannot test" and undefined.note.startswith("undefined: no pictures")


def test_estimates_never_print_a_zero_width_interval():
    assert Estimate(0.562, 0.562, 0.562).text() == "0.562 (every resample the same)"
    assert Estimate(0.562, how="all 40 pictures", exact=True).text() == "0.562 (exact: all 40 pictures)"
    assert Estimate(0.562, exact=True).side() == 1 and Estimate(0.0, exact=True).side() == 0
    assert Estimate(float("nan"), how="no value").text() == "undefined (no value)"
    assert Estimate(0.1, -0.2, 0.3).side() == 0 and Estimate(0.1, float("nan"), 0.3).side() == 0


def test_design_reads_what_each_recipe_plants():
    planted = design("trained:face-clip", "trained:face-clip?uniform_named=0.5", {"trained:face-clip": "planted"})
    assert planted.trained and planted.model_name == "planted"
    assert {"white_unmarked", "male_unmarked", "middle_unmarked", "white_varied"} == set(planted.plants)
    assert set(planted.control_plants) == {"white_varied"}
    assert not design("ViT-B-32/openai").trained and design("ViT-B-32/openai").plants == frozenset()
    assert design("trained:face-clip", "").control is None


FINDINGS = [Finding("A above B", "A 40%, B 10%", "A 35% [30, 40], B 12% [9, 15]", "supports"),
            Finding("C above D", "C 0.6, D 0.5", "C 0.5 [0.4, 0.6], D 0.5 [0.4, 0.6]", "cannot tell"),
            Finding("E above F", "E 2, F 1", "E 1 [0.9, 1.1], F 2 [1.9, 2.1]", "contradicts")]


def test_the_box_counts_the_verdicts_of_papers_models():
    plain = text(findings_box(FINDINGS))
    assert "Findings: paper vs ours" in plain and "(supports 1, contradicts 1, cannot tell 1)" in plain
    assert "The 3 published claims this page tests, and what this run says of each" in plain
    assert "planted truth" not in plain and "planted − control" not in plain and FULL_PROFILE_ONLY not in plain
    assert "The published claim this page tests, and what this run says of it (supports 1)" in text(
        findings_box(FINDINGS[:1]))


def test_a_planted_box_shows_planted_control_contrast_and_never_judges_the_paper():
    rows = [judge(CLAIM, GAP, planted_design(), SMALLER, Estimate(0.15, 0.06, 0.24)),
            judge(CLAIM, GAP, planted_design(), Estimate(0.27, 0.20, 0.34), Estimate(0.03, -0.02, 0.08)),
            judge(Claim("x", "X beats Y", "X 1"), GAP, planted_design(plants=()))]
    plain = text(findings_box(rows, planted="A world that plants Male's namelessness.", control="The control: even."))
    assert "planted model control planted − control verdict" in plain
    assert "(recovered 1, not recovered 1, this world plants no such cause 1)" in plain
    assert plain.count(FULL_PROFILE_ONLY) == 3 and "supports" not in plain and "contradicts" not in plain
    assert "+15.0 points [+6.0, +24.0]" in plain and "published: Male 26.6%, Female 15.2%" in plain
    assert ("Of the 2 claims whose cause this world plants, the page recovered 1 beyond its control" in plain
            and "not: Male images are left unmarked more often than Female images" in plain)
    assert "The planted truth. A world that plants Male's namelessness. The control: even." in plain
    assert "(note 1)" in plain and "The control has a gap of its own" in plain


def test_a_finding_survives_a_card():
    row = judge(CLAIM, GAP, planted_design(), SMALLER, Estimate(0.15, 0.06, 0.24))
    back = finding_from_record(finding_record(row))
    assert back == row and back.control_spec == "trained:control"
    assert back.estimates["contrast"] == Estimate(0.15, 0.06, 0.24)
    nan = finding_from_record(finding_record(judge(CLAIM, Estimate(float("nan")), planted_design())))
    assert math.isnan(nan.estimates["model"].value)


def test_bad_input_gets_one_clear_error():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Finding("x", "y", "z", "maybe")
    with pytest.raises(ValueError, match="at least one Finding"):
        findings_box([])
