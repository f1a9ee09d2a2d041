"""One table style for every page of the book: padding, numbers right-aligned, no meaningless index,
each number written with the precision it carries, long tables collapsed with their CSV beside them.

Pages do not call this themselves: :func:`vlbias.book.profile_banner` (the first call of every page)
installs :func:`table_html` as IPython's HTML formatter for DataFrames and Stylers, so every table a page
displays goes through it. What it changes is the display only; the DataFrame keeps its values.

- **Numbers.** A float column whose values are all whole numbers (counts kept as floats, "50.000000"
  for a chance level) is written as integers; any other float column with the fewest decimals, up to
  six, that write its values exactly (a column rounded to 3 places shows 3), else three, or two
  significant digits for a number too small for three (6.0e-05). A one-column
  table of mixed quantities (a summary, "images 180.000" above "kappa 0.734") is decided row by row.
  Formats a page gave its Styler are kept, except that whole numbers are never given decimals.
- **Index.** pandas' row numbers (an unnamed integer index, sorted or filtered or not) are hidden; a named
  or labelled index carries meaning and stays.
- **Missing values** show as "–".
- **Long tables** (over :data:`LONG_TABLE_ROWS` rows) are folded into a dropdown (``<details>``) that
  says how many rows it holds, with a link to download the table as CSV beside it.
"""

from __future__ import annotations

import base64
import copy
import html
import re

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

#: tables with more rows than this are folded into a dropdown, with a CSV download beside them
LONG_TABLE_ROWS = 30
#: the most rows a folded table shows on the page (its CSV holds them all)
MOST_SHOWN_ROWS = 300
#: what a missing value (NaN, None) shows as
MISSING = "–"
#: a text longer than this (a model spec, a prompt) may break after ? & = / , _ : on the page
LONG_WORD = 18
_BREAK_AFTER = re.compile(r"([?&=/,_:])")
#: the most decimals a number is written with when its column carries no rounding of its own
DEFAULT_DECIMALS = 3

TABLE_CSS = [
    {"selector": "", "props": "border-collapse: collapse; margin: 0.4em 0 1.2em; font-size: 0.85em;"},
    {"selector": "th, td", "props": "padding: 0.3em 0.45em; border-bottom: 1px solid #dde1e6; text-align: left;"},
    {"selector": "thead th", "props": "border-bottom: 2px solid #8a9099; vertical-align: bottom;"},
    {"selector": "caption", "props": "caption-side: top; text-align: left; font-weight: 600; padding: 0 0 0.4em;"},
]
NUMBER_CSS = "text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap;"


def decimals_needed(values, most: int = 6) -> int | None:
    """The fewest decimals, 0 to ``most``, that write every finite value of ``values`` exactly (as a
    column rounded to that many places is written); None when more are needed, or none is finite."""
    numbers = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=float)
    finite = numbers[np.isfinite(numbers)]
    if finite.size == 0:
        return None
    for decimals in range(most + 1):
        if np.all(np.abs(np.round(finite, decimals) - finite) <= 1e-9 * np.maximum(1.0, np.abs(finite))):
            return decimals
    return None


def number_format(decimals: int | None):
    """A cell formatter: ``decimals`` places, "–" for a missing value, anything else as it is. ``None``
    (values not rounded by the page): three places, and two significant digits for a number too small to
    show in three (a p-value of 6e-05 is not "0.000")."""
    def format_cell(value):
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            return MISSING
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            return html.escape(str(value))
        if decimals is None:
            return f"{value:.{DEFAULT_DECIMALS}f}" if value == 0 or abs(value) >= 0.0005 else f"{value:.1e}"
        return f"{value:.{decimals}f}"
    return format_cell


def breakable(value) -> str:
    """``value`` as HTML text, with a break opportunity (``<wbr>``) after each ? & = / , _ : of a word
    longer than :data:`LONG_WORD` characters, so that a model spec in a table wraps instead of widening it."""
    def word_html(word: str) -> str:
        if len(word) <= LONG_WORD:
            return html.escape(word, quote=False)
        return "".join(html.escape(part, quote=False) + ("<wbr>" if _BREAK_AFTER.fullmatch(part) else "")
                       for part in _BREAK_AFTER.split(word))

    return " ".join(word_html(word) for word in str(value).split(" "))


def _is_float(series: pd.Series) -> bool:
    return pd.api.types.is_float_dtype(series.dtype)


