"""Part I's pages as the demo book shows them (the face world, mini-CLIPs trained on it with planted
reporting and a uniform control), and one rerun with other parameters on the demo's cache."""

import json

import pytest


def _markdown(demo_book, name: str) -> str:
    """The Markdown outputs of an executed page: the sentences it computes."""
    cells = json.loads((demo_book.project / "book" / "generated" / f"{name}.ipynb").read_text())["cells"]
    return "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in cells if c["cell_type"] == "code"
                   for o in c.get("outputs", []))


def _says_what_the_models_and_data_are(html):
    assert "Demo output: models trained on a planted world" in html
    assert "captions name White 10% of the time" in html  # the planted cause, from the recipe's options
    assert "a generated world in the layout of fairface, not the real data set" in html
    assert "tiny" not in html.lower().split("demo output")[1][:400]


@pytest.mark.slow
def test_self_similarity_page(demo_book):
    html, _, images = demo_book.page("01a_self_similarity")
    _says_what_the_models_and_data_are(html)
    assert images >= 6
    for caption in ("Table 1", "Table 2", "Table 3", "Table 4", "published (paper)"):
        assert caption in html
    findings = _markdown(demo_book, "01a_self_similarity")
    # the ranking sentence names the run's own extremes (which race is lowest depends on the trained
    # weights: tests/markedness/test_planted_pages.py), and the findings box judges the paper's claim
    assert "**By race.** Highest self-similarity" in findings and "lowest: **" in findings
    assert "White images are the least self-similar of the seven races" in html
    assert "planted: reporting and White variety" in html and "control: uniform reporting" in html
    # the box: a row per control that removes one of the claim's two planted causes, each a contrast
    assert "(against control: no extra White variety)" in html and "(against control: uniform reporting)" in html
    assert "planted − control" in html and "claim is tested in the full profile" in html
    # the banner's power, before any table
    assert html.index("<b>Power</b>") < html.index("Table 1") and "1,080 pictures per race" in html


@pytest.mark.slow
def test_markedness_page(demo_book):
    html, _, images = demo_book.page("01b_markedness")
    _says_what_the_models_and_data_are(html)
    assert images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "published % (paper)"):
        assert caption in html
    assert "balanced (%)" not in html  # the demo does not balance; the rerun below does
    findings = _markdown(demo_book, "01b_markedness")
    # the planted reporting bias, recovered beyond sampling noise
    assert "**By race.** Highest unmarked rate: **White**" in findings
    assert "the top of the ranking is beyond sampling noise" in findings.split("**By gender.**")[0]
    assert "**By gender.** Highest unmarked rate: **Male**" in findings
    assert "planted reporting: White highest" in findings
    # the box judges each claim against the uniform control, on the same pictures
    box = html[html.index("Findings: paper vs ours"):]
    assert box.count("✔ recovered") == 3 and "supports" not in box and "contradicts" not in box
    assert "The control has a gap of its own" in box  # the control's Male gap, which nothing planted explains


@pytest.mark.slow
def test_markedness_page_rerun_balanced_with_other_prompts(demo_book, tmp_path):
    html, _, images = demo_book.rerun("01b_markedness", tmp_path, balance=True,
                                      prompt_prefixes=["a photo of", "a picture of"])
    assert "Demo output" in html and images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "balanced (%)", "published % (paper)"):
        assert caption in html
