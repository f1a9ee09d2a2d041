"""Part III page helpers: the source switch and the share scatter (formerly defined in the notebooks)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vlbias.harms.chapter import check_source  # noqa: E402
from vlbias.harms.measures import amplification_slope  # noqa: E402
from vlbias.harms.plots import plot_share_scatter  # noqa: E402


def test_source_must_be_simulated_or_model():
    assert check_source("model") == "model" and check_source("simulated") == "simulated"
    with pytest.raises(ValueError, match="source must be 'simulated' or 'model', got 'real'"):
        check_source("real")


def test_share_scatter_draws_points_diagonal_and_the_fitted_line():
    real = np.array([0.1, 0.4, 0.8, 0.9])
    model = 0.05 + 0.9 * real
    fit = amplification_slope(model, real)
    fig, ax = plt.subplots()
    plot_share_scatter(ax, real, model, ["a", "b", "c", "d"], "title", fit)
    diagonal, line = ax.lines
    np.testing.assert_allclose(diagonal.get_ydata(), [0, 1])
    np.testing.assert_allclose(line.get_ydata(), [0.05, 0.95])  # intercept and intercept + slope
    assert [t.get_text() for t in ax.texts] == ["a", "b", "c", "d"]
    assert "slope 0.90" in ax.get_legend().get_texts()[1].get_text()
    plt.close(fig)
