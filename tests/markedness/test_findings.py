"""The sentences Part I's pages compute from their tables (``markedness.findings``), and the note on a
text-side WEAT of a model trained in the book, checked on hand-made tables; and the claims of the
"Findings: paper vs ours" box judged from tables whose answer is known."""

import json

import numpy as np
import pandas as pd

from vlbias import markedness as mk
from vlbias.markedness import controls
from vlbias.markedness import findings as mk_findings
from vlbias.markedness.groups import AGES, RACES


def _table(rows):
    return pd.DataFrame(rows, columns=["group", "rate", "low", "high"])


def test_a_top_group_clear_of_the_runner_up_is_beyond_noise():
    text = mk.ranking_sentence(_table([("A", 40.0, 30.0, 50.0), ("B", 10.0, 5.0, 20.0), ("C", 2.0, 0.5, 6.0)]),
                               "group", "rate", "low", "high", "unmarked rate", unit="%")
    assert text.startswith("Highest unmarked rate: **A**, 40.0% [30.0, 50.0]%; lowest: **C**, 2.0% [0.5, 6.0]%.")
    assert "A's interval lies above the runner-up's (B, [5.0, 20.0]%): the top of the ranking is beyond" in text


def test_overlapping_intervals_are_within_noise():
    text = mk.ranking_sentence(_table([("A", 40.0, 30.0, 50.0), ("B", 35.0, 25.0, 45.0)]), "group", "rate", "low",
                               "high", "unmarked rate")
    assert "overlaps the runner-up's (B" in text and "within sampling noise" in text


def test_degenerate_tables_say_why_there_is_nothing_to_read():
    equal = mk.ranking_sentence(_table([("A", 0.0, 0.0, 3.0), ("B", 0.0, 0.0, 3.0)]), "group", "rate", "low", "high",
                                "unmarked rate", unit="%")
    assert equal.startswith("Every group has the same unmarked rate, 0.0%") and "same side" in equal
    zero_width = mk.ranking_sentence(_table([("A", 0.7, 0.7, 0.7), ("B", 0.6, 0.6, 0.6)]), "group", "rate", "low",
                                     "high", "self-similarity", digits=3)
    assert "zero width" in zero_width and "beyond sampling noise" not in zero_width
    assert "No group" in mk.ranking_sentence(_table([]), "group", "rate", "low", "high", "x")
    assert "nothing to compare" in mk.ranking_sentence(_table([("A", 1.0, 0.0, 2.0)]), "group", "rate", "low", "high", "x")


def test_across_models_names_each_models_top_group():
    comparison = pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "family": "race", "group": ["A", "B", "A", "B"],
                               "rate": [50.0, 10.0, 20.0, 30.0]})
    text = mk.across_models_sentence(comparison, "race", "rate", "unmarked rate", unit="%")
    assert text == ("Highest unmarked rate by race, per model: m1: A highest (50.0%; lowest B, 10.0%); "
                    "m2: B highest (30.0%; lowest A, 20.0%).")


def test_the_weat_note_counts_the_words_a_trained_encoder_saw(tmp_path, monkeypatch):
    from vlbias.models import trained

    (tmp_path / "training.json").write_text(json.dumps({"caption_words": ["a", "photo", "of", "white", "black", "man"]}))
    monkeypatch.setattr(trained, "trained_checkpoint", lambda body: tmp_path)
    tests = [{"X": ["a White man"], "Y": ["a Black man"], "A": ["joy", "love"], "B": ["agony", "war"]}]
    note = controls.unseen_words_note("trained:face-clip", tests)
    assert "holding 4 of the 8 words these tests use (a, black, man, white)" in note and "as noise" in note
    # every word seen: no note; a hub model: no note (its training saw them)
    (tmp_path / "training.json").write_text(json.dumps({"caption_words": ["white", "black", "man", "a", "joy", "love",
                                                                          "agony", "war"]}))
    assert controls.unseen_words_note("trained:face-clip", tests) == ""
    assert controls.unseen_words_note("openai/clip-vit-base-patch32", tests) == ""
    (tmp_path / "training.json").write_text(json.dumps({"history": []}))  # trained before words were recorded
    assert controls.unseen_words_note("trained:face-clip", tests) == ""


def table(values: dict, width: float) -> pd.DataFrame:
    return pd.DataFrame({"group": list(values), "unmarked_%": list(values.values()),
                         "ci_low_%": [v - width for v in values.values()], "ci_high_%": [v + width for v in values.values()]})


def flags_with_middle_ages(middle: bool, rest: bool):
    records = pd.DataFrame({"age": np.repeat(list(AGES), 20)})
    inside = records["age"].isin(mk_findings.MIDDLE_AGES)
    return records, pd.DataFrame({"age": np.where(inside, middle, rest)})


