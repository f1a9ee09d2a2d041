"""The built book in a real browser: every page of the small static book, in the students' and the
instructors' build, read in headless Chromium (see ``browser_check`` in tests/core/conftest.py;
tests/core/test_demo_book.py does the same for the executed demo book). Figures: a static book
whose figure cells carry planted outputs (a table and two images, as a cell that shows a table
beside its figures would) shows every image in a figure with its caption, and no table in one."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from docutils.nodes import make_id

from vlbias import book

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("solutions", [False, True], ids=["students", "instructors"])
def test_every_page_reads_right_in_a_browser(static_book, browser_check, solutions):
    html, _ = static_book(solutions=solutions)
    problems, counts = browser_check(html, solutions)
    assert not problems, "\n".join(problems)
    assert counts["exercise pages"] == 5 and counts["notebook pages"] == len(NOTEBOOKS), counts
    assert counts["math pages"] >= 5, counts


# What a notebook page's article shows of its figures, once loaded.
FIGURES = """(() => {
  const article = document.querySelector("article.bd-article");
  if (!article) { return JSON.stringify(null); }
  const caption = i => { const f = i.closest("figure"); const c = f && f.querySelector("figcaption");
                         return c ? c.innerText.trim() : ""; };
  const images = [...article.querySelectorAll("img")];
  return JSON.stringify({
    images: images.length,
    uncaptioned: images.filter(i => !caption(i)).map(i => i.getAttribute("src")),
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute("src")),
    tablesInFigures: article.querySelectorAll("figure table").length,
    figures: [...article.querySelectorAll("figure")].map(f => f.id)
  });
})()"""


def figure_problems(chromium, html: Path) -> tuple[list[str], dict[str, dict]]:
    """Every image on a notebook page in a figure with a non-empty caption, no table in a figure:
    (problems, what each page showed)."""
    problems, seen = [], {}
    for page in sorted((Path(html) / "book" / "generated").rglob("*.html")):  # per-model pages in folders
        chromium.call("Page.navigate", url=page.as_uri())
        chromium.wait_for("Page.loadEventFired")
        result = chromium.call("Runtime.evaluate", expression=FIGURES, returnByValue=True)
        shown = json.loads(result["result"]["value"])
        if shown is None:
            problems.append(f"{page.name}: no article.bd-article (the theme's page layout changed?)")
            continue
        seen[page.stem] = shown
        if shown["uncaptioned"]:
            problems.append(f"{page.name}: images without a caption {shown['uncaptioned']}")
        if shown["broken"]:
            problems.append(f"{page.name}: images not loaded {shown['broken']}")
        if shown["tablesInFigures"]:
            problems.append(f"{page.name}: {shown['tablesInFigures']} tables inside a figure, under its caption")
    return problems, seen


def png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), (40, 90, 160)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def planted(path: Path, image: str) -> dict:
    """The source notebook as if it had run: each cell that draws a figure shows a table and two images."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    figure = {"output_type": "display_data", "metadata": {},
              "data": {"image/png": image, "text/plain": ["<Figure size 640x480 with 1 Axes>"]}}
    table = {"output_type": "display_data", "metadata": {},
             "data": {"text/html": ["<table><tr><th>group</th></tr><tr><td>a</td></tr></table>"],
                      "text/plain": ["a table"]}}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and book.draws_figure("".join(cell["source"])):
            cell["outputs"] = [table, figure, figure]
    return notebook


@pytest.fixture(scope="module")
def planted_book(tmp_path_factory, hang_guard, stand_in) -> tuple[Path, str]:
    """(html folder, build log) of the book with planted figure outputs on its notebook pages."""
    target = tmp_path_factory.mktemp("planted-book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(REPO / name, target / name)
    shutil.copytree(REPO / "book", target / "book", ignore=shutil.ignore_patterns("generated", "__pycache__"))
    (target / "book" / "generated").mkdir()
    image = png()
    for path in NOTEBOOKS:
        text = json.dumps(planted(path, image), indent=1, ensure_ascii=False)
        page = stand_in(target / "book" / "generated", path.stem)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8")
    result = hang_guard.run([str(Path(sys.executable).with_name("jupyter-book")), "build", str(target), "--builder",
                             "html"], 60.0, "jupyter-book build of the planted book", cwd=target,
                            env={**os.environ, "VLBIAS_SOLUTIONS": "0"}, capture_output=True, text=True)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    return target / "_build" / "html", log


def test_every_image_on_a_notebook_page_sits_in_a_figure_with_its_caption(planted_book, chromium):
    html, log = planted_book
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)  # e.g. a figure name given twice
    problems, seen = figure_problems(chromium, html)
    assert not problems, "\n".join(problems)
    assert set(seen) == {path.stem for path in NOTEBOOKS}
    for path in NOTEBOOKS:
        drawing = [cell for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
                   if cell["cell_type"] == "code" and book.draws_figure("".join(cell["source"]))]
        shown = seen[path.stem]
        assert shown["images"] == 2 * len(drawing) > 0, (path.stem, shown)
        names = [book.figure_options(cell)["name"] for cell in drawing]
        ids = [make_id(name) for name in names] + [make_id(f"{name}-2") for name in names]
        assert sorted(shown["figures"]) == sorted(ids), (path.stem, shown)


def test_the_browser_check_finds_a_table_or_figure_wider_than_the_content_column(chromium, tmp_path):
    """The probe of ``browser_check`` (INSPECT) at 1400 px: a table or an image that passes the right edge
    of the page's article is reported; one that fits is not."""
    page = tmp_path / "page.html"
    cells = "".join(f"<td>{'x' * 12}</td>" for _ in range(40))
    page.write_text('<html><body><main><article class="bd-article" style="width: 800px">'
                    '<table><caption>Wide</caption><tr>' + cells + '</tr></table>'
                    '<table><caption>Narrow</caption><tr><td>1</td></tr></table>'
                    '<img alt="a wide figure" style="width: 1200px; height: 10px" src="data:image/png;base64,'
                    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">'
                    '</article></main></body></html>', encoding="utf-8")
    overflowing = chromium.inspect(page)["overflowing"]
    assert len(overflowing) == 2 and overflowing[0].startswith("table ") and overflowing[0].endswith("px: Wide")
    assert overflowing[1] == "img 1200 px: a wide figure"
