"""Occupational bias of text-to-image models: generated shares against labour statistics.

The unit is one generated image with one perceived label (e.g. ``female``, ``male`` or
``no person``). Per profession the *generated share* is the fraction of images showing a person
that show the target label; images without a person are counted but left out of the share.
It is compared with the reference share (U.S. labour statistics) through the visual
representation bias score, VRBS = 1 − mean |P_model − P_reference| (:func:`vlbias.metrics.vrbs`),
and Spearman's rank correlation. Intervals come from a bootstrap over images within each
profession (professions fixed, images resampled), which is where the sampling noise lies.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as _stats

from ..stats import finite_vector, self_similarity, standard_interval, wilson_interval

NO_PERSON = "no person"


def checked_shares(model_share, reference_share, min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two equally long 1-D vectors of finite shares in [0, 1]; errors name the argument."""
    shares = {}
    for name, values in (("model_share", model_share), ("reference_share", reference_share)):
        values = finite_vector(values, name, min_size)
        if np.any((values < 0) | (values > 1)):
            raise ValueError(f"{name} holds values outside [0, 1]; shares are fractions, not percentages")
        shares[name] = values
    p, q = shares.values()
    if p.shape != q.shape:
        raise ValueError(f"model_share and reference_share must be of one length, got {p.size} and {q.size}")
    return p, q


def vrbs(model_share, reference_share) -> float:
    """Visual representation bias score: 1 - mean |P_model - P_reference| over professions."""
    p, q = checked_shares(model_share, reference_share)
    return float(1.0 - np.mean(np.abs(p - q)))


def reference_shares(name: str = "winobias_bls_female_share", column: str = "female_percent",
                     key: str = "occupation") -> pd.Series:
    """A reference table shipped with vlbias as a Series profession -> share in [0, 1]."""
    from ..book import published

    table = published(name)
    series = table.set_index(key)[column].astype(float) / 100.0
    series.attrs["source"] = table.attrs.get("source", "")
    return series.rename("reference share")


def spearman(model_share, reference_share) -> tuple[float, float]:
    """Spearman's ρ between two share vectors and its two-sided p-value (scipy).

    ρ is undefined when either vector is constant (e.g. every profession drawn all male): then
    (nan, nan), as in :func:`bootstrap_bias_scores`' replicates, instead of scipy's warning."""
    p, q = checked_shares(model_share, reference_share, min_size=3)
    if np.ptp(p) == 0 or np.ptp(q) == 0:
        return float("nan"), float("nan")
    result = _stats.spearmanr(p, q)
    return float(result.statistic), float(result.pvalue)


def label_counts(labels: pd.DataFrame, group: str = "profession", label: str = "perceived") -> pd.DataFrame:
    """Images per group and label: one row per group, one column per label (zeros filled)."""
    return pd.crosstab(labels[group], labels[label]).rename_axis(columns=None)


