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

#: the columns the sortable table shows, in order (the interval's name and n are in the per-measure tables):
#: as many as fit the content column at a reader's width
SHOWN = ["kind", "measure", "group", "rank", "spec", "estimate", "ci_low", "ci_high", "separated"]
#: the sortable table's headers, in words
HEADERS = {"spec": "model", "ci_low": "95% low", "ci_high": "95% high", "separated": "beyond the next"}
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
        shown = rows[rows["kind"] == kind].sort_values("rank")
        unit = _forest_panel(ax, shown, [(labels or {}).get(spec, spec) for spec in shown["spec"]])
        ax.set_xlabel(f"{measure}" + (f" ({unit})" if unit else ""))
        ax.set_title(f"{kind} models" + (f": {group}" if group else ""))
    intervals = rows["interval"].dropna().unique()
    fig.suptitle(f"{measure}: estimate and " + (", ".join(intervals) if len(intervals) else "no") + " interval")
    fig.tight_layout()
    return fig


#: the longest row name a forest plot shows (longer ones end in "…"; the tables hold them whole)
MAX_NAME = 48


def _short(name: str, width: int = MAX_NAME) -> str:
    """``name`` cut to ``width`` characters at a word, with "…" where it was cut."""
    if len(name) <= width:
        return name
    cut = name[:width - 1].rsplit(" ", 1)[0].rstrip(" ,/:;")
    return cut + "…"


def _forest_panel(ax, rows: pd.DataFrame, names: list[str]) -> str:
    """Draw ``rows`` top down (the first at the top) as points with interval bars on ``ax``, each named
    by ``names`` (cut to :data:`MAX_NAME` characters), with a dashed 0 for a measure ranked closest to 0
    or intervals that cross it; returns their unit ("" without one)."""
    shown, names = rows.iloc[::-1], [_short(name) for name in names[::-1]]
    estimate = shown["estimate"].astype(float)
    below = (estimate - shown["ci_low"].astype(float)).clip(lower=0).fillna(0)
    above = (shown["ci_high"].astype(float) - estimate).clip(lower=0).fillna(0)
    ax.errorbar(estimate, list(range(len(shown))), xerr=[below, above], fmt="o", color="#1f4e79", ecolor="#7a9cc6",
                capsize=3)
    ax.set_yticks(list(range(len(shown))), names)
    if (shown["order"] == "absolute").any() or ((shown["ci_low"] < 0) & (shown["ci_high"] > 0)).any():
        ax.axvline(0, color="#999999", linewidth=0.8, linestyle="--")
    unit = shown["unit"].dropna()
    return str(unit.iloc[0]) if len(unit) else ""


