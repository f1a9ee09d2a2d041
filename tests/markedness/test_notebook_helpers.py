"""The helpers 01a and 01b call (they were functions in the notebooks): selection, labels, styling, figures."""

from functools import partial

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy.spatial.distance import pdist  # noqa: E402

from vlbias import markedness as mk  # noqa: E402


def records_and_embeddings(seed=0):
    rng = np.random.default_rng(seed)
    records = pd.DataFrame({"race": ["White"] * 5 + ["Black"] * 4 + ["Indian"] * 3,
                            "gender": ["Female", "Male"] * 6})
    return records, rng.normal(size=(len(records), 6))


def test_self_similarity_by_measures_only_the_selected_records_and_names_the_groups():
    records, x = records_and_embeddings()
    where = (records.race != "Indian").to_numpy()
    table = mk.self_similarity_by(records, x, ["race", "gender"], where=where, estimator="balanced",
                                  repetitions=50, seed=0)
    assert table["group"].tolist() == ["White, Female", "White, Male", "Black, Female", "Black, Male"]
    white_female = x[((records.race == "White") & (records.gender == "Female")).to_numpy()]
    expected = 1 - pdist(white_female, "cosine").mean()
    assert table.set_index("group").loc["White, Female", "self_similarity"] == pytest.approx(expected)
    # a string key and no selection: every record, one group per label, in the paper's order
    assert mk.self_similarity_by(records, x, "race", repetitions=10)["group"].tolist() == ["Indian", "White", "Black"]


def test_unmarked_by_reads_the_named_family_and_selection():
    records, _ = records_and_embeddings()
    flags = pd.DataFrame({"race": [True] * 12, "gender": [True, False] * 6})
    rates = partial(mk.unmarked_by, records, flags)
    by_race = rates("gender", "race")
    # the gender labels' flags, counted per race: White has 3 of 5 at even positions
    assert by_race.set_index("group")["unmarked_%"].to_dict() == pytest.approx(
        {"White": 60.0, "Black": 50.0, "Indian": 100 / 3})
    only_black = rates("race", ["race", "gender"], where=(records.race == "Black").to_numpy())
    assert only_black["group"].tolist() == ["Black, Female", "Black, Male"] and (only_black["unmarked_%"] == 100).all()


def test_unmarked_columns_follow_the_balance_switch():
    table = mk.unmarked_table(pd.DataFrame({"race": ["White", "White", "Black"]}), np.array([1, 0, 1], bool), "race",
                              balance=True, repetitions=10)
    for balance in (False, True):
        assert set(mk.unmarked_columns(balance)) <= set(table.columns)
    assert mk.unmarked_columns(True)[0] == "balanced_%" and mk.unmarked_columns(False)[0] == "unmarked_%"


def test_styled_beside_published_keeps_one_family_and_drops_the_key_columns():
    ours = pd.DataFrame({"group": ["White", "Black"], "race": ["White", "Black"], "mean": [0.51234, 0.6]})
    published = pd.DataFrame({"family": ["race", "gender"], "group": ["White", "White"],
                              "measure": ["m", "m"], "value": [0.5, 0.9]})
    styled = mk.styled_beside_published(ours, "race", "cap", published=published, measure="m", precision=2,
                                        label="paper")
    assert list(styled.data.columns) == ["group", "mean", "paper"]
    assert styled.data["paper"].tolist()[0] == "0.5"  # the gender row's 0.9 is another family's
    html = styled.to_html()
    assert "cap" in html and "0.51" in html and "0.512" not in html


def test_bounds_check_can_keep_one_family():
    ours = pd.DataFrame({"group": ["White"], "rate": [40.0]})
    published = pd.DataFrame({"family": ["race", "gender"], "group": ["White", "White"],
                              "measure": ["r_min", "r_min"], "value": [30.0, 50.0], "where": ["", ""]})
    assert mk.bounds_check(ours, published, "r", "rate")["holds"].tolist() == [True, False]
    assert mk.bounds_check(ours, published, "r", "rate", family="race")["holds"].tolist() == [True]


