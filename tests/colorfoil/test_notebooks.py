"""Part II's pages as the demo book shows them (the caption world in COCO's and Flickr30k's layouts,
models trained on it with known causes), and the evaluation page rerun on the benchmark files the
construction page saved."""

import json
import re

import pytest

LABELS = ("dual encoder, colour words", "dual encoder, no colour words", "pairwise matcher", "easy-VQA colour model")


def _markdown(demo_book, name: str) -> str:
    """The Markdown outputs of an executed page: the sentences it computes."""
    cells = json.loads((demo_book.project / "book" / "generated" / f"{name}.ipynb").read_text())["cells"]
    return "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in cells if c["cell_type"] == "code"
                   for o in c.get("outputs", []))


def _verdict(findings: str, label: str) -> str:
    found = re.search(re.escape(label) + r" ranks the caption first in [\d.]+% \[[\d.]+, [\d.]+\] of [\d,]+ pairs: "
                      r"(above chance|at chance|below chance) \(50%\)", findings)
    assert found, (label, findings[:2000])
    return found.group(1)


def _evaluation_findings(html, text, images, findings):
    assert "Demo output: models trained on a planted world" in html and "tiny:" not in html
    # the published column beside ours (headers in words where the page shows them with book.readable)
    assert "published accuracy (%) (paper)" in html and "in 40 of 42 cells" in text and images >= 3
    assert "vision adds (points over the best blind)" in html and "p mcnemar" in html
    assert all(label in html for label in LABELS)
    # the planted causes, recovered: the model that never saw a colour word sits at chance, the one
    # that saw them and the matcher trained on foils beat it
    assert _verdict(findings, "dual encoder, colour words") == "above chance"
    assert _verdict(findings, "dual encoder, no colour words") == "at chance"
    assert _verdict(findings, "pairwise matcher") == "above chance"
    assert "Pairwise matcher against the first dual encoder: pairwise matcher minus dual encoder, colour words" in findings
    assert "plants no advantage for either kind" in findings


def _power(html: str) -> float:
    """The power the page's banner states for its planted contrast (one line)."""
    found = re.findall(r"power <b>([\d.]+)</b>", html)
    assert len(found) == 1, found
    return float(found[0])


def _box(html: str) -> str:
    """The page's findings box (HTML)."""
    return html[html.index("Findings: paper vs ours"):]


@pytest.mark.slow
def test_construction_page_writes_the_benchmark(demo_book):
    html, text, images = demo_book.page("02a_colorfoil_construction")
    assert "Demo output" in html and "coco (published)" in html and images >= 2
    assert "generated caption world" in html and "tiny:" not in html
    # the premise is an exact count of every caption and foil, never a sampled interval
    box = _box(html)
    assert re.search(r"\(exact: all [\d,]+ captions and [\d,]+ foils counted\)", box), box[:3000]
    assert "supports 1, cannot test 2" in box
    assert (demo_book.project / "outputs" / "demo" / "colorfoil" / "colorfoil-colour-coco-v1.jsonl").exists()


@pytest.mark.slow
def test_evaluation_page(demo_book):
    html, text, images = demo_book.page("02b_colorfoil_evaluation")
    _evaluation_findings(html, text, images, _markdown(demo_book, "02b_colorfoil_evaluation"))
    # the box: the planted dual encoder against its control, and no verdict on the paper's matcher claim
    box = _box(html)
    assert "planted − control" in box and "recovered 1, this world plants no such cause 1" in box, box[:3000]
    assert "supports" not in box.split("</table>")[0] and "contradicts" not in box
    assert _power(html) >= 0.9 and "cannot reach power" not in html


@pytest.mark.slow
def test_evaluation_page_reads_the_saved_benchmark(demo_book, tmp_path):
    """Read from the files 02a saved (``benchmark_dir``) instead of rebuilt, on the demo's cache."""
    html, text, images = demo_book.rerun("02b_colorfoil_evaluation", tmp_path,
                                         benchmark_dir=str(demo_book.project / "outputs" / "demo" / "colorfoil"))
    assert "published accuracy (%) (paper)" in html and "in 40 of 42 cells" in text and images >= 3
    assert "vision adds (points over the best blind)" in html and "p mcnemar" in html
    assert all(label in html for label in LABELS)


@pytest.mark.slow
@pytest.mark.parametrize("name, figures, banner, said", [
    ("02c_colorfoil_colour_model", 4, "Demo output", "planted − control"),
    ("02d_colorfoil_generative", 2, "Demo output: models trained on a planted world",
     "follow the position, not the content"),  # its two-choice row
])
def test_colour_model_and_generative_pages_judge_their_model_against_its_control(demo_book, name, figures, banner,
                                                                               said):
    html, text, images = demo_book.page(name)
    assert banner in html and images >= figures
    box = _box(html)
    assert "planted − control" in box and "recovered 1, this world plants no such cause 1" in box, box[:3000]
    assert said in box and _power(html) >= 0.9
    assert _power(html) >= 0.9 and "cannot reach power" not in html
