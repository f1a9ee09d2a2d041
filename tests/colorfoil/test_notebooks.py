"""Part II's notebooks run under papermill on the COCO and Flickr30k fixtures and tiny models."""

import pytest

COMMON = {"profile": "demo", "data_root": "fixture", "device": "cpu", "batch_size": 16}


@pytest.mark.slow
def test_construction_notebook_writes_the_benchmark(tmp_path, run_notebook):
    html, text, images = run_notebook("02a_colorfoil_construction", **COMMON, output_dir=str(tmp_path / "bench"))
    assert "Demo output" in html and "coco (published)" in html and images >= 2
    assert (tmp_path / "bench" / "colorfoil-colour-coco-v1.jsonl").exists()
    # the evaluation page reads the saved files as well as it rebuilds them
    html, text, images = run_notebook("02b_colorfoil_evaluation", **COMMON, model_specs=["tiny:clip", "tiny:vilt"],
                             paper_names={"tiny:clip": "CLIP"}, benchmark_dir=str(tmp_path / "bench"),
                             blind_lm_spec="asset:smollm2-135m", mean_image_count=20, n_bootstrap=200)
    # the published column beside ours (headers in words where the page shows them with book.readable)
    assert "published accuracy (%) (paper)" in html and "in 40 of 42 cells" in text and images >= 3
    assert "vision adds (points over the best blind)" in html and "p mcnemar" in html


@pytest.mark.slow
def test_colour_model_notebook_runs(run_notebook):
    html, text, images = run_notebook("02c_colorfoil_colour_model", **COMMON, epochs=1, early_epochs=1, max_train_images=300,
                             max_test_images=60)
    assert "Demo output" in html and images >= 4