def test_family_panels_are_as_wide_as_their_labels_and_carry_the_published_points():
    tables = {f: pd.DataFrame({"group": list(mk.LABEL_ORDER[f]), "v": 1.0, "lo": 0.5, "hi": 1.5})
              for f in ("race", "age", "gender")}
    published = pd.DataFrame({"family": ["age"], "measure": ["m"], "group": ["3-9"], "value": [2.0]})
    fig, axes = mk.plot_family_bars(tables, "v", "lo", "hi", {f: f for f in tables}, "y", published, "m")
    race, age, gender = (ax.get_position() for ax in axes)
    assert gender.width / race.width == pytest.approx(2 / 7, rel=0.05)  # side by side, each label the same room
    # age, the widest, has the second row to itself, as wide as race and gender with the gap between them
    assert (age.x0, age.x1) == pytest.approx((race.x0, gender.x1), abs=1e-6) and age.y1 < race.y0
    assert [ax.get_ylabel() for ax in axes] == ["y", "y", ""]
    assert [len(ax.patches) for ax in axes] == [7, 9, 2]
    crosses = [line for line in axes[1].lines if line.get_marker() == "x"]
    assert len(crosses) == 1 and crosses[0].get_ydata().tolist() == [2.0]
    plt.close(fig)


def test_plot_across_draws_each_series_values_in_its_familys_panel():
    # distinct values per (model, family, group): a panel showing another family's rows, a line
    # showing another model's values, or groups out of the table's order would change the data read back
    rows = [{"family": f, "group": g, "model": m, "value": 100 * i + 10 * j + k}
            for i, m in enumerate(("a", "b")) for j, f in enumerate(mk.FAMILIES)
            for k, g in enumerate(mk.LABEL_ORDER[f])]
    fig, axes = mk.plot_across(pd.DataFrame(rows), "value", "model", "y", title="by {family}", ylim=(0, 300))
    assert [ax.get_title() for ax in axes] == [f"by {f}" for f in mk.FAMILIES]
    assert [ax.get_ylabel() for ax in axes] == ["y", "", "y"] and axes[0].get_ylim() == (0, 300)  # the first column's
    for j, (ax, family) in enumerate(zip(axes, mk.FAMILIES)):
        labels = list(mk.LABEL_ORDER[family])
        assert [line.get_label() for line in ax.lines] == ["a", "b"]
        for i, line in enumerate(ax.lines):
            assert list(line.get_xdata()) == labels
            assert line.get_ydata().tolist() == [100 * i + 10 * j + k for k in range(len(labels))]
    assert [t.get_text() for t in axes[-1].get_legend().get_texts()] == ["a", "b"]
    plt.close(fig)


def test_families_by_age_draws_each_familys_table_in_age_order_with_its_band_and_crosses():
    # rows out of age order, and another table per family: the panels must sort by AGES and not mix tables
    def table(offset):
        return pd.DataFrame({"gender": ["Female", "Male"] * 2, "age": ["3-9", "3-9", "0-2", "0-2"],
                             "v": offset + np.array([3.0, 4, 1, 2]), "lo": offset + np.array([2.5, 3.5, 0.5, 1.5]),
                             "hi": offset + np.array([3.5, 4.5, 1.5, 2.5])})
    published = pd.DataFrame({"family": ["age", "gender", "age"], "measure": ["m", "m", "other"],
                              "group": ["Male, 3-9", "Female, 0-2", "Male, 0-2"], "value": [7.0, 8.0, 9.0]})
    fig, axes = mk.plot_families_by_age({"gender": table(0), "age": table(10)}, "v", "lo", "hi", "gender",
                                        {"gender": "G", "age": "A"}, "y", published, "m")
    assert [ax.get_title() for ax in axes] == ["G", "A"]
    for ax, offset, cross in zip(axes, (0, 10), (("Female", [0], [8.0]), ("Male", [1], [7.0]))):
        series = [line for line in ax.lines if line.get_marker() == "o"]
        assert [line.get_label() for line in series] == ["Female", "Male"]
        for line, expected in zip(series, ([1.0, 3.0], [2.0, 4.0])):  # ages 0-2 then 3-9
            assert line.get_xdata().tolist() == [0, 1]
            assert line.get_ydata().tolist() == [offset + v for v in expected]
        # the band spans lo..hi at each age: its polygon's y extremes per line
        for band, expected in zip(ax.collections, ([0.5, 3.5], [1.5, 4.5])):
            ys = band.get_paths()[0].vertices[:, 1]
            assert [ys.min(), ys.max()] == [offset + e for e in expected]
        crosses = [line for line in ax.lines if line.get_marker() == "x" and len(line.get_xdata())]
        colour = dict((line.get_label(), line.get_color()) for line in series)[cross[0]]
        assert [(c.get_xdata().tolist(), c.get_ydata().tolist(), c.get_color()) for c in crosses] == \
            [(cross[1], cross[2], colour)]
        assert ax.get_xticklabels()[0].get_text() == "0-2" and len(ax.get_xticks()) == 9
    plt.close(fig)
