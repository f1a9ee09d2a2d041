"""Figure captions, without a build: every notebook cell that draws a figure carries its caption in
``metadata.mystnb.figure`` (the convention of CONTRIBUTING.md, "Figures"), and the book puts a
cell's caption on its images only (``vlbias.book.captions_on_images_only``). The captions as a
reader sees them, under the images of a built book: tests/core/test_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vlbias import book

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def code_cells(path: Path) -> list[tuple[int, dict, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(index, cell, "".join(cell["source"])) for index, cell in enumerate(cells) if cell["cell_type"] == "code"]


def test_every_cell_that_draws_a_figure_has_a_caption_and_a_name_of_its_notebook():
    missing, malformed, names = [], [], {}
    for path in NOTEBOOKS:
        for index, cell, source in code_cells(path):
            options = book.figure_options(cell)
            where = f"{path.stem} cell {index} ({source.strip().splitlines()[0][:60]!r})"
            if book.draws_figure(source) and options is None:
                missing.append(where)
            if options is None:
                continue
            caption, name = str(options.get("caption", "")).strip(), str(options.get("name", ""))
            # words a reader can read; numbers a run computes belong in its output, never in metadata
            if len(caption.split()) < 8 or not caption.endswith(".") or "{" in caption:
                malformed.append(f"{where}: caption {caption!r}")
            prefix = path.stem.split("_")[0]
            if not re.fullmatch(rf"fig-({re.escape(path.stem)}|{re.escape(prefix)})-[a-z0-9-]+", name):
                malformed.append(f"{where}: name {name!r} is not fig-{path.stem}-<short>")
            names.setdefault(name, []).append(where)
    assert not missing, "cells that draw a figure without a caption (metadata.mystnb.figure):\n" + "\n".join(missing)
    assert not malformed, "\n".join(malformed)
    repeated = {name: where for name, where in names.items() if len(where) > 1}
    assert not repeated, f"figure names must be unique in the book: {repeated}"
    assert len(names) >= len(NOTEBOOKS)  # every page has at least one figure


def test_only_cells_that_draw_a_figure_carry_a_caption():
    stray = [f"{path.stem} cell {index}" for path in NOTEBOOKS for index, cell, source in code_cells(path)
             if book.figure_options(cell) is not None and not book.draws_figure(source)]
    assert not stray, f"captions on cells that draw no figure (or draw one in a way draws_figure misses): {stray}"


@pytest.mark.parametrize("source", [
    "fig, ax = plt.subplots()\nax.plot(x, y)",
    "plt.tight_layout(); plt.show()",
    "ax = table.plot.barh(stacked=True)",
    "frequencies.plot(kind='bar')",
    "sns.heatmap(confusion, annot=True)",
    "mk.plot_unmarked_by_reporting_gap(result)",
    "display(fig)",
    "ax.imshow(grid)",
])
def test_draws_figure_finds_the_ways_the_notebooks_draw(source):
    assert book.draws_figure(source)


@pytest.mark.parametrize("source", [
    'display(shown(table, "gender", "Figure 1\'s values"))',
    "source_cads, mapping = config_from_source_names(source_config, 50)",
    'sns.set_theme(style="whitegrid")',
    "figures = 3\nprint(figures)",
    "display(book.readable(table))",
])
def test_draws_figure_ignores_cells_that_draw_nothing(source):
    assert not book.draws_figure(source)


def display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


PNG = display({"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure size 640x480 with 1 Axes>"]})
TABLE = display({"text/html": ["<table></table>"], "text/plain": ["a table"]})
STREAM = {"output_type": "stream", "name": "stdout", "text": ["printed\n"]}
FIGURE = {"caption": "What is plotted, and how to read it.", "name": "fig-01x_demo-bars"}


def notebook_of(outputs: list[dict], tags=("hide-input",)) -> dict:
    cell = {"cell_type": "code", "id": "c1", "execution_count": 3, "source": "plt.show()", "outputs": outputs,
            "metadata": {"tags": list(tags), "mystnb": {"figure": dict(FIGURE)}}}
    return {"cells": [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# A"}, cell],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_cell_whose_outputs_are_one_image_is_left_as_it_is():
    notebook = notebook_of([STREAM, PNG])
    assert book.captions_on_images_only(notebook) is notebook
    plain = {"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "outputs": [TABLE, PNG]}]}
    assert book.captions_on_images_only(plain) is plain  # no caption: myst-nb wraps nothing


def test_tables_beside_a_figure_get_no_caption_and_each_image_a_name_of_its_own():
    outputs = [STREAM, TABLE, PNG, TABLE, TABLE, PNG, STREAM]
    notebook = notebook_of(outputs)
    cells = book.captions_on_images_only(notebook)["cells"][1:]
    assert [c["outputs"] for c in cells] == [[STREAM, TABLE], [PNG], [TABLE, TABLE], [PNG, STREAM]]
    assert [book.figure_options(c) for c in cells] == [
        None, FIGURE, None, {**FIGURE, "name": "fig-01x_demo-bars-2"}]
    first, *continued = cells
    assert first["source"] == "plt.show()" and first["metadata"]["tags"] == ["hide-input"]
    assert first["execution_count"] == 3 and "mystnb" not in first["metadata"]
    for cell in continued:  # outputs only: the source is the first cell's
        assert cell["metadata"]["tags"] == ["remove-input"] and cell["source"].strip()
    assert len({c["id"] for c in cells}) == len(cells)
    assert notebook["cells"][1]["outputs"] == outputs and book.figure_options(notebook["cells"][1]) == FIGURE


def test_a_captioned_cell_that_drew_nothing_this_run_shows_its_text_without_a_figure():
    cells = book.captions_on_images_only(notebook_of([STREAM, TABLE], tags=()))["cells"]
    assert len(cells) == 2 and book.figure_options(cells[1]) is None and cells[1]["outputs"] == [STREAM, TABLE]


def test_a_cell_that_draws_two_figures_captions_each_with_its_own_words():
    captions = ["COCO's examples.", "Flickr30k's examples."]
    metadata = {"caption": "Examples.", "name": "fig-x", "captions": captions}
    images = [{"output_type": "display_data", "metadata": {}, "data": {"image/png": "AAAA"}} for _ in range(2)]
    cell = {"cell_type": "code", "id": "c", "source": "plt.show()", "execution_count": 1, "outputs": images,
            "metadata": {"mystnb": {"figure": metadata}}}
    split = book.captions_on_images_only({"cells": [cell]})["cells"]
    assert [part["metadata"]["mystnb"]["figure"] for part in split] == [
        {"caption": "COCO's examples.", "name": "fig-x"}, {"caption": "Flickr30k's examples.", "name": "fig-x-2"}]
    one = {**cell, "outputs": images[:1]}  # one figure drawn: the cell's own caption, the list dropped
    assert book.captions_on_images_only({"cells": [one]})["cells"][0]["metadata"]["mystnb"]["figure"] == {
        "caption": "Examples.", "name": "fig-x"}
    assert cell["metadata"]["mystnb"]["figure"]["captions"] == captions  # the notebook itself is unchanged


def test_every_plots_helper_that_draws_is_named_plot_so_draws_figure_sees_its_cells():
    """``book.draws_figure`` knows a vlbias helper draws by its ``plot_`` name: a helper in a part's
    ``plots`` module whose body draws (matplotlib calls) under another name would leave its notebook
    cells uncaptioned and unchecked (as ``show_shares`` once did on 04d)."""
    import importlib
    import inspect
    import pkgutil

    import vlbias

    draws = re.compile(r"\bplt\.|\.subplots\(|\bimshow\(|\.bar[h]?\(|\.scatter\(")
    misnamed, checked = [], 0
    for info in pkgutil.walk_packages(vlbias.__path__, "vlbias."):
        if not info.name.endswith(".plots"):
            continue
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ != module.__name__ or name.startswith("_"):
                continue
            checked += 1
            if draws.search(inspect.getsource(function)) and not name.startswith("plot_"):
                misnamed.append(f"{info.name}.{name}")
    assert checked >= 10  # the four parts' plots modules were found
    assert not misnamed, f"helpers that draw but escape book.draws_figure (name them plot_*): {misnamed}"
    assert book.draws_figure("t2i_plots.plot_shares(shares)") and not book.draws_figure("t2i_plots.show_shares(s)")
