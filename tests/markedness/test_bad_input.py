"""Bad numbers in, for Part I's measures: raw vectors are normalised, NaN is refused."""

import numpy as np
import pandas as pd
import pytest

from vlbias.markedness import GroupMoments, balanced_moments, group_moments, unmarked_flags, unmarked_table
from vlbias.markedness.self_similarity import released_code_moments
from vlbias.markedness.unmarked import unmarked_rates


def raw_and_unit(n=30, d=8, seed=0):
    rng = np.random.default_rng(seed)
    unit = rng.normal(size=(n, d)) + 0.4
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    raw = unit * rng.uniform(5, 40, size=(n, 1))  # same directions, embedding-like lengths
    return raw, unit


def test_moments_of_raw_vectors_equal_moments_of_their_directions():
    raw, unit = raw_and_unit()
    gram = unit @ unit.T
    # independent: the released-code kernel's mean is the mean of the Gram matrix, self pairs included
    assert released_code_moments(raw)[0] == pytest.approx(gram.mean(), abs=1e-12)
    np.testing.assert_allclose(released_code_moments(raw), released_code_moments(unit), rtol=1e-10)
    np.testing.assert_allclose(balanced_moments(raw, 10), balanced_moments(unit, 10), rtol=1e-10)
    assert balanced_moments(raw, 10)[0] == pytest.approx((gram.sum() - 30) / (30 * 29), abs=1e-12)


def test_hand_built_moments_of_raw_rows_are_refused():
    raw, _ = raw_and_unit()
    moments = GroupMoments(len(raw), raw.sum(axis=0), raw.T @ raw)
    with pytest.raises(ValueError, match="not of unit rows"):
        released_code_moments(moments)
    with pytest.raises(ValueError, match="empty group"):
        released_code_moments(GroupMoments(0, np.zeros(3), np.zeros((3, 3))))


def test_nan_rows_are_refused_by_the_moments():
    raw, _ = raw_and_unit()
    raw[3, 1] = np.nan
    with pytest.raises(ValueError, match="vectors has 1 row.*NaN"):
        group_moments(raw)
    with pytest.raises(ValueError, match="NaN"):
        balanced_moments(raw, 5)


def test_nan_flags_do_not_count_as_unmarked():
    records = pd.DataFrame({"race": ["White", "White", "Black", "Black"]})
    flags = np.array([1.0, np.nan, 0.0, np.nan])  # bool(nan) is True: silently "unmarked" before
    with pytest.raises(ValueError, match="unmarked has 2 value"):
        unmarked_rates(records, flags, "race")
    with pytest.raises(ValueError, match="unmarked has 2 value"):
        unmarked_table(records, flags, "race")
    table = unmarked_rates(records, np.array([1.0, 0.0, 0.0, 1.0]), "race")
    assert table["unmarked_%"].tolist() == [50.0, 50.0]


def test_unmarked_flags_refuse_nan_image_embeddings():
    images = np.random.default_rng(0).normal(size=(4, 6))
    images[1] = np.nan
    embed = lambda texts: np.random.default_rng(1).normal(size=(len(texts), 6))  # noqa: E731
    with pytest.raises(ValueError, match="image_embeddings has 1 row"):
        unmarked_flags(images, embed)