def test_unmarked_findings_support_contradict_or_cannot_tell_from_the_intervals():
    races = {race: (40.0 if race == "White" else 10.0) for race in RACES}
    single = {"race": table(races, 5), "gender": table({"Male": 30.0, "Female": 10.0}, 5)}
    records, flags = flags_with_middle_ages(True, False)
    found = mk_findings.unmarked_findings(single, records, flags)
    assert [f.verdict for f in found] == ["supports"] * 3
    assert found[0].ours.startswith("White 40.0% [35.0, 45.0]; the highest other")
    # White below another race beyond the intervals; Female above Male; the young and old unmarked more
    races["Black"] = 60.0
    single = {"race": table(races, 5), "gender": table({"Male": 10.0, "Female": 30.0}, 5)}
    records, flags = flags_with_middle_ages(False, True)
    assert [f.verdict for f in mk_findings.unmarked_findings(single, records, flags)] == ["contradicts"] * 3
    # overlapping intervals: no verdict either way
    single = {"race": table({race: 20.0 + (race == "White") for race in RACES}, 5),
              "gender": table({"Male": 21.0, "Female": 20.0}, 5)}
    records = pd.DataFrame({"age": np.repeat(list(AGES), 20)})
    flags = pd.DataFrame({"age": np.tile([True, False], len(records) // 2)})
    assert [f.verdict for f in mk_findings.unmarked_findings(single, records, flags)] == ["cannot tell"] * 3


def test_self_similarity_findings_put_white_lowest():
    values = {race: (0.50 if race == "White" else 0.70) for race in RACES}
    single = {"race": table(values, 0.05).rename(columns={"unmarked_%": "mean", "ci_low_%": "ci_low", "ci_high_%": "ci_high"}),
              "gender": table({"Female": 0.6, "Male": 0.5}, 0.02).rename(
                  columns={"unmarked_%": "mean", "ci_low_%": "ci_low", "ci_high_%": "ci_high"})}
    assert [f.verdict for f in mk_findings.self_similarity_findings(single)] == ["supports", "supports"]


def test_the_face_world_plants_the_papers_causes_and_the_control_plants_no_reporting_cause():
    planted = mk_findings.face_clip_causes("trained:face-clip")
    assert planted == {"white_unmarked": True, "male_unmarked": True, "middle_unmarked": True, "white_varied": True,
                       "male_varied": False}
    control = mk_findings.face_clip_causes("trained:face-clip?uniform_named=0.5")
    assert not any(control[key] for key in ("white_unmarked", "male_unmarked", "middle_unmarked"))
    assert control["white_varied"]  # the pictures are the same world's
    assert mk_findings.face_clip_causes("ViT-B-32/openai") is None
    assert mk_findings.planted("ViT-B-32/openai", ["white_unmarked"]) == (None, None)
    text, causes = mk_findings.planted("trained:face-clip?gender_named=0.1", ["male_unmarked", "white_unmarked"])
    assert causes == [False, True] and "mini-CLIP" in text


def reporting_gaps(widest=(30.0, 20.0, 40.0), smallest=(1.0, -3.0, 4.0), control=(0.5, -2.0, 3.0)) -> pd.DataFrame:
    rows = [("no gap", 0.9, 0.9, 0.0, False, smallest), ("widest", 0.1, 0.9, 0.8, False, widest),
            ("control", 0.5, 0.5, 0.0, True, control)]
    return pd.DataFrame([{"condition": name, "red_named": red, "blue_named": blue, "reporting_gap": gap, "control": is_control,
                          "gap_pp": value[0], "ci_low_pp": value[1], "ci_high_pp": value[2]}
                         for name, red, blue, gap, is_control, value in rows])


def test_reporting_findings_order_the_widest_gap_against_the_control_and_the_smallest_gap():
    from vlbias import book

    published = book.published("markedness_wolfe2022")
    found = mk_findings.reporting_findings(reporting_gaps(), published)
    assert [f.verdict for f in found] == ["supports", "supports"]
    # the published facts: White's unmarked rate and the bound on every other race (Figure 4)
    assert found[0].published.startswith("White unmarked in 47.9% of images, every other race under 16.9%")
    assert "red named 0.1, blue 0.9: +30.0 points [+20.0, +40.0]" in found[0].ours
    assert found[0].ours.endswith("; the equally-named control, red named 0.5, blue 0.5: +0.5 points [-2.0, +3.0]")
    # the widest gap's interval holds 0: within noise; below the smallest gap's: reversed
    found = mk_findings.reporting_findings(reporting_gaps(widest=(2.0, -1.0, 5.0), smallest=(10.0, 6.0, 14.0)))
    assert [f.verdict for f in found] == ["cannot tell", "contradicts"]
    assert mk_findings.reporting_findings(reporting_gaps(widest=(-9.0, -12.0, -6.0)))[0].verdict == "contradicts"
    gaps = reporting_gaps()
    without_control = mk_findings.reporting_findings(gaps[~gaps["control"]])
    assert [f.verdict for f in without_control] == ["supports", "supports"] and "control" not in without_control[0].ours
    assert mk_findings.reporting_findings(gaps[gaps["control"]])[0].verdict == "cannot test"  # no reporting gap at all
    assert [f.verdict for f in mk_findings.reporting_findings(gaps.iloc[1:])][1] == "cannot test"  # one reporting gap
    text, causes = mk_findings.reporting_planted(gaps, epochs=8, share_spread=0.8)
    assert causes == [True, True] and "reporting gaps up to 0.8" in text and "from 10% to 90%" in text
    assert mk_findings.reporting_planted(gaps.iloc[[0, 2]], epochs=8, share_spread=0.0)[1] == [False, False]
