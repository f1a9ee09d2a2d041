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
    assert len(re.findall(r"onclick=\"vlbiasSort\('vlbias-board-\d+', \d+\)\"", page)) == 9
    assert ">model ↕</th>" in page and ">95% low ↕</th>" in page
    assert '<td data-v="planted reporting">' in sortable_html(BOARD, labels={"planted": "planted reporting"})
    assert sortable_html(BOARD).split('id="')[1][:16] != page.split('id="')[1][:16]  # two tables on a page: two ids


def _full_card(spec="trained:face-clip"):
    from vlbias.cards import Card, Result

    results = [Result("unmarked rate (race labels)", "markedness", 0.5, 0.4, 0.6, group="White", interval="Wilson 95%", n=108),
               Result("unmarked rate (race labels)", "markedness", 0.2, 0.1, 0.3, group="Black", interval="Wilson 95%", n=108),
               Result("default-group unmarked gap (race)", "markedness", 0.3, 0.2, 0.4, group="White", order="absolute",
                      interval="Newcombe 95%", unit="share difference"),
               Result("ColorFoil accuracy (coco, k=1)", "colorfoil", 0.7, 0.6, 0.8, order="descending", unit="share"),
               Result("ColorFoil F1 (coco, k=1)", "colorfoil", 0.82, order="descending", note="the paper's F1")]
    reference = [{"measure": "unmarked rate (race labels)", "model": "CLIP ViT-B/32", "group": "White",
                  "estimate": 0.479, "source": "published"},
                 *({"measure": "ColorFoil accuracy (coco, k=1)", "model": model, "group": None, "estimate": value,
                    "source": "published"} for model, value in [("CLIP", 0.768), ("ViLT", 0.955), ("ALIGN", 0.86)])]
    return Card(model={"spec": spec, "kind": "image-text", "weights": "sha256:abc", "dtype": "float32"},
                provenance={"vlbias_version": "0.1", "code_revision": "abc1234", "profile": "demo",
                            "date": "2026-12-03T10:00:00+00:00", "data": {"fairface": "fairface/xyz"}},
                results=results, reference=reference)


def test_a_cards_page_tables_put_the_published_number_beside_the_same_measure_and_group():
    from vlbias.cards import Result
    from vlbias.leaderboard import card_tables

    tables = card_tables(_full_card())
    assert list(tables) == [("markedness", "unmarked rate"), ("markedness", "default-group unmarked gap"),
                            ("colorfoil", "ColorFoil accuracy"), ("colorfoil", "ColorFoil F1")]
    marked = tables[("markedness", "unmarked rate")].set_index(["measure", "group"])
    assert marked.loc[("unmarked rate (race labels)", "White"), "published"] == "0.479 (CLIP ViT-B/32)"
    assert marked.loc[("unmarked rate (race labels)", "Black"), "published"] == ""
    assert marked.loc[("unmarked rate (race labels)", "White"), "95% interval"] == "[0.400, 0.600]"
    accuracy, f1 = (tables[("colorfoil", kind)].set_index("measure") for kind in ("ColorFoil accuracy", "ColorFoil F1"))
    assert accuracy.loc["ColorFoil accuracy (coco, k=1)", "published"] == "0.768 to 0.955 (3 models)"
    assert f1.loc["ColorFoil F1 (coco, k=1)", "95% interval"] == "" and f1.loc["ColorFoil F1 (coco, k=1)", "estimate"] == "0.820"
    assert all("why undefined" not in table for table in tables.values())
    # an undefined result says so and why (the rehearsal's SD 1.4 card: a random annotator saw no person)
    card = _full_card()
    card.results.append(Result("ColorFoil accuracy (flickr30k, k=1)", "colorfoil", None, n=0, note="undefined: no pairs"))
    accuracy = card_tables(card)[("colorfoil", "ColorFoil accuracy")].set_index("measure")
    assert accuracy.loc["ColorFoil accuracy (flickr30k, k=1)", ["estimate", "why undefined"]].tolist() == [
        "undefined", "undefined: no pairs"]
    assert accuracy.loc["ColorFoil accuracy (coco, k=1)", "why undefined"] == ""


def test_a_cards_headlines_are_its_whole_model_numbers_and_gaps_and_its_provenance_every_field():
    from vlbias.leaderboard import headline_sentences, provenance_table

    lines = headline_sentences(_full_card())
    assert lines == ["**default-group unmarked gap (race)**: 0.300 [0.200, 0.400] (Newcombe 95%)",
                     "**ColorFoil accuracy (coco, k=1)**: 0.700 [0.600, 0.800]"]  # F1, without an interval: in the tables
    table = provenance_table(_full_card()).set_index("what")["value"]
    assert table["weights"] == "sha256:abc" and table["code revision"] == "abc1234" and table["data: fairface"] == "fairface/xyz"


def test_the_card_figure_draws_every_result_with_an_interval_a_panel_per_kind_of_measure():
    from vlbias.leaderboard import card_figure

    fig = card_figure(_full_card())
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["unmarked rate", "default-group unmarked gap", "ColorFoil accuracy"]  # F1 has no interval
    rates = fig.axes[0]
    assert [t.get_text() for t in rates.get_yticklabels()] == ["race, Black", "race, White"]  # the first on top
    assert np.allclose(rates.lines[0].get_data()[0], [0.2, 0.5])
    assert np.allclose([s[:, 0] for s in rates.collections[0].get_segments()], [[0.1, 0.3], [0.4, 0.6]])
    assert [ax.get_title() for ax in card_figure(_full_card(), max_rows=1).axes] == [
        "default-group unmarked gap", "ColorFoil accuracy"]  # a kind of measure with more rows: in the tables


