"""The "Findings: paper vs ours" box (``vlbias.findings``): verdicts reached from intervals, and the
planted truth on a demo world."""

import re

import pytest

from vlbias.findings import Finding, difference_verdict, findings_box, order_verdict


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
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", box.data))).strip()


FINDINGS = [Finding("A above B", "A 40%, B 10%", "A 35% [30, 40], B 12% [9, 15]", "supports"),
            Finding("C above D", "C 0.6, D 0.5", "C 0.5 [0.4, 0.6], D 0.5 [0.4, 0.6]", "cannot tell"),
            Finding("E above F", "E 2, F 1", "E 1 [0.9, 1.1], F 2 [1.9, 2.1]", "contradicts")]


def test_the_box_counts_the_verdicts_and_says_which_planted_causes_were_recovered():
    plain = text(findings_box(FINDINGS))
    assert "Findings: paper vs ours" in plain and "(supports 1, contradicts 1, cannot tell 1)" in plain
    assert "The 3 published claims this page tests, and what this run says of each" in plain
    assert "planted truth" not in plain
    planted = text(findings_box(FINDINGS, planted="a model trained on a world", causes=[True, True, False]))
    assert "Of the 2 claims whose cause this world plants, the page recovered 1 beyond its intervals (not: C above D)" in planted
    assert "The world plants no cause for: E above F" in planted
    one = text(findings_box(FINDINGS[:1], planted="a model"))
    assert "Of the 1 claim whose cause this world plants, the page recovered 1 beyond its intervals." in one
    assert "The published claim this page tests, and what this run says of it (supports 1)" in one
    # a claim this run cannot test has no verdict for the world to explain
    untested = FINDINGS[:1] + [Finding("G is 2,511", "2,511", "40, not the release", "cannot test"), FINDINGS[2]]
    planted = text(findings_box(untested, planted="A world.", causes=[True, False, False]))
    assert "The world plants no cause for: E above F;" in planted and "G is 2,511" not in planted.split("planted truth")[1]
    none = text(findings_box(FINDINGS[:1], planted="A model.", causes=[False]))
    assert "This world plants no cause for the claims this run tests" in none and "recovered" not in none
    # a planted cause whose claim this run cannot test (01d's summed age column) is neither recovered nor missed
    planted = text(findings_box(untested, planted="A world.", causes=[True, True, False]))
    assert "Of the 1 claim whose cause this world plants, the page recovered 1 beyond its intervals." in planted
    assert "The world plants a cause this run cannot test for: G is 2,511." in planted
    only = text(findings_box(untested[1:2], planted="A world.", causes=[True]))
    assert "plants no cause for the claims this run tests" in only and "cannot test for: G is 2,511." in only


def test_bad_input_gets_one_clear_error():
    with pytest.raises(ValueError, match="verdict must be one of"):
        Finding("x", "y", "z", "maybe")
    with pytest.raises(ValueError, match="causes has 1 entries for 3 findings"):
        findings_box(FINDINGS, planted="a model", causes=[True])
    with pytest.raises(ValueError, match="at least one Finding"):
        findings_box([])
