"""Part IV's "Findings: paper vs ours" (:mod:`vlbias.findings`): the source text's claims on its model's
occupational gender bias, each as a statistic that is above 0 where the claim holds, judged by
:func:`vlbias.findings.judge`.

On the papers' models (the full profile) a claim is judged by its statistic's own interval. On a model
trained here on a planted world (the demo) the planted cause counts only against its control, the same
recipe without that cause, drawn on the same prompts and seeds: the statistic on both, and planted minus
control with a paired bootstrap over the images (images resampled within each profession, the planted
model's image and the control's from the same seed kept together). What no world plants (what CADS or
guidance does, whether sampling amplifies, whether a seed gives its picture again) reads "this world
plants no such cause", its numbers shown.

The page and the model card call the same functions (:func:`bias_findings` on the runs of
:func:`vlbias.t2i.study.study_run`), so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..models.world_diffusion import KIND_SHARES
from .trained_models import AGE_TINT, LABOUR_SHARES, LIGHT_SHADE

#: the model whose numbers the source text publishes for plain sampling (SD 1.4)
SOURCE_MODEL = "CompVis/stable-diffusion-v1-4"


def _published(published: pd.DataFrame, measure: str, model: str = "SD 1.4", sampler: str = "plain") -> float:
    rows = published[(published["measure"] == measure) & (published["model"] == model) & (published["sampler"] == sampler)]
    return float(rows["value"].iloc[0])


def _name(names: Mapping | None, spec: str | None) -> str:
    return str((names or {}).get(spec, spec)) if spec else ""


def _judge(claim, model, plan, control=None, contrast=None, note: str = ""):
    """:func:`vlbias.findings.judge`, saying also where the control's own statistic lies below 0 (the
    drawing or the annotator lean the other way without the planted cause): the contrast then counts the
    planted cause from there, and is larger than the planted model's own statistic."""
    from ..findings import judge

    from dataclasses import replace

    notes = [note] if note else []
    if control is not None and contrast is not None and plan.control and not plan.same_control and control.side() < 0:
        notes.append(f"The control's own statistic lies below 0 ({claim.format(control)}): without the planted cause the "
                     "drawing and the annotator lean the other way, and the contrast counts from there.")
    found = judge(claim, model, plan, control, contrast, note=" ".join(notes))
    if found.verdict == "cannot test" and plan.trained and not any(cause in plan.plants for cause in claim.causes):
        # no number (a world with nothing planted has no spread to rank against), and nothing planted: the
        # verdict does not wait for the number
        found = replace(found, verdict="not planted", note="This world plants nothing behind this claim, and the "
                        "statistic is undefined here. " + found.note)
    return found


# --------------------------------------------------------------------------- 04b: ranking and replication


def ranking_claim(published: pd.DataFrame):
    """The source text's headline: the generated shares of women rank the professions as the labour
    statistics do; its statistic is Spearman's ρ itself (above 0 where the claim holds)."""
    from ..findings import Claim

    return Claim("ranking", "The generated shares of women rank the professions as labour statistics do "
                 "(Spearman's ρ > 0)", f"ρ = {_published(published, 'spearman_rho'):.2f} (SD 1.4)",
                 "Spearman's ρ of the generated shares of women against the labour statistics", (LABOUR_SHARES,),
                 digits=2)


