import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.harms import measures as harms
from vlbias.harms.measures import pronoun_shares
from vlbias.models.base import LanguageModel


class TableLM(LanguageModel):
    """Log-probabilities from a table keyed by (context, candidate)."""

    spec, kind = "fake:lm", "masked"

    def __init__(self, table):
        self.table = table

    def fill_logprobs(self, contexts, candidates, batch_size=16, progress=True):
        return np.log([[self.table[(c, w)] for w in candidates] for c in contexts])

    sequence_logprob = generate = None


def test_pronoun_shares_renormalise_then_average_templates():
    templates = ["The {occupation} said {slot} left.", "{slot} is a {occupation}."]
    table = {("The nurse said {slot} left.", "she"): 0.6, ("The nurse said {slot} left.", "he"): 0.2,
             ("{slot} is a nurse.", "she"): 0.1, ("{slot} is a nurse.", "he"): 0.3}
    shares = pronoun_shares(TableLM(table), ["nurse"], templates, ["she", "he"])
    # template 1: 0.75 / 0.25; template 2: 0.25 / 0.75 -> mean 0.5 / 0.5
    assert shares.loc[0, "P(she)"] == pytest.approx(0.5) and shares.loc[0, "P(he)"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="template needs"):
        pronoun_shares(TableLM(table), ["nurse"], ["no slot here {occupation}"], ["she"])


# --------------------------------------------------------------------------- stereotyping on real paths

class SentenceLM(TableLM):
    """sequence_logprob from a table of whole sentences."""

    def __init__(self, sentences):
        self.sentences = sentences

    def sequence_logprob(self, texts, batch_size=16, progress=True):
        return np.log([self.sentences[t] for t in texts])


def test_sentence_scoring_fills_capitalises_and_normalises():
    lm = SentenceLM({"The nurse left because she was ill.": 0.03, "The nurse left because he was ill.": 0.01,
                     "She is a nurse.": 0.2, "He is a nurse.": 0.2})
    shares = harms.sentence_pronoun_shares(lm, ["nurse"], ["The {occupation} left because {slot} was ill.",
                                                           "{slot} is a {occupation}."], ["she", "he"], progress=False)
    # template 1: 0.75, template 2: 0.5 -> mean 0.625
    assert shares.loc[0, "P(she)"] == pytest.approx(0.625)


def test_stereotyping_table_female_share_and_gap():
    table = {("The nurse said {slot} left.", p): v for p, v in (("she", 0.6), ("he", 0.2), ("they", 0.2))}
    result = harms.stereotyping_table(TableLM(table), ["nurse"], [0.9], ["The {occupation} said {slot} left."],
                                      progress=False)
    assert result.loc[0, "model female share"] == pytest.approx(0.75)
    assert result.loc[0, "gap"] == pytest.approx(-0.15) and result.loc[0, "direction"] == "under"
    with pytest.raises(ValueError, match="scoring"):
        harms.stereotyping_table(TableLM(table), ["nurse"], [0.9], ["x {occupation} {slot}"], scoring="bogus")


def test_amplification_slope_planted_and_interval_matches_scipy():
    real = np.linspace(0.05, 0.95, 20)
    noise = np.random.default_rng(0).normal(scale=0.02, size=20)
    model = 0.5 + 1.4 * (real - 0.5) + noise  # planted amplification, slope 1.4
    result = harms.amplification_slope(model, real)
    fit = stats.linregress(real, model)
    half = stats.t.ppf(0.975, 18) * fit.stderr
    assert result["slope"] == pytest.approx(fit.slope)
    assert result["slope_low"] == pytest.approx(fit.slope - half)
    assert result["slope_low"] > 1.0 and result["slope_high"] < 1.8  # amplification detected, planted value inside
    assert result["slope_low"] < 1.4 < result["slope_high"]


def test_gap_direction_rounds_before_comparing():
    assert harms.gap_direction([0.11 - 0.16, 0.06, -0.0501, 0.0]) == ["near", "over", "near", "near"]
    assert harms.gap_direction([-0.06]) == ["under"]


# --------------------------------------------------------------------------- erasure

def test_protagonist_gender_rules():
    text = "She helped the man. He thanked her and his son waved."
    assert harms.protagonist_gender(text) == "female"            # first gendered word
    assert harms.protagonist_gender(text, rule="majority") == "male"  # he, his, man, son vs she, her
    assert harms.protagonist_gender("Alex fixed the bug.") == "undetermined"
    assert harms.protagonist_gender("Herbert shed a tear", rule="majority") == "undetermined"  # no substrings