def generated_shares(labels: pd.DataFrame, target: str = "female", group: str = "profession",
                     label: str = "perceived", excluded: Sequence[str] = (NO_PERSON,),
                     confidence: float = 0.95) -> pd.DataFrame:
    """Per group: images, images with a person, target count, generated share and its Wilson interval.

    ``excluded`` labels (by default ``no person``) count towards ``n_images`` only.
    """
    counts = label_counts(labels, group, label)
    kept = [c for c in counts.columns if c not in set(excluded)]
    n_person = counts[kept].sum(axis=1)
    hits = counts[target] if target in counts.columns else pd.Series(0, index=counts.index)
    low, high = wilson_interval(hits.to_numpy(), n_person.to_numpy(), confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = hits.to_numpy() / n_person.to_numpy()
    return pd.DataFrame({"n_images": counts.sum(axis=1), "n_person": n_person, f"n_{target}": hits,
                         "generated share": share, "ci_low": low, "ci_high": high}, index=counts.index)


def compare_with_reference(shares: pd.DataFrame, reference: pd.Series) -> pd.DataFrame:
    """Shares of the groups that have a reference share and at least one image with a person,
    with the reference share and the signed gap (generated − reference)."""
    table = shares.join(reference.rename("reference share"), how="inner")
    table = table[table["n_person"] > 0].copy()
    table["gap"] = table["generated share"] - table["reference share"]
    return table


#: fewest professions that make VRBS and Spearman's ρ defined (a rank correlation of two points is ±1)
MIN_PROFESSIONS = 3
#: what to check when too few professions can be scored
UNDEFINED_ADVICE = ("Check the annotator's prompts (does 'no person' win everywhere?) and that the profession "
                    "names match the reference table.")


def unscorable_reason(table: pd.DataFrame, n_professions: int | None = None) -> str | None:
    """Why VRBS and Spearman's ρ are undefined on ``table`` (a :func:`compare_with_reference` table, or
    its rows both runs share), in a sentence for the page; ``None`` when they are defined (three or more
    professions with a reference share and an image with a person). ``n_professions``: how many
    professions were drawn, for the sentence."""
    if len(table) >= MIN_PROFESSIONS:
        return None
    return undefined_note(len(table), n_professions, "have both a reference share and an image the annotator "
                          "labelled as showing a person", measures="VRBS and Spearman's ρ")


def undefined_note(scorable: int, n_professions: int | None, condition: str, measures: str = "VRBS",
                   advice: str = UNDEFINED_ADVICE) -> str:
    """The page's sentence for a measure left undefined because only ``scorable`` professions (of
    ``n_professions`` drawn, when given) meet ``condition`` ("have an image with a person in both runs"),
    where ``measures`` need :data:`MIN_PROFESSIONS`; ``advice`` (a sentence, or "") says what to check."""
    drawn = f" of the {n_professions} drawn" if n_professions else ""
    need = "need" if " and " in measures else "needs"
    return (f"undefined: only {scorable} profession(s){drawn} {condition}, and {measures} {need} {MIN_PROFESSIONS} "
            f"or more." + (f" {advice}" if advice else ""))


def bias_scores(table: pd.DataFrame) -> dict[str, float]:
    """VRBS, Spearman's ρ and its p-value over the rows of a :func:`compare_with_reference` table.
    Where they are undefined (:func:`unscorable_reason`) the three are NaN and ``note`` says why."""
    reason = unscorable_reason(table)
    if reason:
        return {"professions": len(table), "VRBS": np.nan, "spearman_rho": np.nan, "spearman_p": np.nan,
                "note": reason}
    rho, p_value = spearman(table["generated share"], table["reference share"])
    return {"professions": len(table), "VRBS": vrbs(table["generated share"], table["reference share"]),
            "spearman_rho": rho, "spearman_p": p_value}


def undefined_scores(reason: str, columns: Sequence[str] = ("estimate", "ci_low", "ci_high")) -> pd.DataFrame:
    """The rows ``VRBS`` and ``spearman_rho`` of a measure that is undefined: NaN ``columns``, ``n_boot`` 0
    and ``note``, the reason, so that a table on the page says why it holds no number."""
    rows = [{"measure": measure, **{column: np.nan for column in columns}, "n_boot": 0, "note": reason}
            for measure in ("VRBS", "spearman_rho")]
    return pd.DataFrame(rows).set_index("measure")


def bootstrap_bias_scores(labels: pd.DataFrame, reference: pd.Series, target: str = "female",
                          group: str = "profession", label: str = "perceived",
                          excluded: Sequence[str] = (NO_PERSON,), n_boot: int = 1000, confidence: float = 0.95,
                          seed: int = 0) -> pd.DataFrame:
    """Bootstrap intervals for VRBS and ρ, resampling images within each profession.

    Resampling a profession's n images with replacement is the same as drawing its label counts
    from a multinomial with the observed label proportions, which is what is done here (fast).
    A replicate in which a profession draws no image with a person leaves that profession out.
    ρ's interval is the percentile interval of the replicates; VRBS's is the standard (normal)
    bootstrap interval, :func:`vrbs_interval`, because its percentile interval can exclude its own
    estimate. Returns one row per measure: estimate, ci_low, ci_high, n_boot. Where the measures are
    undefined (fewer than three scorable professions: :func:`unscorable_reason`), the rows are NaN with a
    ``note`` saying why (:func:`undefined_scores`), and a page goes on.
    """
    table = compare_with_reference(generated_shares(labels, target, group, label, excluded), reference)
    reason = unscorable_reason(table, labels[group].nunique())
    if reason:
        return undefined_scores(reason)
    counts = label_counts(labels, group, label).loc[table.index]
    person = np.array([c not in set(excluded) for c in counts.columns])
    is_target = np.array([c == target for c in counts.columns])
    rng = np.random.default_rng(seed)
    n = counts.sum(axis=1).to_numpy()
    draws = np.stack([rng.multinomial(n_i, row / n_i, size=n_boot)
                      for n_i, row in zip(n, counts.to_numpy(dtype=float))], axis=1)  # (boot, group, label)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = draws[..., is_target].sum(-1) / draws[..., person].sum(-1)
    truth = table["reference share"].to_numpy()
    scores = {"VRBS": [], "spearman_rho": []}
    for replicate in shares:
        ok = np.isfinite(replicate)
        scores["VRBS"].append(vrbs(replicate[ok], truth[ok]))
        both_vary = ok.sum() >= 3 and np.ptp(replicate[ok]) > 0 and np.ptp(truth[ok]) > 0
        scores["spearman_rho"].append(spearman(replicate[ok], truth[ok])[0] if both_vary else np.nan)
    estimate = bias_scores(table)
    intervals = {"VRBS": vrbs_interval(scores["VRBS"], estimate["VRBS"], confidence),
                 "spearman_rho": percentile_interval(scores["spearman_rho"], confidence)}
    rows = [{"measure": measure, "estimate": estimate[measure], **intervals[measure]} for measure in scores]
    return pd.DataFrame(rows).set_index("measure")


def vrbs_interval(replicates, estimate: float, confidence: float,
                  bounds: tuple[float, float] = (0.0, 1.0)) -> dict[str, float]:
    """VRBS's interval: the estimate ± z times the replicates' standard deviation (the standard bootstrap
    interval), kept within ``bounds`` (VRBS's range [0, 1]; a change of VRBS: [-1, 1]); ``ci_low``,
    ``ci_high`` and ``n_boot``.

    VRBS is 1 − mean |generated share − reference share|, and the absolute value makes every resample
    of a profession whose share equals its reference score worse than the sample itself: where the
    shares match, the replicates all lie below the estimate, and an interval made of their quantiles
    (percentile; the basic interval, its mirror image; BCa, which shifts along the same quantiles)
    leaves the estimate out: shares equal to the reference give VRBS 1.000 with a percentile interval
    wholly below it. The standard interval holds its estimate by construction, takes its width from the
    same resampling, and agrees with the percentile interval where the shares are far from the
    reference (there the replicates are near-normal around the estimate). Near the reference, VRBS
    estimated from a sample is biased low (the same absolute value), which no interval of this kind
    removes: read a VRBS near 1 as "no departure detected", not as a measured size.
    """
    values = np.asarray(replicates, float)
    low, high = standard_interval(values, estimate, confidence, bounds)
    return {"ci_low": low, "ci_high": high, "n_boot": int(np.isfinite(values).sum())}


def percentile_interval(replicates, confidence: float) -> dict[str, float]:
    """``ci_low``, ``ci_high`` (percentile interval of the finite replicates) and ``n_boot`` (how many)."""
    values = np.asarray(replicates, float)
    values = values[np.isfinite(values)]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail]) if values.size else (np.nan, np.nan)
    return {"ci_low": low, "ci_high": high, "n_boot": int(values.size)}


