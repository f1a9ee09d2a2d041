"""Figures of Part I."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .prompts import AGES, FAMILIES, LABEL_ORDER


def plot_by_age(table: pd.DataFrame, value: str, low: str, high: str, hue: str | list[str], ax=None,
                title: str = "", ylabel: str = "", published: pd.DataFrame | None = None):
    """One line per ``hue`` group across the nine age groups, with an interval band; published
    values (columns ``group`` and ``value``, group named "<hue labels>, <age>") as black crosses."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    hue = [hue] if isinstance(hue, str) else list(hue)
    positions = {age: i for i, age in enumerate(AGES)}
    marked_published = False
    for key, rows in table.groupby(hue, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        rows = rows.sort_values("age", key=lambda c: c.map(positions))
        x = rows["age"].map(positions).to_numpy()
        name = ", ".join(map(str, key))
        line, = ax.plot(x, rows[value], marker="o", label=name)
        ax.fill_between(x, rows[low], rows[high], color=line.get_color(), alpha=0.2, linewidth=0)
        if published is not None:
            for _, point in published.iterrows():
                parts = point["group"].rsplit(", ", 1)
                if len(parts) == 2 and parts[0] == name and parts[1] in positions:
                    ax.plot(positions[parts[1]], point["value"], "x", color=line.get_color(), markersize=9,
                            markeredgewidth=2)
                    marked_published = True
    if marked_published:
        ax.plot([], [], "x", color="gray", markeredgewidth=2, label="published (paper), line's colour")
    ax.set_xticks(range(len(AGES)), AGES, rotation=45)
    ax.set(title=title, ylabel=ylabel, xlabel="age")
    ax.legend(fontsize="small")
    return ax


def plot_bars(table: pd.DataFrame, key: str, value: str, low: str, high: str, ax=None, title: str = "",
              ylabel: str = "", published: pd.DataFrame | None = None, published_label: str = "published (paper)"):
    """Bars with interval whiskers per ``key`` label; published values (``group``, ``value``) as crosses
    named ``published_label`` in the legend."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    labels = table[key].astype(str).tolist()
    # clip: a degenerate interval can sit an ulp inside its own mean
    whiskers = np.clip([table[value] - table[low], table[high] - table[value]], 0, None)
    ax.bar(range(len(labels)), table[value], color="tab:blue", alpha=0.8, yerr=whiskers, capsize=3, label="ours")
    if published is not None:
        points = published[published["group"].isin(labels)]
        if len(points):
            ax.plot([labels.index(g) for g in points["group"]], points["value"], "kx", markersize=9,
                    label=published_label)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set(title=title, ylabel=ylabel)
    ax.legend(fontsize="small")
    return ax


def _family_panels(families, figsize=None, sharey=True, widths=True):
    """``(fig, axes)``: one panel per family (``axes`` in the order of ``families``), at most two a row at
    the book's content width. With ``widths``, panel widths follow the number of labels, so every bar
    gets the same room: of three families the one with the most labels gets the second row to itself,
    as wide as the two above it (race 7 and gender 2 above age 9); without, a third sits below the first."""
    import matplotlib.pyplot as plt

    from ..book import CONTENT_WIDTH_INCHES

    families = list(families)
    if widths and len(families) == 3:
        widest = max(families, key=lambda f: len(LABEL_ORDER[f]))
        top = [f for f in families if f != widest]
        rows = [top, [widest, widest]]
    else:
        rows = [families[i:i + 2] for i in range(0, len(families), 2)]
        if len(families) > 1 and len(rows[-1]) == 1:
            rows[-1] = rows[-1] * 2 if widths else [rows[-1][0], "."]
    ratios = [len(LABEL_ORDER[f]) for f in rows[0]] if widths and len(rows[0]) == 2 else None
    fig, named = plt.subplot_mosaic(rows, figsize=figsize or (CONTENT_WIDTH_INCHES, 3.3 * len(rows)),
                                    width_ratios=ratios, sharey=sharey)
    return fig, [named[family] for family in families]


def _first_column(ax) -> bool:
    return ax.get_subplotspec().is_first_col()


def _published_points(published: pd.DataFrame | None, family: str, measure: str):
    if published is None:
        return None
    return published[(published["family"] == family) & (published["measure"] == measure)]


def plot_family_bars(tables: dict[str, pd.DataFrame], value: str, low: str, high: str, titles: dict[str, str],
                     ylabel: str, published: pd.DataFrame | None = None, measure: str = "",
                     figsize=None, published_label: str = "published (paper)"):
    """One :func:`plot_bars` panel per family (``tables``: family -> its groups' table, in panel order),
    the paper's ``measure`` of that family as crosses (``published_label`` in the legend); only the
    first panel carries ``ylabel``.

    Defined for the per-family figures of ``01a_self_similarity`` (Tables 1-3), ``01b_markedness``
    (Figures 4-6) and ``01d_generative_markedness`` (the same figures for a generative model, CLIP's
    published values beside). Returns ``(fig, axes)``.
    """
    fig, axes = _family_panels(list(tables), figsize)
    for index, (ax, (family, table)) in enumerate(zip(axes, tables.items())):
        plot_bars(table, "group", value, low, high, ax=ax, title=titles[family], ylabel=ylabel if _first_column(ax) else "",
                  published=_published_points(published, family, measure), published_label=published_label)
    return fig, axes


def plot_families_by_age(tables: dict[str, pd.DataFrame], value: str, low: str, high: str, hue: str | list[str],
                         titles: dict[str, str], ylabel: str, published: pd.DataFrame | None = None,
                         measure: str = "", figsize=None):
    """One :func:`plot_by_age` panel per family's labels (``tables``: family -> table, in panel order).

    Defined for ``01b_markedness`` (Figures 7-11: the same groups measured on each family's labels).
    Returns ``(fig, axes)``.
    """
    fig, axes = _family_panels(list(tables), figsize, widths=False)
    for ax, (family, table) in zip(axes, tables.items()):
        plot_by_age(table, value, low, high, hue, ax=ax, title=titles[family], ylabel=ylabel,
                    published=_published_points(published, family, measure))
    return fig, axes


def plot_across(table: pd.DataFrame, value: str, series: str, ylabel: str, title: str = "{family}",
                ylim=None, figsize=None):
    """One panel per family (race, gender, age): ``value`` per group, one line per ``series`` value
    (a model, a prompt prefix), in the table's order. ``title`` is formatted with ``family``.

    Defined for the comparisons across models (``01a_self_similarity``, ``01b_markedness``) and
    across prompt prefixes (``01b_markedness``). Returns ``(fig, axes)``.
    """
    fig, axes = _family_panels(FAMILIES, figsize)
    for ax, family in zip(axes, FAMILIES):
        part = table[table["family"] == family]
        for name, rows in part.groupby(series, sort=False):
            ax.plot(rows["group"].astype(str), rows[value], marker="o", label=name)
        ax.set(title=title.format(family=family), ylabel=ylabel if _first_column(ax) else "")
        if ylim is not None:
            ax.set(ylim=ylim)
        ax.tick_params(axis="x", rotation=60)
    axes[-1].legend(fontsize="small")
    return fig, axes
def _sweep_and_control(ax, table: pd.DataFrame, value: str, low: str, high: str, colour: str, label: str) -> None:
    """``value`` against the reporting gap with interval whiskers: the sweep as a line, the control as open squares."""
    for control, part in table.groupby("control"):
        part = part.sort_values("reporting_gap")
        whiskers = np.clip([part[value] - part[low], part[high] - part[value]], 0, None)  # clip: ulp-level inversions
        ax.errorbar(part["reporting_gap"] - 0.02 * control, part[value], yerr=whiskers, capsize=3, color=colour,
                    marker="s" if control else "o", mfc="white" if control else colour,
                    linestyle="none" if control else "-", label=label + (" (uniform control)" if control else ""))


def plot_unmarked_by_reporting_gap(result: dict, family: str = "colour", axes=None):
    """The controlled experiment in two panels: unmarked rate per colour (left) and the gap between
    the colours (right) against the reporting gap, with their intervals; the uniform-reporting
    control as open markers, drawn a little to the left. ``result``:
    :func:`vlbias.markedness.controlled.reporting_experiment`'s."""

    if axes is None:
        from ..book import panels

        _, axes = panels(2, row_height=3.6)
    for colour, rows in result["rates"].groupby(family, sort=False):
        _sweep_and_control(axes[0], rows, "unmarked_%", "ci_low_%", "ci_high_%", colour, f"{colour} pictures")
    axes[0].set(xlabel="reporting gap (P named, other colour − P named, default colour)", ylabel="unmarked %",
                title="Unmarked rate per colour")
    _sweep_and_control(axes[1], result["gaps"], "gap_pp", "ci_low_pp", "ci_high_pp", "black", "reporting sweep")
    axes[1].axhline(0, color="gray", linewidth=0.8)
    axes[1].set(xlabel="reporting gap", ylabel="unmarked gap (percentage points)",
                title="Default colour minus other colour")
    for ax in axes:
        ax.legend(fontsize="small")
    return axes
