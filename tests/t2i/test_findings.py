"""Part IV's findings box (``vlbias.t2i.findings``): the source text's claims, judged on the papers' models by
their own intervals and on models trained here against their controls, on labels whose answer is known.

The planted-signal tests assert the contrast (planted minus control), not the planted model's own number;
the placebo tests put the control's labels in the planted model's place (or the planted model's in the
control's) under the planted design, and every planted claim must come out "not recovered"."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias import book
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i import findings as t2i_findings
from vlbias.t2i.study import StudyRun

MODEL = "trained:profession-diffusion"
CONTROL = "trained:profession-diffusion?share_scale=0"
REFERENCE = t2i_bias.reference_shares()
PUBLISHED = t2i_bias.published_scores()


def labels_at(shares, per: int, seed: int = 0) -> pd.DataFrame:
    """``per`` images per profession of ``REFERENCE``, each labelled female with its profession's share
    (``shares``: one per profession, or a number for all), drawn with ``seed``; seeds 0..per-1."""
    rng = np.random.default_rng(seed)
    shares = pd.Series(shares, index=REFERENCE.index) if np.ndim(shares) else pd.Series(shares, index=REFERENCE.index)
    rows = [(name, k, "female" if rng.random() < share else "male") for name, share in shares.items() for k in range(per)]
    return pd.DataFrame(rows, columns=["profession", "seed", "perceived"])


def run(spec: str, labels: pd.DataFrame) -> StudyRun:
    return StudyRun.from_labels(spec, labels, REFERENCE)


def scipy_rho(labels: pd.DataFrame) -> float:
    shares = labels.assign(f=labels.perceived == "female").groupby("profession")["f"].mean().reindex(REFERENCE.index)
    return float(stats.spearmanr(shares, REFERENCE).statistic)


@pytest.fixture(scope="module")
def planted_and_control():
    """The planted model's labels follow the labour shares (a fidelity of 0.5); the control's are a half
    everywhere; 30 images per profession, the same jobs."""
    planted = run(MODEL, labels_at(0.5 + 0.5 * (REFERENCE - 0.5), 30, seed=1))
    control = run(CONTROL, labels_at(0.5, 30, seed=2))
    return planted, control


def test_the_ranking_contrast_recovers_the_planted_shares_against_the_control(planted_and_control):
    planted, control = planted_and_control
    ranking, replication = t2i_findings.bias_findings(planted, control, PUBLISHED)
    model, theirs, contrast = (ranking.estimates[key] for key in ("model", "control", "contrast"))
    # each rho is scipy's on the shares; the contrast is their difference, its interval paired and above 0
    assert model.value == pytest.approx(scipy_rho(planted.labels)) and theirs.value == pytest.approx(scipy_rho(control.labels))
    assert contrast.value == pytest.approx(model.value - theirs.value) and contrast.low > 0
    assert "paired bootstrap over 1,200 images" in contrast.how
    assert ranking.verdict == "recovered" and ranking.ours and ranking.control and ranking.contrast
    # the box's planted column is the rho the study caches, to the last digit
    assert (model.value, model.low, model.high) == (planted.scores["spearman_rho"].value, planted.scores["spearman_rho"].low,
                                                    planted.scores["spearman_rho"].high)
    assert replication.verdict == "cannot test" and f"{MODEL}, not SD 1.4" in replication.ours


def test_placebo_the_controls_labels_in_the_planted_models_place_recover_nothing(planted_and_control):
    """Under the planted design (the planted spec judged against its control), the control's labels in the
    planted model's place, and a second copy of the planted model's in the control's place: not recovered."""
    planted, control = planted_and_control
    swapped = t2i_findings.bias_findings(replace(control, spec=MODEL), replace(planted, spec=CONTROL), PUBLISHED)[0]
    assert swapped.verdict == "not recovered" and swapped.estimates["contrast"].high < 0
    copied = t2i_findings.bias_findings(planted, replace(planted, spec=CONTROL), PUBLISHED)[0]
    assert copied.verdict == "not recovered" and copied.estimates["contrast"].value == 0
    assert "every resample the same" in copied.contrast  # no interval of zero width printed as [x, x]
    # the placebo's control carries the planted model's labels: its gap is named, and nothing its world plants
    # explains it
    assert "The control has a gap of its own" in swapped.note and "nothing its world plants explains it" in swapped.note


