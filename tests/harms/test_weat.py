"""WEAT effect size and permutation p-value against hand-worked values and scipy."""


import numpy as np
import pytest
from scipy import stats

from vlbias.harms.word_vectors import WordVectors, load_text_vectors, load_word2vec_binary
from vlbias.weat import (association_scores, effect_size_from_scores, run_weat_battery, weat_effect_size,
                         weat_p_value, weat_test, weat_test_from_scores)


def angle(theta_degrees):
    t = np.radians(theta_degrees)
    return [np.cos(t), np.sin(t)]


def test_association_score_hand_worked():
    # A = the x axis, B = the y axis: s(w) = cos(w, x) - cos(w, y)
    A, B = [[1, 0]], [[0, 1]]
    scores = association_scores([angle(0), angle(90), angle(45), [3, 0]], A, B)
    np.testing.assert_allclose(scores, [1, -1, 0, 1], atol=1e-12)


def test_effect_size_hand_worked_uses_sample_std():
    # s(X) = {1, 1}, s(Y) = {-1, 0}: means 1 and -0.5; pooled {1, 1, -1, 0}: sample std sqrt(11/12)
    A, B = [[1, 0]], [[0, 1]]
    d = weat_effect_size([angle(0), [2, 0]], [angle(90), angle(45)], A, B)
    assert d == pytest.approx(1.5 / np.sqrt(11 / 12))


def test_exact_p_value_enumerated_by_hand():
    # scores X = {3, 2}, Y = {1, 0}: of the C(4,2) = 6 choices of X, sums 5,4,3,3,2,1; only {3,2} reaches 5
    assert weat_test_from_scores(np.array([3.0, 2.0]), np.array([1.0, 0.0])).p_value == pytest.approx(1 / 6)
    # X = {2, 1}: sums >= 3 are {3,2}=5, {3,1}=4, {3,0}=3, {2,1}=3 -> 4 of 6
    result = weat_test_from_scores(np.array([2.0, 1.0]), np.array([3.0, 0.0]))
    assert result.exact and result.n_partitions == 6 and result.p_value == pytest.approx(4 / 6)
    # the statistic is sum_X s - sum_Y s
    assert result.statistic == pytest.approx(0.0)


def planted(seed, n_x=8, n_y=8, n_attr=8, dim=20, shift=0.4):
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dim)
    A = rng.normal(size=(n_attr, dim)) + direction
    B = rng.normal(size=(n_attr, dim)) - direction
    X = rng.normal(size=(n_x, dim)) + shift * direction
    Y = rng.normal(size=(n_y, dim)) - shift * direction
    return X, Y, A, B


def scipy_reference(X, Y, A, B, n_resamples):
    sx, sy = association_scores(X, A, B), association_scores(Y, A, B)
    return stats.permutation_test((sx, sy), lambda x, y, axis: np.sum(x, axis=axis) - np.sum(y, axis=axis),
                                  permutation_type="independent", alternative="greater",
                                  n_resamples=n_resamples, vectorized=True, random_state=0)


@pytest.mark.parametrize("seed,shift", [(0, 0.4), (1, 0.1), (2, 0.0)])
def test_exact_p_value_equals_scipy(seed, shift):
    X, Y, A, B = planted(seed, n_x=6, n_y=7, shift=shift)
    ours = weat_test(X, Y, A, B)
    assert ours.exact and ours.n_partitions == 1716
    reference = scipy_reference(X, Y, A, B, n_resamples=10**6)  # >= C(13, 6): scipy enumerates too
    assert ours.p_value == pytest.approx(reference.pvalue, abs=1e-12)


def test_monte_carlo_p_value_close_to_exact():
    X, Y, A, B = planted(3, n_x=8, n_y=8, shift=0.02)
    exact = weat_test(X, Y, A, B)
    monte_carlo = weat_test(X, Y, A, B, n_permutations=100_000, max_exact=1000, seed=1)
    assert exact.exact and not monte_carlo.exact and monte_carlo.n_partitions == 100_000
    # binomial standard error of p from 100,000 draws is below 0.0016
    assert abs(monte_carlo.p_value - exact.p_value) < 0.006
    assert 0.1 < exact.p_value < 0.9  # the comparison above is not trivial


