"""The controlled markedness page runs under papermill with small training settings."""

import pytest


@pytest.mark.slow
def test_controlled_markedness_notebook_runs(run_notebook):
    html, _, images = run_notebook("01c_controlled_markedness", profile="demo", device="cpu", epochs=2,
                                   train_per_kind=30, test_per_kind=10, n_seeds=2)
    assert "Demo output" in html and images >= 2
    for column in ("unmarked (%)", "gap (pp)", "final loss", "trained:world-clip?red_named=0.1"):
        assert column in html
    assert "<th>gap_pp</th>" not in html  # headers in words, whatever the cell displays
