"""Part III's "Findings: paper vs ours" (:mod:`vlbias.findings`): the handbook chapter's claims, made on
simulated numbers, judged from what this run measured on real models."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the chapter's scenarios whose simulated stories erase women (a negative erasure index for both its
#: female groups)
MALE_TYPED_SCENARIOS = ("scientist", "CEO", "software engineer", "politician")


def toxicity_findings(rates: pd.DataFrame, simulated: pd.Series, printed: str, classifier: str) -> list:
    """03d's claim: the classifier flags African American English more often than standard English
    with the same, non-toxic meaning, at the chapter's threshold (``simulated``: the chapter's simulated
    scores' row of :func:`false_positive_rates`; ``printed``: the ratio the chapter prints), where the run
    measured it, else at the run's middle threshold. The verdict is the paired bootstrap interval of the
    FPR ratio where the standard FPR is above 0, else the two Wilson intervals."""
    from ..findings import Finding, order_verdict

    threshold = float(simulated["threshold"])
    claim = "A toxicity classifier flags African American English more often than standard English of the same meaning"
    published = (f"simulated: FPR {simulated['fpr_standard']:.0%} (standard) against {simulated['fpr_aave']:.0%} (AAE) "
                 f"at {threshold:g}, printed as a ratio of {printed}")
    if rates.empty:
        return [Finding(claim, published, "no classifier ran (the chapter's simulated numbers only)", "cannot test")]
    chosen = rates[np.isclose(rates["threshold"], threshold)]
    row = (chosen if len(chosen) else rates.iloc[[len(rates) // 2]]).iloc[0]
    ours = (f"{classifier} at {row['threshold']:g}: FPR {row['fpr_standard']:.0%} [{row['fpr_standard_low']:.0%}, "
            f"{row['fpr_standard_high']:.0%}] (standard) against {row['fpr_aave']:.0%} [{row['fpr_aave_low']:.0%}, "
            f"{row['fpr_aave_high']:.0%}] (AAE) on {int(row['n_pairs'])} pairs")
    if np.isfinite(row["ratio"]):
        ours += f"; ratio {row['ratio']:.2f} [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}]"
        verdict = "supports" if row["ratio_low"] > 1 else "contradicts" if row["ratio_high"] < 1 else "cannot tell"
    else:
        verdict = order_verdict((row["fpr_aave_low"], row["fpr_aave_high"]), (row["fpr_standard_low"], row["fpr_standard_high"]))
    return [Finding(claim, published, ours, verdict)]


def erasure_findings(measured: pd.DataFrame, chapter: pd.DataFrame, model: str) -> list:
    """03c's claim, per scenario the chapter's simulation erases women in (:data:`MALE_TYPED_SCENARIOS`):
    generated stories give women fewer protagonists than their population share (an erasure index of
    women below 0), from the run's Wilson intervals (:func:`erasure_from_texts`). ``chapter``: the
    chapter's simulated table (scenarios as index, with underscores)."""
    from ..findings import Finding, difference_verdict

    found = []
    women = measured[measured["group"] == "female"].set_index("scenario")
    for scenario in MALE_TYPED_SCENARIOS:
        key = scenario.replace(" ", "_")
        simulated = (chapter.loc[key, ["white_female", "nonwhite_female"]].sum() if key in chapter.index else np.nan)
        claim = f"Stories about a {scenario} erase women (an erasure index below 0)"
        published = f"simulated: {simulated:+.2f}" if np.isfinite(simulated) else "not simulated"
        if scenario not in women.index:
            found.append(Finding(claim, published, "this run wrote no such stories", "cannot test"))
            continue
        row = women.loc[scenario]
        found.append(Finding(claim, published,
                             f"{model}: {row['erasure_index']:+.2f} [{row['index_low']:+.2f}, {row['index_high']:+.2f}] "
                             f"({int(row['n_detected'])} stories with a gendered protagonist)",
                             difference_verdict(-row["index_high"], -row["index_low"])))
    return found


def stereotyping_findings(slope: pd.Series | dict, chapter_slope: pd.Series | dict, model: str) -> list:
    """03a's claims: a model's share of *she* rises with an occupation's female share (slope above 0),
    and exaggerates it (slope above 1), from the amplification slope's interval
    (:func:`vlbias.harms.measures.amplification_slope`: ``slope``, ``slope_low``, ``slope_high``);
    ``chapter_slope`` is the same fit on the chapter's simulated numbers (the chapter prints none).
    ``slope`` None: no model ran."""
    from ..findings import Finding, difference_verdict

    published = (f"simulated: slope {chapter_slope['slope']:.2f} [{chapter_slope['slope_low']:.2f}, "
                 f"{chapter_slope['slope_high']:.2f}] (recomputed; the chapter prints none)")
    claims = ("A model's share of 'she' rises with the occupation's female share (slope above 0)",
              "It exaggerates the real shares (slope above 1)")
    if slope is None:
        return [Finding(claim, published, "no model ran (the chapter's simulated numbers only)", "cannot test")
                for claim in claims]
    ours = f"{model}: slope {slope['slope']:.2f} [{slope['slope_low']:.2f}, {slope['slope_high']:.2f}]"
    return [Finding(claims[0], published, ours, difference_verdict(slope["slope_low"], slope["slope_high"])),
            Finding(claims[1], published, ours, difference_verdict(slope["slope_low"] - 1, slope["slope_high"] - 1))]


def weat_findings(holm: pd.DataFrame | None, published: pd.DataFrame | None = None, alpha: float = 0.05) -> list:
    """03b's claim, per set of embeddings: the ten WEAT tests of Caliskan et al. (2017) find the
    associations they test (each positive and significant after Holm's correction over the tests).
    ``holm``: the run's WEAT table with ``embeddings``, ``effect_size``, ``p_holm`` and ``complete``
    (:func:`vlbias.stats.with_holm`); None when no embeddings ran. ``published``: the published effect
    sizes (``book.published("weat_caliskan2017_glove")``). A test that is not significant is
    no evidence against the association: the verdict is then "cannot tell", never "contradicts",
    unless a test is significant with the opposite sign."""
    from ..findings import Finding

    claim = "Word embeddings carry the associations of the ten WEAT tests (each significant)"
    published = ("GloVe 840B: " + (f"all {len(published)}, d from {published['value'].min():.2f} to "
                                   f"{published['value'].max():.2f}" if published is not None and len(published) else "all")
                 + " (Caliskan et al. 2017, Table 1)")
    if holm is None or holm.empty:
        return [Finding(claim, published, "no embeddings ran (the chapter's simulated test only)", "cannot test")]
    found = []
    for name, rows in holm.groupby("embeddings", sort=False):
        rows = rows[rows["complete"].astype(bool)] if "complete" in rows else rows
        rows = rows.dropna(subset=["p_holm"])
        significant = (rows["p_holm"] < alpha) & (rows["effect_size"] > 0)
        against = (rows["p_holm"] < alpha) & (rows["effect_size"] < 0)
        verdict = ("cannot test" if rows.empty else "contradicts" if against.any()
                   else "supports" if significant.all() else "cannot tell")
        found.append(Finding(f"{claim}: {name}", published,
                             f"{int(significant.sum())} of {len(rows)} complete tests positive with a Holm-adjusted p "
                             f"below {alpha:g}" + (f", {int(against.sum())} significant the other way" if against.any() else ""),
                             verdict))
    return found