def test_monte_carlo_matches_scipy_when_partitions_exceed_the_exact_limit():
    X, Y, A, B = planted(4, n_x=15, n_y=15, shift=0.05)  # C(30, 15) = 155 million partitions
    ours = weat_test(X, Y, A, B, n_permutations=100_000, seed=2)
    assert not ours.exact
    reference = scipy_reference(X, Y, A, B, n_resamples=100_000)
    assert abs(ours.p_value - reference.pvalue) < 0.01
    assert weat_p_value(X, Y, A, B, n_permutations=100_000, seed=2) == ours.p_value  # seeded


def test_effect_size_is_antisymmetric_and_scale_free():
    X, Y, A, B = planted(5)
    d = weat_effect_size(X, Y, A, B)
    assert d > 0.8  # the planted association is large
    assert weat_effect_size(Y, X, A, B) == pytest.approx(-d)
    assert weat_effect_size(X, Y, B, A) == pytest.approx(-d)
    assert weat_effect_size(3 * X, Y, A, 0.5 * B) == pytest.approx(d)


def test_zero_vector_raises():
    with pytest.raises(ValueError, match="zeros"):
        weat_effect_size([[0, 0]], [[1, 0], [0, 1]], [[1, 0]], [[0, 1]])


def test_battery_reports_missing_words_and_skips_empty_sets():
    vectors = WordVectors("toy", ["rose", "ant", "love", "war", "tulip"],
                          np.array([[1, 0.1], [0.1, 1], [1, 0], [0, 1], [0.9, 0.2]]))
    tests = [{"id": "T1", "X_name": "flowers", "Y_name": "insects", "A_name": "pleasant", "B_name": "unpleasant",
              "X": ["Rose", "tulip", "daisy"], "Y": ["ant"], "A": ["love"], "B": ["war"]},
             {"id": "T2", "X_name": "x", "Y_name": "y", "A_name": "a", "B_name": "b",
              "X": ["rose"], "Y": ["ant"], "A": ["nothing"], "B": ["war"]}]
    table = run_weat_battery(vectors.lookup, tests, name="toy")
    first, second = table.iloc[0], table.iloc[1]
    assert first.missing == "X: daisy" and first.n_X == 2  # "Rose" found as "rose"
    assert first.effect_size > 0 and first.exact
    assert np.isnan(second.effect_size) and "A" in second.note and "A: nothing" in second.missing
    # a set that lost words is flagged: 2 of X's 3 words found, so not the published test
    assert first.words_missing == 1 and first.found_share == pytest.approx(2 / 3)
    assert not first.complete and "incomplete" in first.note and not second.complete
    lenient = run_weat_battery(vectors.lookup, tests[:1], name="toy", min_found_share=0.6).iloc[0]
    assert lenient.complete and lenient.note == ""


def test_caliskan_word_lists_are_whole_words():
    from vlbias.weat import caliskan_tests

    tests = {test["id"]: test for test in caliskan_tests()}
    assert tests["WEAT10"]["B"][-1] == "failure"
    # the paper's lists hold no stems: every word is in GloVe 6B's vocabulary, or is a name
    from vlbias.harms.word_vectors import load_word_vectors

    try:
        vectors = load_word_vectors("glove-6b-50d")
    except FileNotFoundError as error:
        pytest.skip(str(error))
    lost = {(test["id"], key): vectors.lookup(test[key])[2] for test in tests.values() for key in "AB"}
    assert not any(lost.values()), lost


