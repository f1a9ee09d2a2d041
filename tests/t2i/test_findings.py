"""Part IV's findings box (``vlbias.t2i.findings``): the source text's claims judged from bootstrap
intervals whose answer is known."""

import pandas as pd

from vlbias.t2i import bias as t2i_bias
from vlbias.t2i import findings as t2i_findings


def scores(rho: tuple[float, float, float], vrbs: tuple[float, float, float]) -> pd.DataFrame:
    return pd.DataFrame([vrbs, rho], index=pd.Index(["VRBS", "spearman_rho"], name="measure"),
                        columns=["estimate", "ci_low", "ci_high"])


def test_rho_above_zero_supports_the_ranking_claim_and_only_sd_14_tests_the_published_numbers():
    published = t2i_bias.published_scores()
    found = t2i_findings.bias_findings(scores((0.6, 0.4, 0.8), (0.7, 0.6, 0.8)), "trained:profession-diffusion", published)
    assert [f.verdict for f in found] == ["supports", "cannot test"]
    assert "not SD 1.4" in found[1].ours and found[0].published == "ρ = 0.72 (SD 1.4)"
    assert t2i_findings.bias_findings(scores((-0.5, -0.7, -0.2), (0.7, 0.6, 0.8)), "x", published)[0].verdict == "contradicts"
    assert t2i_findings.bias_findings(scores((0.1, -0.1, 0.3), (0.7, 0.6, 0.8)), "x", published)[0].verdict == "cannot tell"
    source = t2i_findings.SOURCE_MODEL
    # the published VRBS 0.68 and rho 0.72 inside the intervals, then the VRBS outside
    assert t2i_findings.bias_findings(scores((0.7, 0.6, 0.8), (0.7, 0.6, 0.8)), source, published)[1].verdict == "supports"
    assert t2i_findings.bias_findings(scores((0.7, 0.6, 0.8), (0.9, 0.85, 0.95)), source, published)[1].verdict == "contradicts"


def test_the_profession_world_plants_the_ranking_and_its_control_does_not():
    text, causes = t2i_findings.planted("trained:profession-diffusion")
    assert causes == [True, False] and "planted at each profession's labour-statistics female share" in text
    assert t2i_findings.planted("trained:profession-diffusion?share_scale=0")[1] == [False, False]
    assert t2i_findings.planted(t2i_findings.SOURCE_MODEL) == (None, None)


def test_cads_findings_read_the_paired_change_of_each_model_the_source_ran():
    published = t2i_bias.published_scores()
    table = pd.DataFrame({"source name": ["SD 1.4", ""], "VRBS plain": [0.70, 0.6], "VRBS CADS": [0.75, 0.6],
                          "change": [0.05, 0.0], "change low": [0.01, -0.1], "change high": [0.09, 0.1]},
                         index=pd.Index(["a", "b"], name="model"))
    found = t2i_findings.cads_findings(table, published)
    assert len(found) == 1 and found[0].verdict == "supports"  # b stands for no source model
    assert found[0].published == "SD 1.4: 0.68 to 0.73; SD 2.1: 0.71 to 0.73"
    assert found[0].ours == "a: 0.700 to 0.750, change +0.050 [+0.010, +0.090]"
    table.loc["a", ["change low", "change high"]] = [-0.09, -0.01]
    assert t2i_findings.cads_findings(table, published)[0].verdict == "contradicts"
    assert t2i_findings.cads_findings(table.iloc[1:], published)[0].verdict == "cannot test"
    text, causes = t2i_findings.cads_planted(["trained:profession-diffusion"])
    assert causes == [False] and "Nothing in the world sets what CADS does" in text
    assert t2i_findings.cads_planted([t2i_findings.SOURCE_MODEL]) == (None, None)


def test_extension_findings_compare_the_25_45_share_and_the_doctors_light_skin_with_wilson_intervals():
    rows = ([("doctor", "25-45", "light (I-II)")] * 40 + [("doctor", "over 65", "dark (V-VI)")] * 10
            + [("nurse", "25-45", "dark (V-VI)")] * 30 + [("nurse", "under 25", "light (I-II)")] * 10
            + [("nurse", "no person", "no person")] * 5)
    manifest = pd.DataFrame(rows, columns=["profession", "age", "skin tone"])
    found = t2i_findings.extension_findings(manifest, "skin tone")
    assert [f.verdict for f in found] == ["supports", "supports"]
    assert found[0].ours.startswith("25-45: 78% [") and "of 90 images with a person" in found[0].ours  # 70 of 90
    assert found[1].ours.startswith("doctors: 80% [") and "other professions: 25% [" in found[1].ours
    flipped = manifest.assign(**{"skin tone": manifest["skin tone"].map(
        {"light (I-II)": "dark (V-VI)", "dark (V-VI)": "light (I-II)", "no person": "no person"})})
    assert t2i_findings.extension_findings(flipped, "skin tone")[1].verdict == "contradicts"
    assert [f.verdict for f in t2i_findings.extension_findings(manifest, "race")] == ["supports", "cannot test"]
    unmeasured = t2i_findings.extension_findings(None, "skin tone", why_not="the world plants no age")
    assert [f.verdict for f in unmeasured] == ["cannot test"] * 2 and unmeasured[0].ours == "the world plants no age"
    # the full profile's rehearsal: a random-weight annotator labels every image "no person" (04d failed there)
    nobody = manifest.assign(age="no person", **{"skin tone": "no person"})
    empty = t2i_findings.extension_findings(nobody, "skin tone")
    assert [f.verdict for f in empty] == ["cannot test"] * 2
    assert empty[0].ours == "the annotator labelled all 95 images 'no person': no age to compare"
    assert empty[1].ours.startswith("0 images of doctors and 0 of the other professions") and "nan" not in empty[1].ours
    no_doctor = manifest.assign(**{"skin tone": manifest["skin tone"].where(manifest.profession != "doctor", "no person")})
    assert t2i_findings.extension_findings(no_doctor, "skin tone")[1].ours.startswith("0 images of doctors and 40 ")
    # a group of professions ("some professions, such as doctors"), pooled against the rest
    every = t2i_findings.extension_findings(manifest, "skin tone", professions=["doctor", "nurse", "pilot"])[1]
    assert every.ours.startswith("90 images of doctor, nurse and pilot together and 0 of the other professions")
    pair = t2i_findings.extension_findings(manifest.assign(profession=manifest.profession.replace("nurse", "cook")),
                                           "skin tone", professions=["doctor"])[1]
    assert pair.ours.startswith("doctors: 80% [")
    two = pd.concat([manifest, manifest.assign(profession="judge")])
    judged = t2i_findings.extension_findings(two, "skin tone", professions=["doctor", "nurse"])[1]
    # doctor and nurse: 50 of 90 with a person light (56%), the judge's copy the same: no difference
    assert judged.ours.startswith("doctors and nurses: 56% [") and judged.verdict == "cannot tell"