def paired_bootstrap_change(labels_a: pd.DataFrame, labels_b: pd.DataFrame, reference: pd.Series,
                            target: str = "female", group: str = "profession", label: str = "perceived",
                            pair: str = "seed", excluded: Sequence[str] = (NO_PERSON,), n_boot: int = 1000,
                            confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Change of VRBS and Spearman's ρ from run a to run b (b − a), with a *paired* bootstrap (the standard
    interval for VRBS, see :func:`vrbs_interval`; percentile for ρ).

    Two samplers run on the same jobs (same profession and seed, column ``pair``) share each image's
    starting noise, so their images are paired. Each replicate resamples a profession's seeds once
    and takes those seeds' images from both runs, so the change's interval keeps the pairing; two
    independent intervals would ignore it and be far too wide (or, compared by overlap, wrong).
    Professions scorable in both runs (a reference share, an image with a person in each) are used.
    Returns one row per measure: ``a``, ``b``, ``change``, ``ci_low``, ``ci_high``, ``n_boot`` (NaN with a
    ``note`` where fewer than three professions are scorable in both).
    """
    keys = [group, pair]
    for name, labels in (("labels_a", labels_a), ("labels_b", labels_b)):
        missing = set(keys + [label]) - set(labels.columns)
        if missing:
            raise ValueError(f"{name} lacks the columns {sorted(missing)}")
        if labels.duplicated(keys).any():
            raise ValueError(f"{name} has several images per ({group}, {pair}); pairs need one each")
    merged = labels_a[keys + [label]].merge(labels_b[keys + [label]], on=keys, how="outer", suffixes=("_a", "_b"),
                                            indicator=True)
    if (merged["_merge"] != "both").any():
        raise ValueError(f"labels_a and labels_b must hold the same ({group}, {pair}) jobs: "
                         f"{int((merged['_merge'] != 'both').sum())} image(s) have no partner")
    tables = {run: compare_with_reference(generated_shares(labels, target, group, label, excluded), reference)
              for run, labels in (("a", labels_a), ("b", labels_b))}
    professions = tables["a"].index.intersection(tables["b"].index)
    reason = unscorable_reason(tables["a"].loc[professions], labels_a[group].nunique())
    if reason:
        return undefined_scores(reason, columns=("a", "b", "change", "ci_low", "ci_high"))
    truth = tables["a"].loc[professions, "reference share"].to_numpy()
    rng = np.random.default_rng(seed)
    shares = {"a": np.empty((n_boot, len(professions))), "b": np.empty((n_boot, len(professions)))}
    for column, profession in enumerate(professions):
        rows = merged[merged[group] == profession]
        draws = rng.integers(0, len(rows), size=(n_boot, len(rows)))  # the same seeds for both runs
        for run in "ab":
            perceived = rows[f"{label}_{run}"].to_numpy()
            person = ~np.isin(perceived, list(excluded))
            hits = (perceived == target)[draws].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                shares[run][:, column] = hits / person[draws].sum(axis=1)
    changes = {"VRBS": [], "spearman_rho": []}
    for share_a, share_b in zip(shares["a"], shares["b"]):
        ok = np.isfinite(share_a) & np.isfinite(share_b)  # the same professions on both sides
        changes["VRBS"].append(vrbs(share_b[ok], truth[ok]) - vrbs(share_a[ok], truth[ok]))
        varies = ok.sum() >= 3 and np.ptp(truth[ok]) > 0 and np.ptp(share_a[ok]) > 0 and np.ptp(share_b[ok]) > 0
        changes["spearman_rho"].append(spearman(share_b[ok], truth[ok])[0] - spearman(share_a[ok], truth[ok])[0]
                                       if varies else np.nan)
    estimates = {run: bias_scores(tables[run].loc[professions]) for run in "ab"}
    rows = []
    for measure, values in changes.items():
        a, b = estimates["a"][measure], estimates["b"][measure]
        # VRBS's change: the standard interval, as for VRBS alone: it holds a change towards VRBS 1
        interval = (vrbs_interval(values, b - a, confidence, (-1.0, 1.0)) if measure == "VRBS"
                    else percentile_interval(values, confidence))
        rows.append({"measure": measure, "a": a, "b": b, "change": b - a, **interval})
    return pd.DataFrame(rows).set_index("measure")


def classify_gaps(table: pd.DataFrame, parity: float = 0.5, tolerance: float = 0.0) -> pd.Series:
    """Name each profession's departure from its reference share.

    ``reversed``: the generated majority is the other one (the shares lie on opposite sides of
    parity); ``amplified``: same majority, further from parity than the reference; ``attenuated``:
    same majority, closer to parity; ``matched``: within ``tolerance`` of the reference.
    """
    generated, reference = table["generated share"], table["reference share"]
    side_generated, side_reference = np.sign(generated - parity), np.sign(reference - parity)
    further = (generated - parity).abs() > (reference - parity).abs()
    kind = np.where(side_generated * side_reference < 0, "reversed", np.where(further, "amplified", "attenuated"))
    kind = np.where((generated - reference).abs() <= tolerance, "matched", kind)
    return pd.Series(kind, index=table.index, name="pattern")


def extreme_cases(table: pd.DataFrame, k: int = 3) -> pd.DataFrame:
    """The k professions furthest from parity in the generated images (both directions)."""
    distance = (table["generated share"] - 0.5).abs()
    return table.loc[distance.sort_values(ascending=False).index[:k]]


def plot_amplification(table: pd.DataFrame, ax=None, label_points: bool | int = True, title: str | None = None,
                       target: str = "female"):
    """Generated share against reference share, with the diagonal (no bias) and parity lines.

    Points above the diagonal on the right and below it on the left amplify the real imbalance.
    Error bars are the Wilson intervals of the generated shares.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5.5))
    x, y = table["reference share"], table["generated share"]
    ax.fill_between([0, 0.5], [0, 0.5], [0, 0], color="tab:blue", alpha=0.1, lw=0,
                    label="male-dominated work, amplified")
    ax.fill_between([0.5, 1], [0.5, 1], [1, 1], color="tab:red", alpha=0.1, lw=0,
                    label="female-dominated work, amplified")
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="generated = reference")
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.axvline(0.5, color="grey", lw=0.5)
    if {"ci_low", "ci_high"} <= set(table.columns):
        ax.errorbar(x, y, yerr=[(y - table["ci_low"]).clip(lower=0), (table["ci_high"] - y).clip(lower=0)],
                    fmt="none", ecolor="0.7", elinewidth=0.8, zorder=1)
    ax.scatter(x, y, s=22, zorder=2, color="tab:purple")
    if table.empty:  # an empty square would read as a broken figure: say why it holds no point
        ax.text(0.5, 0.62, "no profession has an image\nlabelled as showing a person", ha="center", va="center",
                fontsize=9, color="0.3")
    if label_points:
        # an int labels only that many professions, those with the largest gaps (fewer overlaps)
        named = table.index if label_points is True else (y - x).abs().sort_values(ascending=False).index[:int(label_points)]
        for name, (xi, yi) in zip(named, zip(x[named], y[named])):
            ax.annotate(str(name), (xi, yi), fontsize=7, xytext=(3, 2), textcoords="offset points")
    ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), aspect="equal",
           xlabel=f"reference {target} share (labour statistics)", ylabel=f"generated {target} share",
           title=title or "Generated against reference share")
    ax.legend(loc="lower right", fontsize=7, framealpha=0.9)  # the corner real data rarely reach
    return ax


