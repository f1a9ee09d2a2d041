"""Our tables beside the paper's stated numbers."""

from __future__ import annotations

import pandas as pd

from .. import book


def published_as_unmarked(published: pd.DataFrame) -> pd.DataFrame:
    """The paper states some rates as *marked*; restate them as unmarked (100 − value, bounds flipped)."""
    result = published.copy()
    renames = {"marked_rate": "unmarked_rate", "marked_rate_min": "unmarked_rate_max",
               "marked_rate_max": "unmarked_rate_min"}
    marked = result["measure"].isin(list(renames))
    result.loc[marked, "value"] = 100 - result.loc[marked, "value"]
    result.loc[marked, "where"] = result.loc[marked, "where"] + " (stated as marked %)"
    result["measure"] = result["measure"].replace(renames)
    return result


def bounds_check(ours: pd.DataFrame, published: pd.DataFrame, measure: str, value: str,
                 label: str = "group", family: str | None = None) -> pd.DataFrame:
    """Rows of ``ours`` the paper bounds (``<measure>_min``/``_max``): the bound, our value, whether it holds.

    ``family`` keeps only the published rows of that family (``race``, ``gender×age``, ...).
    """
    if family is not None:
        published = published[published["family"] == family]
    rows = []
    for kind, sign in (("min", "≥"), ("max", "≤")):
        bounds = published[published["measure"] == f"{measure}_{kind}"]
        for _, bound in bounds.iterrows():
            match = ours[ours[label] == bound["group"]]
            if match.empty:
                continue
            ours_value = float(match[value].iloc[0])
            holds = ours_value >= bound["value"] if kind == "min" else ours_value <= bound["value"]
            rows.append({label: bound["group"], "paper says": f"{sign} {bound['value']:g}", "ours": ours_value,
                         "holds": bool(holds), "where": bound["where"]})
    return pd.DataFrame(rows, columns=[label, "paper says", "ours", "holds", "where"])


def table4_counts(extremes_table: pd.DataFrame) -> pd.DataFrame:
    """The counts the paper's text gives about Table 4, computed from :func:`extremes` of race×gender×age."""
    young_or_old = {"0-2", "3-9", "more than 70"}
    under_20, from_60 = {"0-2", "3-9", "10-19"}, {"60-69", "more than 70"}
    mid = {"20-29", "30-39", "40-49", "50-59"}
    least = extremes_table[extremes_table["end"] == "least"]
    most = extremes_table[extremes_table["end"] == "most"]
    counts = {
        "least 10: Male": (least.gender == "Male").sum(),
        "least 10: White": (least.race == "White").sum(),
        "least 10: White and Male": ((least.race == "White") & (least.gender == "Male")).sum(),
        "least 10: races represented": least.race.nunique(),
        "least 10: aged 20-59": least.age.isin(mid).sum(),
        "least 10: aged under 20": least.age.isin(under_20).sum(),
        "least 10: aged 60 or more": least.age.isin(from_60).sum(),
        "most 10: under 10 or more than 70": most.age.isin(young_or_old).sum(),
        "most 10: Female": (most.gender == "Female").sum(),
        "most 10: White": (most.race == "White").sum(),
    }
    return pd.DataFrame({"group": list(counts), "ours": [int(v) for v in counts.values()]})


def styled_beside_published(table: pd.DataFrame, family: str, caption: str, *, published: pd.DataFrame,
                            measure: str, precision: int = 3, label: str = "published (paper)"):
    """``table`` (one row per group) with the paper's ``measure`` for ``family`` beside it, the
    group-key columns dropped, styled with ``precision`` decimals and ``caption``.

    Defined for ``01a_self_similarity`` and ``01b_markedness`` (their ``shown``), which fix
    ``published``, ``measure`` and ``precision`` once with ``functools.partial``.
    """
    columns = [c for c in table.columns if c not in ("race", "gender", "age")]
    beside = book.beside_published(table[columns], published[published["family"] == family], measure,
                                   on={"group": "group"}, label=label)
    return beside.style.format(precision=precision).hide(axis="index").set_caption(caption)
