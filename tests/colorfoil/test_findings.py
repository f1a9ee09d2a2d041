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
