"""The sentences Part I's pages compute from their tables (``markedness.findings``), and the note on a
text-side WEAT of a model trained in the book, checked on hand-made tables; and the claims of the
"Findings: paper vs ours" box judged from tables whose answer is known."""

import json

import numpy as np
import pandas as pd
import pytest

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


# --------------------------------------------------------------------------- the claims against their controls
GENDERS = ("Female", "Male")


def face_records(per_cell: int = 4) -> pd.DataFrame:
    """Every race × gender × age cell, ``per_cell`` pictures each, as FairFace labels them."""
    cells = [(race, gender, age) for race in RACES for gender in GENDERS for age in AGES for _ in range(per_cell)]
    return pd.DataFrame(cells, columns=["race", "gender", "age"])


def planted_flags(records, rng, white=0.1, male=0.1, middle=0.1, base=0.2):
    """Unmarked flags whose rates are ``base`` plus the planted lift of White, Male and the middle ages."""
    lift = {"race": np.where(records.race == "White", white, 0.0), "gender": np.where(records.gender == "Male", male, 0.0),
            "age": np.where(records.age.isin(mk_findings.MIDDLE_AGES), middle, 0.0)}
    return pd.DataFrame({family: rng.random(len(records)) < base + lift[family] for family in ("race", "gender", "age")})


PLANTED, CONTROL = "trained:face-clip", "trained:face-clip?uniform_named=0.5"


def test_unmarked_statistics_are_the_claims_own_gaps():
    rng = np.random.default_rng(0)
    records = face_records(3)
    flags = planted_flags(records, rng)
    statistics = mk_findings.rate_statistics(mk_findings.Sample(records, flags=flags))
    ones = np.ones((1, len(records)))
    race = flags.race.groupby(records.race).mean()
    assert statistics["white_unmarked"](ones)[0] == pytest.approx(race["White"] - race.drop("White").max())
    gender = flags.gender.groupby(records.gender).mean()
    assert statistics["male_unmarked"](ones)[0] == pytest.approx(gender["Male"] - gender["Female"])
    middle = records.age.isin(mk_findings.MIDDLE_AGES)
    assert statistics["middle_unmarked"](ones)[0] == pytest.approx(flags.age[middle].mean() - flags.age[~middle].mean())


def test_a_planted_gap_the_control_shares_is_not_recovered():
    # the planted signal is a contrast: the planted model's Male gap of 30 points against a control with the same gap
    rng = np.random.default_rng(1)
    records = face_records(12)
    planted = mk_findings.Sample(records, flags=planted_flags(records, rng, white=0.4, male=0.3, middle=0.3), identity="w")
    shared = mk_findings.Sample(records, flags=planted_flags(records, rng, white=0.0, male=0.3, middle=0.0), identity="w")
    found = {f.key: f for f in mk_findings.unmarked_findings(PLANTED, planted, {CONTROL: shared}, n_boot=300)}
    assert found["white_unmarked"].verdict == "recovered" and found["middle_unmarked"].verdict == "recovered"
    assert found["male_unmarked"].verdict == "not recovered"  # today's "supports" on the planted model alone
    assert "The control has a gap of its own" in found["male_unmarked"].note
    assert found["white_unmarked"].estimates["contrast"].value == pytest.approx(
        found["white_unmarked"].estimates["model"].value - found["white_unmarked"].estimates["control"].value)


def test_placebo_the_control_in_the_planted_models_place_recovers_nothing():
    # the planted design (what the recipe plants) with the control's own pictures in both places, and with the
    # planted model's and the control's swapped: every claim comes out "not recovered"
    rng = np.random.default_rng(2)
    records = face_records(10)
    planted = mk_findings.Sample(records, flags=planted_flags(records, rng, white=0.4, male=0.4, middle=0.3), identity="w")
    control = mk_findings.Sample(records, flags=planted_flags(records, rng, white=0.05, male=0.2, middle=0.05), identity="w")
    for model, against in ((control, control), (control, planted)):
        verdicts = [f.verdict for f in mk_findings.unmarked_findings(PLANTED, model, {CONTROL: against}, n_boot=300)]
        assert verdicts == ["not recovered"] * 3, verdicts


