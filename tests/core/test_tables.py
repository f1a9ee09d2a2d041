"""The book's one table style (``vlbias.tables``): numbers written with the precision they carry, no
meaningless index, long tables folded with their CSV beside them; and the pages' parameters shown once,
as one table, and captions as alt text (``vlbias.book.for_the_book``)."""

import base64
import html
import io
import re

import numpy as np
import pandas as pd
import pytest

from vlbias import book
from vlbias import tables


def cells(page_html: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", page_html, re.S)]


def row_labels(page_html: str) -> list[str]:
    return [label.strip() for label in re.findall(r'<th[^>]*class="row_heading[^"]*"[^>]*>([^<]*)</th>', page_html)]


@pytest.mark.parametrize("values, expected", [
    ([50.0, 12.0], 0), ([0.5, 0.25], 2), ([0.123, 1.5], 3), ([1 / 3], None), ([np.nan, 2.0], 0), ([np.nan], None),
    ([0.1234, 7.0], 4), ([0.00006, 0.00134], 5),
])
def test_decimals_needed_are_the_fewest_that_write_every_value_exactly(values, expected):
    assert tables.decimals_needed(values) == expected


def test_whole_numbers_read_as_integers_and_rounded_columns_keep_their_places():
    table = pd.DataFrame({"chance (%)": [50.0, 50.0], "accuracy": [0.712, 0.5], "images": [36, 12],
                          "model": ["a", "b"], "rate": [0.25, np.nan], "raw": [1 / 3, 2 / 3]})
    shown = tables.table_html(table)
    # pandas would write "50.000000", "0.712000", "0.250000", "nan"
    assert cells(shown) == ["50", "0.712", "36", "a", "0.25", "0.333",
                            "50", "0.500", "12", "b", "–", "0.667"]
    assert row_labels(shown) == []  # the default 0, 1, ... index is hidden
    # and so are row numbers left after sorting, or after a rename (which makes the RangeIndex an Index)
    assert row_labels(tables.table_html(table.sort_values("accuracy"))) == []
    assert row_labels(tables.table_html(table.rename(index={5: "x"}))) == []
    assert row_labels(tables.table_html(table.rename_axis("seed"))) == ["0", "1"]  # a named index means something
    assert "padding" in shown and "text-align: right" in shown


def test_small_numbers_keep_their_digits():
    rounded = pd.DataFrame({"p value": [0.00006, 0.00134]})  # a page's .round(5)
    assert cells(tables.table_html(rounded)) == ["0.00006", "0.00134"]
    raw = pd.DataFrame({"p value": [6.1e-7, 0.25, 0.0]})  # unrounded: three places, or two digits when smaller
    assert cells(tables.table_html(raw)) == ["6.1e-07", "0.250", "0.000"]


def test_numbers_among_text_keep_their_own_places():
    mixed = pd.DataFrame({"printed": ["0.0%", 0.263, 1 / 3, "1000000000.0x"]}, dtype=object)
    assert cells(tables.table_html(mixed)) == ["0.0%", "0.263", "0.333", "1000000000.0x"]  # pandas: 0.263000


def test_a_labelled_index_stays_and_a_one_column_summary_is_written_row_by_row():
    summary = pd.DataFrame({"value": [180.0, 3.0, 0.734]}, index=pd.Index(["images", "annotators", "kappa"]))
    shown = tables.table_html(summary)
    assert cells(shown) == ["180", "3", "0.734"]  # was "180.000", "3.000", "0.734"
    assert row_labels(shown) == ["images", "annotators", "kappa"]


def test_a_column_the_page_did_not_format_is_not_given_pandas_six_places():
    styler = pd.DataFrame({"gap": [1.5], "rho": [0.9], "p": [0.1234567]}).style.format({"gap": "{:+.2f}"})
    assert cells(tables.table_html(styler)) == ["+1.50", "0.9", "0.123"]  # pandas alone: 0.900000, 0.123457


def test_a_pages_own_format_is_kept_except_that_whole_numbers_get_no_decimals():
    styler = pd.DataFrame({"n": [36.0, 4.0], "rate": [0.66, 0.25]}).style.format(precision=1).set_caption("Rates")
    shown = tables.table_html(styler)
    assert cells(shown) == ["36", "0.7", "4", "0.2"]  # "0.2": the page's one place, as pandas rounds 0.25
    assert "Rates" in shown
    assert styler.data["n"].tolist() == [36.0, 4.0]  # the page's Styler and data are untouched


def test_long_tables_fold_into_a_dropdown_with_their_csv_beside_them():
    short = pd.DataFrame({"x": np.arange(tables.LONG_TABLE_ROWS)})
    assert "<details" not in tables.table_html(short)
    rows = tables.MOST_SHOWN_ROWS + 5
    long = pd.DataFrame({"group": [f"g{i}" for i in range(rows)], "rate": np.arange(rows) / 4})
    shown = tables.table_html(long.style.set_caption("Every group"))
    assert shown.startswith('<details class="vlbias-long-table"><summary>Every group: the first 300 of 305 rows')
    assert len(cells(shown)) == 2 * tables.MOST_SHOWN_ROWS
    encoded = re.search(r'href="data:text/csv;base64,([^"]+)"', shown).group(1)
    assert re.search(r'download="every-group\.csv"', shown)
    again = pd.read_csv(io.StringIO(base64.b64decode(encoded).decode("utf-8")))
    pd.testing.assert_frame_equal(again, long)  # every row, not only those shown


def test_pages_show_tables_through_the_book_style():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        book.profile_banner("demo")
        shown = shell.display_formatter.format(pd.DataFrame({"chance_%": [50.0]}))[0]["text/html"]
        assert cells(shown) == ["50"] and "chance (%)" in shown
    finally:
        formatter = shell.display_formatter.formatters["text/html"]
        formatter.type_printers.pop(pd.DataFrame, None)
        InteractiveShell.clear_instance()


PARAMETERS = """# Parameters (papermill overrides these)
profile = "full"
model_spec = "ViT-B-32/openai"   # the paper's CLIP
data_root = None                 # None: the real data;
                                 # "world": the generated world
epochs = 30
"""
INJECTED = """# Parameters
profile = "demo"
model_spec = "trained:face-clip"
data_root = "world"
epochs = 30
"""


def notebook_with(*cells_: dict) -> dict:
    return {"cells": list(cells_), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def code(source: str, tags=(), metadata=None) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {"tags": list(tags), **(metadata or {})},
            "outputs": [], "execution_count": 1}


def test_the_parameters_show_once_as_one_table_of_values_defaults_and_what_each_is():
    notebook = notebook_with(code("import x"), code(PARAMETERS, ["parameters"]), code(INJECTED, ["injected-parameters"]),
                             code("print(1)"))
    shown = book.parameters_shown_once(notebook)
    assert [cell["source"] for cell in shown["cells"]] == ["import x", "# the parameters of this run", "print(1)"]
    table = shown["cells"][1]
    assert table["metadata"]["tags"] == ["remove-input"]
    page = table["outputs"][0]["data"]["text/html"]
    rows = [cells(row) for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)][1:]
    assert rows == [
        ["profile", '"demo"', '"full"', ""],
        ["model_spec", '"trained:face-clip"', '"ViT-B-32/openai"', "the paper's CLIP"],
        ["data_root", '"world"', "None", 'None: the real data; "world": the generated world'],
        ["epochs", "30", "", ""],  # the same as its default: no default column
    ]
    assert "the demo profile sets 3" in page
    assert book.parameters_shown_once(notebook_with(code(PARAMETERS, ["parameters"]))) is not None
    alone = notebook_with(code(PARAMETERS, ["parameters"]))
    assert book.parameters_shown_once(alone) is alone  # a source notebook (nothing injected) is left as it is


