"""Bad numbers in, for Part III's measures: a NaN or empty WEAT never reads as significant."""

import numpy as np
import pytest

from vlbias.harms.measures import amplification_slope, false_positive_rates
from vlbias.weat import weat_effect_size, weat_test, weat_test_from_scores


def sets(seed=0, n=6, d=5):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)) for _ in range(4)]


@pytest.mark.parametrize("which,name", [(0, "X"), (1, "Y"), (2, "A"), (3, "B")])
def test_weat_refuses_a_nan_row_naming_the_set(which, name):
    X, Y, A, B = sets()
    [X, Y, A, B][which][2, 0] = np.nan
    with pytest.raises(ValueError, match=f"^{name} has 1 row"):
        weat_test(X, Y, A, B)


@pytest.mark.parametrize("which,name", [(2, "A"), (3, "B")])
def test_weat_refuses_an_empty_attribute_set(which, name):
    X, Y, A, B = sets()
    arrays = [X, Y, A, B]
    arrays[which] = np.zeros((0, 5))
    with pytest.raises(ValueError, match=f"^{name} needs at least 1 row"):
        weat_test(*arrays)
    with pytest.raises(ValueError, match=f"^{name} needs at least 1 row"):
        weat_effect_size(*arrays)


def test_weat_refuses_mismatched_dimensions_and_zero_rows():
    X, Y, A, B = sets()
    with pytest.raises(ValueError, match="^B has vectors of dimension 4"):
        weat_test(X, Y, A, B[:, :4])
    X[0] = 0.0
    with pytest.raises(ValueError, match="^X has 1 row.*zeros"):
        weat_test(X, Y, A, B)


def test_nan_scores_give_an_error_not_p_zero():
    with pytest.raises(ValueError, match="scores_x"):
        weat_test_from_scores(np.array([0.1, np.nan, 0.3]), np.array([0.0, -0.1, 0.2]))


def test_harm_measures_refuse_nan():
    with pytest.raises(ValueError, match="model_share has 1 row"):
        amplification_slope([0.1, np.nan, 0.5, 0.7], [0.2, 0.3, 0.4, 0.5])
    with pytest.raises(ValueError, match="aave_scores has 1 row"):
        false_positive_rates([0.1, 0.2, 0.3], [0.1, np.nan, 0.9], thresholds=[0.5])