def test_a_control_on_other_pictures_is_resampled_apart():
    rng = np.random.default_rng(3)
    records = face_records(8)
    planted = mk_findings.Sample(records, flags=planted_flags(records, rng, male=0.3), identity="one world")
    other = mk_findings.Sample(records, flags=planted_flags(records, rng, male=0.0), identity="another world")
    row = [f for f in mk_findings.unmarked_findings(PLANTED, planted, {CONTROL: other}, n_boot=200)
           if f.key == "male_unmarked"][0]
    assert "independent bootstrap" in row.estimates["contrast"].how


def test_bad_controls_are_said_not_failed():
    rng = np.random.default_rng(4)
    records = face_records(6)
    planted = mk_findings.Sample(records, flags=planted_flags(records, rng, white=0.4, male=0.4, middle=0.4), identity="w")
    same = mk_findings.unmarked_findings(PLANTED, planted, {PLANTED: planted}, n_boot=100)
    assert {f.verdict for f in same} == {"no contrast"} and "the control is the planted model" in same[0].note.lower()
    alone = mk_findings.unmarked_findings(PLANTED, planted, {}, n_boot=100)
    assert {f.verdict for f in alone} == {"recovered"} and all("planted model alone" in f.note for f in alone)
    # a world parameter that removes the planted cause: every claim reads "this world plants no such cause"
    uniform = mk_findings.unmarked_findings("trained:face-clip?uniform_named=0.8", planted, {CONTROL: planted}, n_boot=100)
    assert {f.verdict for f in uniform} == {"not planted"}
    # the papers' models: judged on their own intervals, never "recovered"
    paper = mk_findings.unmarked_findings("ViT-B-32/openai", planted, {}, n_boot=100)
    assert {f.verdict for f in paper} == {"supports"}


def test_self_similarity_claims_take_a_row_per_control_that_removes_a_cause():
    # White pictures spread more in the planted world (variety); each control removes one of the two causes
    rng = np.random.default_rng(5)
    records = face_records(8)

    def embeddings(white_spread):
        centre = np.zeros((len(records), 6)); centre[:, 0] = 1.0
        spread = np.where(records.race == "White", white_spread, 0.3)[:, None]
        return centre + spread * rng.normal(size=(len(records), 6))

    planted = mk_findings.Sample(records, embeddings=embeddings(1.2), identity="varied")
    uniform = mk_findings.Sample(records, embeddings=embeddings(1.2), identity="varied")
    even = mk_findings.Sample(records, embeddings=embeddings(0.3), identity="even")
    novariety = "trained:face-clip?world_varied_race_variety=0.2"
    found = mk_findings.self_similarity_findings(PLANTED, planted, {CONTROL: uniform, novariety: even},
                                                 names={novariety: "no variety"}, n_boot=300)
    white = [f for f in found if f.key == "white_least"]
    assert len(white) == 2 and white[1].claim.endswith("(against no variety)")
    assert white[1].verdict == "recovered"  # the variety, against pictures without it
    assert white[0].verdict == "not recovered"  # the same spread under the uniform control: no reporting effect
    assert [f.verdict for f in found if f.key == "female_more"] == ["not planted"]
    self = mk_findings.self_similarity_statistics(planted)["white_least"](np.ones((1, len(records))))[0]
    by_race = {race: mk.self_similarity_by_group(records[records.race == race], planted.embeddings[records.race == race],
                                                 "race").self_similarity.iloc[0] for race in RACES}
    assert self == pytest.approx(min(v for race, v in by_race.items() if race != "White") - by_race["White"])


def test_the_summed_score_age_claim_cannot_be_tested():
    rng = np.random.default_rng(6)
    records = face_records(4)
    sample = mk_findings.Sample(records, flags=planted_flags(records, rng), identity="w")
    summed = mk_findings.likelihood_findings(PLANTED, sample, {CONTROL: sample}, score="sum", age_continues_person=True,
                                             n_boot=50)
    assert [f.verdict for f in summed][2] == "cannot test" and "summed log-likelihood" in summed[2].ours
    assert all(f.claim.endswith(", by likelihood") for f in summed[:2])
    assert summed[0].published.startswith("CLIP (the paper): ")


def test_samples_refuse_what_they_cannot_read():
    records = face_records(1)
    with pytest.raises(ValueError, match="lack the label column"):
        mk_findings.Sample(records.drop(columns="age"))
    with pytest.raises(ValueError, match="one row per picture"):
        mk_findings.Sample(records, flags=pd.DataFrame({"race": [True]}))