def test_erasure_from_texts_counts_shares_and_wilson_intervals():
    from vlbias.stats import wilson_interval

    texts = ["she"] * 3 + ["he"] * 1 + ["nobody"] * 2
    stories = pd.DataFrame({"scenario": "nurse", "sample": range(6), "text": texts})
    table = harms.erasure_from_texts(stories, {"female": 0.5, "male": 0.5}).set_index("group")
    assert table.loc["female", "n_detected"] == 4 and table.loc["female", "n_undetermined"] == 2
    assert table.loc["female", "share"] == pytest.approx(0.75)
    assert table.loc["female", "erasure_index"] == pytest.approx(0.25)
    low, high = wilson_interval(1, 4)
    assert table.loc["male", "index_low"] == pytest.approx(low - 0.5)
    assert table.loc["male", "index_high"] == pytest.approx(high - 0.5)


def test_generate_stories_on_tiny_causal_lm_is_seeded_and_cached(isolated_cache):
    from vlbias.models import load_language_model

    lm = load_language_model("tiny:causal-lm", device="cpu")
    scenarios = {"nurse": "the nurse", "pilot": "the pilot"}
    before = set((isolated_cache / "texts").rglob("texts.json"))  # the session's other tests may cache texts too
    first = harms.generate_stories(lm, scenarios, 3, max_new_tokens=5, seed=1, progress=False)
    assert list(first.scenario) == ["nurse"] * 3 + ["pilot"] * 3
    cached = set((isolated_cache / "texts").rglob("texts.json")) - before
    assert len(cached) == 2
    again = harms.generate_stories(lm, scenarios, 3, max_new_tokens=5, seed=1, progress=False)
    pd.testing.assert_frame_equal(first, again)


# --------------------------------------------------------------------------- toxicity asymmetry

def test_false_positive_rates_counts_and_ratio():
    standard = np.array([0.0, 0.2, 0.0, 0.0, 0.3, 0.0])
    aave = np.array([0.2, 0.3, 0.2, 0.0, 0.2, 0.2])
    table = harms.false_positive_rates(standard, aave, [0.1, 0.25, 0.5], n_bootstrap=2000).set_index("threshold")
    assert table.loc[0.1, "fpr_standard"] == pytest.approx(2 / 6) and table.loc[0.1, "fpr_aave"] == pytest.approx(5 / 6)
    assert table.loc[0.1, "ratio"] == pytest.approx(2.5)
    assert table.loc[0.1, "ratio_low"] <= 2.5 <= table.loc[0.1, "ratio_high"]
    # one standard sentence flagged at 0.25: resamples without it make the upper end infinite
    assert table.loc[0.25, "ratio"] == pytest.approx(1.0) and np.isinf(table.loc[0.25, "ratio_high"])
    # nothing flagged in standard English: no ratio, an honest statement instead of 1e9
    assert np.isnan(table.loc[0.5, "ratio"]) and table.loc[0.5, "statement"].startswith("no ratio: 0 of 6")
    # a score at the threshold counts as flagged (the chapter's `s >= threshold`)
    at_threshold = harms.false_positive_rates([0.15, 0.0], [0.15, 0.15], [0.15]).iloc[0]
    assert at_threshold.flagged_standard == 1 and at_threshold.flagged_aave == 2


def test_dialect_pairs_data_file():
    pairs = harms.dialect_pairs()
    assert len(pairs) >= 60 and (pairs.source == "chapter").sum() == 6
    assert pairs.standard.is_unique and pairs.aave.is_unique
    assert (pairs.standard != pairs.aave).all()


def test_cached_scores_are_reused_and_keyed_by_texts(isolated_cache):
    calls = []

    class CountingLM(TableLM):
        spec = "fake:counting-lm"

        def fill_logprobs(self, contexts, candidates, batch_size=16, progress=True):
            calls.append(len(contexts))
            return super().fill_logprobs(contexts, candidates)

    table = {("The pilot said {slot} left.", "she"): 0.2, ("The pilot said {slot} left.", "he"): 0.6}
    first = pronoun_shares(CountingLM(table), ["pilot"], ["The {occupation} said {slot} left."], ["she", "he"],
                           cache=True, progress=False)
    again = pronoun_shares(CountingLM(table), ["pilot"], ["The {occupation} said {slot} left."], ["she", "he"],
                           cache=True, progress=False)
    assert calls == [1] and first.equals(again) and first.loc[0, "P(she)"] == pytest.approx(0.25)