def bias_findings(model, control=None, published: pd.DataFrame | None = None, names: Mapping | None = None) -> list:
    """04b's claims on the study runs ``model`` and ``control`` (:class:`vlbias.t2i.study.StudyRun`; ``control``
    None: no control):

    1. the generated shares of women rank the professions as the labour statistics do: Spearman's ρ, on a
       papers' model by its own interval, on a model trained here as ρ(planted) − ρ(control), paired over
       the shared seeds (:func:`vlbias.t2i.study.rho_contrast`);
    2. SD 1.4's VRBS and ρ are the published ones: testable only when the model is SD 1.4 (both published
       values inside this run's intervals), "cannot test" for any other model.

    ``published``: :func:`vlbias.t2i.bias.published_scores` (default); ``names``: spec -> the page's name.
    The model card calls this on the runs it reads, so its rows are the page's."""
    from ..findings import Claim, Estimate, Finding, design, judge
    from .bias import published_scores
    from .study import rho_contrast

    published = published_scores() if published is None else published
    claim = ranking_claim(published)
    published_vrbs, published_rho = _published(published, "vrbs"), _published(published, "spearman_rho")
    said = f"VRBS {published_vrbs:.2f}, ρ {published_rho:.2f}"
    replication = "SD 1.4's VRBS and ρ are the published ones"
    control_spec = control.spec if control is not None else None
    plan = design(model.spec, control_spec, names)
    if model.note:  # no number to judge: the row says why instead of printing nan
        return [_judge(claim, Estimate(float("nan"), how=model.note), plan),
                Finding(replication, said, model.note, "cannot test", key="replication")]
    if control is not None and (control.note or not control.scores["spearman_rho"].defined):
        why = control.note or "every profession drew the same share of women, so no rank correlation"
        note = f"The control's ρ is undefined ({why}): judged on the planted model alone."
        first = judge(claim, rho_contrast(model, None)[0], design(model.spec, None, names), note=note)
    elif control is None:
        first = judge(claim, rho_contrast(model, None)[0], plan)
    else:
        rho_model, rho_control, difference = rho_contrast(model, control)
        first = _judge(claim, rho_model, plan, rho_control, difference)
    vrbs, rho = model.scores["VRBS"], model.scores["spearman_rho"]
    measured = f"VRBS {vrbs.text(2, signed=False)}, ρ {rho.text(2, signed=False)}"
    if model.spec != SOURCE_MODEL:
        return [first, Finding(replication, said, f"this run's model is {_name(names, model.spec)}, not SD 1.4 "
                               f"({measured})", "cannot test", key="replication")]
    # the statistic: how far inside this run's intervals the two published values lie (the nearer end;
    # below 0 where either lies outside); the intervals are this run's, so it has none of its own
    margins = [min(value - estimate.low, estimate.high - value)
               for value, estimate in ((published_vrbs, vrbs), (published_rho, rho))]
    inside = Claim("replication", replication, said, "how far inside this run's 95% intervals both published "
                   "values lie (the nearer end)", digits=2)
    return [first, judge(inside, Estimate(min(margins), how=f"the published values against this run's intervals: "
                                                            f"{measured}", exact=True), plan)]


def planted_text(model_spec: str, control_spec: str | None = None, names: Mapping | None = None,
                 group: str = "profession") -> tuple[str | None, str | None]:
    """For :func:`vlbias.findings.findings_box`: what ``model_spec``'s world plants, in words, and what the
    control is (its images resampled with the model's within each ``group``); ``(None, None)`` for a model
    not trained here (the papers' own)."""
    from ..models.trained import describe_trained

    if not str(model_spec).startswith("trained:"):
        return None, None
    text = f"The model: {describe_trained(str(model_spec).partition(':')[2])}."
    if not control_spec or not str(control_spec).startswith("trained:"):
        return text, None
    if control_spec == model_spec:
        return text, "The control given is the planted model itself."
    return text, (f"The control: {_name(names, control_spec)}, {describe_trained(str(control_spec).partition(':')[2])}, "
                  f"drawn on the same prompts and seeds. Intervals: a bootstrap over the images, resampled within "
                  f"each {group}, the planted model's image and the control's from the same seed together.")


# --------------------------------------------------------------------------- 04a: the protocol


