"""Bad numbers in: the shared validators and the core measures refuse them, naming the argument."""

import numpy as np
import pytest

from vlbias.stats import accuracy_summary, finite_rows, finite_vector, self_similarity, unit_rows, wilson_interval


@pytest.mark.parametrize("bad,message", [
    ([[1.0, np.nan]], "row"), ([[1.0, np.inf]], "NaN or inf"), (np.zeros((0, 3)), "at least 1 row"),
    ([], "at least 1 row"), (np.ones((2, 2, 2)), "2-D"),
])
def test_finite_rows_names_the_argument(bad, message):
    with pytest.raises(ValueError, match=message) as error:
        finite_rows(bad, "image_embeddings")
    assert "image_embeddings" in str(error.value)


def test_dimensions_and_zero_rows_are_refused():
    with pytest.raises(ValueError, match="attributes.*dimension 3.*others 4"):
        finite_rows(np.ones((2, 3)), "attributes", dim=4)
    with pytest.raises(ValueError, match="targets has 1 row.*zeros"):
        unit_rows([[1.0, 0.0], [0.0, 0.0]], "targets")
    with pytest.raises(ValueError, match="scores.*1-D"):
        finite_vector(np.ones((2, 2)), "scores")


def test_unit_rows_are_unit_length_in_the_original_directions():
    x = np.array([[3.0, 4.0], [0.0, -2.0]])
    np.testing.assert_allclose(unit_rows(x), [[0.6, 0.8], [0.0, -1.0]])


def test_wilson_of_no_trials_is_nan_not_the_whole_interval():
    low, high = wilson_interval(0, 0)
    assert np.isnan(low) and np.isnan(high)
    low, high = wilson_interval(np.array([0, 3]), np.array([0, 10]))
    assert np.isnan(low[0]) and np.isnan(high[0]) and 0 < low[1] < 0.3 < high[1] < 1
    summary = accuracy_summary([])
    assert summary["n"] == 0 and np.isnan(summary["ci_low_%"]) and np.isnan(summary["ci_high_%"])


@pytest.mark.parametrize("k,n", [(-1, 5), (6, 5), (np.nan, 5)])
def test_wilson_refuses_impossible_counts(k, n):
    with pytest.raises(ValueError, match="wilson_interval"):
        wilson_interval(k, n)


def test_self_similarity_refuses_nan_and_zero_rows():
    x = np.random.default_rng(0).normal(size=(5, 3))
    x[2] = np.nan
    with pytest.raises(ValueError, match="embeddings has 1 row.*NaN"):
        self_similarity(x)
    x[2] = 0.0
    with pytest.raises(ValueError, match="zeros"):
        self_similarity(x)
