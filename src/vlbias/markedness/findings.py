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


# --------------------------------------------------------------------------- findings: paper vs ours
# The claims of Wolfe and Caliskan (2022) that 01a and 01b test, each with the published numbers
# (``published``: :func:`vlbias.book.published`'s markedness table) and a verdict from the run's
# intervals (:mod:`vlbias.findings`).

#: the ages the paper finds left unmarked most (Figure 6: 39.2-57.9%, against under 1% for the
#: youngest and 6.7% over 70)
MIDDLE_AGES = ("20-29", "30-39", "40-49", "50-59")


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


def _extreme_verdict(table: pd.DataFrame, group: str, value: str, low: str, high: str, highest: bool) -> str:
    """Whether ``group`` lies beyond every other group of ``table`` (above them where ``highest``,
    else below), by the intervals: supports, contradicts (another group lies beyond it), or cannot tell."""
    rows = table.set_index("group")
    one, others = rows.loc[group], rows.drop(index=group)
    if highest:
        if one[low] > others[high].max():
            return "supports"
        return "contradicts" if (others[low] > one[high]).any() else "cannot tell"
    if one[high] < others[low].min():
        return "supports"
    return "contradicts" if (others[high] < one[low]).any() else "cannot tell"


def _interval_text(row, value: str, low: str, high: str, digits: int, unit: str = "") -> str:
    return f"{row[value]:.{digits}f}{unit} [{row[low]:.{digits}f}, {row[high]:.{digits}f}]"


def self_similarity_findings(single: dict[str, pd.DataFrame], published=None, value: str = "mean",
                             low: str = "ci_low", high: str = "ci_high") -> list:
    """01a's claims: White images are the least self-similar race (Table 1) and Female images are more
    self-similar than Male (Table 3), from the per-family tables of the page (``single``)."""
    from ..findings import Finding, order_verdict

    race, gender = single["race"].set_index("group"), single["gender"].set_index("group")
    lowest_other = race.drop(index="White")[value].idxmin()
    published_white = _span(_published_values(published, "self_similarity", "race", ["White"]), 3)
    bounded = [group for group in _published_groups(published, "self_similarity_min", "race", race.index) if group != "White"]
    published_others = (f"; {', '.join(bounded)} above "
                        f"{_span(_published_values(published, 'self_similarity_min', 'race', bounded), 2)}" if bounded else "")
    female, male = gender.loc["Female"], gender.loc["Male"]
    return [
        Finding("White images are the least self-similar of the seven races",
                f"White {published_white}{published_others}",
                f"White {_interval_text(race.loc['White'], value, low, high, 3)}; the lowest other, "
                f"{lowest_other}, {_interval_text(race.loc[lowest_other], value, low, high, 3)}",
                _extreme_verdict(single["race"], "White", value, low, high, highest=False)),
        Finding("Female images are more self-similar than Male images",
                "Female " + _span(_published_values(published, "self_similarity", "gender", ["Female"]), 3)
                + ", Male " + _span(_published_values(published, "self_similarity", "gender", ["Male"]), 3),
                f"Female {_interval_text(female, value, low, high, 3)}, Male {_interval_text(male, value, low, high, 3)}",
                order_verdict((female[low], female[high]), (male[low], male[high]))),
    ]


