"""Part I's pages as the demo book shows them (FairFace fixture, tiny:clip and tiny:open-clip), and
one rerun with other parameters on the demo's cache."""

import pytest


@pytest.mark.slow
def test_self_similarity_page(demo_book):
    html, _, images = demo_book.page("01a_self_similarity")
    assert "Demo output" in html and images >= 6
    for caption in ("Table 1", "Table 2", "Table 3", "Table 4", "published (paper)"):
        assert caption in html


@pytest.mark.slow
def test_markedness_page(demo_book):
    html, _, images = demo_book.page("01b_markedness")
    assert "Demo output" in html and images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "published % (paper)"):
        assert caption in html
    assert "balanced (%)" not in html  # the demo does not balance; the rerun below does


@pytest.mark.slow
def test_markedness_page_rerun_balanced_with_other_prompts(demo_book, tmp_path):
    html, _, images = demo_book.rerun("01b_markedness", tmp_path, balance=True,
                                      prompt_prefixes=["a photo of", "a picture of"])
    assert "Demo output" in html and images >= 5
    for caption in ("Figure 4", "Figure 8", "Figure 11", "balanced (%)", "published % (paper)"):
        assert caption in html
