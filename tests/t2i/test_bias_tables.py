"""The text-to-image tables built on the shares: extremes, category shares, the source's cases."""

import numpy as np
import pandas as pd
import pytest

from vlbias.t2i.bias import cases_beside_published, category_distribution, extreme_cases


def test_extreme_cases_are_furthest_from_parity_in_both_directions():
    table = pd.DataFrame({"generated share": [0.45, 0.02, 0.97, 0.60, 0.10, 0.55]},
                         index=["a", "b", "c", "d", "e", "f"])
    # distances from 0.5: a .05, b .48, c .47, d .10, e .40, f .05
    assert extreme_cases(table, k=3).index.tolist() == ["b", "c", "e"]
    assert extreme_cases(table, k=1)["generated share"].tolist() == [0.02]


def test_category_distribution_is_row_shares_among_images_with_a_person():
    labels = pd.DataFrame({"profession": ["nurse"] * 6 + ["pilot"] * 3 + ["cook"] * 2,
                           "perceived": ["20-29", "20-29", "40-49", "no person", "60+", "20-29",
                                         "40-49", "40-49", "no person", "no person", "no person"]})
    shares = category_distribution(labels, order=["20-29", "40-49", "60+", "70+"])
    assert shares.columns.tolist() == ["20-29", "40-49", "60+"]   # a label nobody got is left out
    assert shares.loc["nurse"].tolist() == pytest.approx([3 / 5, 1 / 5, 1 / 5])
    assert shares.loc["pilot"].tolist() == pytest.approx([0, 1, 0])
    assert shares.loc["cook"].isna().all()                           # no image with a person: no shares
    unordered = category_distribution(labels)
    assert sorted(unordered.columns) == ["20-29", "40-49", "60+"]


def test_cases_beside_published_puts_our_shares_and_patterns_beside_the_source():
    ours = pd.DataFrame({"n_person": [40, 38, 35, 12], "generated share": [0.30, 0.99, 0.010, 0.5]},
                        index=["teacher", "hairdresser", "electrician", "not a source case"])
    result = cases_beside_published(ours)
    assert result.index.tolist() == ["HVAC installer", "hairdresser", "metal worker", "artist", "school bus driver",
                                     "electrician", "teacher"]
    teacher, hairdresser, electrician = (result.loc[p] for p in ("teacher", "hairdresser", "electrician"))
    assert teacher["our generated share"] == 0.30 and teacher["published generated share"] == pytest.approx(0.856)
    assert teacher["published reference share"] == pytest.approx(0.792) and teacher["our n_person"] == 40
    # against the source's stated reference share: 0.30 vs 0.792 lies across parity; 0.99 vs 0.924
    # is the same majority further out; 0.010 vs 0.017 is the same majority further out
    assert teacher["our pattern"] == "reversed"
    assert hairdresser["our pattern"] == "amplified" and electrician["our pattern"] == "amplified"
    assert result.loc["artist", ["our generated share", "our pattern"]].isna().all()
    assert result.loc["artist", "source case"] == "reversed"


def test_category_distribution_of_another_label_column_and_a_single_image():
    labels = pd.DataFrame({"job": ["judge", "cook", "cook", "cook"], "age": ["60+", "20-29", "60+", "no person"]})
    shares = category_distribution(labels, group="job", label="age")
    assert shares.loc["judge"].tolist() == [0.0, 1.0]  # one image with a person: its label's share is 1
    assert shares.loc["cook"].tolist() == pytest.approx([0.5, 0.5])


def test_extremes_default_to_three_and_diversity_is_named():
    from vlbias.t2i.bias import diversity_by_group

    table = pd.DataFrame({"generated share": [0.45, 0.02, 0.97, 0.60, 0.10]}, index=list("abcde"))
    assert extreme_cases(table).index.tolist() == ["b", "c", "e"]
    diversity = diversity_by_group(np.eye(4), ["x", "x", "y", "y"])
    assert diversity.name == "mean pairwise distance" and diversity.index.name == "group"
