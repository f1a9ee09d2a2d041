"""Sentences that say what a table of Part I shows, computed from it: which group is highest and
lowest, with their intervals, and whether the ordering is beyond sampling noise.

A degenerate table is never presented as a finding: equal values, zero-width intervals and empty
tables each get a sentence saying why there is nothing to read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
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
    if ordered[[low, high]].isna().all().all():  # exact values: every group measured whole, no interval
        return (f"Highest {what}: **{top[group]}**, {_value(top[value], digits, unit)}; lowest: **{bottom[group]}**, "
                f"{_value(bottom[value], digits, unit)}. These are exact (each group's pictures all measured, none "
                "resampled), so they order the groups of these pictures without a sampling interval.")
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


# --------------------------------------------------------------------------- findings: paper vs ours
# The claims of Wolfe and Caliskan (2022) that Part I's pages test, each as a statistic that is above 0
# where the claim holds, computed per picture-weighting so that one bootstrap draws the model and its
# control together (:func:`vlbias.stats.bootstrap_contrast`), and judged by :func:`vlbias.findings.judge`:
# on the papers' models by the statistic's own interval, on the demo's models trained here as the planted
# model minus its control. The page, the model card (:mod:`vlbias.audit`) and the leaderboard all call
# :func:`contrast_findings`, so they cannot disagree.

#: the ages the paper finds left unmarked most (Figure 6: 39.2-57.9%, against under 1% for the
#: youngest and 6.7% over 70)
MIDDLE_AGES = ("20-29", "30-39", "40-49", "50-59")
#: resamples of the pictures behind each claim's interval
CLAIM_DRAWS = 1000


def _published_values(published, measure: str, family: str, groups) -> list[float]:
    if published is None:
        return []
    rows = published[(published["measure"] == measure) & (published["family"] == family)
                     & published["group"].isin(list(groups))]
    return sorted(set(float(v) for v in rows["value"]))


def _published_groups(published, measure: str, family: str, groups) -> list[str]:
    if published is None:
        return []
    rows = published[(published["measure"] == measure) & (published["family"] == family)
                     & published["group"].isin(list(groups))]
    return list(dict.fromkeys(rows["group"]))


def _span(values: list[float], digits: int, unit: str = "") -> str:
    if not values:
        return "not stated"
    low, high = min(values), max(values)
    return f"{low:.{digits}f}{unit}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}{unit}"


@dataclass
class Sample:
    """One model's measurements on a sample of pictures, for Part I's claims: the pictures' labels
    (``records``: race, gender, age), the model's ``flags`` (one boolean column per family: unmarked by
    its labels, or left unnamed in a description) or its image ``embeddings``, and what names the
    pictures (``identity``, the data set's): a control measured on the same pictures is compared with the
    model picture by picture (a paired bootstrap), one measured on other pictures (another world's) is
    resampled apart."""

    records: pd.DataFrame
    flags: pd.DataFrame | None = None
    embeddings: np.ndarray | None = None
    identity: str = ""

    def __post_init__(self):
        missing = [column for column in ("race", "gender", "age") if column not in self.records]
        if missing:
            raise ValueError(f"Sample: records lack the label column(s) {missing}; give FairFace's records")
        for name, values in (("flags", self.flags), ("embeddings", self.embeddings)):
            if values is not None and len(values) != len(self.records):
                raise ValueError(f"Sample: {name} has {len(values)} rows for {len(self.records)} records; "
                                 "give one row per picture")

    @property
    def strata(self) -> np.ndarray:
        """The race × gender × age cell of each picture: a resample keeps every cell's size."""
        return (self.records["race"].astype(str) + "|" + self.records["gender"].astype(str) + "|"
                + self.records["age"].astype(str)).to_numpy()


def _others(labels: np.ndarray, group: str) -> list[str]:
    return [value for value in dict.fromkeys(labels.tolist()) if value != group]


def rate_statistics(sample: Sample) -> dict:
    """The statistics of the unmarked (or unnamed) claims on ``sample.flags``, as functions of a ``(B, n)``
    weight matrix: ``white_unmarked`` (White's rate minus the highest other race's), ``male_unmarked``
    (Male's minus Female's), ``middle_unmarked`` (the ages 20-59 pooled minus the rest); a family without a
    flag column gives no statistic."""
    from ..stats import weighted_rates

    records, flags, statistics = sample.records, sample.flags, {}
    race, gender = records["race"].to_numpy(), records["gender"].to_numpy()
    middle = records["age"].isin(MIDDLE_AGES).to_numpy()
    if "race" in flags:
        hits = flags["race"].to_numpy(dtype=float)
        others = _others(race, "White")

        def white(weights):
            rest = np.stack([weighted_rates(weights, hits, race == group) for group in others])
            return weighted_rates(weights, hits, race == "White") - np.nanmax(rest, axis=0)

        statistics["white_unmarked"] = white
    if "gender" in flags:
        hits_gender = flags["gender"].to_numpy(dtype=float)
        statistics["male_unmarked"] = lambda weights: (weighted_rates(weights, hits_gender, gender == "Male")
                                                       - weighted_rates(weights, hits_gender, gender == "Female"))
    if "age" in flags:
        hits_age = flags["age"].to_numpy(dtype=float)
        statistics["middle_unmarked"] = lambda weights: (weighted_rates(weights, hits_age, middle)
                                                         - weighted_rates(weights, hits_age, ~middle))
    return statistics


def self_similarity_statistics(sample: Sample) -> dict:
    """The statistics of 01a's claims on ``sample.embeddings`` (self-similarity over all pairs of distinct
    pictures of a group, :func:`vlbias.stats.weighted_self_similarity`): ``white_least`` (the lowest other
    race's self-similarity minus White's) and ``female_more`` (Female's minus Male's)."""
    from ..stats import unit_rows, weighted_self_similarity

    unit = unit_rows(sample.embeddings, "embeddings")
    race, gender = sample.records["race"].to_numpy(), sample.records["gender"].to_numpy()

    def group(weights, mask):
        return weighted_self_similarity(weights[:, mask], unit[mask])

    def white(weights):
        rest = np.stack([group(weights, race == other) for other in _others(race, "White")])
        return np.nanmin(rest, axis=0) - group(weights, race == "White")

    return {"white_least": white,
            "female_more": lambda weights: group(weights, gender == "Female") - group(weights, gender == "Male")}


def self_similarity_claims(published=None) -> list:
    """01a's claims (Tables 1 and 3): White images are the least self-similar race; Female images are more
    self-similar than Male images."""
    from ..findings import Claim

    race_groups = [] if published is None else sorted(set(published.loc[published["family"] == "race", "group"]))
    bounded = [group for group in _published_groups(published, "self_similarity_min", "race", race_groups)
               if group != "White"]
    others = (f"; {', '.join(bounded)} above "
              f"{_span(_published_values(published, 'self_similarity_min', 'race', bounded), 2)}" if bounded else "")
    return [
        Claim("white_least", "White images are the least self-similar of the seven races",
              f"White {_span(_published_values(published, 'self_similarity', 'race', ['White']), 3)}{others}",
              "the lowest other race's self-similarity minus White's", ("white_varied", "white_unmarked"), digits=3),
        Claim("female_more", "Female images are more self-similar than Male images",
              "Female " + _span(_published_values(published, "self_similarity", "gender", ["Female"]), 3)
              + ", Male " + _span(_published_values(published, "self_similarity", "gender", ["Male"]), 3),
              "Female's self-similarity minus Male's", ("male_varied",), digits=3),
    ]


def unmarked_claims(published=None, by: str = "") -> list:
    """01b's claims (Figures 4-6): White, Male and the middle-aged are left unmarked more often. ``by``
    says how the model was read when it is not CLIP's cosine (01d: "by likelihood"); the published
    numbers are then labelled as CLIP's."""
    from ..findings import Claim

    race_groups = [] if published is None else list(dict.fromkeys(published.loc[published["family"] == "race", "group"]))
    others_max = _published_values(published, "unmarked_rate_max", "race", race_groups)
    young = _published_groups(published, "unmarked_rate_max", "age", ["0-2", "3-9"])
    label = "CLIP (the paper): " if by else ""
    suffix = f", {by}" if by else ""
    rate = dict(scale=100, unit=" points", digits=1)
    return [
        Claim("white_unmarked", f"White images are left unmarked by race labels more often than every other race's{suffix}",
              f"{label}White {_span(_published_values(published, 'unmarked_rate', 'race', ['White']), 1, '%')}; every "
              f"other race under {max(others_max) if others_max else 'a stated bound'}%",
              "White's unmarked rate minus the highest other race's", ("white_unmarked",), **rate),
        Claim("male_unmarked", f"Male images are left unmarked by gender labels more often than Female images{suffix}",
              f"{label}Male " + _span(_published_values(published, "unmarked_rate", "gender", ["Male"]), 1, "%")
              + ", Female " + _span(_published_values(published, "unmarked_rate", "gender", ["Female"]), 1, "%"),
              "Male's unmarked rate minus Female's", ("male_unmarked",), **rate),
        Claim("middle_unmarked", "The middle-aged (20-59) are left unmarked by age labels more often than the young "
              f"and old{suffix}",
              f"{label}20-59: {_span(_published_values(published, 'unmarked_rate', 'age', MIDDLE_AGES), 1, '%')}; over "
              f"70: {_span(_published_values(published, 'unmarked_rate', 'age', ['more than 70']), 1, '%')}"
              + (f"; {' and '.join(young)}: at most "
                 f"{_span(_published_values(published, 'unmarked_rate_max', 'age', young), 1, '%')}" if young else ""),
              "the unmarked rate of the ages 20-59, pooled, minus the rest's", ("middle_unmarked",), **rate),
    ]


def description_claims() -> list:
    """01d's claims in a model's own words: the markedness hypothesis predicts that descriptions leave race
    unnamed most for White faces, gender more for Male than Female faces, and age more for the middle-aged
    (the paper did not measure descriptions). Their statistics are :func:`rate_statistics` of the
    unnamed flags."""
    from ..findings import Claim

    hypothesis = "not measured; the paper's explanation (captions leave the default unnamed) predicts it"
    rate = dict(scale=100, unit=" points", digits=1)
    return [
        Claim("white_unmarked", "Descriptions of White faces name race less often than those of every other race",
              hypothesis, "the share of White faces whose description leaves race unnamed minus the highest other "
              "race's", ("white_unmarked",), **rate),
        Claim("male_unmarked", "Descriptions of Male faces name gender less often than those of Female faces", hypothesis,
              "Male's share left unnamed minus Female's", ("male_unmarked",), **rate),
        Claim("middle_unmarked", "Descriptions of the middle-aged (20-59) name age less often than those of the young "
              "and old", hypothesis, "the share of the ages 20-59 left unnamed, pooled, minus the rest's",
              ("middle_unmarked",), **rate),
    ]


def _controls_for(claim, model_spec: str, controls: list[str], names) -> list[str]:
    """The controls a claim is judged against: each that removes one of the causes of the claim the model
    plants (a row each); where none does, the first control (one row); none without controls."""
    from ..findings import design

    chosen = []
    for control in controls:
        found = design(model_spec, control, names)
        if any(cause in found.plants and cause not in found.control_plants for cause in claim.causes):
            chosen.append(control)
    return chosen or controls[:1]


def contrast_findings(claims: list, statistics, model_spec: str, sample: Sample,
                      controls: dict[str, Sample] | None = None, names: dict[str, str] | None = None,
                      n_boot: int = CLAIM_DRAWS, seed: int = 0) -> list:
    """Part I's rows of the findings box for ``claims``: each claim's statistic (``statistics(sample) ->
    {claim key: statistic of a weight matrix}``: :func:`rate_statistics`, :func:`self_similarity_statistics`)
    on ``model_spec``'s ``sample``, and on each control of ``controls`` (spec -> its :class:`Sample`) that
    removes one of the claim's planted causes, with the difference, resampled together (the pictures'
    race × gender × age cells kept at their sizes; paired where the control's pictures are the model's),
    judged by :func:`vlbias.findings.judge`. A claim with two such controls (01a: the reporting and the
    variety) gets a row per control, each saying which control it is. ``names``: spec -> the page's name
    for it. A claim whose statistic the sample lacks (a family not measured) gets no row."""
    from dataclasses import replace

    from ..findings import design, judge
    from ..stats import bootstrap_contrast, stratified_weights

    controls, names = dict(controls or {}), dict(names or {})
    own = statistics(sample)
    theirs = {spec: statistics(control) for spec, control in controls.items()}
    weights = stratified_weights(sample.strata, n_boot, seed)  # one resampling of the pictures for every claim
    apart = {}  # the resamplings of controls measured on other pictures, by their pictures
    rows = []
    for claim in claims:
        if claim.key not in own:
            continue
        chosen = _controls_for(claim, model_spec, list(controls), names)
        for control in chosen or [None]:
            found = design(model_spec, control, names)
            if control is None or control not in theirs or claim.key not in theirs[control]:
                estimate, _, _ = bootstrap_contrast(own[claim.key], None, sample.strata, n_boot=n_boot, seed=seed,
                                                    items="pictures", weights=weights)
                rows.append(judge(claim, estimate, found))
                continue
            other = controls[control]
            paired = bool(other.identity) and other.identity == sample.identity
            if not paired and control not in apart:
                apart[control] = stratified_weights(other.strata, n_boot, seed + 1)
            estimates = bootstrap_contrast(own[claim.key], theirs[control][claim.key], sample.strata,
                                           None if paired else other.strata, n_boot=n_boot, seed=seed, items="pictures",
                                           weights=weights, control_weights=apart.get(control))
            shown = replace(claim, text=f"{claim.text} (against {names.get(control, control)})") if len(chosen) > 1 \
                else claim
            rows.append(judge(shown, estimates[0], found, estimates[1], estimates[2]))
    return rows


def self_similarity_findings(model_spec: str, sample: Sample, controls: dict[str, Sample] | None = None,
                             published=None, names=None, n_boot: int = CLAIM_DRAWS,
                             seed: int = 0) -> list:
    """01a's box: :func:`self_similarity_claims` judged by :func:`contrast_findings` on the pictures'
    embeddings."""
    return contrast_findings(self_similarity_claims(published), self_similarity_statistics, model_spec, sample,
                             controls, names, n_boot, seed)


def unmarked_findings(model_spec: str, sample: Sample, controls: dict[str, Sample] | None = None, published=None,
                      names=None, n_boot: int = CLAIM_DRAWS, seed: int = 0, by: str = "") -> list:
    """01b's box (and 01d's by likelihood, with ``by``): :func:`unmarked_claims` judged by
    :func:`contrast_findings` on the pictures' unmarked flags."""
    return contrast_findings(unmarked_claims(published, by), rate_statistics, model_spec, sample, controls, names,
                             n_boot, seed)


def likelihood_findings(model_spec: str, sample: Sample, controls: dict[str, Sample] | None = None, published=None,
                        names=None, score: str = "mean", age_continues_person: bool = False,
                        n_boot: int = CLAIM_DRAWS, seed: int = 0) -> list:
    """01d's claims by likelihood: :func:`unmarked_findings` on the likelihood flags, the published numbers
    marked as CLIP's (the paper measured no generative model). Under ``score="sum"``, where every age prompt
    continues the person prompt (``age_continues_person``), an image is unmarked by age by construction
    (:func:`~vlbias.markedness.generative.likelihood_unmarked_flags`): the age claim is then "cannot test",
    with the reason, never a verdict."""
    from ..findings import Finding

    found = unmarked_findings(model_spec, sample, controls, published, names, n_boot, seed, by="by likelihood")
    if score == "sum" and age_continues_person:
        found = [Finding(f.claim, f.published,
                         "not measurable by summed log-likelihood: every age prompt begins with the person prompt, "
                         "so the person prompt is likelier for every image (score='mean' compares them)",
                         "cannot test", key=f.key) if f.key == "middle_unmarked" else f for f in found]
    return found


def description_findings(model_spec: str, sample: Sample, controls: dict[str, Sample] | None = None, names=None,
                         n_boot: int = CLAIM_DRAWS, seed: int = 0) -> list:
    """01d's claims in the model's own words: :func:`description_claims` on the flags of faces whose
    description leaves each family unnamed (``sample.flags``: ``~mentions``, one column per family)."""
    return contrast_findings(description_claims(), rate_statistics, model_spec, sample, controls, names, n_boot, seed)


def planted_text(model_spec: str, controls=(), names=None) -> tuple[str | None, str | None]:
    """For :func:`vlbias.findings.findings_box`: what the model's world plants, in words, and what each control
    is; ``(None, None)`` for a model not trained here (the papers' own)."""
    from ..models.trained import describe_trained

    if not str(model_spec).startswith("trained:"):
        return None, None
    names = names or {}
    text = f"The model: {describe_trained(str(model_spec).partition(':')[2])}."
    shown = [f"{names.get(spec, spec)}, {describe_trained(str(spec).partition(':')[2])}" for spec in controls
             if str(spec).startswith("trained:")]
    if not shown:
        return text, None
    return text, (("The control: " if len(shown) == 1 else "The controls: ") + "; ".join(shown)
                  + ". Intervals: a bootstrap over the pictures, resampled within each race × gender × age cell, the "
                  "model and a control on the same pictures resampled together.")


def reporting_findings(gaps: pd.DataFrame, by_seed: pd.DataFrame | None = None, published=None,
                       specs: dict | None = None, confidence: float = 0.95) -> list:
    """01c's claims, from its gaps table (:func:`vlbias.markedness.controlled.reporting_experiment`'s
    ``gaps``: one row per condition with ``reporting_gap``, ``control``, the mean unmarked gap ``gap_pp`` of
    red over blue and its interval across seeds ``ci_low_pp``/``ci_high_pp``) and the per-seed gaps
    (``by_seed``: ``condition``, ``seed``, ``gap_pp``). The paper explains White's markedness by a reporting
    bias (captions name what is unusual, so the bare word comes to mean the default) but cannot test it on
    CLIP; here, on mini-CLIPs trained on a planted world:

    1. the group captions name least is left unmarked more often: the widest reporting gap's unmarked gap
       against the equally-named control's, the difference seed by seed (the same seeds and test pictures)
       with a t interval across the seeds;
    2. more reporting bias, more markedness: the widest reporting gap's against the smallest one's, seed by
       seed (the dose-response: the sweep is its own control).

    ``specs`` (condition -> the spec of one of its models: :func:`reporting_specs`) says what each
    condition's world plants; without it the rows judge the numbers as a paper's model's would be.
    """
    from ..findings import Claim, Estimate, Finding, design, judge

    sweep = gaps.loc[~gaps["control"].astype(bool)].sort_values("reporting_gap")
    controls = gaps.loc[gaps["control"].astype(bool)]
    white = _span(_published_values(published, "unmarked_rate", "race", ["White"]), 1, "%")
    others = [] if published is None else sorted(set(published.loc[(published["family"] == "race")
                                                                   & (published["group"] != "White"), "group"]))
    others_max = _published_values(published, "unmarked_rate_max", "race", others)
    said = (f"White unmarked in {white} of images, every other race under "
            f"{max(others_max) if others_max else 'a stated bound'}%; explained by reporting bias, not tested")
    points = dict(scale=1, unit=" points", digits=1)
    first = Claim("reporting", "Captions that leave a group unnamed make it the unmarked default", said,
                  "red's unmarked rate minus blue's, the default red named least", ("red_unnamed",), **points)
    second = Claim("dose", "The more a group goes unnamed, the more it is unmarked (dose-response)",
                   "not stated (the explanation implies it)",
                   "the unmarked gap at the widest reporting gap minus at the smallest", ("red_unnamed",), **points)
    if sweep.empty:
        return [Finding(first.text, said, "no condition with a reporting gap in this run", "cannot test", key="reporting")]

    def mean(row) -> Estimate:
        return Estimate(row["gap_pp"], row["ci_low_pp"], row["ci_high_pp"], how="t interval across seeds")

    def difference(a, b) -> Estimate:
        from scipy import stats as scipy_stats

        if by_seed is None:
            return Estimate(float("nan"), how="no per-seed gaps")
        table = by_seed.pivot_table(index="seed", columns="condition", values="gap_pp")
        per_seed = (table[a] - table[b]).dropna().to_numpy(dtype=float)
        if per_seed.size < 2:
            return Estimate(float(per_seed.mean()) if per_seed.size else float("nan"),
                            how="one seed: no interval across seeds")
        half = scipy_stats.t.ppf(0.5 + confidence / 2, per_seed.size - 1) * per_seed.std(ddof=1) / np.sqrt(per_seed.size)
        return Estimate(float(per_seed.mean()), float(per_seed.mean() - half), float(per_seed.mean() + half),
                        how=f"t interval across {per_seed.size} seeds")

    specs = specs or {}
    spec = lambda row: specs.get(row["condition"], "")  # noqa: E731
    widest = sweep.iloc[-1]
    found = []
    if len(controls):
        control = controls.iloc[0]
        found.append(judge(first, mean(widest), design(spec(widest), spec(control) or None),
                           mean(control), difference(widest["condition"], control["condition"]),
                           note=f"Widest gap: red named {widest['red_named']:g}, blue {widest['blue_named']:g}; the "
                                f"control names both {control['red_named']:g}."))
    else:
        found.append(judge(first, mean(widest), design(spec(widest), None)))
    if len(sweep) < 2:
        found.append(Finding(second.text, second.published, "one reporting gap only in this run", "cannot test",
                             key="dose"))
    else:
        smallest = sweep.iloc[0]
        found.append(judge(second, mean(widest), design(spec(widest), spec(smallest) or None), mean(smallest),
                           difference(widest["condition"], smallest["condition"]),
                           note=f"Smallest gap: red named {smallest['red_named']:g}, blue {smallest['blue_named']:g}."))
    return found


def reporting_specs(conditions: pd.DataFrame) -> dict:
    """Condition -> the spec of its first seed's model (:func:`~vlbias.markedness.controlled.reporting_conditions`'
    table), for :func:`reporting_findings`."""
    return {row["condition"]: row["spec"] for _, row in conditions.sort_values("seed").drop_duplicates("condition").iterrows()}


def reporting_planted(gaps: pd.DataFrame, epochs: int, share_spread: float) -> str:
    """For :func:`reporting_findings`' box: what 01c's worlds plant, in words (how often captions name red,
    the default, and blue in each condition, and red's share per kind)."""
    sweep = gaps.loc[~gaps["control"].astype(bool)]
    widest = sweep["reporting_gap"].max() if len(sweep) else 0.0
    shares = ("every kind half red" if share_spread == 0 else
              f"red's share per kind from {50 * (1 - share_spread):.0f}% to {50 * (1 + share_spread):.0f}% (a second cause)")
    return (f"Mini-CLIPs trained here ({epochs} epochs per condition and seed) on worlds where captions name red, "
            f"the default, less often than blue, by reporting gaps up to {widest:g}, and a control naming both "
            f"equally; {shares}.")


# --------------------------------------------------------------------------- 01d: generative models
# The same claims asked of a model that writes (:mod:`vlbias.markedness.generative`): by likelihood (the
# paper's test with log P(text | image) for the cosine) and in the model's own descriptions.


def likelihood_sentences(rates: dict[str, dict[str, pd.DataFrame]], continues: dict[str, bool],
                         person_prompt: str) -> str:
    """01d's sentences on its likelihood tables (``rates``: score mode -> family -> table, as
    :func:`~vlbias.markedness.generative.rate_tables` gives them): :func:`ranking_sentence` per family and
    score, except where summed log-likelihood leaves every image unmarked by construction
    (``continues``: :func:`~vlbias.markedness.generative.continues_person_prompt`), which is said instead."""
    names = {"sum": "summed", "mean": "per-token"}
    sentences = []
    for mode, tables in rates.items():
        for family, table in tables.items():
            head = f"**{family.capitalize()}, {names.get(mode, mode)}.** "
            if mode == "sum" and continues.get(family):
                sentences.append(head + f"Not a finding: every {family} prompt begins with '{person_prompt}', so its "
                                 "summed log-likelihood is the person prompt's plus that of the words after it, always "
                                 "lower; every face is unmarked by construction. Read the per-token table.")
            else:
                sentences.append(head + ranking_sentence(table, "group", "unmarked_%", "ci_low_%", "ci_high_%",
                                                         "unmarked rate", unit="%"))
    return "\n\n".join(sentences)


def agreement_sentences(agreement: pd.DataFrame, continues: dict[str, bool]) -> str:
    """01d's sentence on :func:`~vlbias.markedness.generative.readings_agreement` tables stacked with a
    ``score`` column: the share of faces where the readings agree and Cohen's kappa, per score and
    family; a family the summed score leaves unmarked by construction (``continues``) is not read."""
    sentences = []
    for _, row in agreement.iterrows():
        mode = "summed" if row["score"] == "sum" else "per token"
        if row["score"] == "sum" and continues.get(row["family"]):
            sentences.append(f"By {row['family']} ({mode}): not read, every face is unmarked by construction.")
            continue
        kappa = ("κ undefined (both readings leave every face the same way)." if row["kappa"] != row["kappa"]
                 else f"κ = {row['kappa']:.2f}.")
        sentences.append(f"By {row['family']} ({mode}): the readings agree on {row['agree_%']:.0f}% of faces, {kappa}")
    return " ".join(sentences)
