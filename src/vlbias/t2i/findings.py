"""Part IV's "Findings: paper vs ours" (:mod:`vlbias.findings`): the source text's claims on its
model's occupational gender bias, judged from this run's bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the model whose numbers the source text publishes for plain sampling (SD 1.4)
SOURCE_MODEL = "CompVis/stable-diffusion-v1-4"


def _published(published: pd.DataFrame, measure: str, model: str = "SD 1.4", sampler: str = "plain") -> float:
    rows = published[(published["measure"] == measure) & (published["model"] == model) & (published["sampler"] == sampler)]
    return float(rows["value"].iloc[0])


def bias_findings(scores: pd.DataFrame, t2i_spec: str, published: pd.DataFrame) -> list:
    """04b's claims: the generated shares of women rank the professions as the labour statistics do
    (Spearman's ρ above 0), and SD 1.4's VRBS and ρ are the published ones (testable only when
    ``t2i_spec`` is SD 1.4). ``scores``: :func:`vlbias.t2i.bias.bootstrap_bias_scores` (rows ``VRBS`` and
    ``spearman_rho``; columns ``estimate``, ``ci_low``, ``ci_high``); ``published``:
    :func:`vlbias.t2i.bias.published_scores`."""
    from ..findings import Finding, difference_verdict

    rho, vrbs = scores.loc["spearman_rho"], scores.loc["VRBS"]
    published_rho, published_vrbs = _published(published, "spearman_rho"), _published(published, "vrbs")

    def interval(row) -> str:
        return f"{row['estimate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"

    note = _undefined(scores)
    if note:  # no number to judge: the box says why instead of printing nan
        return [Finding("The generated shares of women rank the professions as labour statistics do (Spearman's ρ > 0)",
                        f"ρ = {published_rho:.2f} (SD 1.4)", note, "cannot test"),
                Finding("SD 1.4's VRBS and ρ are the published ones", f"VRBS {published_vrbs:.2f}, ρ {published_rho:.2f}",
                        note, "cannot test")]
    if t2i_spec == SOURCE_MODEL:
        inside = [row["ci_low"] <= value <= row["ci_high"] for row, value in ((vrbs, published_vrbs), (rho, published_rho))]
        replication = Finding("SD 1.4's VRBS and ρ are the published ones", f"VRBS {published_vrbs:.2f}, ρ {published_rho:.2f}",
                              f"VRBS {interval(vrbs)}, ρ {interval(rho)}",
                              "supports" if all(inside) else "contradicts")
    else:
        replication = Finding("SD 1.4's VRBS and ρ are the published ones", f"VRBS {published_vrbs:.2f}, ρ {published_rho:.2f}",
                              f"this run's model is {t2i_spec}, not SD 1.4 (VRBS {interval(vrbs)}, ρ {interval(rho)})",
                              "cannot test")
    return [Finding("The generated shares of women rank the professions as labour statistics do (Spearman's ρ > 0)",
                    f"ρ = {published_rho:.2f} (SD 1.4)", f"ρ = {interval(rho)}",
                    difference_verdict(rho["ci_low"], rho["ci_high"])),
            replication]


def _undefined(table: pd.DataFrame) -> str:
    """The ``note`` of a scores table whose measures are undefined (:func:`vlbias.t2i.bias.undefined_scores`),
    or ""."""
    if "note" not in table.columns:
        return ""
    notes = [str(note) for note in table["note"] if isinstance(note, str) and note]
    return notes[0] if notes else ""


def planted(t2i_spec: str) -> tuple[str | None, list[bool] | None]:
    """For :func:`vlbias.findings.findings_box` with :func:`bias_findings`: what ``t2i_spec``'s world
    plants, in words, and whether it plants each claim's cause (``trained:profession-diffusion`` plants
    the ranking when its ``share_scale`` is above 0; no world plants the published numbers); ``(None,
    None)`` for any other model."""
    from ..models.trained import describe_trained, trained_options

    if not str(t2i_spec).startswith("trained:profession-diffusion"):
        return None, None
    body = str(t2i_spec).partition(":")[2]
    _, options = trained_options(body)
    return f"The model: {describe_trained(body)}.", [options["share_scale"] > 0, False]


def extension_planted(t2i_spec: str) -> tuple[str | None, list[bool] | None]:
    """For :func:`vlbias.findings.findings_box` with :func:`extension_findings`: what ``t2i_spec``'s
    world plants, in words, and whether it plants each claim's cause (the 25-45 tint's excess when
    ``age_peak`` is above a quarter, the light shade's when ``light_share`` is above a third, each only
    with ``share_scale`` above 0); ``(None, None)`` for any other model."""
    from ..models.trained import trained_options

    text, _ = planted(t2i_spec)
    if text is None:
        return None, None
    _, options = trained_options(str(t2i_spec).partition(":")[2])
    scale = options["share_scale"] > 0
    return text, [scale and options["age_peak"] > 0.25, scale and options["light_share"] > 1 / 3]


def cads_findings(cads_table: pd.DataFrame, published: pd.DataFrame) -> list:
    """04c's claim: CADS raises VRBS (SD 1.4 0.68 to 0.73, SD 2.1 0.71 to 0.73), judged from the paired
    change with its bootstrap interval for each model of ``cads_table``
    (:func:`vlbias.t2i.compare.cads_beside_published`) that stands for a source model; "cannot test"
    where none does."""
    from ..findings import Finding, difference_verdict

    claim = "CADS raises VRBS (moves the generated shares towards the labour statistics)"
    stated = published[published["measure"] == "vrbs"].pivot_table(index="model", columns="sampler", values="value")
    said = "; ".join(f"{model}: {row['plain']:.2f} to {row['CADS']:.2f}" for model, row in stated.iterrows()
                     if {"plain", "CADS"} <= set(row.index))
    rows = cads_table[cads_table["source name"].astype(str) != ""]
    if rows.empty:
        return [Finding(claim, said, "no model of this run stands for one the source ran CADS on", "cannot test")]
    return [Finding(f"{claim}: {row['source name']}", said, f"{model}: {row['note']}", "cannot test")
            if isinstance(row.get("note"), str) and row.get("note") else
            Finding(f"{claim}: {row['source name']}", said,
                    f"{model}: {row['VRBS plain']:.3f} to {row['VRBS CADS']:.3f}, change {row['change']:+.3f} "
                    f"[{row['change low']:+.3f}, {row['change high']:+.3f}]",
                    difference_verdict(row["change low"], row["change high"]))
            for model, row in rows.iterrows()]


def cads_planted(specs) -> tuple[str | None, list[bool] | None]:
    """For :func:`cads_findings` on ``trained:profession-diffusion`` models: what the world plants (the
    labour shares), and that it plants no effect of CADS on VRBS; ``(None, None)`` for the source's models."""
    trained = [spec for spec in specs if str(spec).startswith("trained:profession-diffusion")]
    if not trained or len(trained) != len(list(specs)):
        return None, None
    text, _ = planted(trained[0])
    return (text + " Nothing in the world sets what CADS does to VRBS: the verdict is what sampling gave.",
            [False] * len(trained))


