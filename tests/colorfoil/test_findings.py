"""02b's generated sentences: chance per foil count, verdicts against intervals (Wilson's closed form,
computed here independently with scipy's normal quantile), ties and zero-width intervals said."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.colorfoil import findings as cff


def _wilson(k, n, z=stats.norm.ppf(0.975)):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)


def _matrix(correct: list[bool], k: int = 1) -> np.ndarray:
    # caption first; a correct row has the caption above every foil
    return np.array([[1.0] + [0.0] * k if c else [0.0] + [1.0] * k for c in correct])


def test_chance_per_foil_count():
    assert [cff.chance_percent(k) for k in (1, 2, 4)] == pytest.approx([50, 100 / 3, 20])
    with pytest.raises(ValueError, match="k=0"):
        cff.chance_percent(0)


def test_verdicts_follow_the_wilson_interval():
    scores = {"good": _matrix([True] * 40 + [False] * 10), "coin": _matrix([True] * 26 + [False] * 24),
              "bad": _matrix([True] * 5 + [False] * 45)}
    table = cff.against_chance(scores, labels={"good": "G"}).set_index("model")
    assert table.loc["good", "label"] == "G" and table.loc["coin", "label"] == "coin"
    for name, hits in (("good", 40), ("coin", 26), ("bad", 5)):
        low, high = _wilson(hits, 50)
        assert table.loc[name, ["ci_low_%", "ci_high_%"]].tolist() == pytest.approx([low, high])
    assert table["verdict"].to_dict() == {"good": "above chance", "coin": "at chance", "bad": "below chance"}
    assert "G ranks the caption first in 80.0%" in cff.chance_sentences(table.reset_index())


def test_tied_scores_are_said_to_be_ties():
    tied = np.zeros((20, 2))
    table = cff.against_chance({"blind": tied})
    assert table.loc[0, "ties"] == 20 and table.loc[0, "accuracy_%"] == 0
    assert "every caption tied with a foil" in cff.chance_sentences(table)


def test_no_pairs_is_undefined():
    table = cff.against_chance({"empty": np.full((3, 2), np.nan)})
    assert table.loc[0, "n"] == 0 and "undefined" in cff.chance_sentences(table)


def _paired(low, high, difference, a="m", b="d"):
    return pd.DataFrame([{"model_a": a, "model_b": b, "difference_pp": difference, "low_pp": low, "high_pp": high,
                          "p_mcnemar": 0.01}])


def test_the_matcher_comparison_reads_the_interval_in_either_order():
    assert "holds here" in cff.matcher_comparison(_paired(2.0, 9.0, 5.0), "m", "d")
    assert "reversed" in cff.matcher_comparison(_paired(2.0, 9.0, 5.0, a="d", b="m"), "m", "d")
    assert "-5.0 points" in cff.matcher_comparison(_paired(2.0, 9.0, 5.0, a="d", b="m"), "m", "d")
    assert "do not separate" in cff.matcher_comparison(_paired(-2.0, 9.0, 3.0), "m", "d")
    assert "zero width" in cff.matcher_comparison(_paired(0.0, 0.0, 0.0), "m", "d")
    assert "trained here" not in cff.matcher_comparison(_paired(2.0, 9.0, 5.0), "m", "d")
    trained = _paired(2.0, 9.0, 5.0, a="trained:caption-matcher", b="trained:caption-clip")
    assert "plants no advantage for either kind" in cff.matcher_comparison(trained, "trained:caption-matcher",
                                                                            "trained:caption-clip")
    with pytest.raises(ValueError, match="no row compares"):
        cff.matcher_comparison(_paired(0.0, 1.0, 0.5), "m", "x")


def test_zero_width_intervals_are_said_in_words_and_never_printed_as_an_interval():
    text = cff.paired_sentence(pd.concat([_paired(0.0, 0.0, 0.0), _paired(1.0, 3.0, 2.0, a="x", b="y")]),
                               {"m": "M"})
    assert "excludes 0 for 1" in text and "Right and wrong on exactly the same pairs: M and d." in text
    assert "[" not in text and "Zero-width" not in text
    shown = cff.paired_display(pd.concat([_paired(0.0, 0.0, 0.0), _paired(1.0, 3.0, 2.0, a="x", b="y")]))
    assert shown["interval_pp"].tolist() == ["none: the same answers on every pair", "[+1.0, +3.0]"]
    assert "low_pp" not in shown and "high_pp" not in shown


# --------------------------------------------------------------------------- 02b's claims, judged with their controls

PLANTED, CONTROL = "trained:caption-clip?colour_words=1", "trained:caption-clip?colour_words=0"
MATCHER = "trained:caption-matcher"


def _correct(n: int, rate: float, seed: int) -> np.ndarray:
    """Exactly ``round(rate * n)`` right answers among ``n`` pairs, in a seeded order."""
    right = np.zeros(n, bool)
    right[:round(rate * n)] = True
    return np.random.default_rng(seed).permutation(right)


def _scores(correct: dict, k: int = 4) -> dict:
    """{(spec, data set): score matrix} with ``k`` foils from {spec: right answers}, split over two data sets."""
    out = {}
    for spec, right in correct.items():
        half = len(right) // 2
        for name, part in (("coco", right[:half]), ("flickr30k", right[half:])):
            out[spec, name] = _matrix(list(part), k)
    return out


@pytest.fixture(scope="module")
def published():
    from vlbias import book

    return book.published("colorfoil_table1_samin2024")


def _paired_se(a: np.ndarray, b: np.ndarray) -> float:
    """The standard error of a difference of two paired proportions, from the discordant pairs (closed form)."""
    n = a.size
    only_a, only_b = np.sum(a & ~b) / n, np.sum(~a & b) / n
    return float(np.sqrt((only_a + only_b - (only_a - only_b) ** 2) / n))


def test_a_planted_dual_encoder_is_recovered_against_its_control_on_the_same_pairs(published):
    planted, control = _correct(200, 0.8, 1), _correct(200, 0.5, 2)
    scores = _scores({PLANTED: planted, CONTROL: control})
    kinds = {PLANTED: "dual", CONTROL: "dual"}
    first, second = cff.evaluation_findings(PLANTED, scores, kinds, {PLANTED: CONTROL}, published)
    assert first.verdict == "recovered" and first.control_spec == CONTROL
    model, theirs, contrast = (first.estimates[name] for name in ("model", "control", "contrast"))
    assert model.value == pytest.approx(0.8 - 0.5) and theirs.value == pytest.approx(0.0)
    assert contrast.value == pytest.approx(0.3)  # 80% against 50% on the same 200 pairs
    # the paired bootstrap's interval is as wide as the closed form of two paired proportions says
    half = (contrast.high - contrast.low) / 2
    assert half == pytest.approx(1.96 * _paired_se(planted, control), rel=0.2)
    assert contrast.low > 0 and "paired bootstrap over 200 pairs" in contrast.how
    assert "80.0%" in first.note and "50.0%" in first.note and "same 200 pairs" in first.note
    assert first.ours.startswith("+30.0 points [") and first.contrast.startswith("+30.0 points [")
    # no pairwise matcher in this run
    assert second.verdict == "cannot test" and "no pairwise matcher" in second.ours


def test_placebo_the_control_in_the_planted_models_place_and_a_copy_of_it_recover_nothing(published):
    planted, control = _correct(200, 0.8, 1), _correct(200, 0.5, 2)
    kinds = {PLANTED: "dual", CONTROL: "dual"}
    swapped = cff.evaluation_findings(PLANTED, _scores({PLANTED: control, CONTROL: planted}), kinds, {PLANTED: CONTROL},
                                      published)[0]
    assert swapped.verdict == "not recovered" and swapped.estimates["contrast"].value == pytest.approx(-0.3)
    copied = cff.evaluation_findings(PLANTED, _scores({PLANTED: planted, CONTROL: planted}), kinds, {PLANTED: CONTROL},
                                     published)[0]
    assert copied.verdict == "not recovered" and copied.estimates["contrast"].value == 0
    assert "every resample the same" in copied.contrast and "[" not in copied.contrast


def test_the_bad_inputs_read_as_the_design_says_and_nothing_fails(published):
    planted, control = _correct(200, 0.8, 1), _correct(200, 0.5, 2)
    scores, kinds = _scores({PLANTED: planted, CONTROL: control}), {PLANTED: "dual", CONTROL: "dual"}
    same = cff.evaluation_findings(PLANTED, scores, kinds, {PLANTED: PLANTED}, published)[0]
    assert same.verdict == "no contrast" and "the control is the planted model: no contrast" in same.note.lower()
    alone = cff.evaluation_findings(PLANTED, scores, kinds, {}, published)[0]
    assert alone.verdict == "recovered" and alone.note.startswith("No control: the verdict is about the planted model alone")
    assert alone.control == "" and alone.contrast == ""
    # a control named but not scored: said, and the row judges the model alone
    missing = cff.evaluation_findings(PLANTED, {key: value for key, value in scores.items() if key[0] == PLANTED}, kinds,
                                      {PLANTED: CONTROL}, published)[0]
    assert "has no scores in this run" in missing.note and missing.verdict == "recovered"
    # a world without the planted cause: the recipe with no colour words, or captions that never name one
    for removed in (CONTROL, "trained:caption-clip?colour_share=0"):
        found = cff.evaluation_findings(removed, _scores({removed: planted, PLANTED: control}), {removed: "dual"},
                                        {removed: PLANTED}, published)
        assert found[0].verdict == "not planted"
    with pytest.raises(ValueError, match="not scored on the same pairs"):
        cff.evaluation_findings(PLANTED, {**scores, (CONTROL, "coco"): scores[CONTROL, "coco"][:10]}, kinds,
                                {PLANTED: CONTROL}, published)


def test_the_matcher_claim_is_planted_by_no_world_and_judged_on_its_own_interval_for_the_papers_models(published):
    dual, matcher = _correct(200, 0.9, 3), _correct(200, 0.7, 4)
    kinds = {PLANTED: "dual", MATCHER: "pairwise"}
    second = cff.evaluation_findings(PLANTED, _scores({PLANTED: dual, MATCHER: matcher}), kinds, {}, published)[1]
    assert second.verdict == "not planted" and second.estimates["model"].value == pytest.approx(-0.2)
    assert "70.0% against 90.0% on the same 200 pairs" in second.note
    # the papers' models: supports, contradicts or cannot tell, from each statistic's own interval
    kinds = {"clip": "dual", "vilt": "pairwise"}
    first, second = cff.evaluation_findings("clip", _scores({"clip": dual, "vilt": matcher}), kinds, {}, published)
    assert (first.verdict, second.verdict) == ("supports", "contradicts")
    assert first.published.startswith("CLIP: coco ") and first.note == "One-foil accuracy: clip 90.0%, on 200 pairs."
    assert second.estimates["model"].high < 0
    first, second = cff.evaluation_findings("vilt", _scores({"clip": _correct(200, 0.7, 5), "vilt": _correct(200, 0.9, 6)}),
                                            kinds, {}, published)
    assert first.claim.startswith("A pairwise matcher (ViLT, BridgeTower)") and first.published.startswith("ViLT: coco ")
    assert (first.verdict, second.verdict) == ("supports", "supports")
    coin = cff.evaluation_findings("clip", _scores({"clip": _correct(100, 0.52, 7)}), {"clip": "dual"}, {}, published)
    assert [f.verdict for f in coin] == ["cannot tell", "cannot test"]


def test_the_box_says_what_the_world_plants_and_what_the_control_is():
    kinds = {PLANTED: "dual", CONTROL: "dual", MATCHER: "pairwise"}
    planted, control = cff.evaluation_planted(PLANTED, {PLANTED: CONTROL}, kinds, {PLANTED: "P", CONTROL: "C"})
    assert planted.startswith("The model, P: a mini-CLIP") and "neither kind an advantage" in planted
    assert control.startswith("The control, C: a mini-CLIP") and "every colour word removed" in control
    assert cff.evaluation_planted(PLANTED, {}, kinds)[1] is None
    assert cff.evaluation_planted("ViT-B-32/openai", {}, {"ViT-B-32/openai": "dual"}) == (None, None)
    assert cff.judged_model([MATCHER, PLANTED], kinds) == PLANTED and cff.judged_model([MATCHER], kinds) == MATCHER


def test_the_caption_world_recipes_plant_the_colour_words_only_where_their_captions_keep_them():
    from vlbias.models.trained import planted_causes

    assert set(planted_causes(PLANTED)) == {"colour_named"} and "60% of the training captions" in planted_causes(PLANTED)["colour_named"]
    assert set(planted_causes(MATCHER)) == {"colour_named", "colour_foils"}
    assert set(planted_causes("trained:caption-captioner")) == {"colour_named"}
    for none in (CONTROL, "trained:caption-captioner?colour_words=0", "trained:caption-matcher?colour_share=0",
                 "trained:easy-vqa-colour?epochs=0", "openai/clip-vit-base-patch32"):
        assert planted_causes(none) == {}, none
    assert set(planted_causes("trained:easy-vqa-colour")) == {"colour_named"}
    # no recipe plants the matcher's advantage or an answer to a question
    for spec in (PLANTED, MATCHER, "trained:caption-captioner", "trained:easy-vqa-colour"):
        assert not {"matcher_advantage", "answers_questions", "foil_count"} & set(planted_causes(spec))


def test_the_construction_recovers_each_pictures_colour_on_the_caption_world_and_counts_wait_for_real_data():
    from vlbias import book
    from vlbias.colorfoil import construction as cf
    from vlbias.data import load_dataset
    from vlbias.data.caption_world import main_colours

    dataset = load_dataset("coco", root="world?eval_images=12&train_images=2", split="val2017")
    benchmark = cf.build_benchmark(dataset, caption_choice="first_with_word", progress=False)
    truth = cff.foil_truth(dataset, benchmark)
    drawn = main_colours(dataset.root)
    expected = sum(row.words == [drawn[dataset.records["file"].iat[row.image_index]]] for row in benchmark.itertuples())
    assert len(benchmark) > 5 and expected == len(benchmark)  # every caption of the world names its picture's main colour
    assert truth == {"captions": len(benchmark), "captions naming the drawn colour": len(benchmark),
                     "foils": int(benchmark["n_foils"].sum()), "foils naming another colour": int(benchmark["n_foils"].sum())}
    counts = {"coco": cf.construction_counts(dataset, benchmark)}
    published = book.published("colorfoil_counts_samin2024")
    found = cff.construction_findings(counts, published, {"coco": truth}, real_data=False, why_not="a world")
    assert [f.verdict for f in found] == ["cannot test", "supports"] and found[0].published == "2,511"
    # an exact count of every caption and foil, never a sampled interval
    foils = int(benchmark["n_foils"].sum())
    assert found[1].ours == (f"coco: all {len(benchmark)} captions name the drawn colour, all {foils} foils another "
                             f"(exact: all {len(benchmark)} captions and {foils} foils counted)")
    exact = found[1].estimates["model"]
    assert exact.exact and exact.value == 1.0 and "[" not in exact.text() and "exact: all" in exact.text()
    # a foil naming the drawn colour breaks the premise
    broken = benchmark.copy()
    broken.at[0, "replacements"] = [f"{broken.at[0, 'words'][0]}->{drawn[dataset.records['file'].iat[0]]}"] + list(
        broken.at[0, "replacements"][1:])
    wrong = cff.foil_truth(dataset, broken)
    assert wrong["foils naming another colour"] == truth["foils"] - 1
    broken_row = cff.construction_findings(counts, published, {"coco": wrong}, False)[1]
    assert broken_row.verdict == "contradicts" and f"{foils - 1} of {foils} foils another" in broken_row.ours
    assert broken_row.estimates["model"].value == pytest.approx((len(benchmark) + foils - 1) / (len(benchmark) + foils))
    # on the real release the count is judged exactly; data that record no colours cannot test the premise
    real = {"coco": {**counts["coco"], "with a colour word (whole word, ours)": 2511}}
    assert [f.verdict for f in cff.construction_findings(real, published, {"coco": None}, True)] == ["supports", "cannot test"]
    real["coco"]["with a colour word (whole word, ours)"] = 2515
    assert cff.construction_findings(real, published, {}, True)[0].ours == "2,515 (+4)"
    assert cff.construction_findings(real, published, {}, True)[0].verdict == "contradicts"
    text = cff.construction_planted({"coco": dataset})
    assert "COCO's layouts" in text and "60% of captions" in text and "counted exactly" in text
    assert cff.construction_planted({"coco": load_dataset("coco", root="fixture", split="val2017")}) is None


def _foil_scores(right_at: dict[int, np.ndarray]) -> np.ndarray:
    """A (n, 5) score matrix whose caption beats its first k foils exactly where ``right_at[k]`` says (k = 1, 4):
    foil 1 is above the caption where the 1-foil task is lost, foils 2-4 where only the 4-foil task is."""
    one, four = right_at[1], right_at[4]
    assert not np.any(four & ~one)  # right with 4 foils means right with 1
    matrix = np.zeros((one.size, 5))
    matrix[:, 0] = 1.0
    matrix[~one, 1] = 2.0
    matrix[one & ~four, 2] = 2.0
    return matrix


def test_colour_model_findings_recover_the_training_against_the_untrained_network_and_never_plant_more_foils():
    from vlbias import book
    from vlbias.colorfoil.trained_models import snapshot_roles

    published = book.published("colorfoil_table1_samin2024")
    model, control, specs = snapshot_roles(4, 2, 0, 128, 0.002, 0)
    assert (model, control) == ("4 epochs", "untrained") and specs["untrained"].startswith("trained:easy-vqa-colour?epochs=0")
    trained_one, untrained_one = _correct(400, 0.95, 1), _correct(400, 0.5, 2)
    trained_four = trained_one & _correct(400, 0.9, 3)
    untrained_four = untrained_one & _correct(400, 0.4, 4)
    scores = {(model, "easy-vqa test"): _foil_scores({1: trained_one, 4: trained_four}),
              (control, "easy-vqa test"): _foil_scores({1: untrained_one, 4: untrained_four})}
    first, second = cff.colour_model_findings(model, scores, control, specs, published, (1, 2, 4))
    assert first.verdict == "recovered" and first.estimates["contrast"].value == pytest.approx(
        trained_one.mean() - untrained_one.mean())
    assert first.published == "CLIP: coco 84.4%, flickr30k 85.2%"  # the published 84.37 and 85.24
    assert second.verdict == "not planted" and second.estimates["model"].value == pytest.approx(
        trained_one.mean() - trained_four.mean())
    assert second.estimates["control"].value == pytest.approx(untrained_one.mean() - untrained_four.mean())
    assert "Even a model at chance falls from 50% to 20%" in second.note
    # placebo: the untrained network's answers in the trained one's place
    placebo = {(model, "easy-vqa test"): scores[control, "easy-vqa test"], (control, "easy-vqa test"): scores[model, "easy-vqa test"]}
    assert cff.colour_model_findings(model, placebo, control, specs, published)[0].verdict == "not recovered"
    copy = {(model, "easy-vqa test"): scores[model, "easy-vqa test"], (control, "easy-vqa test"): scores[model, "easy-vqa test"]}
    assert cff.colour_model_findings(model, copy, control, specs, published)[0].verdict == "not recovered"
    # the control is the model: no contrast; no control: the model alone, said to be weaker
    assert cff.colour_model_findings(model, scores, model, specs, published)[0].verdict == "no contrast"
    alone = cff.colour_model_findings(model, scores, None, specs, published)[0]
    assert alone.verdict == "recovered" and alone.note.startswith("No control")
    # without specs the names are judged as a paper's models would be
    assert [f.verdict for f in cff.colour_model_findings(model, scores, control, None, published)] == ["supports", "supports"]
    assert cff.colour_model_findings(model, scores, control, specs, published, (1,))[1].verdict == "cannot test"
    with pytest.raises(ValueError, match="no scores of model 'other'"):
        cff.colour_model_findings("other", scores, control, specs, published)
    with pytest.raises(ValueError, match="control='nobody' has no scores"):
        cff.colour_model_findings(model, scores, "nobody", specs, published)
    with pytest.raises(ValueError, match="control_epochs=3"):
        snapshot_roles(4, 2, 3, 128, 0.002, 0)
    text, about = cff.colour_model_planted(4, control)
    assert "trained here for 4 epochs" in text and "untrained, at its random initialisation" in about
    assert cff.colour_model_planted(4, None)[1] is None