def test_measures_refuse_bad_settings_by_name():
    table = {("The nurse said {slot} left.", p): v for p, v in (("she", 0.6), ("he", 0.2), ("they", 0.2))}
    lm, templates = TableLM(table), ["The {occupation} said {slot} left."]
    with pytest.raises(ValueError, match="^scoring must be 'slot' or 'sentence', got 'bogus'$"):
        harms.stereotyping_table(lm, ["nurse"], [0.9], templates, scoring="bogus")
    for pronouns in (("she", "they"), ("he", "they")):
        with pytest.raises(ValueError, match="^pronouns must include 'she' and 'he'$"):
            harms.stereotyping_table(lm, ["nurse"], [0.9], templates, pronouns=pronouns)
    for bad in ("The nurse said {slot} left.", "The {occupation} left."):
        with pytest.raises(ValueError, match=r"^template needs \{occupation\} and \{slot\}: "):
            pronoun_shares(lm, ["nurse"], [bad], ["she", "he"])
        with pytest.raises(ValueError, match=r"^template needs \{occupation\} and \{slot\}: "):
            harms.sentence_pronoun_shares(lm, ["nurse"], [bad], ["she", "he"])
    with pytest.raises(ValueError, match="^model_share and real_share must be of one length, got 4 and 3$"):
        harms.amplification_slope([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"^real_share needs at least 3 row\(s\), got 2"):
        harms.amplification_slope([0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"^rule must be 'first' or 'majority', got 'last'$"):
        harms.protagonist_gender("she", rule="last")


def test_amplification_summary_gap_direction_boundary_and_erasure_columns():
    real, model = np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.5, 1.0])
    result = harms.amplification_slope(model, real)
    fit = stats.linregress(real, model)
    assert result["n"] == 3 and result["intercept"] == pytest.approx(fit.intercept)
    assert result["r"] == pytest.approx(fit.rvalue) and result["mean_abs_gap"] == pytest.approx(0.2 / 3)
    assert result["slope_high"] == pytest.approx(fit.slope + stats.t.ppf(0.975, 1) * fit.stderr)
    assert harms.gap_direction([0.05, -0.05, 0.054, 0.056]) == ["near", "near", "near", "over"]
    assert harms.gap_direction([0.08], near=0.1) == ["near"]
    generated = pd.DataFrame({"b": [0.5, 0.2], "a": [0.1, 0.3], "c": [0.4, 0.5]}, index=["s1", "s2"])
    erased = harms.erasure_index(generated, pd.Series({"a": 0.2, "b": 0.3}))
    assert erased.columns.tolist() == ["a", "b"] and erased.loc["s1"].tolist() == pytest.approx([-0.1, 0.2])
    with pytest.raises(ValueError, match=r"^generated shares lack the groups \['d'\]$"):
        harms.erasure_index(generated, pd.Series({"a": 0.2, "d": 0.3}))
    assert harms.protagonist_gender("He met her. She smiled.", rule="majority") == "female"
    assert harms.protagonist_gender("He met her.", rule="majority") == "undetermined"


def test_erasure_from_texts_columns_order_rule_confidence_and_undetected_scenarios():
    stories = pd.DataFrame({"scenario": ["zoo"] * 4 + ["ant"] * 2,
                            "text": ["She met him and his son. He left.", "He saw a girl.", "she", "it",
                                     "nobody", "nothing"]})
    table = harms.erasure_from_texts(stories, {"female": 0.5, "male": 0.5}, confidence=0.90)
    assert table.columns.tolist() == ["scenario", "group", "n_stories", "n_detected", "n_undetermined", "count",
                                      "share", "share_low", "share_high", "reference", "erasure_index", "index_low",
                                      "index_high"]
    assert table["scenario"].tolist() == ["zoo", "zoo", "ant", "ant"]  # order of appearance
    zoo = table.set_index(["scenario", "group"]).loc["zoo"]
    assert zoo.loc["female", ["n_stories", "n_detected", "count"]].tolist() == [4, 3, 2]  # first word decides
    ci = stats.binomtest(2, 3).proportion_ci(0.90, method="wilson")
    assert zoo.loc["female", ["share", "share_low", "share_high", "reference"]].tolist() == pytest.approx(
        [2 / 3, ci.low, ci.high, 0.5])
    ant = table.set_index(["scenario", "group"]).loc["ant"]
    assert ant.loc["female", "n_detected"] == 0 and ant[["share", "share_low", "erasure_index"]].isna().all().all()
    majority = harms.erasure_from_texts(stories, {"female": 0.5}, rule="majority").set_index("scenario")
    # by majority the first story is male and the second a tie (undetermined)
    assert majority.loc["zoo", "count"] == 1 and majority.loc["zoo", "n_detected"] == 2


