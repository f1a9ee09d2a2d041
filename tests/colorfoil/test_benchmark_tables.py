"""The ColorFoil tables: one evaluation row per (model, data set, k), and our counts beside the paper's."""

import numpy as np
import pytest
from scipy import stats

from vlbias.book import published
from vlbias.colorfoil import construction, evaluation


def test_evaluation_table_has_one_row_per_model_dataset_and_foil_count():
    # model a: captions win rows 0-2 at k=1, row 0 only at k=2; row 3 has one foil
    a = np.array([[0.9, 0.1, 0.95], [0.6, 0.5, 0.7], [0.8, 0.2, 0.9], [0.3, 0.4, np.nan]])
    b = np.array([[0.5, 0.6, 0.1, 0.2, 0.3]])
    table = evaluation.evaluation_table({("a", "coco"): a, ("b", "flickr30k"): b}, foil_counts=(1, 2, 4),
                                        confidence=0.90)
    assert table[["model", "dataset", "foils"]].values.tolist() == [
        ["a", "coco", 1], ["a", "coco", 2], ["b", "flickr30k", 1], ["b", "flickr30k", 2], ["b", "flickr30k", 4]]
    a1, a2 = table.iloc[0], table.iloc[1]
    assert a1["n"] == 4 and a1["accuracy_%"] == pytest.approx(75.0)
    assert a2["n"] == 3 and a2["accuracy_%"] == pytest.approx(0.0)
    ci = stats.binomtest(3, 4).proportion_ci(confidence_level=0.90, method="wilson")
    assert (a1["ci_low_%"], a1["ci_high_%"]) == pytest.approx((100 * ci.low, 100 * ci.high))
    assert a1["f1"] == pytest.approx(2 * 0.75 / 1.75)
    assert a1["mean_margin"] == pytest.approx(np.mean([0.8, 0.1, 0.6, -0.1]))
    assert table.iloc[2]["accuracy_%"] == 0.0 and table.iloc[4]["n"] == 1


def test_counts_beside_published_pairs_each_count_with_the_papers():
    counts = {"coco": {"images": 5000, "with a colour word (whole word, ours)": 2480,
                       "benchmark pairs": 2480, "pairs with 4 distinct foils": 2100},
              "flickr30k": {"captions considered": 1000, "benchmark pairs": 420}}
    table = construction.counts_beside_published(counts, published("colorfoil_counts_samin2024"))
    assert table.columns.tolist() == ["coco (ours)", "coco (published)", "flickr30k (ours)", "flickr30k (published)"]
    assert table.loc["images", "coco (ours)"] == 5000
    # the paper counts one caption per image: its 5,000 image-caption pairs sit beside our images
    assert table.loc["images", "coco (published)"] == 5000
    assert table.loc["with a colour word (whole word, ours)", "coco (published)"] == 2511
    assert table.loc["benchmark pairs", "coco (published)"] == 2507
    assert table.loc["benchmark pairs", "flickr30k (published)"] == 2500
    # the paper has no count of these: empty, not NaN or 0
    assert table.loc["pairs with 4 distinct foils", "coco (published)"] == ""
    assert table.loc["captions considered", "flickr30k (published)"] == ""


def test_evaluation_table_defaults_and_foil_counts_the_scores_cannot_hold():
    scores = np.array([[0.9, 0.1, 0.95], [0.6, 0.5, 0.7], [0.8, 0.2, 0.9]])
    # 2 foils: no k=3
    assert evaluation.evaluation_table({("a", "coco"): scores}, foil_counts=(2, 3)).foils.tolist() == [2]
    default = evaluation.evaluation_table({("a", "coco"): scores})
    assert default.foils.tolist() == [1, 2]
    ci = stats.binomtest(3, 3).proportion_ci(confidence_level=0.95, method="wilson")  # k = 1: 3 of 3
    assert (default.loc[0, "ci_low_%"], default.loc[0, "ci_high_%"]) == pytest.approx((100 * ci.low, 100 * ci.high))