def test_word2vec_binary_and_text_readers(tmp_path):
    words, matrix = ["he", "she"], np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    binary = tmp_path / "v.bin"
    with open(binary, "wb") as handle:
        handle.write(b"2 3\n")
        for word, row in zip(words, matrix):
            handle.write(word.encode() + b" " + row.astype("<f4").tobytes() + b"\n")
    text = tmp_path / "v.txt"
    text.write_text("2 3\n" + "".join(f"{w} {' '.join(map(str, r))}\n" for w, r in zip(words, matrix)))
    for loaded in (load_word2vec_binary(binary), load_text_vectors(text)):
        assert loaded.words == words
        np.testing.assert_array_equal(loaded.vectors, matrix)


def test_sentence_encoder_mean_pools_unit_rows_and_batches_consistently():
    from vlbias.models import load_sentence_encoder
    from vlbias.weat import sentence_embedder

    encode = load_sentence_encoder("tiny:mlm")
    texts = ["this is a nurse .", "the doctor said that he was late .", "she"]
    together = encode(texts, batch_size=3, progress=False)
    alone = np.vstack([encode([t], progress=False) for t in texts])
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(together, alone, atol=1e-5)  # padding does not leak into the mean
    vectors, sentences, missing = sentence_embedder(encode, templates=("This is {}.", "{} is here."))(["nurse", "pilot"])
    assert sentences == ["This is nurse.", "nurse is here.", "This is pilot.", "pilot is here."] and missing == []
    assert vectors.shape[0] == 4


def test_published_vector_files_are_read_from_the_data_folder(tmp_path, monkeypatch):
    from vlbias.harms.word_vectors import WORD_VECTOR_FILES, load_word_vectors

    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"glove\.840B\.300d\.txt.*nlp\.stanford\.edu.*VLBIAS_DATA_DIR"):
        load_word_vectors("glove-840b-300d")
    with pytest.raises(FileNotFoundError, match="code.google.com/archive/p/word2vec"):
        load_word_vectors("word2vec-googlenews-300d")
    folder = tmp_path / "word_vectors"
    folder.mkdir()
    (folder / "glove.840B.300d.txt").write_text("He 1 0 0\nshe 0 1 0\n")
    with open(folder / "GoogleNews-vectors-negative300.bin", "wb") as handle:
        handle.write(b"1 3\nnurse " + np.array([0, 0, 1], dtype="<f4").tobytes())
    glove, word2vec = load_word_vectors("glove-840b-300d"), load_word_vectors("word2vec-googlenews-300d")
    assert glove.name == "glove-840b-300d" and glove.words == ["He", "she"]
    assert word2vec.name == "word2vec-googlenews-300d" and word2vec.words == ["nurse"]
    # the full profile measures on them first; the small vectors follow as a comparison
    from pathlib import Path

    from vlbias import profiles

    root = Path(__file__).parents[2]
    specs = profiles.notebook_parameters(root, "03b_weat", profiles.plan_run(root, "full", ["03b_weat"]))["word_vector_specs"]
    assert specs[:2] == list(WORD_VECTOR_FILES) and "glove-6b-50d" in specs[2:]


@pytest.mark.parametrize("measure", [weat_effect_size, weat_test, weat_p_value])
@pytest.mark.parametrize("bad", ["X", "Y", "A", "B"])
def test_bad_rows_and_dimensions_are_named_by_their_set(measure, bad):
    sets = {name: np.random.default_rng(i).normal(size=(3, 4)) for i, name in enumerate("XYAB")}
    zero = dict(sets, **{bad: np.vstack([sets[bad][:2], np.zeros(4)])})
    with pytest.raises(ValueError, match=rf"^{bad} has 1 row\(s\) of zeros \(first: row 2\)"):
        measure(*zero.values())
    if bad in "AB":  # the attributes must have the targets' dimension
        wide = dict(sets, **{bad: np.ones((2, 5))})
        with pytest.raises(ValueError, match=rf"^{bad} has vectors of dimension 5, the others 4"):
            measure(*wide.values())