def extension_findings(manifest: pd.DataFrame | None, probe: str | None, why_not: str = "",
                       confidence: float = 0.95, professions=("doctor",)) -> list:
    """04d's claims (the source text's section 4.1): people perceived as 25-45 are drawn most often, and
    doctors are drawn with light skin more often than the other professions, each with Wilson intervals
    from the labelled ``manifest`` (columns ``profession``, ``age``, and ``probe``'s labels; images
    labelled "no person" left out). ``professions``: those whose light share is compared with the
    other professions' (the source's "some professions, such as doctors"; default the doctor alone; the
    profession world's demo: the four it draws light more often). ``manifest`` None: nothing was
    labelled, for the reason ``why_not``."""
    from ..findings import Finding, order_verdict
    from ..stats import wilson_interval
    from .bias import NO_PERSON

    claims = ("People perceived as 25-45 are drawn more often than any other age",
              "Doctors are drawn with light skin (Fitzpatrick I-II) more often than the other professions")
    published = ("a preference for 25-45-year-olds (no number stated)",
                 "light skin over-represented in some professions, such as doctors (no number stated)")
    if manifest is None:
        return [Finding(claim, said, why_not or "nothing was labelled", "cannot test") for claim, said in zip(claims, published)]

    def share(mask, among) -> tuple[float, float, float, int]:
        k, n = int((mask & among).sum()), int(among.sum())
        low, high = wilson_interval(k, n, confidence) if n else (np.nan, np.nan)
        return (k / n if n else np.nan), low, high, n

    found = []
    people = manifest["age"] != NO_PERSON
    shares = {age: share(manifest["age"] == age, people) for age in manifest.loc[people, "age"].unique()}
    if "25-45" in shares and len(shares) > 1:
        middle = shares["25-45"]
        other, best = max(((age, s) for age, s in shares.items() if age != "25-45"), key=lambda item: item[1][0])
        found.append(Finding(claims[0], published[0],
                             f"25-45: {middle[0]:.0%} [{middle[1]:.0%}, {middle[2]:.0%}] of {middle[3]} images with a person; "
                             f"the most frequent other, {other}: {best[0]:.0%} [{best[1]:.0%}, {best[2]:.0%}]",
                             order_verdict(middle[1:3], best[1:3])))
    elif not people.any():
        found.append(Finding(claims[0], published[0], f"the annotator labelled all {len(manifest)} images "
                             f"'{NO_PERSON}': no age to compare", "cannot test"))
    else:
        found.append(Finding(claims[0], published[0], "no image labelled 25-45, or no other age", "cannot test"))
    light = "light (I-II)"
    professions = [professions] if isinstance(professions, str) else list(professions)
    named = " and ".join(f"{name}s" for name in professions) if len(professions) < 3 else (
        ", ".join(professions[:-1]) + f" and {professions[-1]} together")
    chosen = manifest["profession"].isin(professions) if probe in manifest else None
    if probe != "skin tone" or chosen is None or not chosen.any():
        found.append(Finding(claims[1], published[1], f"no skin-tone probe on {named} in this run (probe = "
                             f"{probe!r})", "cannot test"))
        return found
    people = manifest[probe] != NO_PERSON
    doctors = share(manifest[probe] == light, people & chosen)
    others = share(manifest[probe] == light, people & ~chosen)
    if not (doctors[3] and others[3]):  # a share of 0 of 0 is no number
        found.append(Finding(claims[1], published[1], f"{doctors[3]} images of {named} and {others[3]} of the "
                             f"other professions with a person (the rest labelled '{NO_PERSON}'): no share to compare",
                             "cannot test"))
    else:
        found.append(Finding(claims[1], published[1],
                             f"{named}: {doctors[0]:.0%} [{doctors[1]:.0%}, {doctors[2]:.0%}] light of {doctors[3]}; the other "
                             f"professions: {others[0]:.0%} [{others[1]:.0%}, {others[2]:.0%}] of {others[3]}",
                             order_verdict(doctors[1:3], others[1:3])))
    return found