def test_false_positive_rates_name_scores_default_bootstrap_and_exact_statements():
    import warnings

    standard = np.array([0.9, 0.1, 0.2, 0.8, 0.1, 0.3])
    aave = np.array([0.95, 0.7, 0.6, 0.9, 0.2, 0.8])
    for bad in ("standard_scores", "aave_scores"):
        scores = {"standard_scores": standard.copy(), "aave_scores": aave.copy()}
        scores[bad][1] = np.nan
        with pytest.raises(ValueError, match=rf"^{bad} has 1 row\(s\) with NaN"):
            harms.false_positive_rates(scores["standard_scores"], scores["aave_scores"], [0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # x/0 and 0/0 ratios of resamples are expected, silently
        table = harms.false_positive_rates(standard, aave, [0.05, 0.5, 0.92], confidence=0.5).set_index("threshold")
        # four pairs, one flagged on both sides: a third of the resamples flag nothing (0/0)
        harms.false_positive_rates([0.9, 0.1, 0.1, 0.1], [0.9, 0.1, 0.1, 0.1], [0.5], n_bootstrap=100)
    assert table.loc[0.5, "statement"] == "AAVE flagged 2.50x as often (5 vs 2 of 6)"  # 50%: a finite upper end
    wide = harms.false_positive_rates(standard, aave, [0.5]).iloc[0]  # 95%: some resamples flag no standard one
    assert wide["ratio_high"] == np.inf and wide["statement"] == (
        "AAVE flagged 2.50x as often (5 vs 2 of 6) (upper bound unbounded: some resamples flag no standard sentence)")
    # the defaults, 10,000 resamples of pairs under seed 0, redone by hand on 40 pairs (a near-continuous ratio)
    rng = np.random.default_rng(9)
    many_standard, many_aave = rng.random(40), rng.random(40) + 0.2
    picks = np.random.default_rng(0).integers(0, 40, size=(10_000, 40))
    ratios = (many_aave >= 0.5)[picks].sum(1) / (many_standard >= 0.5)[picks].sum(1)
    many = harms.false_positive_rates(many_standard, many_aave, [0.5], confidence=0.5).iloc[0]
    assert (many["ratio_low"], many["ratio_high"]) == tuple(np.quantile(ratios, [0.25, 0.75], method="inverted_cdf"))
    assert table.loc[0.05, "statement"] == "AAVE flagged 1.00x as often (6 vs 6 of 6)"  # every sentence: finite
    ci = stats.binomtest(1, 6).proportion_ci(0.5, method="wilson")
    assert table.loc[0.92, "statement"] == (f"no ratio: 0 of 6 standard sentences flagged, 1 of 6 AAVE "
                                            f"(AAVE FPR 17%, 50% CI {ci.low:.0%}-{ci.high:.0%})")
    assert table.loc[0.92, ["ratio", "ratio_low", "ratio_high"]].isna().all()


def test_stereotyping_scoring_pronouns_and_caching_reach_the_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(tmp_path / "cache"))
    table = {("The nurse said {slot} left.", p): v for p, v in (("she", 0.6), ("he", 0.2), ("they", 0.2))}
    slot = harms.stereotyping_table(TableLM(table), ["nurse"], [0.9], ["The {occupation} said {slot} left."],
                                    pronouns=("she", "he"), progress=False)
    assert slot.columns.tolist()[:3] == ["occupation", "P(she)", "P(he)"] and "P(they)" not in slot.columns
    assert not (tmp_path / "cache").exists()  # no cache unless asked
    harms.stereotyping_table(TableLM(table), ["nurse"], [0.9], ["The {occupation} said {slot} left."],
                             progress=False, cache=True)
    assert (tmp_path / "cache" / "lm_scores").is_dir()
    shares = pronoun_shares(TableLM(table), ["nurse"], ["The {occupation} said {slot} left."], ["she", "he"],
                            progress=False)
    assert shares.columns.tolist() == ["occupation", "P(she)", "P(he)"]
    assert len(list((tmp_path / "cache" / "lm_scores").iterdir())) == 1  # the cached call's entry only


def test_stereotyping_by_whole_sentences_and_model_share_errors_by_name():
    lm = SentenceLM({"The nurse left because she was ill.": 0.03, "The nurse left because he was ill.": 0.01})
    table = harms.stereotyping_table(lm, ["nurse"], [0.9], ["The {occupation} left because {slot} was ill."],
                                     pronouns=("she", "he"), scoring="sentence", progress=False)
    assert table.loc[0, "model female share"] == pytest.approx(0.75) and table.loc[0, "gap"] == pytest.approx(-0.15)
    with pytest.raises(ValueError, match=r"^model_share needs at least 3 row\(s\), got 2"):
        harms.amplification_slope([0.1, 0.2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"^model_share has 1 row\(s\) with NaN"):
        harms.amplification_slope([0.1, np.nan, 0.3], [0.1, 0.2, 0.3])
