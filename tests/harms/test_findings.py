"""Part III's findings box (``vlbias.harms.findings``): the chapter's claims judged from intervals whose
answer is known."""

import numpy as np
import pandas as pd

from vlbias.harms import measures as harms
from vlbias.harms import findings as harms_findings


def test_toxicity_finding_reads_the_paired_ratio_or_the_wilson_intervals():
    standard = np.r_[np.full(10, 0.9), np.zeros(90)]  # 10% of standard sentences flagged
    aave = np.r_[np.full(60, 0.9), np.zeros(40)]      # 60% of AAE sentences flagged
    rates = harms.false_positive_rates(standard, aave, [0.15, 0.5], n_bootstrap=500)
    simulated = harms.false_positive_rates(np.zeros(6), np.full(6, 0.9), [0.15], n_bootstrap=100).iloc[0]
    found = harms_findings.toxicity_findings(rates, simulated, "1000000000.0x", "clf")
    assert found[0].published == "simulated: FPR 0% (standard) against 100% (AAE) at 0.15, printed as a ratio of 1000000000.0x"
    assert [f.verdict for f in found] == ["supports"]
    assert found[0].ours.startswith("clf at 0.15: FPR 10% [") and "ratio 6.00 [" in found[0].ours
    reversed_rates = harms.false_positive_rates(aave, standard, [0.15], n_bootstrap=500)
    assert harms_findings.toxicity_findings(reversed_rates, simulated, "x", "clf")[0].verdict == "contradicts"
    # no standard sentence flagged: no ratio, so the Wilson intervals decide
    none = harms.false_positive_rates(np.zeros(100), aave, [0.15], n_bootstrap=200)
    assert np.isnan(none.ratio[0]) and harms_findings.toxicity_findings(none, simulated, "x", "clf")[0].verdict == "supports"
    assert harms_findings.toxicity_findings(none.iloc[:0], simulated, "x", "clf")[0].verdict == "cannot test"


def test_erasure_findings_read_the_sign_of_each_womens_index_interval():
    measured = pd.DataFrame({"scenario": ["scientist", "CEO", "CEO"], "group": ["female", "female", "male"],
                             "erasure_index": [-0.3, 0.2, -0.2], "index_low": [-0.45, -0.1, -0.5],
                             "index_high": [-0.1, 0.5, 0.1], "n_detected": [40, 40, 40]})
    chapter = pd.DataFrame({"white_female": [-0.12, -0.13], "nonwhite_female": [-0.13, -0.14]},
                           index=["scientist", "CEO"])
    found = harms_findings.erasure_findings(measured, chapter, "lm")
    assert [f.verdict for f in found] == ["supports", "cannot tell", "cannot test", "cannot test"]
    assert found[0].published == "simulated: -0.25" and found[0].ours == "lm: -0.30 [-0.45, -0.10] (40 stories with a gendered protagonist)"
    assert found[3].published == "not simulated"


def test_stereotyping_findings_compare_the_slope_with_0_and_with_1():
    chapter = {"slope": 1.09, "slope_low": 0.71, "slope_high": 1.46}
    found = harms_findings.stereotyping_findings({"slope": 0.4, "slope_low": 0.3, "slope_high": 0.5}, chapter, "lm")
    assert [f.verdict for f in found] == ["supports", "contradicts"]
    found = harms_findings.stereotyping_findings({"slope": 1.3, "slope_low": 1.1, "slope_high": 1.5}, chapter, "lm")
    assert [f.verdict for f in found] == ["supports", "supports"]
    assert [f.verdict for f in harms_findings.stereotyping_findings(None, chapter, "lm")] == ["cannot test"] * 2


def test_weat_findings_count_significant_tests_and_never_read_a_null_as_contradiction():
    holm = pd.DataFrame({"embeddings": ["a", "a", "b", "b", "c"], "effect_size": [1.2, 0.9, 1.1, 0.2, -1.0],
                         "p_holm": [0.001, 0.01, 0.001, 0.4, 0.001], "complete": [True, True, True, True, True]})
    from vlbias import book

    found = harms_findings.weat_findings(holm, book.published("weat_caliskan2017_glove"))
    assert [f.verdict for f in found] == ["supports", "cannot tell", "contradicts"]
    assert found[0].published == "GloVe 840B: all 10, d from 1.06 to 1.81 (Caliskan et al. 2017, Table 1)"
    assert found[1].ours == "1 of 2 complete tests positive with a Holm-adjusted p below 0.05"
    assert harms_findings.weat_findings(None)[0].verdict == "cannot test"