def test_bad_input_no_contrast_no_control_and_a_world_that_plants_nothing(planted_and_control):
    planted, control = planted_and_control
    same = t2i_findings.bias_findings(planted, planted, PUBLISHED)[0]
    assert same.verdict == "no contrast" and "The control is the planted model: no contrast." in same.note
    alone = t2i_findings.bias_findings(planted, None, PUBLISHED)[0]
    assert alone.verdict == "recovered" and alone.note.startswith("No control: the verdict is about the planted model alone")
    nothing = t2i_findings.bias_findings(control, None, PUBLISHED)[0]
    assert nothing.verdict == "not planted" and "plants nothing behind this claim" in nothing.note
    # a control whose shares are all the same has no rank correlation: judged on the planted model alone
    flat = run(CONTROL, labels_at(0.0, 30))
    lone = t2i_findings.bias_findings(planted, flat, PUBLISHED)[0]
    assert lone.verdict == "recovered" and "The control's ρ is undefined" in lone.note


def test_the_papers_models_are_judged_by_their_own_interval_and_only_sd_14_by_the_published_numbers():
    source = t2i_findings.SOURCE_MODEL
    ranked = run(source, labels_at(REFERENCE, 30, seed=3))
    found = t2i_findings.bias_findings(ranked, None, PUBLISHED)
    assert found[0].verdict == "supports" and found[0].published == "ρ = 0.72 (SD 1.4)" and not found[0].control
    reversed_ = run(source, labels_at(1 - REFERENCE, 30, seed=3))
    assert t2i_findings.bias_findings(reversed_, None, PUBLISHED)[0].verdict == "contradicts"
    flat = run(source, labels_at(0.5, 30, seed=4))
    assert t2i_findings.bias_findings(flat, None, PUBLISHED)[0].verdict == "cannot tell"
    # the published VRBS 0.68 and rho 0.72 inside this run's intervals: supports; VRBS outside: contradicts
    from vlbias.findings import Estimate

    inside = replace(ranked, scores={"VRBS": Estimate(0.7, 0.6, 0.8), "spearman_rho": Estimate(0.7, 0.6, 0.8)})
    assert t2i_findings.bias_findings(inside, None, PUBLISHED)[1].verdict == "supports"
    outside = replace(ranked, scores={"VRBS": Estimate(0.9, 0.85, 0.95), "spearman_rho": Estimate(0.7, 0.6, 0.8)})
    assert t2i_findings.bias_findings(outside, None, PUBLISHED)[1].verdict == "contradicts"
    assert t2i_findings.bias_findings(ranked, None, PUBLISHED)[1].verdict in ("supports", "contradicts")
    assert "not SD 1.4" in t2i_findings.bias_findings(replace(ranked, spec="x/y"), None, PUBLISHED)[1].ours


def test_the_recipes_plant_the_causes_behind_the_claims():
    from vlbias.models.trained import planted_causes

    assert set(planted_causes(MODEL)) == {"labour_shares", "age_tint", "light_shade"}
    assert planted_causes(CONTROL) == {}
    assert set(planted_causes(MODEL + "?age_peak=0.25")) == {"labour_shares", "light_shade"}
    assert set(planted_causes(MODEL + "?light_share=0.3333")) == {"labour_shares", "age_tint"}
    assert planted_causes("trained:world-diffusion") == {"kind_shares": "red's share per kind planted from 10% to 90% "
                                                                        "in the training pictures"}
    assert planted_causes("trained:world-diffusion?share_spread=0") == {}
    assert planted_causes(t2i_findings.SOURCE_MODEL) == {}
    text, control = t2i_findings.planted_text(MODEL, CONTROL)
    assert "labour-statistics female share" in text and control.startswith(f"The control: {CONTROL}, ")
    assert t2i_findings.planted_text(MODEL) == (text, None)
    assert t2i_findings.planted_text(t2i_findings.SOURCE_MODEL) == (None, None)


def test_cads_findings_no_world_plants_what_cads_does():
    table = pd.DataFrame({"source name": ["SD 1.4", ""], "VRBS plain": [0.70, 0.6], "VRBS CADS": [0.75, 0.6],
                          "change": [0.05, 0.0], "change low": [0.01, -0.1], "change high": [0.09, 0.1]},
                         index=pd.Index([t2i_findings.SOURCE_MODEL, "b"], name="model"))
    found = t2i_findings.cads_findings(table, PUBLISHED)
    assert len(found) == 1 and found[0].verdict == "supports"  # b stands for no source model
    assert found[0].published == "SD 1.4: 0.68 to 0.73; SD 2.1: 0.71 to 0.73"
    assert found[0].ours == "+0.050 [+0.010, +0.090]"
    table.loc[t2i_findings.SOURCE_MODEL, ["change low", "change high"]] = [-0.09, -0.01]
    assert t2i_findings.cads_findings(table, PUBLISHED)[0].verdict == "contradicts"
    assert t2i_findings.cads_findings(table.iloc[1:], PUBLISHED)[0].verdict == "cannot test"
    trained = t2i_findings.cads_findings(table.rename(index={t2i_findings.SOURCE_MODEL: MODEL}), PUBLISHED)[0]
    assert trained.verdict == "not planted" and trained.ours == "+0.050 [-0.090, -0.010]"  # shown as given


