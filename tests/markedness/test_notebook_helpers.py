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
    widths = [ax.get_position().width for ax in axes]
    assert widths[1] / widths[0] == pytest.approx(9 / 7, rel=0.05) and widths[2] / widths[0] == pytest.approx(2 / 7, rel=0.05)
    assert [ax.get_ylabel() for ax in axes] == ["y", "", ""]
    assert [len(ax.patches) for ax in axes] == [7, 9, 2]
    crosses = [line for line in axes[1].lines if line.get_marker() == "x"]
    assert len(crosses) == 1 and crosses[0].get_ydata().tolist() == [2.0]
    plt.close(fig)


def test_plot_across_draws_one_line_per_series_in_each_family():
    rows = [{"family": f, "group": g, "model": m, "value": 1.0}
            for m in ("a", "b") for f in mk.FAMILIES for g in mk.LABEL_ORDER[f]]
    fig, axes = mk.plot_across(pd.DataFrame(rows), "value", "model", "y", title="by {family}", ylim=(0, 100))
    assert [ax.get_title() for ax in axes] == [f"by {f}" for f in mk.FAMILIES]
    assert [len(ax.lines) for ax in axes] == [2, 2, 2] and axes[0].get_ylim() == (0, 100)
    assert [t.get_text() for t in axes[-1].get_legend().get_texts()] == ["a", "b"]
    plt.close(fig)


def test_families_by_age_gives_one_panel_per_family():
    table = pd.DataFrame({"gender": ["Female", "Male"] * 2, "age": ["0-2", "0-2", "3-9", "3-9"],
                          "v": [1.0, 2, 3, 4], "lo": 0.0, "hi": 5.0})
    fig, axes = mk.plot_families_by_age({"gender": table, "age": table}, "v", "lo", "hi", "gender",
                                        {"gender": "G", "age": "A"}, "y")
    assert [ax.get_title() for ax in axes] == ["G", "A"] and all(len(ax.lines) == 2 for ax in axes)
    plt.close(fig)