def unmarked_findings(single: dict[str, pd.DataFrame], records: pd.DataFrame, flags: pd.DataFrame, published=None,
                      value: str = "unmarked_%", low: str = "ci_low_%", high: str = "ci_high_%") -> list:
    """01b's claims: White, Male and the middle-aged are left unmarked more often (Figures 4-6). Race
    and gender from the page's per-group tables (``single``: White above every other race, Male above
    Female); age pooled, the four middle ages against the rest, as a rate difference with Newcombe's
    interval from the images' flags (``records``, ``flags``: :func:`unmarked_flags`)."""
    from ..findings import Finding, difference_verdict, order_verdict
    from .unmarked import unmarked_gap

    race, gender = single["race"].set_index("group"), single["gender"].set_index("group")
    highest_other = race.drop(index="White")[value].idxmax()
    others_max = _published_values(published, "unmarked_rate_max", "race", race.index)
    male, female = gender.loc["Male"], gender.loc["Female"]
    difference, diff_low, diff_high = unmarked_gap(records, flags, "age", MIDDLE_AGES)
    middle = _published_values(published, "unmarked_rate", "age", MIDDLE_AGES)
    young = _published_groups(published, "unmarked_rate_max", "age", ["0-2", "3-9"])  # bounds the paper states
    return [
        Finding("White images are left unmarked by race labels more often than every other race's",
                f"White {_span(_published_values(published, 'unmarked_rate', 'race', ['White']), 1, '%')}; "
                f"every other race under {max(others_max) if others_max else 'a stated bound'}%",
                f"White {_interval_text(race.loc['White'], value, low, high, 1, '%')}; the highest other, "
                f"{highest_other}, {_interval_text(race.loc[highest_other], value, low, high, 1, '%')}",
                _extreme_verdict(single["race"], "White", value, low, high, highest=True)),
        Finding("Male images are left unmarked by gender labels more often than Female images",
                "Male " + _span(_published_values(published, "unmarked_rate", "gender", ["Male"]), 1, "%")
                + ", Female " + _span(_published_values(published, "unmarked_rate", "gender", ["Female"]), 1, "%"),
                f"Male {_interval_text(male, value, low, high, 1, '%')}, "
                f"Female {_interval_text(female, value, low, high, 1, '%')}",
                order_verdict((male[low], male[high]), (female[low], female[high]))),
        Finding("The middle-aged (20-59) are left unmarked by age labels more often than the young and old",
                f"20-59: {_span(middle, 1, '%')}; over 70: "
                + _span(_published_values(published, "unmarked_rate", "age", ["more than 70"]), 1, "%")
                + (f"; {' and '.join(young)}: at most {_span(_published_values(published, 'unmarked_rate_max', 'age', young), 1, '%')}"
                   if young else ""),
                f"20-59 minus the rest, pooled: {100 * difference:+.1f} points [{100 * diff_low:+.1f}, {100 * diff_high:+.1f}]",
                difference_verdict(diff_low, diff_high)),
    ]


#: the models trained in the book on the face world, whose options plant Part I's causes
FACE_WORLD_MODELS = ("trained:face-clip", "trained:face-captioner")


def face_clip_causes(spec: str) -> dict[str, bool] | None:
    """Which of Part I's claims ``spec``'s world plants a cause for (``trained:face-clip`` and
    ``trained:face-captioner``, trained on the same world with the same reporting options; None for any
    other model, the papers' own): ``white_unmarked``, ``male_unmarked``, ``middle_unmarked`` (captions
    name that group less often than the rest), ``white_varied`` (White pictures vary more than the
    others) and ``male_varied`` (Male pictures vary more)."""
    from ..models.trained import trained_options

    if not str(spec).partition("?")[0] in FACE_WORLD_MODELS:
        return None
    _, options = trained_options(str(spec).partition(":")[2])
    uniform = options["uniform_named"] != -1.0
    return {
        "white_unmarked": not uniform and options["default_race"] == "White"
        and options["default_race_named"] < options["race_named"],
        "male_unmarked": not uniform and options["default_gender"] == "Male"
        and options["default_gender_named"] < options["gender_named"],
        "middle_unmarked": not uniform and set(options["default_ages"].split(",")) == set(MIDDLE_AGES)
        and options["default_age_named"] < options["age_named"],
        "white_varied": options["world_varied_race"] == "White"
        and options["world_varied_race_variety"] > options["world_variety"],
        "male_varied": options["world_varied_gender"] == "Male" and options["world_gender_extra_variety"] > 0,
    }


