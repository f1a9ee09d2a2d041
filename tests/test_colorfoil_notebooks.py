"""Part II's notebooks run under papermill on the COCO and Flickr30k fixtures and tiny models."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
COMMON = {"profile": "demo", "data_root": "fixture", "device": "cpu", "batch_size": 16}


def run(tmp_path, name, **parameters):
    papermill = pytest.importorskip("papermill")
    output = tmp_path / f"{name}.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(output), parameters={**COMMON, **parameters},
                               cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)
    cells = json.loads(output.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)
    text = "".join("".join(o.get("text", "")) for o in outputs)
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    return html, text, images


@pytest.mark.slow
def test_construction_notebook_writes_the_benchmark(tmp_path):
    html, text, images = run(tmp_path, "02a_colorfoil_construction", output_dir=str(tmp_path / "bench"))
    assert "Demo output" in html and "coco (published)" in html and images >= 2
    assert (tmp_path / "bench" / "colorfoil-colour-coco-v1.jsonl").exists()
    # the evaluation page reads the saved files as well as it rebuilds them
    html, text, images = run(tmp_path, "02b_colorfoil_evaluation", model_specs=["tiny:clip", "tiny:vilt"],
                             paper_names={"tiny:clip": "CLIP"}, benchmark_dir=str(tmp_path / "bench"))
    assert "published accuracy_% (paper)" in html and "in 40 of 42 cells" in text and images >= 3


@pytest.mark.slow
def test_colour_model_notebook_runs(tmp_path):
    html, text, images = run(tmp_path, "02c_colorfoil_colour_model", epochs=1, early_epochs=1, max_train_images=300,
                             max_test_images=60)
    assert "Demo output" in html and images >= 4