def reproducibility_findings(redrawn: pd.DataFrame, t2i_spec: str = SOURCE_MODEL, tolerance: int = 2) -> list:
    """04a's claim (the source text's protocol, section 1.3): a fixed seed per image gives the same
    picture again. ``redrawn``: :func:`vlbias.t2i.generation.redraw_check`. Its statistic: ``tolerance``
    (8-bit levels a GPU's kernels may differ by) plus a half minus the largest difference, exact over the
    images drawn again: above 0 when no pixel differs by more than ``tolerance``. No world plants it: on a
    model trained here the row says so, with its numbers."""
    from ..findings import Claim, Estimate, design, judge

    if redrawn.empty:
        raise ValueError("reproducibility_findings: redrawn is empty; draw some images again first (redraw_check).")
    largest, mean = int(redrawn["max_difference"].max()), float(redrawn["mean_difference"].mean())
    same = int((redrawn["max_difference"] == 0).sum())
    claim = Claim("reproducible", "A fixed seed per image gives the same picture again (the protocol of section 1.3)",
                  "a fixed seed for every image (no number stated)",
                  f"{tolerance} levels plus a half minus the largest pixel difference", digits=1)
    found = judge(claim, Estimate(tolerance + 0.5 - largest, exact=True,
                                  how=f"all {len(redrawn)} images drawn again: {same} identical to the pixel; largest "
                                      f"difference {largest} of 255 levels, mean {mean:.2f}"), design(t2i_spec))
    return [found]


# --------------------------------------------------------------------------- 04c: CADS and the comparison


def cads_claim(published: pd.DataFrame, name: str = ""):
    """The source text's CADS claim: CADS raises VRBS; its statistic the paired change of VRBS (CADS minus
    plain sampling on the same seeds). No world plants it."""
    from ..findings import Claim

    stated = published[published["measure"] == "vrbs"].pivot_table(index="model", columns="sampler", values="value")
    said = "; ".join(f"{model}: {row['plain']:.2f} to {row['CADS']:.2f}" for model, row in stated.iterrows()
                     if {"plain", "CADS"} <= set(row.index))
    return Claim("cads_vrbs", "CADS raises VRBS (moves the generated shares towards the labour statistics)"
                 + (f": {name}" if name else ""), said, "VRBS with CADS minus plain sampling, on the same seeds")


def cads_findings(cads_table: pd.DataFrame, published: pd.DataFrame, names: Mapping | None = None) -> list:
    """04c's CADS claim for each model of ``cads_table`` (:func:`vlbias.t2i.compare.cads_beside_published`:
    the paired change with its standard bootstrap interval) that stands for a source model; one "cannot
    test" row where none does. On a model trained here: "this world plants no such cause", its change
    shown."""
    from ..findings import Estimate, Finding, design, judge

    rows = cads_table[cads_table["source name"].astype(str) != ""]
    if rows.empty:
        claim = cads_claim(published)
        return [Finding(claim.text, claim.published, "no model of this run stands for one the source ran CADS on",
                        "cannot test", key=claim.key)]
    found = []
    for model, row in rows.iterrows():
        claim = cads_claim(published, str(row["source name"]))
        note = row.get("note") if isinstance(row.get("note"), str) else ""
        estimate = (Estimate(float("nan"), how=note) if note else
                    Estimate(float(row["change"]), float(row["change low"]), float(row["change high"]),
                             how=f"paired standard bootstrap, VRBS {row['VRBS plain']:.3f} plain and "
                                 f"{row['VRBS CADS']:.3f} with CADS"))
        found.append(_judge(claim, estimate, design(str(model), None, names),
                           note=f"{_name(names, str(model))}: VRBS {row['VRBS plain']:.3f} plain, {row['VRBS CADS']:.3f} "
                                "with CADS, on the same seeds." if not note else ""))
    return found


# --------------------------------------------------------------------------- 04d: age and skin tone


def _named(professions) -> str:
    professions = [professions] if isinstance(professions, str) else list(professions)
    return " and ".join(f"{name}s" for name in professions) if len(professions) < 3 else (
        ", ".join(professions[:-1]) + f" and {professions[-1]} together")