def reproducibility_findings(redrawn: pd.DataFrame, tolerance: int = 2) -> list:
    """04a's claim (the source text's protocol, section 1.3): a fixed seed per image gives the same
    picture again. ``redrawn``: :func:`vlbias.t2i.generation.redraw_check`. "supports" when no pixel of
    any image drawn again differs from its file by more than ``tolerance`` 8-bit levels (a GPU's kernels
    may differ in the last bit between runs), "contradicts" otherwise."""
    from ..findings import Finding

    if redrawn.empty:
        raise ValueError("reproducibility_findings: redrawn is empty; draw some images again first (redraw_check).")
    largest, mean = int(redrawn["max_difference"].max()), float(redrawn["mean_difference"].mean())
    same = int((redrawn["max_difference"] == 0).sum())
    return [Finding("A fixed seed per image gives the same picture again (the protocol of section 1.3)",
                    "a fixed seed for every image (no number stated)",
                    f"{len(redrawn)} images drawn again from their manifest seeds: {same} identical to the pixel; "
                    f"largest difference {largest} of 255 levels, mean {mean:.2f}",
                    "supports" if largest <= tolerance else "contradicts")]


def reproducibility_planted(t2i_spec: str) -> tuple[str | None, list[bool] | None]:
    """For :func:`reproducibility_findings`: what ``t2i_spec``'s world plants (no world plants whether a
    seed reproduces a picture); ``(None, None)`` for the source's models."""
    text, causes = planted(t2i_spec)
    if text is None:
        return None, None
    return text, [False]


def _published_cases(published: pd.DataFrame, case: str) -> str:
    if "case" not in published:
        return ""
    rows = published[published["case"].astype(str) == case]
    generated = rows[rows["measure"] == "generated_female_percent"].set_index("profession")["value"]
    reference = rows[rows["measure"] == "reference_female_percent"].set_index("profession")["value"]
    return "; ".join(f"{name}: {reference[name]:.1f}% women in the statistics, {value:.1f}% generated"
                     for name, value in generated.items() if name in reference)


