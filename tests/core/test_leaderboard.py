"""The leaderboard's views (vlbias.leaderboard): ranked rows of one measure, the forest plot's points
and bars at the board's own estimates and intervals, and the sortable table's cells."""

import re

import matplotlib
import numpy as np
import pytest

from vlbias.cards import Card, Result, leaderboard
from vlbias.leaderboard import forest_plot, ranked, sortable_html

matplotlib.use("Agg")


def _card(spec, kind, estimate, low, high, measure="gap", group=None, order="absolute"):
    return Card(model={"spec": spec, "kind": kind, "weights": f"sha256:{spec}"},
                provenance={"vlbias_version": "0", "profile": "demo", "date": "2026-12-03T10:00:00+00:00"},
                results=[Result(measure, "markedness", estimate, low, high, group=group, order=order,
                                interval="Newcombe 95%", unit="share difference")])


BOARD = leaderboard([_card("planted", "image-text", 0.31, 0.22, 0.40), _card("control", "image-text", 0.09, 0.02, 0.17),
                     _card("lm", "language", -0.05, -0.1, 0.0), _card("other", "image-text", 0.5, 0.4, 0.6, group="White")])


def test_ranked_takes_one_measure_and_group_and_names_what_exists():
    rows = ranked(BOARD, "gap")
    assert rows["spec"].tolist() == ["control", "planted", "lm"] and rows["rank"].tolist() == [1, 2, 1]
    assert ranked(BOARD, "gap", "White")["spec"].tolist() == ["other"]
    with pytest.raises(ValueError, match=r"no measure 'gaps' on the board; it holds \['gap'\]"):
        ranked(BOARD, "gaps")
    with pytest.raises(ValueError, match=r"has no group 'Male'; its groups are \['', 'White'\]"):
        ranked(BOARD, "gap", "Male")


def test_the_forest_plot_draws_each_kind_apart_with_rank_one_on_top():
    fig = forest_plot(BOARD, "gap", labels={"planted": "planted reporting"})
    image_text, language = fig.axes
    assert [tick.get_text() for tick in image_text.get_yticklabels()] == ["planted reporting", "control"]  # bottom up
    points = image_text.lines[0].get_data()
    assert np.allclose(points[0], [0.31, 0.09]) and np.allclose(points[1], [0, 1])
    segments = image_text.collections[0].get_segments()  # the interval bars, from ci_low to ci_high
    assert np.allclose([segment[:, 0] for segment in segments], [[0.22, 0.40], [0.02, 0.17]])
    assert language.get_title() == "language models" and "Newcombe 95%" in fig._suptitle.get_text()
    assert image_text.get_xlabel() == "gap (share difference)"


def test_the_sortable_table_keeps_values_to_sort_by_beside_the_text_shown():
    page = sortable_html(BOARD, caption="all results")
    assert page.count("<tr>") == 1 + len(BOARD) and "<caption>all results</caption>" in page
    assert '<td data-v="0.31">0.310</td>' in page and '<td data-v="planted">planted</td>' in page
    assert len(re.findall(r"onclick=\"vlbiasSort\('vlbias-board-\d+', \d+\)\"", page)) == 11
    assert sortable_html(BOARD).split('id="')[1][:16] != page.split('id="')[1][:16]  # two tables on a page: two ids
