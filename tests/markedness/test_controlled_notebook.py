"""The controlled markedness page as the demo book shows it: twelve mini-CLIPs trained on the planted world."""

import pytest


@pytest.mark.slow
def test_controlled_markedness_page(demo_book):
    html, _, images = demo_book.page("01c_controlled_markedness")
    assert "Demo output" in html and images >= 2
    for column in ("unmarked (%)", "gap (pp)", "final loss", "trained:world-clip?red_named=0.1"):
        assert column in html
    assert "<th>gap_pp</th>" not in html  # headers in words, whatever the cell displays
