"""Self-similarity estimators, markedness tables and gap tests against independent computations."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.spatial.distance import pdist

from vlbias.markedness import (balanced_draws, balanced_moments, draw_subsets, extremes, rate_gap_test,
                               released_code_draws, released_code_expectation, self_similarity_gap_test,
                               self_similarity_table, subset_self_similarity, unmarked_flags,
                               unmarked_table)
from vlbias.metrics import self_similarity
from vlbias.stats import unit_rows


def planted_group(n: int, rho: float, dim: int, offset: int, rng) -> np.ndarray:
    """n unit vectors whose pairwise cosines are all exactly rho: sqrt(rho)·u + sqrt(1-rho)·e_i,
    with u and the e_i orthonormal (a random rotation keeps the coordinates unremarkable)."""
    basis = np.eye(dim)
    x = np.sqrt(rho) * basis[offset] + np.sqrt(1 - rho) * basis[offset + 1: offset + 1 + n]
    return x


def pdist_self_similarity(x: np.ndarray) -> float:
    return float(np.mean(1 - pdist(x, "cosine")))


@pytest.fixture
def planted():
    rng = np.random.default_rng(0)
    sizes, rhos = [40, 25, 60], [0.7, 0.35, 0.55]
    dim = sum(sizes) + len(sizes) + 1
    blocks, offset = [], 0
    for n, rho in zip(sizes, rhos):
        blocks.append(planted_group(n, rho, dim, offset, rng))
        offset += n + 1
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    scale = rng.uniform(0.5, 3.0, size=(sum(sizes), 1))  # raw embeddings need not be unit length
    x = scale * (np.concatenate(blocks) @ rotation)
    records = pd.DataFrame({"race": np.repeat(["White", "Black", "Indian"], sizes)})
    return records, x, dict(zip(["White", "Black", "Indian"], rhos))


def test_planted_self_similarity_recovered_exactly(planted):
    records, x, rhos = planted
    table = self_similarity_table(records, x, "race", repetitions=50, dtype=np.float64)
    assert table.race.tolist() == ["Indian", "White", "Black"]  # the paper's label order
    for _, row in table.iterrows():
        rho = rhos[row.race]
        # every subset of a planted group has self-similarity rho: the draws, their mean and the
        # exact columns all recover it
        assert row.self_similarity == pytest.approx(rho, abs=1e-9)
        assert row["mean"] == pytest.approx(rho, abs=1e-9)
        if row.n == row.sample_size:  # the smallest group, taken whole by every draw: exact, with no interval
            assert np.isnan(row.ci_low) and np.isnan(row.ci_high) and row.interval == "exact: all 25 pictures"
        else:
            assert row.ci_low == pytest.approx(rho, abs=1e-9) and row.ci_high == pytest.approx(rho, abs=1e-9)
        assert row.exact_mean == pytest.approx(rho, abs=1e-9) and row.exact_sd == pytest.approx(0, abs=1e-6)
        assert row.sample_size == 25


def test_each_draw_equals_pdist_of_its_subset():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(90, 16)) + 0.5
    unit = unit_rows(x)
    for m in (5, 80):  # 80 of 90: the sum comes from the total minus the 10 left out, and m > 64 uses BLAS
        chosen, left_out = draw_subsets(np.random.default_rng(m), 90, m, 7)
        values = subset_self_similarity(unit, chosen, left_out)
        for row, value in zip(chosen, values):
            assert len(set(row.tolist())) == m
            assert value == pytest.approx(pdist_self_similarity(x[row]), abs=1e-9)
            assert value == pytest.approx(self_similarity(x[row]), abs=1e-9)


def test_draw_subsets_are_uniform():
    chosen, left_out = draw_subsets(np.random.default_rng(0), 10, 3, 20_000)
    assert chosen.shape == (20_000, 3) and left_out.shape == (20_000, 7)
    assert all(sorted(c + l) == list(range(10)) for c, l in zip(chosen[:50].tolist(), left_out[:50].tolist()))
    inclusion = np.bincount(chosen.ravel(), minlength=10) / 20_000
    assert np.allclose(inclusion, 0.3, atol=0.015)  # each item in a 3-of-10 subset with probability 0.3


def test_balanced_moments_match_enumeration_of_all_subsets():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(8, 4)) + np.array([1.0, 0, 0, 0])
    unit = unit_rows(x)
    for m in (2, 3, 5, 8):
        values = [pdist_self_similarity(x[list(c)]) for c in itertools.combinations(range(8), m)]
        mean, sd = balanced_moments(unit, m)
        assert mean == pytest.approx(np.mean(values), abs=1e-12)
        assert sd == pytest.approx(np.std(values), abs=1e-12)
    # and the Monte Carlo draws agree with the exact moments
    draws = balanced_draws(unit, 3, 40_000, np.random.default_rng(1))
    mean, sd = balanced_moments(unit, 3)
    assert draws.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(40_000))
    assert draws.std() == pytest.approx(sd, rel=0.03)


def test_released_code_closed_form_matches_enumeration_and_monte_carlo():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 6)) + 0.3
    unit, s = unit_rows(x), self_similarity(x)
    # every ordered draw of 3 with replacement, equally likely: the exact expectation
    every_draw = np.array(list(itertools.product(range(4), repeat=3)))
    exact = subset_self_similarity(unit, every_draw).mean()
    assert released_code_expectation(s, 4) == pytest.approx(exact, abs=1e-12)
    assert released_code_expectation(s, 4) - s == pytest.approx((1 - s) / 4)  # the upward bias
    draws = released_code_draws(unit, 22, 20_000, np.random.default_rng(0))
    assert draws.mean() == pytest.approx(exact, abs=4 * draws.std() / np.sqrt(20_000))
    assert draws.mean() > s + 0.5 * (1 - s) / 4  # and it is visibly biased


def test_released_code_table_columns(planted):
    records, x, rhos = planted
    table = self_similarity_table(records, x, "race", estimator="released-code", repetitions=4_000, seed=1)
    for _, row in table.iterrows():
        rho = rhos[row.race]
        assert row.expected == pytest.approx(rho + (1 - rho) / row.n)
        assert row.bias == pytest.approx((1 - rho) / row.n)
        # each draw's mean cosine is rho except for repeated images (cosine 1): standard error tiny
        assert row["mean"] == pytest.approx(row.expected, abs=0.01)


def test_balanced_table_sample_size_is_capped_by_the_smallest_group(planted):
    records, x, _ = planted
    assert self_similarity_table(records, x, "race", sample_size=26, repetitions=5).sample_size.tolist() == [25] * 3
    assert self_similarity_table(records, x, "race", sample_size=7, repetitions=5).sample_size.tolist() == [7] * 3
    with pytest.raises(ValueError, match="at least 2"):
        self_similarity_table(records, x, "race", sample_size=1)
    with pytest.raises(ValueError, match="estimator"):
        self_similarity_table(records, x, "race", estimator="bootstrap")


def test_unmarked_flags_on_a_hand_built_example():
    # 2-d embeddings: images at angles, prompts at angles; the person prompt at 0 degrees
    def at(degrees):
        radians = np.deg2rad(np.atleast_1d(degrees))
        return np.stack([np.cos(radians), np.sin(radians)], axis=1)

    directions = {"a photo of a person": 0, "A": 40, "B": -40, "C": 90}
    prompts = {"letters": {"a": "A", "b": "B"}, "single": {"c": "C"}}
    images = at([0, 30, -35, 60, 80]) * 3.0
    flags = unmarked_flags(images, lambda texts: at([directions[t] for t in texts]), prompts)
    # cos to the person prompt vs the best label: 0°: person wins; 30°: A (10° away) wins; -35°: B wins;
    # 60° against A (20°) and C (30°): marked both; 80°: A is 40° and C 10° away, person 80°: marked
    assert flags["letters"].tolist() == [True, False, False, False, False]
    assert flags["single"].tolist() == [True, True, True, False, False]


def test_unmarked_table_intersections_and_balancing():
    records = pd.DataFrame({"gender": ["Male"] * 6 + ["Female"] * 4, "age": ["3-9", "0-2"] * 5})
    flags = np.array([1, 1, 0, 1, 0, 0, 1, 0, 0, 0], bool)
    table = unmarked_table(records, flags, ["gender", "age"])
    assert table[["gender", "age"]].values.tolist() == [["Female", "0-2"], ["Female", "3-9"],
                                                        ["Male", "0-2"], ["Male", "3-9"]]
    assert table["unmarked_%"].tolist() == pytest.approx([0, 50, 200 / 3, 100 / 3])
    ci = stats.binomtest(2, 3).proportion_ci(method="wilson")
    assert table["ci_low_%"].iloc[2] == pytest.approx(100 * ci.low)
    balanced = unmarked_table(records, flags, "gender", balance=True, repetitions=20_000, seed=0)
    male = balanced.set_index("gender").loc["Male"]
    assert male.sample_size == 4
    # 4 of Male's 6 (3 unmarked): hypergeometric mean 3/6, min 1/4 and max 3/4
    assert male["balanced_%"] == pytest.approx(50, abs=1)
    assert male["balanced_low_%"] == 25 and male["balanced_high_%"] == 75
    female = balanced.set_index("gender").loc["Female"]  # the smallest group is kept whole: exact, no interval
    assert female["balanced_%"] == 25 and np.isnan(female["balanced_low_%"]) and np.isnan(female["balanced_high_%"])


def test_rate_gap_test_matches_the_exact_hypergeometric_p_value():
    a = np.array([1] * 12 + [0] * 18, bool)
    b = np.array([1] * 5 + [0] * 35, bool)
    result = rate_gap_test(a, b, permutations=50_000, seed=0)
    observed = 12 / 30 - 5 / 40
    assert result["gap"] == pytest.approx(100 * observed)
    # exact two-sided permutation p-value: P(|X/30 - (17-X)/40| >= observed), X ~ Hypergeom(70, 17, 30)
    support = np.arange(0, 18)
    pmf = stats.hypergeom(70, 17, 30).pmf(support)
    exact = pmf[np.abs(support / 30 - (17 - support) / 40) >= observed - 1e-12].sum()
    assert 0.005 < exact < 0.5  # a p-value the test can resolve
    assert result["p_value"] == pytest.approx(exact, abs=0.006)


def test_self_similarity_gap_test_detects_a_planted_gap_only_when_there_is_one():
    rng = np.random.default_rng(4)
    centre = rng.normal(size=32)
    tight = centre + 0.6 * rng.normal(size=(40, 32)) * np.linalg.norm(centre) / np.sqrt(32)
    loose = centre + 1.6 * rng.normal(size=(40, 32)) * np.linalg.norm(centre) / np.sqrt(32)
    planted = self_similarity_gap_test(tight, loose, permutations=500, seed=0)
    assert planted["gap"] == pytest.approx(self_similarity(tight) - self_similarity(loose))
    assert planted["gap"] > 0 and planted["p_value"] < 0.01
    same = self_similarity_gap_test(loose[:20], loose[20:], permutations=500, seed=0)
    assert same["p_value"] > 0.05


def test_extremes_lists_the_top_and_bottom_groups():
    table = pd.DataFrame({"group": list("abcdef"), "mean": [0.5, 0.9, 0.1, 0.7, 0.3, 0.6]})
    result = extremes(table, k=2)
    assert result.group.tolist() == ["b", "d", "c", "e"]
    assert result["rank"].tolist() == [1, 2, 6, 5] and result.end.tolist() == ["most"] * 2 + ["least"] * 2


def test_balanced_moments_of_tiny_groups():
    x = np.array([[1.0, 0.0], [0.6, 0.8]])
    assert balanced_moments(unit_rows(x), 2) == pytest.approx((0.6, 0.0))
    x3 = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    values = [pdist_self_similarity(x3[list(c)]) for c in itertools.combinations(range(3), 2)]
    assert balanced_moments(unit_rows(x3), 2) == pytest.approx((np.mean(values), np.std(values)))


def test_released_code_moments_match_enumeration_of_all_draws():
    from vlbias.markedness import released_code_moments

    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 5)) + 0.4
    unit = unit_rows(x)
    for draws in (2, 3, 4):
        every_draw = np.array(list(itertools.product(range(4), repeat=draws)))  # equally likely
        values = subset_self_similarity(unit, every_draw)
        mean, sd = released_code_moments(unit, draws)
        assert mean == pytest.approx(values.mean(), abs=1e-12)
        assert sd == pytest.approx(values.std(), abs=1e-12)


def test_moments_assembled_from_cells_equal_direct_moments():
    from vlbias.markedness import cell_moments

    rng = np.random.default_rng(8)
    records = pd.DataFrame({"race": rng.choice(["White", "Black"], 120), "gender": rng.choice(["Male", "Female"], 120),
                            "age": rng.choice(["0-2", "30-39", "more than 70"], 120)})
    x = rng.normal(size=(120, 6)) + 0.5
    cells = cell_moments(records, x)
    for by in ("gender", ["race", "age"]):
        direct = self_similarity_table(records, x, by, interval="normal")
        assembled = self_similarity_table(records, x, by, interval="normal", cells=cells)
        pd.testing.assert_frame_equal(direct, assembled, rtol=1e-10)
    # a subset made of whole cells works; cells from other records are refused
    white = (records.race == "White").to_numpy()
    subset = self_similarity_table(records[white], x[white], "age", interval="normal", cells=cells)
    assert subset.self_similarity.tolist() == pytest.approx(
        [self_similarity(x[white & (records.age == a).to_numpy()]) for a in subset.age])
    with pytest.raises(ValueError, match="cells"):
        self_similarity_table(records[:50], x[:50], "age", cells=cells)


def test_normal_and_monte_carlo_intervals_agree():
    rng = np.random.default_rng(9)
    records = pd.DataFrame({"gender": ["Male"] * 300 + ["Female"] * 120})
    x = rng.normal(size=(420, 8)) + 0.4
    for estimator in ("balanced", "released-code"):
        normal = self_similarity_table(records, x, "gender", estimator=estimator, interval="normal")
        simulated = self_similarity_table(records, x, "gender", estimator=estimator, interval="monte-carlo",
                                          repetitions=20_000, dtype=np.float64)
        male_sd = normal.exact_sd.iloc[1]
        assert simulated["mean"].iloc[1] == pytest.approx(normal["mean"].iloc[1], abs=4 * male_sd / np.sqrt(20_000))
        if estimator == "balanced":  # 120 images a draw: close to normal. 22 draws are skewed: no such claim
            assert simulated.ci_low.iloc[1] == pytest.approx(normal.ci_low.iloc[1], abs=0.1 * male_sd)
            assert simulated.ci_high.iloc[1] == pytest.approx(normal.ci_high.iloc[1], abs=0.1 * male_sd)
    auto = self_similarity_table(records, x, "gender", repetitions=100, monte_carlo_budget=100 * 120 * 8)
    # Male keeps 120 of 300 (120 summed per draw: within budget); Female is kept whole (nothing drawn): exact
    assert auto.interval.tolist()[0] == "exact: all 120 pictures" and np.isnan(auto.ci_low.iloc[0])
    assert auto.interval.tolist()[1].startswith("monte-carlo")
    auto = self_similarity_table(records, x, "gender", repetitions=100, monte_carlo_budget=100 * 119 * 8)
    assert auto.interval.tolist()[1] == "normal (exact moments)"



def test_extremes_default_ten_each_end_ranked_with_a_fresh_index():
    values = np.random.default_rng(0).permutation(25).astype(float)
    table = pd.DataFrame({"group": [f"g{int(v)}" for v in values], "mean": values}, index=range(100, 125))
    result = extremes(table)
    assert result.index.tolist() == list(range(20)) and result["end"].tolist() == ["most"] * 10 + ["least"] * 10
    assert result.columns.tolist() == ["rank", "group", "mean", "end"]
    assert result["rank"].tolist() == list(range(1, 11)) + list(range(25, 15, -1))
    assert result["mean"].tolist() == [24.0 - i for i in range(10)] + [float(i) for i in range(10)]


def test_self_similarity_errors_name_what_is_wrong():
    from vlbias.markedness import self_similarity_table
    from vlbias.markedness.self_similarity import released_code_moments

    records = pd.DataFrame({"race": ["White", "White", "Black"]})
    embeddings = np.random.default_rng(0).normal(size=(3, 4))
    for options, message in (({"estimator": "x"}, r"^estimator must be 'balanced' or 'released-code', got 'x'$"),
                             ({"interval": "x"}, r"^interval must be 'auto', 'monte-carlo' or 'normal', got 'x'$"),
                             ({"sample_size": 1}, r"^sample_size must be at least 2 images, got 1$")):
        with pytest.raises(ValueError, match=message):
            self_similarity_table(records, embeddings, "race", **options)
    with pytest.raises(ValueError, match=r"^3 records but 2 embeddings$"):
        self_similarity_table(records, embeddings[:2], "race")
    with pytest.raises(ValueError, match=r"^no group of \['race'\] has 2 or more images$"):
        self_similarity_table(records.iloc[1:], embeddings[1:], "race")
    with pytest.raises(ValueError, match=r"^the released-code estimator needs at least 2 draws, got 1$"):
        released_code_moments(unit_rows(embeddings), 1)
    with pytest.raises(ValueError, match=r"^subset size must be in 2\.\.3, got 4$"):
        balanced_moments(unit_rows(embeddings), 4)
    # two images are a group; sample size 2 is allowed
    table = self_similarity_table(records, embeddings, "race", sample_size=2, repetitions=50)
    assert table["race"].tolist() == ["White"] and table["n"].tolist() == [2]


def test_self_similarity_by_group_keeps_pairs_and_takes_one_or_several_keys():
    from vlbias.markedness import self_similarity_by_group

    records = pd.DataFrame({"race": ["White", "White", "Black", "Indian", "Indian", "Indian"],
                            "gender": ["Male", "Male", "Male", "Female", "Female", "Male"]})
    embeddings = np.random.default_rng(1).normal(size=(6, 4))
    by_race = self_similarity_by_group(records, embeddings, "race")
    assert by_race["race"].tolist() == ["Indian", "White"] and by_race["n"].tolist() == [3, 2]  # Black: one image
    assert by_race["self_similarity"].tolist() == pytest.approx([self_similarity(embeddings[3:]),
                                                                 self_similarity(embeddings[:2])])
    both = self_similarity_by_group(records, embeddings, ["race", "gender"])
    assert both[["race", "gender", "n"]].values.tolist() == [["Indian", "Female", 2], ["White", "Male", 2]]


def test_cells_must_be_keyed_finer_and_match_the_records():
    from vlbias.markedness import self_similarity_table
    from vlbias.markedness.self_similarity import cell_moments

    records = pd.DataFrame({"race": ["White", "White", "Black", "Black", "Indian"],
                            "gender": ["Male", "Female", "Male", "Male", "Female"]})
    embeddings = np.random.default_rng(2).normal(size=(5, 4))
    cells = cell_moments(records, embeddings, by=("race", "gender"))
    exact = self_similarity_table(records, embeddings, "race", interval="normal")
    assembled = self_similarity_table(records, embeddings, "race", interval="normal", cells=cells)
    pd.testing.assert_frame_equal(exact, assembled)
    same_keys = self_similarity_table(records, embeddings, ["race", "gender"], interval="normal",
                                      cells=cell_moments(records, embeddings, by=("race", "gender")))
    assert same_keys[["race", "gender"]].values.tolist() == [["Black", "Male"]]  # cells keyed exactly as the groups
    with pytest.raises(ValueError, match=r"^cells keyed by \['race'\] cannot be summed into groups of \['gender'\]$"):
        self_similarity_table(records, embeddings, "gender", cells=cell_moments(records, embeddings, by=("race",)))
    other = cell_moments(records.iloc[:4], embeddings[:4], by=("race", "gender"))
    with pytest.raises(ValueError, match=r"^the cells do not match these records \(cell \('Indian', 'Female'\)\): "
                                         r"pass cells computed from the same records, or cells=None$"):
        self_similarity_table(records, embeddings, "gender", cells=other)


def test_self_similarity_table_defaults():
    from vlbias.markedness import self_similarity_table

    records = pd.DataFrame({"race": ["White"] * 4 + ["Black"] * 3})
    embeddings = np.random.default_rng(3).normal(size=(7, 4))
    pd.testing.assert_frame_equal(self_similarity_table(records, embeddings, "race"),
                                  self_similarity_table(records, embeddings, "race", repetitions=10_000, seed=0))
    released = self_similarity_table(records, embeddings, "race", estimator="released-code")
    pd.testing.assert_frame_equal(released, self_similarity_table(records, embeddings, "race",
                                                                  estimator="released-code", draws=22))
    assert released["draws"].tolist() == [22, 22]
    from vlbias.markedness.self_similarity import released_code_moments

    five = self_similarity_table(records, embeddings, "race", estimator="released-code", draws=5, interval="normal")
    white = unit_rows(embeddings[:4])
    assert five.set_index("race").loc["White", ["exact_mean", "exact_sd"]].tolist() == pytest.approx(
        released_code_moments(white, 5))
    assert released_code_moments(white) == released_code_moments(white, 22)
    assert not released.equals(self_similarity_table(records, embeddings, "race", estimator="released-code", seed=1))


def test_moments_are_checked_and_sums_handle_every_subset_width():
    from vlbias.markedness.self_similarity import (GroupMoments, _row_sums, group_moments, released_code_moments,
                                                   subset_self_similarity)

    one = group_moments([[3.0, 4.0]])  # one image: moments exist, the released-code draws repeat it
    assert released_code_moments(one, 3) == pytest.approx((1.0, 0.0), abs=1e-6)
    bad = [(GroupMoments(0, np.zeros(2), np.zeros((2, 2))), "the moments of an empty group have no self-similarity"),
           (GroupMoments(1, np.array([np.nan, 0.0]), np.eye(2)), "the moments hold NaN or inf; recompute them from "
                                                                 "finite embeddings"),
           (GroupMoments(1, np.ones(2), np.array([[np.nan, 0.0], [0.0, 1.0]])), "the moments hold NaN or inf"),
           (GroupMoments(2, np.ones(2), 1.5 * np.eye(2)), "these moments are not of unit rows; build them with "
                                                          r"group_moments\(vectors\)")]
    for moments, message in bad:
        with pytest.raises(ValueError, match=rf"^unit_or_moments: {message}"):
            released_code_moments(moments, 2)
    with pytest.raises(ValueError, match=r"^vectors has 1 row\(s\) of zeros"):
        group_moments([[1.0, 0.0], [0.0, 0.0]])
    unit = unit_rows(np.random.default_rng(4).normal(size=(80, 3))).astype(np.float32)
    assert _row_sums(unit, np.zeros((2, 0), dtype=int)).tolist() == [[0.0] * 3] * 2
    assert _row_sums(unit, np.zeros((2, 0), dtype=int)).dtype == np.float32
    np.testing.assert_allclose(_row_sums(unit, np.array([[5], [7]])), unit[[5, 7]])
    wide = np.arange(70)[None, :]  # more than 64 per row: the indicator product, in the rows' dtype
    assert _row_sums(unit, wide).dtype == np.float32
    np.testing.assert_allclose(_row_sums(unit, wide)[0], unit[:70].sum(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match=r"^a subset needs at least 2 images for a pairwise mean, got 1$"):
        subset_self_similarity(unit, np.array([[3]]))
    # a complement as long as the subset: summed directly (not through the total)
    chosen, left = np.array([[0, 1]]), np.array([[2, 3]])
    assert subset_self_similarity(unit[:4], chosen, left) == pytest.approx(float(unit[0] @ unit[1]), rel=1e-5)


def test_draw_subsets_sizes_and_the_whole_group():
    rng = np.random.default_rng(0)
    chosen, left = draw_subsets(rng, 4, 1, 3)  # one of four is a subset
    assert chosen.shape == (3, 1) and left.shape == (3, 3)
    whole, none = draw_subsets(rng, 4, 4, 3)
    assert whole.tolist() == [[0, 1, 2, 3]] * 3 and none.shape == (3, 0) and none.dtype == np.int64
    for m in (0, 5):
        with pytest.raises(ValueError, match=rf"^subset size must be in 1\.\.4, got {m}$"):
            draw_subsets(rng, 4, m, 3)


def test_self_similarity_by_selects_records_names_groups_and_passes_options():
    from vlbias.markedness import self_similarity_by, self_similarity_table

    records = pd.DataFrame({"race": ["White", "White", "Black", "Black", "Black", "White"],
                            "gender": ["Male", "Male", "Female", "Female", "Male", "Female"]})
    embeddings = np.random.default_rng(5).normal(size=(6, 4))
    where = np.array([True, True, True, False, False, False])  # Black Female keeps one image: left out
    table = self_similarity_by(records, embeddings, ["race", "gender"], where=where, interval="normal")
    assert table["group"].tolist() == ["White, Male"]
    direct = self_similarity_table(records[where], embeddings[where], ["race", "gender"], interval="normal")
    pd.testing.assert_frame_equal(table.drop(columns="group"), direct)
    released = self_similarity_by(records, embeddings, "race", estimator="released-code", repetitions=20)
    assert released["group"].tolist() == ["White", "Black"] and (released["draws"] == 22).all()


def test_balanced_draws_are_the_same_bits_on_one_core_or_two():
    """A page, its card and a rerun on another machine draw the same Monte Carlo numbers: the sums of a
    draw (a BLAS product once a draw keeps more than 64 pictures) do not depend on how many threads BLAS
    is given. Before the product ran on one thread, 2 threads changed them in the 7th digit."""
    from threadpoolctl import threadpool_limits

    from vlbias.markedness.self_similarity import _row_sums

    unit = unit_rows(np.random.default_rng(0).normal(size=(1_080, 64)).astype(np.float32), dtype=np.float32)
    chosen, _ = draw_subsets(np.random.default_rng(1), 1_080, 540, 200)
    with threadpool_limits(1):
        one = _row_sums(unit, chosen)
    with threadpool_limits(2):
        two = _row_sums(unit, chosen)
    assert np.array_equal(one, two)
    np.testing.assert_allclose(one, np.stack([unit[row].sum(axis=0) for row in chosen]), rtol=1e-5, atol=1e-4)