def extension_claims(professions=("doctor",)) -> list:
    """04d's claims (the source text's section 4.1) as statistics above 0 where they hold: the 25-45 share
    minus the highest other age's, and ``professions``' light share minus the other professions'."""
    from ..findings import Claim

    return [Claim("age_25_45", "People perceived as 25-45 are drawn more often than any other age",
                  "a preference for 25-45-year-olds (no number stated)",
                  "the share of images with a person perceived 25-45 minus the highest other age's", (AGE_TINT,),
                  scale=100, unit=" points", digits=1),
            Claim("light_professions", "Doctors are drawn with light skin (Fitzpatrick I-II) more often than the "
                  "other professions", "light skin over-represented in some professions, such as doctors (no number "
                  "stated)", f"the light share of {_named(professions)} minus the other professions'", (LIGHT_SHADE,),
                  scale=100, unit=" points", digits=1)]


def _age_statistic(manifest: pd.DataFrame):
    """The age claim's statistic of a weight matrix over ``manifest``'s rows (images labelled "no person"
    weigh nothing), and the ages it compares; None where no image shows a person or only one age."""
    from .bias import NO_PERSON

    ages = [age for age in dict.fromkeys(manifest["age"]) if age != NO_PERSON]
    if "25-45" not in ages or len(ages) < 2:
        return None
    others = [age for age in ages if age != "25-45"]
    columns = np.stack([(manifest["age"] == age).to_numpy(float) for age in ["25-45", *others]], axis=1)

    def statistic(weights):
        counts = np.asarray(weights, dtype=float) @ columns
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = counts / counts.sum(axis=1, keepdims=True)
        return shares[:, 0] - shares[:, 1:].max(axis=1)

    return statistic


def _light(manifest: pd.DataFrame, probe: str, chosen) -> tuple:
    """(light hits, person, chosen-profession mask) of ``manifest``'s rows for the light claim."""
    from .bias import NO_PERSON

    person = (manifest[probe] != NO_PERSON).to_numpy()
    light = (manifest[probe] == "light (I-II)").to_numpy() & person
    return light, person, manifest["profession"].isin(chosen).to_numpy()