def test_a_control_trained_on_another_world_is_measured_on_that_world():
    root = controls.control_data_root("world?val_per_cell=40", PLANTED, "trained:face-clip?world_varied_race_variety=0.2")
    assert root == "world?val_per_cell=40&varied_race_variety=0.2"
    assert controls.control_data_root("world?val_per_cell=40", PLANTED, CONTROL) == "world?val_per_cell=40"
    assert controls.control_data_root(None, PLANTED, "trained:face-clip?world_varied_race_variety=0.2") is None
    assert controls.control_data_root("world", "ViT-B-32/openai", CONTROL) == "world"


def reporting_gaps(widest=(30.0, 20.0, 40.0), smallest=(1.0, -3.0, 4.0), control=(0.5, -2.0, 3.0)) -> pd.DataFrame:
    rows = [("no gap", 0.9, 0.9, 0.0, False, smallest), ("widest", 0.1, 0.9, 0.8, False, widest),
            ("control", 0.5, 0.5, 0.0, True, control)]
    return pd.DataFrame([{"condition": name, "red_named": red, "blue_named": blue, "reporting_gap": gap, "control": is_control,
                          "gap_pp": value[0], "ci_low_pp": value[1], "ci_high_pp": value[2]}
                         for name, red, blue, gap, is_control, value in rows])


def by_seed(widest, smallest, control) -> pd.DataFrame:
    return pd.DataFrame([{"condition": name, "seed": seed, "gap_pp": gap}
                         for name, gaps in (("widest", widest), ("no gap", smallest), ("control", control))
                         for seed, gap in enumerate(gaps)])


SPECS = {"widest": "trained:world-clip?red_named=0.1&blue_named=0.9", "no gap": "trained:world-clip?red_named=0.9&blue_named=0.9",
         "control": "trained:world-clip?red_named=0.5&blue_named=0.5"}


def test_reporting_findings_contrast_the_widest_gap_with_its_controls_seed_by_seed():
    from scipy import stats

    from vlbias import book

    published = book.published("markedness_wolfe2022")
    seeds = by_seed([30.0, 35.0, 25.0, 32.0], [1.0, -2.0, 3.0, 0.0], [2.0, -1.0, 0.0, 1.0])
    found = mk_findings.reporting_findings(reporting_gaps(), seeds, published, SPECS)
    assert [f.verdict for f in found] == ["recovered", "recovered"]
    assert found[0].published.startswith("White unmarked in 47.9% of images, every other race under 16.9%")
    differences = np.array([28.0, 36.0, 25.0, 31.0])  # widest minus control, seed by seed
    half = stats.t.ppf(0.975, 3) * differences.std(ddof=1) / 2
    contrast = found[0].estimates["contrast"]
    assert contrast.value == pytest.approx(differences.mean())
    assert (contrast.low, contrast.high) == pytest.approx((differences.mean() - half, differences.mean() + half))
    # a control that strays as far as the planted gap: not recovered (the seeds are what varies)
    strays = mk_findings.reporting_findings(reporting_gaps(), by_seed([30.0, 35.0, 25.0], [0, 0, 0], [60.0, -50.0, 20.0]),
                                            published, SPECS)
    assert strays[0].verdict == "not recovered"
    # without the specs the rows are judged as a paper's model's would be: no planted analogue
    assert mk_findings.reporting_findings(reporting_gaps(), seeds, published)[0].verdict == "supports"
    gaps = reporting_gaps()
    assert mk_findings.reporting_findings(gaps[gaps["control"]], seeds)[0].verdict == "cannot test"  # no reporting gap
    assert [f.verdict for f in mk_findings.reporting_findings(gaps.iloc[1:], seeds, None, SPECS)][1] == "cannot test"
    # placebo: the control's seeds in the widest gap's place, against the control and the smallest gap
    placebo = by_seed([2.0, -1.0, 0.0, 1.0], [1.0, -2.0, 3.0, 0.0], [2.0, -1.0, 0.0, 1.0])
    assert [f.verdict for f in mk_findings.reporting_findings(reporting_gaps(widest=(0.5, -2.0, 3.0)), placebo,
                                                              published, SPECS)] == ["not recovered"] * 2
    text = mk_findings.reporting_planted(gaps, epochs=8, share_spread=0.8)
    assert "reporting gaps up to 0.8" in text and "from 10% to 90%" in text