def _is_number(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def _default_index(index: pd.Index) -> bool:
    """Whether ``index`` is pandas' row numbering, which carries no meaning: unnamed integers (0..N-1,
    or what is left of them after filtering and sorting)."""
    return (not isinstance(index, pd.MultiIndex) and index.name is None
            and pd.api.types.is_integer_dtype(index.dtype))


def _formatted_cells(styler: Styler) -> set[tuple[int, int]]:
    """The (row, column) positions the page gave a format of its own. ``Styler.format({"a": ...})`` gives
    every other column pandas' default formatter (six places): those cells are not the page's choice."""
    from pandas.io.formats.style_render import _default_formatter

    default_precision = pd.get_option("styler.format.precision")

    def pandas_default(formatter) -> bool:
        return (getattr(formatter, "func", None) is _default_formatter
                and getattr(formatter, "keywords", {}).get("precision") == default_precision)

    return {cell for cell, formatter in getattr(styler, "_display_funcs", {}).items() if not pandas_default(formatter)}


def book_style(table: pd.DataFrame | Styler) -> Styler:
    """``table`` (a DataFrame, or a page's Styler, which is copied) in the book's table style."""
    styler = copy.deepcopy(table) if isinstance(table, Styler) else table.style
    data = styler.data
    own = _formatted_cells(styler) if isinstance(table, Styler) else set()
    rows_by_row = data.shape[1] == 1 and not _default_index(data.index)
    numbers = []  # the columns of numbers, right-aligned (by position: labels need not be unique)
    for position, column in enumerate(data.columns):
        series = data.iloc[:, position]
        text_like = series.dtype == object or pd.api.types.is_string_dtype(series.dtype)
        if not _is_number(series) and not text_like:
            continue
        numeric = pd.to_numeric(series, errors="coerce")
        if text_like and numeric.notna().sum() < series.notna().sum():
            # text and numbers mixed: long words may break, and each number is written at its own places
            # (cells the page formatted itself are left as they are)
            long_text = series.astype(str).str.len().max() > LONG_WORD
            for row in range(len(data)):
                value = series.iloc[row]
                if (row, position) in own:
                    continue
                if isinstance(value, str) and long_text:
                    styler._display_funcs[(row, position)] = breakable
                elif isinstance(value, (float, np.floating)) and not isinstance(value, bool):
                    styler._display_funcs[(row, position)] = number_format(decimals_needed([value]))
            continue
        if rows_by_row:  # one column of mixed quantities: each row its own precision
            for row in range(len(data)):
                decimals = decimals_needed([numeric.iloc[row]])
                _format(styler, own, [row], position, decimals, keep_own=decimals != 0)
        else:
            decimals = 0 if not _is_float(series) and not text_like else decimals_needed(numeric)
            _format(styler, own, range(len(data)), position, decimals, keep_own=decimals != 0)
        numbers.append(position)
    # hidden unless the columns' level names need the index's header cells to show in
    if (_default_index(data.index) and not any(getattr(styler, "hide_index_", [False]))
            and not any(name is not None for name in data.columns.names)):
        styler.hide(axis="index")
    styler.set_table_styles(TABLE_CSS + [{"selector": f"td.col{position}", "props": NUMBER_CSS} for position in numbers],
                            overwrite=False)
    return styler


def _format(styler: Styler, own: set, rows, column: int, decimals: int | None, keep_own: bool) -> None:
    """Give the cells of ``rows`` in ``column`` ``decimals`` places, except those the page formatted
    itself (``keep_own``); whole numbers (``decimals`` 0) are written as whole numbers regardless."""
    formatter = number_format(decimals)
    for row in rows:
        if keep_own and (row, column) in own:
            continue
        styler._display_funcs[(row, column)] = formatter


def to_csv_link(data: pd.DataFrame, name: str) -> str:
    """An ``<a download>`` link holding ``data`` as CSV (index included when it carries meaning)."""
    text = data.to_csv(index=not _default_index(data.index))
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return (f'<a download="{html.escape(name)}.csv" href="data:text/csv;base64,{encoded}" '
            f'class="vlbias-csv">download as CSV</a>')


def _file_name(caption: str | None) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", (caption or "table").lower()).strip("-")
    return words[:60] or "table"


def table_html(table: pd.DataFrame | Styler) -> str:
    """The HTML a page shows for ``table``: the book's style (:func:`book_style`), headers in words, and
    a table of more than :data:`LONG_TABLE_ROWS` rows folded into a dropdown with a CSV download."""
    from .book import styler_in_words

    full = table.data if isinstance(table, Styler) else table
    if len(full) > MOST_SHOWN_ROWS:  # the page shows the first rows; the CSV holds them all
        table = _head(table, MOST_SHOWN_ROWS)
    styled = styler_in_words(book_style(table))  # headers in words, long labels breakable
    body = styled.to_html()
    if len(full) <= LONG_TABLE_ROWS:
        return body
    caption = getattr(styled, "caption", None)
    title = html.escape(str(caption)) if caption else "Table"
    shown = f"{len(full):,} rows" if len(full) <= MOST_SHOWN_ROWS else f"the first {MOST_SHOWN_ROWS:,} of {len(full):,} rows"
    return (f'<details class="vlbias-long-table"><summary>{title}: {shown} (click to show)</summary>'
            f'{body}</details><p class="vlbias-csv">{to_csv_link(full, _file_name(caption))}</p>')


def _head(table: pd.DataFrame | Styler, rows: int) -> pd.DataFrame | Styler:
    """The first ``rows`` of ``table``; a Styler keeps its caption, formats and styles."""
    if not isinstance(table, Styler):
        return table.head(rows)
    head = copy.deepcopy(table)
    head.data = table.data.head(rows)
    head.index, head.columns = head.data.index, head.data.columns
    head.ctx.clear()
    return head