def test_monte_carlo_seed_defaults_to_zero_and_is_passed_on():
    rng = np.random.default_rng(4)
    X, Y, A, B = (rng.normal(size=(8, 5)) for _ in range(4))  # 12,870 partitions: Monte Carlo below that
    options = dict(n_permutations=500, max_exact=100)
    scores = association_scores(X, A, B), association_scores(Y, A, B)
    by_seed = {seed: weat_test_from_scores(*scores, seed=seed, **options).p_value for seed in (0, 5)}
    assert by_seed[0] != by_seed[5]  # 500 draws: the seed shows in the p-value
    assert weat_test_from_scores(*scores, **options).p_value == by_seed[0]
    assert weat_test(X, Y, A, B, **options).p_value == weat_p_value(X, Y, A, B, **options) == by_seed[0]
    assert weat_test(X, Y, A, B, seed=5, **options).p_value == weat_p_value(X, Y, A, B, seed=5, **options) == by_seed[5]


def test_score_errors_name_their_argument():
    for function in (effect_size_from_scores, weat_test_from_scores):
        with pytest.raises(ValueError, match=r"^scores_x has 1 row\(s\) with NaN"):
            function([0.1, np.nan], [0.2, 0.3])
        with pytest.raises(ValueError, match=r"^scores_y has 1 row\(s\) with NaN"):
            function([0.1, 0.4], [np.inf, 0.3])
    with pytest.raises(ValueError, match=r"^the effect size needs at least 3 target words in X and Y together\.$"):
        effect_size_from_scores([0.1], [0.2])
    for x, y in (([], [0.2, 0.3]), ([0.2, 0.3], [])):
        with pytest.raises(ValueError, match=rf"^both target sets need words, got \|X\|={len(x)}, \|Y\|={len(y)}\.$"):
            weat_test_from_scores(x, y)
    one = weat_test_from_scores([0.5], [0.1, 0.2])  # one word in X is a test (3 partitions)
    assert (one.n_x, one.n_y, one.n_partitions, one.exact) == (1, 2, 3, True) and one.p_value == pytest.approx(1 / 3)


def test_exact_up_to_max_exact_partitions_inclusive():
    scores_x, scores_y = [0.3, 0.1, 0.25], [0.0, 0.2, 0.05, 0.15]  # 35 partitions
    assert weat_test_from_scores(scores_x, scores_y, max_exact=35).exact
    monte_carlo = weat_test_from_scores(scores_x, scores_y, n_permutations=200, max_exact=34)
    assert not monte_carlo.exact and monte_carlo.n_partitions == 200 and (monte_carlo.n_x, monte_carlo.n_y) == (3, 4)


def test_ties_off_by_float_rounding_count_at_any_scale():
    # X and Y sum to exactly 1474369.809 in decimal; in floats Y's sum is 2.3e-10 lower. Subsets of two
    # with a sum >= X's, by exact decimal arithmetic: X, Y, {b, c}, {b, d}: 4 of 6
    from decimal import Decimal
    from itertools import combinations

    words = ["503626.972", "970742.837", "632270.798", "842099.011"]
    exact = [Decimal(w) for w in words]
    expected = np.mean([sum(exact[i] for i in pair) >= exact[0] + exact[1] for pair in combinations(range(4), 2)])
    values = [float(w) for w in words]
    assert values[2] + values[3] != values[0] + values[1] and expected == 4 / 6
    assert weat_test_from_scores(values[:2], values[2:]).p_value == pytest.approx(expected)


def test_missing_words_are_abbreviated_per_set_with_the_rest_counted():
    from vlbias.weat import abbreviated_missing

    missing = "X: aster, clover, hyacinth, marigold, azalea, crocus; Y: bedbug; A: caress"
    assert abbreviated_missing(missing) == "X: aster, clover, hyacinth, marigold, … (+2); Y: bedbug; A: caress"
    assert abbreviated_missing(missing, per_set=1) == "X: aster, … (+5); Y: bedbug; A: caress"
    assert abbreviated_missing("") == abbreviated_missing(None) == ""
    with pytest.raises(ValueError, match="per_set=0"):
        abbreviated_missing(missing, per_set=0)