def planted(model_spec: str, keys: list[str]) -> tuple[str | None, list[bool] | None]:
    """For :func:`vlbias.findings.findings_box`: what ``model_spec``'s world plants, in words, and for
    each of ``keys`` (:func:`face_clip_causes`) whether it plants that cause; ``(None, None)`` for a
    model not trained on the face world (the papers' own)."""
    from ..models.trained import describe_trained

    causes = face_clip_causes(model_spec)
    if causes is None:
        return None, None
    return f"The model: {describe_trained(str(model_spec).partition(':')[2])}.", [causes[key] for key in keys]


def reporting_findings(gaps: pd.DataFrame, published=None) -> list:
    """01c's claims, from its gaps table (:func:`vlbias.markedness.controlled.reporting_experiment`'s
    ``gaps``: one row per condition with ``reporting_gap``, ``control``, the mean unmarked gap
    ``gap_pp`` of red over blue and its interval across seeds ``ci_low_pp``/``ci_high_pp``). The paper
    explains White's markedness by a reporting bias (captions name what is unusual, so the bare word
    comes to mean the default) but cannot test it on CLIP; here:

    1. the group captions name least is left unmarked more often than the other: the widest reporting
       gap's unmarked gap above 0 (the equally-named control's gap stands beside it);
    2. more reporting bias, more markedness: the widest reporting gap's unmarked gap above the
       smallest one's (the dose-response).
    """
    from ..findings import Finding, difference_verdict, order_verdict

    sweep = gaps.loc[~gaps["control"].astype(bool)].sort_values("reporting_gap")
    controls = gaps.loc[gaps["control"].astype(bool)]
    white = _span(_published_values(published, "unmarked_rate", "race", ["White"]), 1, "%")
    others = [] if published is None else sorted(set(published.loc[(published["family"] == "race")
                                                                   & (published["group"] != "White"), "group"]))
    others_max = _published_values(published, "unmarked_rate_max", "race", others)
    said = (f"White unmarked in {white} of images, every other race under "
            f"{max(others_max) if others_max else 'a stated bound'}%; explained by reporting bias, not tested")

    def condition(row) -> str:
        return (f"red named {row['red_named']:g}, blue {row['blue_named']:g}: {row['gap_pp']:+.1f} points "
                f"[{row['ci_low_pp']:+.1f}, {row['ci_high_pp']:+.1f}]")

    found = []
    if sweep.empty:
        return [Finding("Captions that leave a group unnamed make it the unmarked default", said,
                        "no condition with a reporting gap in this run", "cannot test")]
    widest = sweep.iloc[-1]
    beside = (f"; the equally-named control, {condition(controls.iloc[0])}" if len(controls) else "")
    found.append(Finding("Captions that leave a group unnamed make it the unmarked default", said,
                         f"unmarked gap, red minus blue, {condition(widest)}{beside}",
                         difference_verdict(widest["ci_low_pp"], widest["ci_high_pp"])))
    if len(sweep) < 2:
        found.append(Finding("The more a group goes unnamed, the more it is unmarked (dose-response)", "not stated",
                             "one reporting gap only in this run", "cannot test"))
    else:
        smallest = sweep.iloc[0]
        found.append(Finding("The more a group goes unnamed, the more it is unmarked (dose-response)",
                             "not stated (the explanation implies it)",
                             f"widest gap, {condition(widest)}; smallest, {condition(smallest)}",
                             order_verdict((widest["ci_low_pp"], widest["ci_high_pp"]),
                                           (smallest["ci_low_pp"], smallest["ci_high_pp"]))))
    return found


def reporting_planted(gaps: pd.DataFrame, epochs: int, share_spread: float) -> tuple[str, list[bool]]:
    """For :func:`reporting_findings`: what 01c's worlds plant, in words (how often captions name red,
    the default, and blue in each condition, and red's share per kind), and that they plant both
    claims' cause (a reporting gap) wherever the sweep has one."""
    sweep = gaps.loc[~gaps["control"].astype(bool)]
    widest = sweep["reporting_gap"].max() if len(sweep) else 0.0
    shares = ("every kind half red" if share_spread == 0 else
              f"red's share per kind from {50 * (1 - share_spread):.0f}% to {50 * (1 + share_spread):.0f}% (a second cause)")
    text = (f"Mini-CLIPs trained here ({epochs} epochs per condition and seed) on worlds where captions name red, "
            f"the default, less often than blue, by reporting gaps up to {widest:g}, and a control naming both "
            f"equally; {shares}.")
    return text, [bool(widest > 0), bool(widest > 0)]