def _light_statistic(manifest: pd.DataFrame, probe: str, chosen):
    light, person, inside = _light(manifest, probe, chosen)

    def statistic(weights):
        weights = np.asarray(weights, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (weights @ (light & inside) / (weights @ (person & inside))
                    - weights @ (light & ~inside) / (weights @ (person & ~inside)))

    return statistic


def _newcombe(manifest: pd.DataFrame, probe: str, chosen, named: str):
    """The light claim's statistic of one model with Newcombe's interval (two independent groups of images)."""
    from ..findings import Estimate
    from ..stats import rate_difference_interval

    light, person, inside = _light(manifest, probe, chosen)
    k1, n1, k2, n2 = int((light & inside).sum()), int((person & inside).sum()), int((light & ~inside).sum()), \
        int((person & ~inside).sum())
    if not (n1 and n2):
        return None, (n1, n2)
    value, low, high = rate_difference_interval(k1, n1, k2, n2)
    return Estimate(value, low, high, how=f"Newcombe 95%: {named} {k1} light of {n1}, the others {k2} of {n2}"), (n1, n2)


def _paired_rows(model: pd.DataFrame, control: pd.DataFrame) -> bool:
    keys = ["profession", "seed"]
    return len(model) == len(control) and model[keys].reset_index(drop=True).equals(control[keys].reset_index(drop=True))


def extension_findings(manifest: pd.DataFrame | None, probe: str | None, why_not: str = "",
                       professions=("doctor",), t2i_spec: str = SOURCE_MODEL, control: pd.DataFrame | None = None,
                       control_spec: str | None = None, names: Mapping | None = None, n_boot: int = 1000,
                       seed: int = 0) -> list:
    """04d's claims (the source text's section 4.1) on the labelled ``manifest`` (columns ``profession``,
    ``seed``, ``age`` and ``probe``'s labels; images labelled "no person" left out):

    1. people perceived as 25-45 are drawn most often: the 25-45 share minus the highest other age's
       (bootstrap over the images, within their professions);
    2. ``professions`` (the source's "some professions, such as doctors") are drawn light more often than
       the other professions: the difference of the two light shares, with Newcombe's interval (two
       independent groups of images).

    On a model trained here (``t2i_spec``) each claim counts against ``control`` (the control model's
    labelled images, ``control_spec``): planted minus control with a bootstrap over the images, paired where
    the two drew the same jobs (profession and seed). ``manifest`` None: nothing was labelled, for the reason
    ``why_not``."""
    from ..findings import Finding, design, judge
    from ..stats import bootstrap_contrast

    claims = extension_claims(professions)
    chosen = [professions] if isinstance(professions, str) else list(professions)
    named = _named(chosen)
    if manifest is None:
        return [Finding(claim.text, claim.published, why_not or "nothing was labelled", "cannot test", key=claim.key)
                for claim in claims]
    if control is not None and control_spec is None:
        raise ValueError("extension_findings: control is given without control_spec; name the control's spec")
    plan = design(t2i_spec, control_spec if control is not None else None, names)
    strata = manifest["profession"].to_numpy()
    together = control is not None and _paired_rows(manifest, control)
    control_strata = None if together or control is None else control["profession"].to_numpy()
    found = []
    # 1. the 25-45 share against the highest other age's
    own = _age_statistic(manifest)
    if own is None:
        people = (manifest["age"] != "no person").sum()
        found.append(Finding(claims[0].text, claims[0].published,
                             f"the annotator labelled all {len(manifest)} images 'no person': no age to compare" if not people
                             else "no image labelled 25-45, or no other age", "cannot test", key=claims[0].key))
    else:
        theirs = None if control is None else _age_statistic(control)
        estimates = bootstrap_contrast(own, theirs, strata, control_strata, n_boot=n_boot, seed=seed, items="images")
        found.append(_judge(claims[0], estimates[0], plan if theirs is not None or control is None else
                            design(t2i_spec, None, names), *estimates[1:] if theirs is not None else ()))
    # 2. the chosen professions' light share against the others'
    if probe != "skin tone" or probe not in manifest or not manifest["profession"].isin(chosen).any():
        found.append(Finding(claims[1].text, claims[1].published, f"no skin-tone probe on {named} in this run (probe = "
                             f"{probe!r})", "cannot test", key=claims[1].key))
        return found
    estimate, (n1, n2) = _newcombe(manifest, probe, chosen, named)
    if estimate is None:  # a share of 0 of 0 is no number
        found.append(Finding(claims[1].text, claims[1].published, f"{n1} images of {named} and {n2} of the other "
                             "professions with a person (the rest labelled 'no person'): no share to compare",
                             "cannot test", key=claims[1].key))
        return found
    if control is None or probe not in control:
        found.append(judge(claims[1], estimate, design(t2i_spec, None, names)))
        return found
    theirs, _ = _newcombe(control, probe, chosen, named)
    _, _, difference = bootstrap_contrast(_light_statistic(manifest, probe, chosen),
                                          _light_statistic(control, probe, chosen), strata, control_strata,
                                          n_boot=n_boot, seed=seed, items="images")
    found.append(_judge(claims[1], estimate, plan, theirs, difference) if theirs is not None else
                 judge(claims[1], estimate, design(t2i_spec, None, names)))
    return found


def extension_fidelity(manifest: pd.DataFrame, probe: str | None, t2i_spec: str, professions) -> dict[str, float]:
    """The share of each planted departure that 04d's labels show (the assumption of its power,
    :mod:`vlbias.t2i.power`): the perceived 25-45 share's excess over a quarter against the planted one's, and
    the light-share gap of ``professions`` over the others against the planted gap; ``{}`` for a model not
    trained on the profession world."""
    from .bias import NO_PERSON
    from .profession_world import LIGHT_PROFESSIONS, _trained_world_options, age_shares, skin_shares

    options = _trained_world_options(t2i_spec)
    if options is None or not options["share_scale"]:
        return {}
    out = {}
    people = manifest[manifest["age"] != NO_PERSON]
    planted_age = age_shares(options["share_scale"], options["age_peak"])["25-45"] - 0.25
    if len(people) and planted_age:
        out["age"] = float(((people["age"] == "25-45").mean() - 0.25) / planted_age)
    if probe == "skin tone" and probe in manifest:
        light, person, inside = _light(manifest, probe, list(professions))
        planted_light = skin_shares(LIGHT_PROFESSIONS[0], options["share_scale"], options["light_share"])["light (I-II)"] - 1 / 3
        if (person & inside).any() and (person & ~inside).any() and planted_light:
            out["light"] = float((light[inside].sum() / (person & inside).sum()
                                  - light[~inside].sum() / (person & ~inside).sum()) / planted_light)
    return out


# --------------------------------------------------------------------------- 04e: the controlled experiment


def _published_cases(published: pd.DataFrame, case: str) -> str:
    if "case" not in published:
        return ""
    rows = published[published["case"].astype(str) == case]
    generated = rows[rows["measure"] == "generated_female_percent"].set_index("profession")["value"]
    reference = rows[rows["measure"] == "reference_female_percent"].set_index("profession")["value"]
    return "; ".join(f"{name}: {reference[name]:.1f}% women in the statistics, {value:.1f}% generated"
                     for name, value in generated.items() if name in reference)


def controlled_findings(guidance_grid: pd.DataFrame, main: str, changes: pd.DataFrame, cads_run: str,
                        published: pd.DataFrame, diffusion_spec: str = "", model_labels: pd.DataFrame | None = None,
                        control_labels: pd.DataFrame | None = None, control_spec: str | None = None,
                        reference: pd.Series | None = None, n_boot: int = 1000, seed: int = 0,
                        names: Mapping | None = None) -> list:
    """04e's claims, from the source text's analysis of where the bias comes from (its section 2.3) and
    of CADS (3.2), on a model whose training data are known (``published``: the source's table,
    ``vlbias.book.published(vlbias.t2i.bias.SOURCE_TABLE)``):

    1. imbalanced training data make imbalanced pictures: Spearman's ρ of the generated shares against the
       training shares at the main guidance (``guidance_grid.loc[main]``), against the control
       (``control_labels``, the same recipe with every kind half red, drawn on the same jobs at the same
       guidance: ρ(planted) − ρ(control), paired over the seeds, against the planted shares ``reference``);
    2. sampling amplifies the imbalance: the amplification slope minus 1, at every guidance scale of
       ``guidance_grid`` (no world plants it);
    3. CADS raises VRBS: the paired change of ``cads_run`` against plain sampling (``changes``:
       :func:`vlbias.t2i.controlled.paired_changes`);
    4. CADS makes the pictures more diverse: the mean change of the diversity within a kind, with a
       bootstrap over the kinds (the sign count beside it).

    ``diffusion_spec`` names the model (its world's causes decide the verdicts); ``model_labels``: the main
    run's labelled manifest (column ``kind``, ``perceived`` red or blue)."""
    from ..findings import Claim, Estimate, Finding, design, judge
    from ..stats import bootstrap_contrast
    from .study import ShareDesign

    plan = design(diffusion_spec or "", control_spec if control_labels is not None else None, names)
    alone = design(diffusion_spec or "", None, names)
    found = []
    ranking = Claim("training_shares", "Imbalanced training data make imbalanced pictures: the generated shares rank "
                    "the kinds as the training data do (section 2.3)", f"ρ = {_published(published, 'spearman_rho'):.2f} "
                    "against labour statistics (SD 1.4; its training data unknown)",
                    "Spearman's ρ of the generated shares of red against the planted shares", (KIND_SHARES,), digits=2)
    row = guidance_grid.loc[main]
    if model_labels is not None and reference is not None:
        own = ShareDesign.of(model_labels, reference, target="red", group="kind", excluded=())
        if control_labels is not None:
            theirs = ShareDesign.of(control_labels, reference, target="red", group="kind", excluded=())
            together = _paired_rows(model_labels.rename(columns={"kind": "profession"}),
                                    control_labels.rename(columns={"kind": "profession"}))
            estimates = bootstrap_contrast(own.rho, theirs.rho, own.strata, None if together else theirs.strata,
                                           n_boot=n_boot, seed=seed, items="images")
            found.append(_judge(ranking, estimates[0], plan, estimates[1], estimates[2], note=f"At {main}."))
        else:
            found.append(_judge(ranking, bootstrap_contrast(own.rho, None, own.strata, n_boot=n_boot, seed=seed,
                                                           items="images")[0], alone, note=f"At {main}."))
    else:
        found.append(_judge(ranking, Estimate(row["rho"], row["rho low"], row["rho high"], how="bootstrap over images"),
                           alone, note=f"At {main}."))
    cases = _published_cases(published, "amplified") or "stated, no number"
    for name, grid_row in guidance_grid.iterrows():
        claim = Claim(f"amplifies_{name}", f"Sampling amplifies the imbalance: shares further from 50% than the "
                      f"training data's (section 2.3), at {name}", cases, "the amplification slope minus 1 (0: the "
                      "training data's skew copied)", digits=2)
        found.append(_judge(claim, Estimate(grid_row["slope"] - 1, grid_row["slope low"] - 1, grid_row["slope high"] - 1,
                                           how="bootstrap over images within their kinds"), alone,
                           note=f"Amplification slope {grid_row['slope']:.2f} [{grid_row['slope low']:.2f}, "
                                f"{grid_row['slope high']:.2f}] at {name}."))
    vrbs_claim = cads_claim(published)
    vrbs_claim = Claim("cads_vrbs", "CADS raises VRBS (section 3.2)", vrbs_claim.published, vrbs_claim.statistic)
    run = changes[changes["run"] == cads_run].set_index("measure")
    if "VRBS" in run.index:
        vrbs = run.loc["VRBS"]
        found.append(_judge(vrbs_claim, Estimate(vrbs["change"], vrbs["ci_low"], vrbs["ci_high"],
                                                how=f"paired bootstrap on the same seeds, {cads_run}"), alone,
                           note=f"{cads_run}: VRBS {vrbs['a']:.3f} plain, {vrbs['b']:.3f} with CADS."))
    else:
        found.append(Finding(vrbs_claim.text, vrbs_claim.published, f"no CADS run named {cads_run!r}", "cannot test",
                             key=vrbs_claim.key))
    diverse = Claim("cads_diversity", "CADS makes the pictures more diverse (section 3.2)",
                    "poses and settings more varied (seen, no number stated)",
                    "the mean change of the diversity within a kind (mean pairwise distance)")
    if "diversity" in run.index:
        diversity = run.loc["diversity"]
        found.append(_judge(diverse, Estimate(float(diversity["change"]), float(diversity["ci_low"]),
                                             float(diversity["ci_high"]),
                                             how=f"bootstrap over the {int(diversity['kinds'])} kinds"), alone,
                           note=f"{cads_run}: diversity within a kind {diversity['a']:.3f} plain, {diversity['b']:.3f} "
                                f"with CADS, higher in {int(diversity['kinds higher'])} of {int(diversity['kinds'])} kinds."))
    else:
        found.append(Finding(diverse.text, diverse.published, f"no diversity measured for {cads_run!r}", "cannot test",
                             key=diverse.key))
    return found
