"""Part III controls on planted cases: the WEAT bootstrap against a word-by-word loop and scipy,
leave-one-word-out against recomputed effect sizes, template sensitivity on planted slopes."""


import numpy as np
import pytest
from scipy import stats

from vlbias.harms.controls import (leave_one_word_out, plot_leave_one_word_out, template_sensitivity, template_spread,
                                   weat_battery_controls, weat_bootstrap)
from vlbias.models.base import LanguageModel
from vlbias.weat import association_scores, effect_size_from_scores, weat_effect_size


def planted(seed, n=8, dim=16, shift=0.6):
    """Targets X, Y shifted by +-shift along the direction that separates attributes A and B."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dim)
    noise = {key: rng.normal(size=(n, dim)) for key in "ABXY"}
    offsets = {"X": shift, "Y": -shift, "A": 1.0, "B": -1.0}
    return tuple(noise[key] + offsets[key] * direction for key in "XYAB")


def test_bootstrap_equals_a_word_by_word_loop_with_the_same_draws():
    X, Y, A, B = planted(0, n=5)
    result = weat_bootstrap(X, Y, A, B, n_bootstrap=200, resample="all", seed=7)
    rng = np.random.default_rng(7)
    ix, iy = rng.integers(0, 5, (200, 5)), rng.integers(0, 5, (200, 5))
    ia, ib = rng.integers(0, 5, (200, 5)), rng.integers(0, 5, (200, 5))
    loop = [weat_effect_size(X[ix[b]], Y[iy[b]], A[ia[b]], B[ib[b]]) for b in range(200)]
    assert result.n_undefined == 0
    assert result.effect_size == pytest.approx(weat_effect_size(X, Y, A, B))
    np.testing.assert_allclose([result.low, result.high], np.quantile(loop, [0.025, 0.975]), rtol=1e-10)


def test_a_words_sentences_are_drawn_together_as_in_a_loop_over_words():
    """SEAT's units (``per_word`` sentences a word): each resample draws words, and a drawn word brings
    all its sentences; the interval equals a loop over the same word draws, d computed on the drawn
    sentences. Sentences of one word that barely differ make the interval over words wider than a
    bootstrap that treats each sentence as independent (the per_word=1 interval on the same rows)."""
    rng = np.random.default_rng(3)
    words = planted(4, n=6)
    per = 4
    # each word in 4 sentences: the word's vector plus a little sentence noise, rows word by word
    X, Y, A, B = (np.repeat(w, per, axis=0) + 0.05 * rng.normal(size=(len(w) * per, w.shape[1])) for w in words)
    result = weat_bootstrap(X, Y, A, B, n_bootstrap=300, resample="all", seed=5, per_word=per)
    draws = np.random.default_rng(5)
    picks = [draws.integers(0, 6, (300, 6)) for _ in "XYAB"]
    rows = lambda words: (words[:, None] * per + np.arange(per)).ravel()  # noqa: E731
    loop = [weat_effect_size(X[rows(picks[0][b])], Y[rows(picks[1][b])], A[rows(picks[2][b])], B[rows(picks[3][b])])
            for b in range(300)]
    assert result.effect_size == pytest.approx(weat_effect_size(X, Y, A, B))
    np.testing.assert_allclose([result.low, result.high], np.quantile(loop, [0.025, 0.975]), rtol=1e-10)
    as_if_independent = weat_bootstrap(X, Y, A, B, n_bootstrap=300, resample="all", seed=5)
    assert result.high - result.low > 1.5 * (as_if_independent.high - as_if_independent.low)
    with pytest.raises(ValueError, match="per_word must be a whole divisor"):
        weat_bootstrap(X, Y, A, B, per_word=5)


def test_target_bootstrap_agrees_with_scipy():
    X, Y, A, B = planted(1)
    ours = weat_bootstrap(X, Y, A, B, n_bootstrap=20_000, resample="targets", seed=0)
    sx, sy = association_scores(X, A, B), association_scores(Y, A, B)
    theirs = stats.bootstrap((sx, sy), lambda x, y: effect_size_from_scores(x, y), vectorized=False,
                             method="percentile", n_resamples=20_000, random_state=0).confidence_interval
    assert ours.low == pytest.approx(theirs.low, abs=0.05)
    assert ours.high == pytest.approx(theirs.high, abs=0.05)


def test_bootstrap_separates_a_planted_effect_from_none():
    strong = weat_bootstrap(*planted(2, shift=1.0), n_bootstrap=1000)
    assert strong.low > 0.5
    null = weat_bootstrap(*planted(2, shift=0.0), n_bootstrap=1000)
    assert null.low < 0 < null.high
    # resampling attribute words as well widens the interval
    targets_only = weat_bootstrap(*planted(2, shift=1.0), n_bootstrap=1000, resample="targets")
    assert strong.high - strong.low > targets_only.high - targets_only.low


def test_bootstrap_leaves_out_resamples_without_an_effect_size_and_takes_quantiles_of_the_rest():
    # scores X = {1, -1}, Y = {-1}: a resample drawing X's second word twice has sd 0
    result = weat_bootstrap([[1, 0.0], [0, 1.0]], [[0, 1.0]], [[1, 0.0]], [[0, 1.0]], n_bootstrap=50,
                            resample="targets", seed=1)
    picks = np.random.default_rng(1).integers(0, 2, (50, 2))
    assert result.n_undefined == int((picks == 1).all(axis=1).sum()) > 0
    # the others, by hand: pooled scores {1, 1, -1} give d = 2 / sd = sqrt(3), {1, -1, -1} give 1 / sd = sqrt(3) / 2
    kept = picks[~(picks == 1).all(axis=1)]
    d = np.where((kept == 0).all(axis=1), np.sqrt(3), np.sqrt(3) / 2)
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(d, [0.025, 0.975])))
    assert result.effect_size == pytest.approx(np.sqrt(3) / 2)  # observed: X {1, -1}, Y {-1}


def test_leave_one_word_out_recomputes_each_effect_size_and_finds_a_planted_outlier():
    X, Y, A, B = planted(4, n=6, dim=400, shift=0.0)
    X[2] = 5 * (A.mean(0) - B.mean(0))           # one target word carries the whole association
    words = {key: [f"{key.lower()}{i}" for i in range(6)] for key in "XYAB"}
    table = leave_one_word_out(X, Y, A, B, words=words)
    assert len(table) == 24
    for key, arrays in (("X", (X, Y, A, B)), ("A", (X, Y, A, B))):
        position = "XYAB".index(key)
        for i in range(6):
            parts = list(arrays)
            parts[position] = np.delete(parts[position], i, axis=0)
            value = table.query("set == @key and word == @words[@key][@i]")["effect_size"].item()
            assert value == pytest.approx(weat_effect_size(*parts))
    top = table.loc[table["change"].abs().idxmax()]
    assert (top["set"], top["word"]) == ("X", "x2") and top["change"] < 0
    assert table.attrs["effect_size"] == pytest.approx(weat_effect_size(X, Y, A, B))
    assert plot_leave_one_word_out(table, top=5) is not None


def test_battery_controls_on_a_looked_up_vocabulary():
    X, Y, A, B = planted(5)
    vocabulary = {f"{key}{i}": vec for key, arrays in zip("XYAB", (X, Y, A, B)) for i, vec in enumerate(arrays)}

    def embed(words):
        found = [w for w in words if w in vocabulary]
        return np.array([vocabulary[w] for w in found]), found, [w for w in words if w not in vocabulary]

    tests = [{"id": "planted", **{key: [f"{key}{i}" for i in range(8)] for key in "XYAB"}},
             {"id": "empty", "X": ["nothing"], "Y": ["Y0"], "A": ["A0"], "B": ["B0"]}]
    table = weat_battery_controls(embed, tests, n_bootstrap=300, name="planted")
    interval = weat_bootstrap(X, Y, A, B, n_bootstrap=300)
    row = table.iloc[0]
    assert (row["d_low"], row["d_high"]) == pytest.approx((interval.low, interval.high))
    assert row["loo_min"] <= interval.effect_size <= row["loo_max"]
    assert table.iloc[1][["d_low", "loo_min"]].isna().all()


class PlantedPronounModel(LanguageModel):
    """P(she) = intercept + slope * real share per template (P(they) negligible): known slopes."""

    spec, kind = "planted", "causal"

    def __init__(self, real, lines):
        self.real, self.lines, self.calls = real, lines, 0

    def fill_logprobs(self, contexts, candidates, batch_size=16, progress=True):
        self.calls += 1
        out = []
        for context in contexts:
            # each template's words between occupation and slot are its own
            template = next(t for t in self.lines if t.split("{occupation}")[1].split("{slot}")[0] in context)
            occupation = next(o for o in self.real if f" {o} " in f" {context} ")
            intercept, slope = self.lines[template]
            share = intercept + slope * self.real[occupation]
            probability = {"she": share * (1 - 1e-6), "he": (1 - share) * (1 - 1e-6), "they": 1e-6}
            out.append([np.log(probability[c]) for c in candidates])
        return np.array(out)

    def sequence_logprob(self, texts, batch_size=16, progress=True):
        raise NotImplementedError

    def generate(self, *args, **kwargs):
        raise NotImplementedError


def test_template_sensitivity_recovers_planted_slopes_and_their_spread():
    real = {"nurse": 0.9, "pilot": 0.1, "baker": 0.6, "judge": 0.4, "clerk": 0.7}
    lines = {"The {occupation} said {slot} was late.": (0.0, 1.0),
             "Ask the {occupation} if {slot} can help.": (0.25, 0.5),
             "When the {occupation} came, {slot} sat.": (0.05, 0.9)}
    model = PlantedPronounModel(real, lines)
    per_template, per_occupation = template_sensitivity(model, list(real), list(real.values()), list(lines))
    np.testing.assert_allclose(per_template["slope"], [1.0, 0.5, 0.9], atol=1e-6)
    np.testing.assert_allclose(per_template["r"], 1.0, atol=1e-9)
    shares = np.array([[a + b * r for a, b in lines.values()] for r in real.values()])
    np.testing.assert_allclose(per_occupation[["template 1", "template 2", "template 3"]], shares, atol=1e-6)
    np.testing.assert_allclose(per_occupation["sd"], shares.std(1, ddof=1), atol=1e-6)
    spread = template_spread(per_template)
    assert spread.loc["slope", "min"] == pytest.approx(0.5, abs=1e-6)
    assert spread.loc["slope", "max"] == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="templates"):
        template_sensitivity(model, list(real), list(real.values()), list(lines)[:1])


def test_template_sensitivity_reuses_the_scores_the_stereotyping_table_cached():
    from vlbias.harms.measures import stereotyping_table

    real = {"nurse": 0.9, "pilot": 0.1, "baker": 0.6, "judge": 0.4}
    lines = {"The {occupation} ran as {slot} could.": (0.1, 0.8), "A {occupation} knew {slot} was right.": (0.3, 0.4)}
    model = PlantedPronounModel(real, lines)
    pooled = stereotyping_table(model, list(real), list(real.values()), list(lines), cache=True, progress=False)
    calls = model.calls
    per_template, per_occupation = template_sensitivity(model, list(real), list(real.values()), list(lines), cache=True)
    assert model.calls == calls
    # the pooled table averages the renormalised pronoun shares; with P(they) ~ 0 that is the mean share
    np.testing.assert_allclose(pooled["model female share"], per_occupation[["template 1", "template 2"]].mean(axis=1), atol=1e-5)
