"""The built book in a real browser: every page of the small static book, in the students' and the
instructors' build, read in headless Chromium (see ``browser_check`` in tests/core/conftest.py;
tests/core/test_demo_book.py does the same for the executed demo book)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("solutions", [False, True], ids=["students", "instructors"])
def test_every_page_reads_right_in_a_browser(static_book, browser_check, solutions):
    html, _ = static_book(solutions=solutions)
    problems, counts = browser_check(html, solutions)
    assert not problems, "\n".join(problems)
    notebooks = len(list((REPO / "notebooks").glob("*.ipynb")))
    assert counts["exercise pages"] == 4 and counts["notebook pages"] == notebooks, counts
    assert counts["math pages"] >= 5, counts
