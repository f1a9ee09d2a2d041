"""Part I's notebooks run under papermill on the FairFace fixture with tiny:clip."""

import pytest

COMMON = {"profile": "demo", "model_spec": "tiny:clip", "model_specs": ["tiny:clip"], "data_root": "fixture",
          "device": "cpu", "batch_size": 64, "repetitions": 30, "permutations": 30}


@pytest.mark.slow
def test_self_similarity_notebook_runs_on_the_fixture(run_notebook):
    html, _, images = run_notebook("01a_self_similarity", **COMMON, sample_size=12)
    assert "Demo output" in html and images >= 6
    for caption in ("Table 1", "Table 2", "Table 3", "Table 4", "published (paper)"):
        assert caption in html


@pytest.mark.slow
def test_markedness_notebook_runs_on_the_fixture(run_notebook):
    html, _, images = run_notebook("01b_markedness", **COMMON, balance=True, prompt_prefixes=["a photo of", "a picture of"])
    assert "Demo output" in html and images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "balanced (%)", "published % (paper)"):
        assert caption in html
