"""The sentences Part I's pages compute from their tables (``markedness.findings``), and the note on a
text-side WEAT of a model trained in the book, checked on hand-made tables."""

import json

import pandas as pd

from vlbias import markedness as mk
from vlbias.markedness import controls


def _table(rows):
    return pd.DataFrame(rows, columns=["group", "rate", "low", "high"])


def test_a_top_group_clear_of_the_runner_up_is_beyond_noise():
    text = mk.ranking_sentence(_table([("A", 40.0, 30.0, 50.0), ("B", 10.0, 5.0, 20.0), ("C", 2.0, 0.5, 6.0)]),
                               "group", "rate", "low", "high", "unmarked rate", unit="%")
    assert text.startswith("Highest unmarked rate: **A**, 40.0% [30.0, 50.0]%; lowest: **C**, 2.0% [0.5, 6.0]%.")
    assert "A's interval lies above the runner-up's (B, [5.0, 20.0]%): the top of the ranking is beyond" in text


def test_overlapping_intervals_are_within_noise():
    text = mk.ranking_sentence(_table([("A", 40.0, 30.0, 50.0), ("B", 35.0, 25.0, 45.0)]), "group", "rate", "low",
                               "high", "unmarked rate")
    assert "overlaps the runner-up's (B" in text and "within sampling noise" in text


def test_degenerate_tables_say_why_there_is_nothing_to_read():
    equal = mk.ranking_sentence(_table([("A", 0.0, 0.0, 3.0), ("B", 0.0, 0.0, 3.0)]), "group", "rate", "low", "high",
                                "unmarked rate", unit="%")
    assert equal.startswith("Every group has the same unmarked rate, 0.0%") and "same side" in equal
    zero_width = mk.ranking_sentence(_table([("A", 0.7, 0.7, 0.7), ("B", 0.6, 0.6, 0.6)]), "group", "rate", "low",
                                     "high", "self-similarity", digits=3)
    assert "zero width" in zero_width and "beyond sampling noise" not in zero_width
    assert "No group" in mk.ranking_sentence(_table([]), "group", "rate", "low", "high", "x")
    assert "nothing to compare" in mk.ranking_sentence(_table([("A", 1.0, 0.0, 2.0)]), "group", "rate", "low", "high", "x")


def test_across_models_names_each_models_top_group():
    comparison = pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "family": "race", "group": ["A", "B", "A", "B"],
                               "rate": [50.0, 10.0, 20.0, 30.0]})
    text = mk.across_models_sentence(comparison, "race", "rate", "unmarked rate", unit="%")
    assert text == ("Highest unmarked rate by race, per model: m1: A highest (50.0%; lowest B, 10.0%); "
                    "m2: B highest (30.0%; lowest A, 20.0%).")


def test_the_weat_note_counts_the_words_a_trained_encoder_saw(tmp_path, monkeypatch):
    from vlbias.models import trained

    (tmp_path / "training.json").write_text(json.dumps({"caption_words": ["a", "photo", "of", "white", "black", "man"]}))
    monkeypatch.setattr(trained, "trained_checkpoint", lambda body: tmp_path)
    tests = [{"X": ["a White man"], "Y": ["a Black man"], "A": ["joy", "love"], "B": ["agony", "war"]}]
    note = controls.unseen_words_note("trained:face-clip", tests)
    assert "holding 4 of the 8 words these tests use (a, black, man, white)" in note and "as noise" in note
    # every word seen: no note; a hub model: no note (its training saw them)
    (tmp_path / "training.json").write_text(json.dumps({"caption_words": ["white", "black", "man", "a", "joy", "love",
                                                                          "agony", "war"]}))
    assert controls.unseen_words_note("trained:face-clip", tests) == ""
    assert controls.unseen_words_note("openai/clip-vit-base-patch32", tests) == ""
    (tmp_path / "training.json").write_text(json.dumps({"history": []}))  # trained before words were recorded
    assert controls.unseen_words_note("trained:face-clip", tests) == ""