# --------------------------------------------------------------------------- 01d: generative models
# The same claims asked of a model that writes (:mod:`vlbias.markedness.generative`): by likelihood (the
# paper's test with log P(text | image) for the cosine) and in the model's own descriptions.


def likelihood_findings(single: dict[str, pd.DataFrame], records: pd.DataFrame, flags: pd.DataFrame, published=None,
                        score: str = "mean", age_continues_person: bool = False) -> list:
    """01d's claims by likelihood: :func:`unmarked_findings` on the likelihood flags, the published
    numbers marked as CLIP's (the paper measured no generative model). Under ``score="sum"``, where
    every age prompt continues the person prompt (``age_continues_person``), an image is unmarked by
    age by construction (:func:`~vlbias.markedness.generative.likelihood_unmarked_flags`): the age claim
    is then "cannot test", with the reason, never a verdict."""
    from dataclasses import replace

    from ..findings import Finding

    found = [replace(finding, published=f"CLIP (the paper): {finding.published}")
             for finding in unmarked_findings(single, records, flags, published)]
    if score == "sum" and age_continues_person:
        found[2] = Finding(found[2].claim, found[2].published,
                           "not measurable by summed log-likelihood: every age prompt begins with the person prompt, "
                           "so the person prompt is likelier for every image (score='mean' compares them)",
                           "cannot test")
    return found


def description_findings(tables: dict[str, pd.DataFrame], records: pd.DataFrame, mentioned: pd.DataFrame) -> list:
    """01d's claims in the model's own words (``tables``: :func:`~vlbias.markedness.generative.mention_tables`,
    ``mentioned``: :func:`~vlbias.markedness.generative.mentions` of the descriptions): the markedness
    hypothesis predicts that descriptions name race least for White faces, gender less for Male than
    Female faces, and age less for the middle-aged (20-59, pooled, Newcombe's interval). The paper did
    not measure descriptions; its hypothesis (the default goes unnamed) is what is tested."""
    from ..findings import Finding, difference_verdict, order_verdict
    from ..stats import rate_difference_interval

    value, low, high = "mentioned_%", "ci_low_%", "ci_high_%"
    race, gender = tables["race"].set_index("group"), tables["gender"].set_index("group")
    lowest_other = race.drop(index="White")[value].idxmin()
    male, female = gender.loc["Male"], gender.loc["Female"]
    middle = records["age"].isin(MIDDLE_AGES).to_numpy()
    named = mentioned["age"].to_numpy().astype(bool)
    gap, gap_low, gap_high = rate_difference_interval(int(named[~middle].sum()), int((~middle).sum()),
                                                      int(named[middle].sum()), int(middle.sum()))
    hypothesis = "not measured; the paper's explanation (captions leave the default unnamed) predicts it"
    return [
        Finding("Descriptions of White faces name race less often than those of every other race", hypothesis,
                f"White {_interval_text(race.loc['White'], value, low, high, 1, '%')}; the lowest other, "
                f"{lowest_other}, {_interval_text(race.loc[lowest_other], value, low, high, 1, '%')}",
                _extreme_verdict(tables["race"], "White", value, low, high, highest=False)),
        Finding("Descriptions of Male faces name gender less often than those of Female faces", hypothesis,
                f"Male {_interval_text(male, value, low, high, 1, '%')}, "
                f"Female {_interval_text(female, value, low, high, 1, '%')}",
                order_verdict((female[low], female[high]), (male[low], male[high]))),
        Finding("Descriptions of the middle-aged (20-59) name age less often than those of the young and old",
                hypothesis,
                f"the rest minus 20-59, pooled: {100 * gap:+.1f} points [{100 * gap_low:+.1f}, {100 * gap_high:+.1f}]",
                difference_verdict(gap_low, gap_high)),
    ]


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