def test_a_captioned_figure_gets_its_caption_as_alt_text_unless_it_has_one():
    caption = {"mystnb": {"figure": {"caption": "Unmarked %\nper group.", "name": "fig-x"}}}
    own = {"mystnb": {"figure": {"caption": "A caption."}, "image": {"alt": "Bars of three groups."}}}
    notebook = notebook_with(code("plt.show()", metadata=caption), code("plt.show()", metadata=own), code("1"))
    shown = book.alt_text_from_captions(notebook)
    assert shown["cells"][0]["metadata"]["mystnb"]["image"] == {"alt": "Unmarked % per group."}
    assert shown["cells"][1]["metadata"]["mystnb"]["image"] == {"alt": "Bars of three groups."}
    assert "image" not in notebook["cells"][0]["metadata"]["mystnb"]  # the notebook itself is not changed
    plain = notebook_with(code("1"))
    assert book.alt_text_from_captions(plain) is plain


def test_page_problems_finds_doubled_numbers_repeated_captions_empty_tables_and_coarse_figures(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def caption(number, text):
        return f'<span class="caption-number">Fig. {number} </span><span class="caption-text">{text}</span>'

    (tmp_path / "_images").mkdir()
    for dpi, name in ((100, "_images/coarse.png"), (200, "_images/fine.png"), (72, "logo.png")):
        fig, _ = plt.subplots(figsize=(2, 1))
        fig.savefig(tmp_path / name, dpi=dpi)  # the theme's logo is no figure: not looked at
        plt.close(fig)
    page = (caption(1, "Figures 4-6: unmarked %") + caption(2, "Self-similarity (the paper's Figure 1).")
            + caption(3, "Self-similarity (the paper's Figure 1).") + caption(4, "Diversity.")
            + "<table><tr><td>nan</td><td>–</td></tr></table><table><tr><td>nan</td><td>0.5</td></tr></table>"
            + '<img src="_images/coarse.png"><img src="_images/fine.png"><img src="_images/missing.png"><img src="logo.png">')
    problems = book.page_problems(page, tmp_path / "page.html")
    assert problems == ["Fig. 1 is numbered twice: 'Figures 4-6: unmarked %'",
                        "Fig. 3 repeats the caption of Fig. 2: \"Self-similarity (the paper's Figure 1).\"",
                        "a table of 2 cells, every one missing",
                        "_images/coarse.png: 100 dpi, under 150"]
    assert book.page_problems(caption(1, "Diversity.") + '<img src="_images/fine.png">', tmp_path / "page.html") == []


def test_tables_with_repeated_labels_show_too():
    """Styler.map refuses repeated row or column labels: the style must not rely on it (01b's tables)."""
    table = pd.DataFrame([[1.0, 2.5], [3.0, 4.25]], columns=["rate", "rate"], index=["White", "White"])
    shown = tables.table_html(table)
    assert cells(shown) == ["1", "2.50", "3", "4.25"] and row_labels(shown) == ["White", "White"]


def test_long_labels_may_break_after_their_separators_and_short_ones_are_left_alone():
    spec = "trained:world-clip?red_named=0.1&blue_named=0.9"
    assert tables.breakable(spec) == "trained:<wbr>world-clip?<wbr>red_<wbr>named=<wbr>0.1&amp;<wbr>blue_<wbr>named=<wbr>0.9"
    assert tables.breakable("a red circle") == "a red circle" and tables.breakable("<b>") == "&lt;b&gt;"
    table = pd.DataFrame({"model": [spec, "tiny"], "accuracy": [0.5, 0.25]}, index=pd.Index([spec, "b"], name="run"))
    shown = tables.table_html(table)
    assert shown.count("<wbr>") == 2 * 7 and cells(shown)[0] == spec  # the row label and the cell; the text reads the same


def test_long_column_headers_read_in_words_and_may_break():
    table = pd.DataFrame({"word2vec-bolukbasi_embeddings": [1.0], "gap_pp": [2.0]})
    shown = tables.table_html(table)
    assert "word2vec-bolukbasi_<wbr>embeddings" not in shown  # in words first: no underscore left
    assert "word2vec-bolukbasi embeddings" in shown and "gap (pp)" in shown
    spec = pd.DataFrame({"trained:world-clip?red_named=0.1": [1.0]})
    assert "trained:<wbr>world-clip?<wbr>red" in tables.table_html(spec)


def test_the_header_checks_see_through_the_break_opportunities():
    page = "<table><thead><tr><th>red_<wbr>named</th></tr></thead><tbody><tr><td>spearman_<wbr>rho</td></tr></tbody></table>"
    assert book.code_style_headers(page) == ["red_named"] and book.measure_names_in_cells(page) == ["spearman_rho"]