# --------------------------------------------------------------------------- 04d


def extension_labels(age_peak: float, light: float, per: int = 60, seed: int = 0) -> pd.DataFrame:
    """04d's labels: four light-favoured professions and eight others, 25-45 drawn with ``age_peak`` (the
    other ages equally), light with ``light`` in the four and a third elsewhere."""
    rng = np.random.default_rng(seed)
    chosen, others = ["physician", "lawyer", "ceo", "manager"], ["nurse", "teacher", "janitor", "cashier", "farmer",
                                                                  "baker", "clerk", "guard"]
    ages = ["under 25", "25-45", "45-65", "over 65"]
    rows = []
    for name in chosen + others:
        share = light if name in chosen else 1 / 3
        for k in range(per):
            age = rng.choice(ages, p=[(1 - age_peak) / 3, age_peak, (1 - age_peak) / 3, (1 - age_peak) / 3])
            tone = "light (I-II)" if rng.random() < share else rng.choice(["medium (III-IV)", "dark (V-VI)"])
            rows.append((name, k, age, tone))
    return pd.DataFrame(rows, columns=["profession", "seed", "age", "skin tone"])


CHOSEN = ["physician", "lawyer", "ceo", "manager"]


def test_extension_contrasts_recover_the_planted_tint_and_shade_against_the_control():
    planted, control = extension_labels(0.5, 0.6, seed=1), extension_labels(0.25, 1 / 3, seed=2)
    found = t2i_findings.extension_findings(planted, "skin tone", professions=CHOSEN, t2i_spec=MODEL, control=control,
                                            control_spec=CONTROL, n_boot=400)
    assert [f.verdict for f in found] == ["recovered", "recovered"]
    light = found[1].estimates
    # the model's own light gap: Newcombe's interval of two independent shares, as computed by hand
    inside = planted.profession.isin(CHOSEN)
    k1, n1 = int((planted["skin tone"][inside] == "light (I-II)").sum()), int(inside.sum())
    k2, n2 = int((planted["skin tone"][~inside] == "light (I-II)").sum()), int((~inside).sum())
    from vlbias.stats import rate_difference_interval

    assert (light["model"].value, light["model"].low, light["model"].high) == pytest.approx(
        rate_difference_interval(k1, n1, k2, n2)) and "Newcombe" in light["model"].how
    assert light["contrast"].value == pytest.approx(light["model"].value - light["control"].value)
    assert "paired bootstrap" in light["contrast"].how and light["contrast"].low > 0
    age = found[0].estimates
    shares = planted.age.value_counts(normalize=True)
    assert age["model"].value == pytest.approx(shares["25-45"] - shares.drop("25-45").max())
    # placebo: the control's labels in the planted model's place under the planted design
    swapped = t2i_findings.extension_findings(control, "skin tone", professions=CHOSEN, t2i_spec=MODEL, control=planted,
                                              control_spec=CONTROL, n_boot=400)
    assert [f.verdict for f in swapped] == ["not recovered", "not recovered"]
    # bad input: no control (judged alone, saying why that is weaker), the control as the model, nothing planted
    alone = t2i_findings.extension_findings(planted, "skin tone", professions=CHOSEN, t2i_spec=MODEL, n_boot=200)
    assert [f.verdict for f in alone] == ["recovered", "recovered"] and all(f.note.startswith("No control") for f in alone)
    same = t2i_findings.extension_findings(planted, "skin tone", professions=CHOSEN, t2i_spec=MODEL, control=planted,
                                           control_spec=MODEL, n_boot=200)
    assert [f.verdict for f in same] == ["no contrast", "no contrast"]
    uniform = t2i_findings.extension_findings(control, "skin tone", professions=CHOSEN, t2i_spec=CONTROL, n_boot=200)
    assert [f.verdict for f in uniform] == ["not planted", "not planted"]
    with pytest.raises(ValueError, match="control_spec"):
        t2i_findings.extension_findings(planted, "skin tone", professions=CHOSEN, t2i_spec=MODEL, control=control)