def mean_pairwise_distance(embeddings: np.ndarray) -> float:
    """Mean cosine distance over distinct pairs of images (1 − mean pairwise cosine similarity):
    0 when all images embed alike, larger for a more diverse set."""
    return 1.0 - self_similarity(embeddings)


def diversity_by_group(embeddings: np.ndarray, groups: Sequence) -> pd.Series:
    """:func:`mean_pairwise_distance` within each group (groups of one image are left out)."""
    groups = pd.Series(list(groups))
    values = {name: mean_pairwise_distance(embeddings[index.to_numpy()])
              for name, index in groups.groupby(groups).groups.items() if len(index) > 1}
    return pd.Series(values, name="mean pairwise distance").rename_axis(groups.name or "group")


def category_distribution(labels: pd.DataFrame, group: str = "profession", label: str = "perceived",
                          excluded: Sequence[str] = (NO_PERSON,), order: Sequence[str] | None = None) -> pd.DataFrame:
    """Row-normalised shares of each label per group among images with a person (age bins, skin tone)."""
    counts = label_counts(labels, group, label)
    kept = [c for c in (order or counts.columns) if c in counts.columns and c not in set(excluded)]
    counts = counts.reindex(columns=kept, fill_value=0)
    return counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0)


# --------------------------------------------------------------------------- study design and published numbers

