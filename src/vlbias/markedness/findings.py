"""Sentences that say what a table of Part I shows, computed from it: which group is highest and
lowest, with their intervals, and whether the ordering is beyond sampling noise.

A degenerate table is never presented as a finding: equal values, zero-width intervals and empty
tables each get a sentence saying why there is nothing to read.
"""

from __future__ import annotations

import math

import pandas as pd


def _value(x: float, digits: int, unit: str) -> str:
    return f"{x:.{digits}f}{unit}"


def _interval(row, low: str, high: str, digits: int, unit: str) -> str:
    return f"[{row[low]:.{digits}f}, {row[high]:.{digits}f}]{unit}"


def ranking_sentence(table: pd.DataFrame, group: str, value: str, low: str, high: str, what: str,
                     digits: int = 1, unit: str = "") -> str:
    """One or two sentences on the top and bottom of ``table`` by ``value``.

    ``group`` names the column of group names; ``low``/``high`` the interval's columns; ``what``
    the measure in words ("unmarked", "self-similarity"). The top group is compared with the
    runner-up: intervals that do not overlap are said to order them beyond sampling noise.
    """
    rows = table.dropna(subset=[value])
    if rows.empty:
        return f"No group has a value of {what}: every group was empty or undefined."
    if len(rows) < 2:
        row = rows.iloc[0]
        return f"Only {row[group]} has a value of {what} ({_value(row[value], digits, unit)}): nothing to compare."
    ordered = rows.sort_values(value, ascending=False)
    top, second, bottom = ordered.iloc[0], ordered.iloc[1], ordered.iloc[-1]
    if math.isclose(top[value], bottom[value], abs_tol=10 ** -(digits + 2)):
        return (f"Every group has the same {what}, {_value(top[value], digits, unit)}: this table orders nothing"
                + (" (every image of every group fell on the same side)." if top[value] in (0, 100) else "."))
    widths = (ordered[high] - ordered[low]).abs()
    text = (f"Highest {what}: **{top[group]}**, {_value(top[value], digits, unit)} "
            f"{_interval(top, low, high, digits, unit)}; lowest: **{bottom[group]}**, "
            f"{_value(bottom[value], digits, unit)} {_interval(bottom, low, high, digits, unit)}.")
    if (widths == 0).all():
        return text + (" The intervals have zero width: every resampling draw took each group whole (its sample "
                       "size equals the group's), so they show no sampling variation; a smaller sample size gives "
                       "them width.")
    if top[low] > second[high]:
        text += (f" {top[group]}'s interval lies above the runner-up's ({second[group]}, "
                 f"{_interval(second, low, high, digits, unit)}): the top of the ranking is beyond sampling noise.")
    else:
        text += (f" {top[group]}'s interval overlaps the runner-up's ({second[group]}, "
                 f"{_interval(second, low, high, digits, unit)}): the top of the ranking is within sampling noise.")
    return text


def across_models_sentence(comparison: pd.DataFrame, family: str, value: str, what: str, digits: int = 1,
                           unit: str = "") -> str:
    """Per model of a :func:`model_comparison` table: the group of ``family`` with the highest ``value``."""
    rows = comparison[comparison["family"] == family]
    if rows.empty:
        return f"No model gave a value of {what} by {family}."
    parts = []
    for model, part in rows.groupby("model", sort=False):
        part = part.dropna(subset=[value])
        if part.empty:
            parts.append(f"{model}: no value")
            continue
        top, bottom = part.loc[part[value].idxmax()], part.loc[part[value].idxmin()]
        if math.isclose(top[value], bottom[value], abs_tol=10 ** -(digits + 2)):
            parts.append(f"{model}: every group {_value(top[value], digits, unit)}")
        else:
            parts.append(f"{model}: {top['group']} highest ({_value(top[value], digits, unit)}; lowest "
                         f"{bottom['group']}, {_value(bottom[value], digits, unit)})")
    return f"Highest {what} by {family}, per model: " + "; ".join(parts) + "."