def controlled_findings(guidance_grid: pd.DataFrame, main: str, changes: pd.DataFrame, cads_run: str,
                        published: pd.DataFrame, confidence: float = 0.95) -> list:
    """04e's claims, from the source text's analysis of where the bias comes from (its section 2.3) and
    of CADS (3.2), on a model whose training data are known (``published``: the source's table,
    ``vlbias.book.published(vlbias.t2i.bias.SOURCE_TABLE)``, whose amplified professions stand beside
    claim 2):

    1. imbalanced training data make imbalanced pictures: the generated shares rank the kinds as the
       training data do (Spearman's ρ above 0 at the main guidance, ``guidance_grid.loc[main]``);
    2. sampling amplifies the imbalance ("diffusion models tend to draw the typical sample"): the
       amplification slope above 1;
    3. CADS raises VRBS: the paired change of ``cads_run`` against plain sampling (``changes``:
       :func:`vlbias.t2i.controlled.paired_changes`), from its bootstrap interval;
    4. CADS makes the pictures more diverse: the change of the diversity within a kind, by a two-sided
       sign test over the kinds (at ``1 - confidence``).
    """
    from scipy.stats import binomtest

    from ..findings import Finding, difference_verdict

    row = guidance_grid.loc[main]
    vrbs_stated = published[published["measure"] == "vrbs"].pivot_table(index="model", columns="sampler", values="value")
    found = [
        Finding("Imbalanced training data make imbalanced pictures: the generated shares rank the kinds as the "
                "training data do (section 2.3)", f"ρ = {_published(published, 'spearman_rho'):.2f} against labour "
                "statistics (SD 1.4; its training data unknown)",
                f"{main}: ρ = {row['rho']:.2f} [{row['rho low']:.2f}, {row['rho high']:.2f}] against the planted shares",
                difference_verdict(row["rho low"], row["rho high"])),
        Finding("Sampling amplifies the imbalance: shares further from 50% than the training data's (section 2.3)",
                _published_cases(published, "amplified") or "stated, no number",
                f"{main}: amplification slope {row['slope']:.2f} [{row['slope low']:.2f}, {row['slope high']:.2f}] "
                "(1: the training data's skew)",
                difference_verdict(row["slope low"] - 1, row["slope high"] - 1)),
    ]
    said = "; ".join(f"{model}: {stated['plain']:.2f} to {stated['CADS']:.2f}" for model, stated in vrbs_stated.iterrows()
                     if {"plain", "CADS"} <= set(stated.index))
    run = changes[changes["run"] == cads_run].set_index("measure")
    if "VRBS" in run.index:
        vrbs = run.loc["VRBS"]
        found.append(Finding("CADS raises VRBS (section 3.2)", said,
                             f"{cads_run}: {vrbs['a']:.3f} to {vrbs['b']:.3f}, change {vrbs['change']:+.3f} "
                             f"[{vrbs['ci_low']:+.3f}, {vrbs['ci_high']:+.3f}] on the same seeds",
                             difference_verdict(vrbs["ci_low"], vrbs["ci_high"])))
    else:
        found.append(Finding("CADS raises VRBS (section 3.2)", said, f"no CADS run named {cads_run!r}", "cannot test"))
    claim = "CADS makes the pictures more diverse (section 3.2)"
    if "diversity" in run.index:
        diversity = run.loc["diversity"]
        higher, kinds = int(diversity["kinds higher"]), int(diversity["kinds"])
        p = binomtest(higher, kinds).pvalue if kinds else float("nan")
        verdict = ("cannot tell" if not p < 1 - confidence else "supports" if higher > kinds / 2 else "contradicts")
        found.append(Finding(claim, "poses and settings more varied (seen, no number stated)",
                             f"{cads_run}: diversity within a kind {diversity['change']:+.3f}, higher in {higher} of "
                             f"{kinds} kinds (sign test p = {p:.2g})", verdict))
    else:
        found.append(Finding(claim, "poses and settings more varied (seen, no number stated)",
                             f"no diversity measured for {cads_run!r}", "cannot test"))
    return found


def controlled_planted(diffusion_spec: str) -> tuple[str | None, list[bool] | None]:
    """For :func:`controlled_findings`: what the world of ``trained:world-diffusion?...`` plants (the share
    of red per kind: claim 1 when the shares differ), and that it sets neither amplification nor what CADS
    does; ``(None, None)`` for any other model."""
    from ..models.trained import describe_trained, trained_options

    if not str(diffusion_spec).startswith("trained:world-diffusion"):
        return None, None
    body = str(diffusion_spec).partition(":")[2]
    _, options = trained_options(body)
    return (f"The model: {describe_trained(body)}. The world sets the training data's shares; nothing in it sets "
            "whether sampling amplifies them or what CADS does: those verdicts are the model's and the sampler's.",
            [options["share_spread"] > 0, False, False, False])
