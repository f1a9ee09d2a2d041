"""Part I's notebooks run under papermill on the FairFace fixture with tiny:clip."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
COMMON = {"profile": "demo", "model_spec": "tiny:clip", "model_specs": ["tiny:clip"], "data_root": "fixture",
          "device": "cpu", "batch_size": 64, "repetitions": 30, "permutations": 30}


def run(tmp_path, name, **parameters):
    papermill = pytest.importorskip("papermill")
    output = tmp_path / f"{name}.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(output), parameters={**COMMON, **parameters},
                               cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)
    cells = json.loads(output.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    return html, images


@pytest.mark.slow
def test_self_similarity_notebook_runs_on_the_fixture(tmp_path):
    html, images = run(tmp_path, "01a_self_similarity", sample_size=12)
    assert "Demo output" in html and images >= 6
    for caption in ("Table 1", "Table 2", "Table 3", "Table 4", "published (paper)"):
        assert caption in html


@pytest.mark.slow
def test_markedness_notebook_runs_on_the_fixture(tmp_path):
    html, images = run(tmp_path, "01b_markedness", balance=True, prompt_prefixes=["a photo of", "a picture of"])
    assert "Demo output" in html and images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "balanced_%", "published % (paper)"):
        assert caption in html
