"""Part II's pages as the demo book shows them (COCO and Flickr30k fixtures, tiny models), and the
evaluation page rerun on the benchmark files the construction page saved."""

import pytest


@pytest.mark.slow
def test_construction_page_writes_the_benchmark(demo_book):
    html, text, images = demo_book.page("02a_colorfoil_construction")
    assert "Demo output" in html and "coco (published)" in html and images >= 2
    assert (demo_book.project / "outputs" / "demo" / "colorfoil" / "colorfoil-colour-coco-v1.jsonl").exists()


@pytest.mark.slow
def test_evaluation_page(demo_book):
    html, text, images = demo_book.page("02b_colorfoil_evaluation")
    # the published column beside ours (headers in words where the page shows them with book.readable)
    assert "published accuracy (%) (paper)" in html and "in 40 of 42 cells" in text and images >= 3
    assert "vision adds (points over the best blind)" in html and "p mcnemar" in html


@pytest.mark.slow
def test_evaluation_page_reads_the_saved_benchmark(demo_book, tmp_path):
    """Read from the files 02a saved (``benchmark_dir``) instead of rebuilt, on the demo's cache."""
    html, text, images = demo_book.rerun("02b_colorfoil_evaluation", tmp_path,
                                         benchmark_dir=str(demo_book.project / "outputs" / "demo" / "colorfoil"))
    assert "published accuracy (%) (paper)" in html and "in 40 of 42 cells" in text and images >= 3
    assert "vision adds (points over the best blind)" in html and "p mcnemar" in html


@pytest.mark.slow
def test_colour_model_page(demo_book):
    html, text, images = demo_book.page("02c_colorfoil_colour_model")
    assert "Demo output" in html and images >= 4
