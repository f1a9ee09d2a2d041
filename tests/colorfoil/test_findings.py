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
    with pytest.raises(ValueError, match="no row compares"):
        cff.matcher_comparison(_paired(0.0, 1.0, 0.5), "m", "x")


def test_zero_width_intervals_are_explained():
    text = cff.paired_sentence(pd.concat([_paired(0.0, 0.0, 0.0), _paired(1.0, 3.0, 2.0, a="x", b="y")]),
                               {"m": "M"})
    assert "excludes 0 for 1" in text and "Zero-width intervals (M and d)" in text


def _chance_row(model, accuracy, low, high, n=100):
    verdict = "above chance" if low > 50 else "below chance" if high < 50 else "at chance"  # as against_chance says
    return {"model": model, "label": model, "n": n, "accuracy_%": accuracy, "ci_low_%": low, "ci_high_%": high,
            "chance_%": 50.0, "ties": 0, "verdict": verdict, "foils": 1}


def _paired_row(a, b, difference, low, high):
    return {"model_a": a, "model_b": b, "difference_pp": difference, "low_pp": low, "high_pp": high, "n": 100}


def test_paper_findings_judge_the_dual_encoder_against_chance_and_the_matcher_against_it():
    from vlbias import book

    published = book.published("colorfoil_table1_samin2024")
    kinds = {"clip": "dual", "vilt": "pairwise"}
    chance = pd.DataFrame([_chance_row("clip", 90.0, 82.0, 95.0), _chance_row("vilt", 70.0, 60.0, 78.0)])
    # the pair written either way round: the matcher's advantage is read with its sign
    for paired in (pd.DataFrame([_paired_row("clip", "vilt", 20.0, 10.0, 30.0)]),
                   pd.DataFrame([_paired_row("vilt", "clip", -20.0, -30.0, -10.0)])):
        found = cff.paper_findings(chance, paired, kinds, published)
        assert [f.verdict for f in found] == ["supports", "contradicts"]
        assert "vilt minus clip: -20.0 points [-30.0, -10.0] on the same 100 pairs" == found[1].ours
        assert found[0].published.startswith("CLIP: coco ")
    chance = pd.DataFrame([_chance_row("clip", 52.0, 45.0, 59.0)])
    found = cff.paper_findings(chance, pd.DataFrame(columns=["model_a", "model_b"]), {"clip": "dual"}, published)
    assert [f.verdict for f in found] == ["cannot tell", "cannot test"]


def test_the_caption_world_plants_colour_knowledge_only_where_the_captions_name_colours():
    kinds = {"trained:caption-clip?colour_words=0": "dual", "trained:caption-matcher": "pairwise"}
    text, causes = cff.planted(list(kinds), kinds)
    assert causes == [False, False] and "neither kind an advantage" in text
    assert cff.planted(["trained:caption-clip"], {"trained:caption-clip": "dual"})[1] == [True, False]
    assert cff.planted(["ViT-B-32/openai"], {"ViT-B-32/openai": "dual"}) == (None, None)


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
    # a foil naming the drawn colour breaks the premise
    broken = benchmark.copy()
    broken.at[0, "replacements"] = [f"{broken.at[0, 'words'][0]}->{drawn[dataset.records['file'].iat[0]]}"] + list(
        broken.at[0, "replacements"][1:])
    wrong = cff.foil_truth(dataset, broken)
    assert wrong["foils naming another colour"] == truth["foils"] - 1
    assert cff.construction_findings(counts, published, {"coco": wrong}, False)[1].verdict == "contradicts"
    # on the real release the count is judged exactly; data that record no colours cannot test the premise
    real = {"coco": {**counts["coco"], "with a colour word (whole word, ours)": 2511}}
    assert [f.verdict for f in cff.construction_findings(real, published, {"coco": None}, True)] == ["supports", "cannot test"]
    real["coco"]["with a colour word (whole word, ours)"] = 2515
    assert cff.construction_findings(real, published, {}, True)[0].ours == "2,515 (+4)"
    assert cff.construction_findings(real, published, {}, True)[0].verdict == "contradicts"
    text, causes = cff.construction_planted({"coco": dataset})
    assert causes == [False, True] and "COCO's layouts" in text and "60% of captions" in text
    assert cff.construction_planted({"coco": load_dataset("coco", root="fixture", split="val2017")}) == (None, None)


def test_colour_model_findings_test_the_trained_model_against_chance_and_across_foil_counts():
    from vlbias import book

    def row(model, foils, accuracy, low, high):
        return {"model": model, "dataset": "easy-vqa test", "foils": foils, "n": 200, "accuracy_%": accuracy,
                "ci_low_%": low, "ci_high_%": high, "chance_%": 100 / (foils + 1)}

    table = pd.DataFrame([row("trained", 1, 90.0, 85.0, 93.0), row("trained", 4, 70.0, 63.0, 76.0),
                          row("untrained", 1, 48.0, 41.0, 55.0), row("untrained", 4, 20.0, 15.0, 26.0)])
    published = book.published("colorfoil_table1_samin2024")
    found = cff.colour_model_findings(table, "trained", published)
    assert [f.verdict for f in found] == ["supports", "supports"]
    assert found[0].claim.endswith("(1 foil: 50%)") and found[0].published == "CLIP: coco 84.4%, flickr30k 85.2%"  # the published 84.37 and 85.24
    assert [f.verdict for f in cff.colour_model_findings(table, "untrained", published)] == ["cannot tell", "supports"]
    table.loc[1, ["accuracy_%", "ci_low_%", "ci_high_%"]] = [89.0, 84.0, 93.0]
    assert cff.colour_model_findings(table, "trained", published)[1].verdict == "cannot tell"
    assert cff.colour_model_findings(table.iloc[[0]], "trained", published)[1].verdict == "cannot test"
    with pytest.raises(ValueError, match="no row of model 'other'"):
        cff.colour_model_findings(table, "other", published)
    text, causes = cff.colour_model_planted(6, pd.Series(row("untrained", 1, 48.0, 41.0, 55.0)))
    assert causes == [True, False] and "48.0% [41.0, 55.0] with 1 foil (chance 50%)" in text