def grid(rho=(0.8, 0.6, 0.9), slope=(1.3, 1.1, 1.5)) -> pd.DataFrame:
    return pd.DataFrame([{"rho": rho[0], "rho low": rho[1], "rho high": rho[2], "slope": slope[0],
                          "slope low": slope[1], "slope high": slope[2]}], index=["guidance 3"])


def changes(vrbs=(0.02, 0.01, 0.03), higher=11, kinds=12) -> pd.DataFrame:
    return pd.DataFrame([
        {"run": "CADS s=1", "measure": "VRBS", "a": 0.8, "b": 0.8 + vrbs[0], "change": vrbs[0], "ci_low": vrbs[1],
         "ci_high": vrbs[2]},
        {"run": "CADS s=1", "measure": "diversity", "a": 0.1, "b": 0.12, "change": 0.02, "kinds higher": higher,
         "kinds": kinds}])


def test_controlled_findings_judge_ranking_amplification_and_cads_from_their_intervals_and_a_sign_test():
    from vlbias import book

    published = book.published(t2i_bias.SOURCE_TABLE)
    found = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=1", published)
    assert [f.verdict for f in found] == ["supports"] * 4
    assert "electrician: 1.7% women in the statistics, 0.9% generated" in found[1].published
    assert found[2].published == "SD 1.4: 0.68 to 0.73; SD 2.1: 0.71 to 0.73"
    # 11 of 12 kinds higher: two-sided sign test p = 2 * 13 / 4096 = 0.00635
    assert "higher in 11 of 12 kinds (sign test p = 0.0063)" in found[3].ours
    found = t2i_findings.controlled_findings(grid(slope=(0.7, 0.6, 0.8)), "guidance 3",
                                             changes(vrbs=(-0.02, -0.03, -0.01), higher=1), "CADS s=1", published)
    assert [f.verdict for f in found] == ["supports", "contradicts", "contradicts", "contradicts"]
    # the slope's interval holds 1; 9 of 12 higher: p = 0.146, within noise
    found = t2i_findings.controlled_findings(grid(slope=(1.1, 0.9, 1.3)), "guidance 3", changes(higher=9), "CADS s=1",
                                             published)
    assert [f.verdict for f in found][1::2] == ["cannot tell", "cannot tell"]
    missing = t2i_findings.controlled_findings(grid(), "guidance 3", changes(), "CADS s=2", published)
    assert [f.verdict for f in missing][2:] == ["cannot test", "cannot test"]


def test_the_planted_world_sets_the_shares_only():
    text, causes = t2i_findings.controlled_planted("trained:world-diffusion")
    assert causes == [True, False, False, False] and "red's share per kind planted from 10% to 90%" in text
    assert t2i_findings.controlled_planted("trained:world-diffusion?share_spread=0")[1] == [False] * 4
    assert t2i_findings.controlled_planted(t2i_findings.SOURCE_MODEL) == (None, None)
    assert t2i_findings.reproducibility_planted("trained:profession-diffusion")[1] == [False]
    assert t2i_findings.reproducibility_planted(t2i_findings.SOURCE_MODEL) == (None, None)


def test_extension_planted_says_which_claims_the_world_plants():
    """04d's planted truth: both claims' causes on the world's model, none on its uniform control or
    with a uniform tint, nothing for the papers' models."""
    text, causes = t2i_findings.extension_planted("trained:profession-diffusion")
    assert "sand background (playing age 25-45) in 85%" in text and causes == [True, True]
    assert t2i_findings.extension_planted("trained:profession-diffusion?share_scale=0")[1] == [False, False]
    assert t2i_findings.extension_planted("trained:profession-diffusion?age_peak=0.25")[1] == [False, True]
    assert t2i_findings.extension_planted("CompVis/stable-diffusion-v1-4") == (None, None)