def test_extension_findings_on_a_papers_model_and_what_cannot_be_tested():
    source = t2i_findings.SOURCE_MODEL
    labels = extension_labels(0.5, 0.6, seed=3)
    found = t2i_findings.extension_findings(labels, "skin tone", professions=CHOSEN, t2i_spec=source, n_boot=200)
    assert [f.verdict for f in found] == ["supports", "supports"]
    flipped = extension_labels(0.1, 0.1, seed=3)
    assert [f.verdict for f in t2i_findings.extension_findings(flipped, "skin tone", professions=CHOSEN, n_boot=200)] == [
        "contradicts", "contradicts"]
    assert [f.verdict for f in t2i_findings.extension_findings(labels, "race", professions=CHOSEN, n_boot=200)] == [
        "supports", "cannot test"]
    unmeasured = t2i_findings.extension_findings(None, "skin tone", why_not="the world plants no age")
    assert [f.verdict for f in unmeasured] == ["cannot test"] * 2 and unmeasured[0].ours == "the world plants no age"
    nobody = labels.assign(age="no person", **{"skin tone": "no person"})
    empty = t2i_findings.extension_findings(nobody, "skin tone", professions=CHOSEN)
    assert [f.verdict for f in empty] == ["cannot test"] * 2
    assert empty[0].ours == f"the annotator labelled all {len(labels)} images 'no person': no age to compare"
    assert empty[1].ours.startswith("0 images of physician, lawyer, ceo and manager together and 0 of the other")
    fidelity = t2i_findings.extension_fidelity(labels, "skin tone", MODEL, CHOSEN)
    # the 25-45 share's excess over a quarter against the planted 0.85's, the light gap against the planted 0.9's
    people = labels.age.value_counts(normalize=True)["25-45"]
    assert fidelity["age"] == pytest.approx((people - 0.25) / 0.6)
    assert t2i_findings.extension_fidelity(labels, "skin tone", source, CHOSEN) == {}


# --------------------------------------------------------------------------- 04e


def kind_labels(shares, per: int = 48, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([(kind, k, "red" if rng.random() < share else "blue") for kind, share in shares.items()
                         for k in range(per)], columns=["kind", "seed", "perceived"])


def grid(slopes=((0.4, 0.2, 0.6), (1.0, 0.9, 1.1), (1.2, 1.1, 1.3))) -> pd.DataFrame:
    return pd.DataFrame([{"guidance_scale": g, "rho": 0.9, "rho low": 0.8, "rho high": 0.95, "slope": s[0],
                          "slope low": s[1], "slope high": s[2]} for g, s in zip((1.0, 3.0, 5.0), slopes)],
                        index=["guidance 1", "guidance 3", "guidance 5"])


def changes() -> pd.DataFrame:
    return pd.DataFrame([
        {"run": "CADS s=1", "measure": "VRBS", "a": 0.8, "b": 0.82, "change": 0.02, "ci_low": 0.01, "ci_high": 0.03},
        {"run": "CADS s=1", "measure": "diversity", "a": 0.1, "b": 0.12, "change": 0.02, "ci_low": 0.01,
         "ci_high": 0.03, "kinds higher": 11, "kinds": 12}])


def test_controlled_findings_judge_the_training_shares_against_the_control_and_amplification_at_every_scale():
    from vlbias.t2i.controlled import planted_reference

    reference = planted_reference("trained:world-diffusion")
    published = book.published(t2i_bias.SOURCE_TABLE)
    planted, control = kind_labels(reference, seed=1), kind_labels(reference * 0 + 0.5, seed=2)
    found = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=1", published,
                                             "trained:world-diffusion", planted, control,
                                             "trained:world-diffusion?share_spread=0", reference, n_boot=400)
    assert [f.key for f in found] == ["training_shares", "amplifies_guidance 1", "amplifies_guidance 3",
                                      "amplifies_guidance 5", "cads_vrbs", "cads_diversity"]
    assert found[0].verdict == "recovered" and found[0].estimates["contrast"].low > 0
    assert "paired bootstrap" in found[0].estimates["contrast"].how
    # amplification at every guidance scale, numbers shown; no world plants it, nor what CADS does
    assert [f.verdict for f in found[1:]] == ["not planted"] * 5
    assert found[3].ours == "+0.20 [+0.10, +0.30]" and "electrician: 1.7% women" in found[1].published
    assert "higher in 11 of 12 kinds" in found[5].note
    # placebo: the control's labels in the planted model's place
    swapped = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=1", published,
                                               "trained:world-diffusion", control, planted,
                                               "trained:world-diffusion?share_spread=0", reference, n_boot=400)
    assert swapped[0].verdict == "not recovered"
    # the world with every kind half red plants nothing: every row says so
    uniform = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=1", published,
                                               "trained:world-diffusion?share_spread=0", control, None, None, reference,
                                               n_boot=200)
    assert {f.verdict for f in uniform} == {"not planted"}
    missing = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=2", published,
                                               "trained:world-diffusion", planted, None, None, reference, n_boot=200)
    assert [f.verdict for f in missing][-2:] == ["cannot test", "cannot test"]
    assert missing[0].note.startswith("No control")