def test_a_forest_plots_long_row_names_are_cut_at_a_word_so_the_figure_lays_out():
    """SEAT's rows are named by their tests ("WEAT3: European American names vs ... / Pleasant vs
    Unpleasant"): cut at a word to 48 characters with "…", they leave the panel room, and the figure
    lays out without matplotlib's warning that it could not."""
    import warnings

    from vlbias.leaderboard import MAX_NAME, _short, card_figure

    long = "WEAT3: European American names vs African American names / Pleasant vs Unpleasant"
    assert _short(long) == "WEAT3: European American names vs African…" and len(_short(long)) <= MAX_NAME
    assert _short("WEAT1: Flowers vs Insects") == "WEAT1: Flowers vs Insects"
    card = _card("lm", "language", 0.5, 0.1, 0.9, measure="SEAT effect size", group=long)
    # rows named as long as a setting and a test together (111 characters): uncut, they leave the
    # panel no room and matplotlib warns
    card.results += [Result("SEAT effect size", "harms", -0.2 + i / 10, -0.6 + i / 10, 0.2 + i / 10, order="absolute",
                            group=f"the model's last hidden state, WEAT{i}: European American names vs African American "
                                  "names / Pleasant vs Unpleasant") for i in range(4, 11)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Tight layout not applied" would raise here
        fig = card_figure(card)
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert names[-1] == _short(long) and all(len(name) <= MAX_NAME for name in names)


def test_the_boards_sentences_say_who_leads_and_whether_beyond_the_intervals():
    from vlbias.leaderboard import board_sentences, forest_grid, headline_measures, measure_table

    board = leaderboard([_card("planted", "image-text", 0.31, 0.22, 0.40), _card("control", "image-text", 0.09, 0.02, 0.17)])
    assert headline_measures(board) == ["gap"]
    lines = board_sentences(board, {"control": "uniform"})
    # closest to 0 first: the control's interval [0.02, 0.17] ends before the planted one's [0.22, 0.40] begins
    assert lines == ["**gap** (image-text models): first uniform, 0.090 [0.020, 0.170], ahead of planted, "
                     "0.310 [0.220, 0.400]: beyond the intervals."]
    overlapping = leaderboard([_card("a", "image-text", 0.10, 0.0, 0.3), _card("b", "image-text", 0.2, 0.1, 0.35)])
    assert board_sentences(overlapping)[0].endswith("within noise: the intervals overlap.")
    table = measure_table(board, "gap", {"control": "uniform"})
    assert table["model"].tolist() == ["uniform", "planted"] and table["beyond the next"].tolist() == ["yes", ""]
    fig = forest_grid(board, ["gap"], {"control": "uniform"})
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["planted", "uniform"]  # rank 1 on top
    # one panel per kind of measure: two settings of one measure share it, each model named with its setting
    cards = {spec: _card(spec, "image-text", e1, e1 - 0.1, e1 + 0.1, measure="accuracy (k=1)", order="descending")
             for spec, e1 in [("a", 0.7), ("b", 0.6)]}
    for spec, e2 in [("a", 0.5), ("b", 0.55)]:
        cards[spec].results.append(Result("accuracy (k=2)", "colorfoil", e2, e2 - 0.1, e2 + 0.1, order="descending"))
    settings = leaderboard([*cards.values(), _card("c", "language", 0.2, 0.1, 0.3, measure="accuracy (k=1)",
                                                   order="descending")])
    fig = forest_grid(settings, headline_measures(settings))
    assert [ax.get_title() for ax in fig.axes] == ["accuracy: image-text models", "accuracy: language models"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a (k=2)", "b (k=2)", "b (k=1)", "a (k=1)"]
    assert headline_measures(leaderboard([_card("f1", "image-text", 0.8, None, None, measure="F1", order="descending")])) == []
    with pytest.raises(ValueError, match="none of \\['nothing'\\] has ranked rows"):
        forest_grid(board, ["nothing"])


def test_the_board_keeps_the_cards_order_of_measures_and_groups():
    """A family's labels in their order ("0-2" before "10-19", not as strings sort), measures as the
    cards list them."""
    groups = ["0-2", "3-9", "10-19", "more than 70"]
    card = Card(model={"spec": "m", "kind": "image-text", "weights": "w"},
                provenance={"vlbias_version": "0", "profile": "demo", "date": "2026-12-03T10:00:00+00:00"},
                results=[Result("unmarked rate (age labels)", "markedness", 0.1, group=group) for group in groups]
                + [Result("ColorFoil accuracy (coco, k=1)", "colorfoil", 0.5)])
    board = leaderboard([card])
    assert board["group"].tolist() == [*groups, ""]
    assert list(dict.fromkeys(board["measure"])) == ["unmarked rate (age labels)", "ColorFoil accuracy (coco, k=1)"]


def test_a_cards_failed_measures_show_in_a_warning_box_each_with_its_error():
    from IPython.core.interactiveshell import InteractiveShell

    from vlbias.leaderboard import card_failures_box

    card = _full_card()
    assert card_failures_box(card).data == ""
    card.failures = [{"measure": "CADS change", "error": "KeyError: 'x'"}]
    box = card_failures_box(card).data
    assert "1 of the card's measures failed" in box and "<code>CADS change</code> (audit): KeyError: &#x27;x&#x27;" in box
    InteractiveShell.clear_instance()