def _cell(value) -> tuple[str, str]:
    """(text shown, value sorted by) of one cell."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "", ""
    if isinstance(value, float):
        return f"{value:.3f}", repr(value)
    return html.escape(str(value)), html.escape(str(value))


def sortable_html(board: pd.DataFrame, columns: list[str] | None = None, caption: str = "",
                  labels: dict[str, str] | None = None) -> str:
    """The board as an HTML table whose rows sort by any column when its header is clicked (again:
    the other way), numbers as numbers; a small script of its own, no library. ``labels``: spec -> the
    name the model column shows."""
    columns = columns or [column for column in SHOWN if column in board.columns]
    if labels and "spec" in board.columns:
        board = board.assign(spec=[labels.get(spec, spec) for spec in board["spec"]])
    table_id = f"vlbias-board-{next(_ids)}"
    head = "".join(f'<th onclick="vlbiasSort(\'{table_id}\', {i})" style="cursor:pointer" title="sort">'
                   f"{html.escape(HEADERS.get(column, column.replace('_', ' ')))} ↕</th>" for i, column in enumerate(columns))
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


# --------------------------------------------------------------------------- a card's page, the board's page


def _number(value, decimals: int = 3) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):.{decimals}f}"


def _interval(low, high, decimals: int = 3) -> str:
    return "" if pd.isna(low) or pd.isna(high) else f"[{float(low):.{decimals}f}, {float(high):.{decimals}f}]"


def published_text(rows: list[dict]) -> str:
    """Published reference rows of one measure and group in a few words: ``0.266 / 0.267 (CLIP ViT-B/32)``
    for one model (a number the paper states twice, differently, kept twice), ``0.63 to 0.97 (7 models)``
    for several."""
    models = list(dict.fromkeys(row["model"] for row in rows))
    if len(models) == 1:
        return " / ".join(f"{row['estimate']:.3g}" for row in rows) + f" ({models[0]})"
    values = [row["estimate"] for row in rows]
    return f"{min(values):.3g} to {max(values):.3g} ({len(models)} models)"


def card_tables(card) -> dict[tuple[str, str], pd.DataFrame]:
    """A card's results for its page, one table per part and kind of measure (``(part, kind)``: the
    unmarked rates of every family in one, their race-and-gender intersections in another, ...; in the
    card's order): measure, group,
    estimate, its 95% interval and the interval's name, n, and the papers' published values for their
    models on the same measure and group where there are any (:func:`published_text`). An undefined
    estimate reads "undefined", and its table gains a column saying why (the result's note)."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for row in card.reference:
        grouped.setdefault((row["measure"], row.get("group") or ""), []).append(row)
    reference = {key: [published_text(rows)] for key, rows in grouped.items()}
    tables: dict[str, pd.DataFrame] = {}
    for result in card.results:
        group = result.group or ""
        undefined = result.estimate is None or pd.isna(result.estimate)
        tables.setdefault((result.part, _family(result.measure)[0]), []).append({
            "measure": result.measure, "group": group, "estimate": "undefined" if undefined else _number(result.estimate),
            "95% interval": _interval(result.ci_low, result.ci_high), "interval": result.interval or "",
            "n": "" if result.n is None else result.n,
            "published": " / ".join(reference.get((result.measure, group), [])),
            "why undefined": (result.note or "no reason recorded") if undefined else ""})
    frames = {part: pd.DataFrame(rows) for part, rows in tables.items()}
    # whole-model measures only: no group column; every estimate defined: no column saying why not
    return {part: frame.drop(columns=[name for name in ("group", "why undefined") if (frame[name] == "").all()])
            for part, frame in frames.items()}


def provenance_table(card) -> pd.DataFrame:
    """Where a card's numbers came from, one row each: the model's spec, kind, weights, dtype and
    architecture, then the code, profile, date and data identities."""
    model, provenance = card.model, card.provenance
    rows = [("model spec", model["spec"]), ("kind", model["kind"]), ("weights", model["weights"]),
            ("dtype", model.get("dtype") or ""), ("architecture", model.get("architecture") or ""),
            ("vlbias version", provenance.get("vlbias_version", "")),
            ("code revision", provenance.get("code_revision") or "not a git checkout"),
            ("profile", provenance.get("profile", "")), ("date", provenance.get("date", ""))]
    rows += [(f"data: {name}", identity) for name, identity in sorted((provenance.get("data") or {}).items())]
    return pd.DataFrame(rows, columns=["what", "value"])


def headline_sentences(card) -> list[str]:
    """The card's whole-model numbers that have an interval (a result without a group, or a gap), one
    sentence each: what the card's page says first (the rest are in its tables)."""
    lines = []
    for result in card.results:
        interval = _interval(result.ci_low, result.ci_high)
        if (result.group and result.order != "absolute") or not interval:
            continue
        what = f"{result.measure}" + (f" ({result.group})" if result.group and result.order != "absolute" else "")
        named = f" ({result.interval})" if result.interval else ""
        lines.append(f"**{what}**: {_number(result.estimate)}" + (f" {interval}{named}" if interval else "")
                     + (f"; {result.note}" if result.note else ""))
    return lines


def headline_measures(board: pd.DataFrame) -> list[str]:
    """The board's ranked whole-model measures (no group, or a gap) that have intervals, in the board's
    order: those a forest plot and the page's sentences show."""
    ranked_rows = board[board["rank"].notna() & board["ci_low"].notna() & board["ci_high"].notna()
                        & ((board["group"] == "") | (board["order"] == "absolute"))]
    return list(dict.fromkeys(ranked_rows["measure"]))  # the board's order: the cards' order of measures


def board_sentences(board: pd.DataFrame, labels: dict[str, str] | None = None) -> list[str]:
    """For each headline measure and kind: who ranks first, and whether that lead lies beyond the
    intervals (the board's ``separated``) or is within noise."""
    labels = labels or {}
    lines = []
    for measure in headline_measures(board):
        rows = board[(board["measure"] == measure) & board["rank"].notna()]
        for (kind, group), shown in rows.groupby(["kind", "group"], sort=False):
            shown = shown.sort_values("rank")
            first = shown.iloc[0]
            name = labels.get(first["spec"], first["spec"])
            if len(shown) == 1:
                line = f"**{measure}**: only {name} ({kind}) is on the board."
                if line not in lines:  # once per measure, not once per group
                    lines.append(line)
                continue
            second = shown.iloc[1]
            beyond = first["separated"]
            verdict = ("beyond the intervals" if beyond is True else
                       "within noise: the intervals overlap" if beyond is False else "without intervals to tell")
            lines.append(f"**{measure}** ({kind} models): first {name}, {_number(first['estimate'])} "
                         f"{_interval(first['ci_low'], first['ci_high'])}, ahead of {labels.get(second['spec'], second['spec'])}, "
                         f"{_number(second['estimate'])} {_interval(second['ci_low'], second['ci_high'])}: {verdict}.")
    return lines


def measure_table(board: pd.DataFrame, measure: str, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """One measure's rows for the page: kind, group, rank, model, estimate, its interval, n and
    whether the row lies beyond the next-ranked row's interval."""
    labels = labels or {}
    rows = board[board["measure"] == measure]  # the board's order: kind, the cards' order of groups, rank
    table = pd.DataFrame({
        "kind": rows["kind"], "group": rows["group"], "rank": rows["rank"].astype(object).where(rows["rank"].notna(), ""),
        "model": [labels.get(spec, spec) for spec in rows["spec"]],
        "estimate": [_number(v) for v in rows["estimate"]],
        "95% interval": [_interval(lo, hi) for lo, hi in zip(rows["ci_low"], rows["ci_high"])],
        "n": rows["n"].astype(object).where(rows["n"].notna(), ""),
        "beyond the next": rows["separated"].map({True: "yes", False: "no"}).fillna(""),
    }).reset_index(drop=True)
    # a column that says nothing here is left out: one kind; no groups, ranks or intervals to compare
    empty = [column for column in ("group", "rank", "beyond the next") if (table[column].astype(str) == "").all()]
    return table.drop(columns=empty + (["kind"] if table["kind"].nunique() <= 1 else []))


def _family(measure: str) -> tuple[str, str]:
    """``"ColorFoil accuracy (coco, k=1)"`` -> ``("ColorFoil accuracy", "coco, k=1")``; a measure
    without a parenthesis is its own family."""
    head, _, tail = measure.partition(" (")
    return (head, tail.rstrip(")")) if tail else (measure, "")


def _stacked(sizes: list[int]):
    """A figure of panels one above another at the content width, each as tall as its ``sizes`` rows
    need (the models' and groups' names stay on one line): ``(fig, axes)``."""
    import matplotlib.pyplot as plt

    heights = [0.28 * n + 0.9 for n in sizes]
    fig, axes = plt.subplots(len(sizes), 1, figsize=(CONTENT_WIDTH_INCHES, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    return fig, list(axes[:, 0])


def card_figure(card, max_rows: int = 24):
    """A card's results with their intervals, one panel per kind of measure (the unmarked rates of
    every family in one, ColorFoil's accuracies in one, ...), one row per group or setting; results
    without an interval, and kinds of measure with more than ``max_rows`` rows (the intersections),
    are left to the tables. Returns the figure, or None when nothing is left to draw."""
    from dataclasses import asdict

    families: dict[str, list[dict]] = {}
    for result in card.results:
        if result.estimate is None or result.ci_low is None or result.ci_high is None:
            continue
        family, setting = _family(result.measure)
        label = ", ".join(part for part in (setting.removesuffix(" labels"), result.group or "") if part)
        families.setdefault(family, []).append({**asdict(result), "name": label or result.measure})
    families = {family: rows for family, rows in families.items() if len(rows) <= max_rows}
    if not families:
        return None
    fig, axes = _stacked([len(rows) for rows in families.values()])
    for ax, (family, rows) in zip(axes, families.items()):
        frame = pd.DataFrame(rows)
        ax.set_xlabel(_forest_panel(ax, frame, list(frame["name"])) or "estimate")
        ax.set_title(family)
    fig.tight_layout()
    return fig


def cards_table(cards, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """The cards on a board, one row each: the model (its label), kind, profile, date, code revision,
    and how many results and failed measures it holds."""
    labels = labels or {}
    return pd.DataFrame([{"model": labels.get(card.model["spec"], card.model["spec"]), "kind": card.model["kind"],
                          "profile": card.provenance.get("profile", ""), "date": card.provenance.get("date", "")[:16],
                          "code revision": card.provenance.get("code_revision") or "",
                          "results": len(card.results), "failed measures": len(card.failures)} for card in cards])


def forest_grid(board: pd.DataFrame, measures: list[str], labels: dict[str, str] | None = None):
    """One figure of forest plots, a panel per kind of measure and model kind (the default-group gaps
    of every family in one, ColorFoil's accuracies at every setting in one, VRBS in one, ...): each
    measure's models ranked top down, the measure's setting beside the model's name. Returns the figure."""
    labels = labels or {}
    families: dict[tuple[str, str], list[pd.DataFrame]] = {}
    for measure in measures:
        family, setting = _family(measure)
        rows = board[(board["measure"] == measure) & board["rank"].notna()]
        for (kind, _), shown in rows.groupby(["kind", "group"], sort=False):
            ordered = shown.sort_values("rank")
            names = [labels.get(spec, spec) + (f" ({setting or group})" if setting or group else "")
                     for spec, group in zip(ordered["spec"], ordered["group"])]
            families.setdefault((family, kind), []).append(shown.sort_values("rank").assign(name=names))
    if not families:
        raise ValueError(f"forest_grid: none of {measures} has ranked rows on the board")
    fig, axes = _stacked([sum(len(block) for block in blocks) for blocks in families.values()])
    for ax, ((family, kind), blocks) in zip(axes, families.items()):
        rows = pd.concat(blocks)
        ax.set_xlabel(_forest_panel(ax, rows, list(rows["name"])) or "estimate")
        ax.set_title(f"{family}: {kind} models")
    fig.tight_layout()
    return fig


def card_failures_box(card):
    """The warning box of a card's failed measures (:func:`vlbias.book.failures_box`), each with its
    error; an empty note when none failed."""
    from .book import failures_box

    frame = pd.DataFrame([{"model": row["measure"], "stage": "audit", "error": row["error"]} for row in card.failures],
                         columns=["model", "stage", "error"])
    return failures_box(frame, what="card's measures")