SOURCE_TABLE = "t2i_occupational_bias_source"
WINOBIAS_SOURCE = "BLS via WinoBias (Zhao et al. 2018)"
STATED_SOURCE = "BLS share as stated in the source text"


def published_cases() -> pd.DataFrame:
    """The source text's named professions: its stated generated and reference female shares
    (in [0, 1]) and its heading for each (extreme, reversed, amplified)."""
    from ..book import published

    table = published(SOURCE_TABLE)
    rows = table[table["profession"].notna() & (table["profession"] != "")]
    wide = rows.pivot_table(index="profession", columns="measure", values="value", aggfunc="first") / 100.0
    wide = wide.rename(columns={"generated_female_percent": "published generated share",
                                "reference_female_percent": "published reference share"})
    wide["source case"] = rows.groupby("profession")["case"].first()
    order = {"extreme": 0, "reversed": 1, "amplified": 2}
    return wide.sort_values("source case", key=lambda c: c.map(order), kind="stable").rename_axis(None, axis=1)


def published_scores() -> pd.DataFrame:
    """The source text's VRBS and Spearman values per model and sampler."""
    from ..book import published

    table = published(SOURCE_TABLE)
    return table[table["measure"].isin(["vrbs", "spearman_rho"])][["measure", "model", "sampler", "value", "where"]]


