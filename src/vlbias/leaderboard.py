"""The leaderboard's views of :func:`vlbias.cards.leaderboard`'s table: one ranked table per measure,
a forest plot per measure (estimate and interval of every model, one panel per model kind), and a
sortable HTML table of everything, which a page shows and a reader sorts by clicking a header.
"""

from __future__ import annotations

import html
import math
from itertools import count

import pandas as pd

from .book import CONTENT_WIDTH_INCHES, panels

#: the columns the sortable table shows, in order
SHOWN = ["kind", "measure", "group", "rank", "spec", "estimate", "ci_low", "ci_high", "interval", "n", "separated"]
_ids = count()


def ranked(board: pd.DataFrame, measure: str, group: str = "") -> pd.DataFrame:
    """The rows of one measure (and ``group``; "" for a whole-model measure), ranked within each kind.
    An unknown measure raises, listing the measures the board holds."""
    if measure not in set(board["measure"]):
        raise ValueError(f"ranked: no measure {measure!r} on the board; it holds {sorted(set(board['measure']))}")
    rows = board[(board["measure"] == measure) & (board["group"] == group)]
    if rows.empty:
        groups = sorted(set(board.loc[board["measure"] == measure, "group"]))
        raise ValueError(f"ranked: measure {measure!r} has no group {group!r}; its groups are {groups}")
    return rows.sort_values(["kind", "rank"], na_position="last").reset_index(drop=True)


def forest_plot(board: pd.DataFrame, measure: str, group: str = "", labels: dict[str, str] | None = None):
    """Every model's estimate and interval of one measure, a panel per model kind, ranked top down
    (first at the top); ``labels``: spec -> the name the axis gives it. Returns the figure."""
    rows = ranked(board, measure, group)
    kinds = list(dict.fromkeys(rows["kind"]))
    height = max(1.6, 0.45 * rows.groupby("kind").size().max() + 1.0)
    fig, axes = panels(len(kinds), row_height=height, width=CONTENT_WIDTH_INCHES)
    for ax, kind in zip(axes, kinds):
        shown = rows[rows["kind"] == kind].iloc[::-1]  # rank 1 at the top
        y = range(len(shown))
        estimate = shown["estimate"].astype(float)
        low = (estimate - shown["ci_low"].astype(float)).clip(lower=0).fillna(0)
        high = (shown["ci_high"].astype(float) - estimate).clip(lower=0).fillna(0)
        ax.errorbar(estimate, list(y), xerr=[low, high], fmt="o", color="#1f4e79", ecolor="#7a9cc6", capsize=3)
        ax.set_yticks(list(y), [(labels or {}).get(spec, spec) for spec in shown["spec"]])
        if shown["order"].iloc[0] == "absolute":
            ax.axvline(0, color="#999999", linewidth=0.8, linestyle="--")
        unit = shown["unit"].dropna()
        ax.set_xlabel(f"{measure}" + (f" ({unit.iloc[0]})" if len(unit) else ""))
        ax.set_title(f"{kind} models" + (f": {group}" if group else ""))
    intervals = rows["interval"].dropna().unique()
    fig.suptitle(f"{measure}: estimate and " + (", ".join(intervals) if len(intervals) else "no") + " interval")
    fig.tight_layout()
    return fig


def _cell(value) -> tuple[str, str]:
    """(text shown, value sorted by) of one cell."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "", ""
    if isinstance(value, float):
        return f"{value:.3f}", repr(value)
    return html.escape(str(value)), html.escape(str(value))


def sortable_html(board: pd.DataFrame, columns: list[str] | None = None, caption: str = "") -> str:
    """The board as an HTML table whose rows sort by any column when its header is clicked (again:
    the other way), numbers as numbers; a small script of its own, no library."""
    columns = columns or [column for column in SHOWN if column in board.columns]
    table_id = f"vlbias-board-{next(_ids)}"
    head = "".join(f'<th onclick="vlbiasSort(\'{table_id}\', {i})" style="cursor:pointer" title="sort">'
                   f"{html.escape(column.replace('_', ' '))} ↕</th>" for i, column in enumerate(columns))
    body = "".join("<tr>" + "".join(f'<td data-v="{value}">{text}</td>' for text, value in map(_cell, row)) + "</tr>"
                   for row in board[columns].itertuples(index=False))
    script = ("<script>function vlbiasSort(id, c){var t=document.getElementById(id),b=t.tBodies[0],"
              "r=Array.from(b.rows),d=t.dataset.col==c&&t.dataset.dir=='1'?-1:1;t.dataset.col=c;t.dataset.dir=d;"
              "r.sort(function(x,y){var a=x.cells[c].dataset.v,e=y.cells[c].dataset.v,p=parseFloat(a),q=parseFloat(e);"
              "if(a===''&&e!=='')return 1;if(e===''&&a!=='')return -1;"
              "return d*(isNaN(p)||isNaN(q)?a.localeCompare(e):p-q)});r.forEach(function(x){b.appendChild(x)})}</script>")
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return (f'{script}<table id="{table_id}" class="vlbias-board">{title}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")