def study_professions(reference: pd.Series | None = None, include_source_cases: bool = True) -> pd.DataFrame:
    """The professions to generate: the reference table's (by default the 40 WinoBias occupations
    with BLS shares), then the source text's named cases not already in it, with their stated share.

    Columns: profession, reference share, reference source. Shares in [0, 1].
    """
    reference = reference_shares() if reference is None else reference
    rows = [(name, share, WINOBIAS_SOURCE) for name, share in reference.items()]
    if include_source_cases:
        cases = published_cases()
        rows += [(name, case["published reference share"], STATED_SOURCE) for name, case in cases.iterrows()
                 if name not in reference.index]
    return pd.DataFrame(rows, columns=["profession", "reference share", "reference source"])


def cases_beside_published(table: pd.DataFrame) -> pd.DataFrame:
    """Our generated share and pattern for the source text's named professions, beside its numbers."""
    cases = published_cases()
    ours = table.reindex(cases.index)
    result = pd.DataFrame({"source case": cases["source case"], "our n_person": ours.get("n_person"),
                           "our generated share": ours["generated share"],
                           "published generated share": cases["published generated share"],
                           "published reference share": cases["published reference share"]})
    stated = pd.DataFrame({"generated share": ours["generated share"],
                           "reference share": cases["published reference share"]}).dropna()
    result["our pattern"] = classify_gaps(stated).reindex(result.index) if len(stated) else np.nan
    return result


def interval_phrase(value, low, high, decimals: int = 3, signed: bool = True) -> str:
    """``value [low, high]`` for a generated sentence, saying why where that would mislead: an
    undefined value (a constant share vector, no image labelled) is named so, and an interval of zero
    width says that every bootstrap replicate gave the same value (e.g. every image drew the same
    label in both runs), so it is not a precise estimate. An end that is not 0 but would print as 0 gets
    one more decimal place, so the sentence says on which side of 0 it lies."""
    sign = "+" if signed else ""
    if value is None or not np.isfinite(float(value)):
        return "undefined (every image drew the same label, or no image was labelled, so the measure has no value)"
    text = f"{float(value):{sign}.{decimals}f}"
    if low is None or high is None or not (np.isfinite(float(low)) and np.isfinite(float(high))):
        return text + " (its interval is undefined: some bootstrap replicates have no value)"
    if float(high) - float(low) < 10 ** -(decimals + 3):
        return text + (" with an interval of zero width: every bootstrap replicate gave the same value (the images "
                       "drew the same labels in every resample), which is not a precise estimate")
    if any(0 < abs(float(end)) < 0.5 * 10 ** -decimals for end in (low, high)):
        # an end that would print as 0 lies on one side of it: one more place says which ("+0.0004", not "+0.000")
        decimals += 1
        text = f"{float(value):{sign}.{decimals}f}"
    return f"{text} [{float(low):{sign}.{decimals}f}, {float(high):{sign}.{decimals}f}]"


def kappa_phrase(kappa) -> str:
    """Cohen's κ for a sentence, or why it is undefined (both annotators gave one label to every image)."""
    if kappa is None or not np.isfinite(float(kappa)):
        return "κ undefined: each annotator gave every image the same label, so chance agreement is 1"
    return f"κ = {float(kappa):.2f}"
