"""Bias cards (vlbias.cards): the file format's round trip, its refusals, and the leaderboard's ranks
on hand-placed estimates and intervals."""

import json
import shutil
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

import vlbias
from vlbias import cards
from vlbias.cards import Card, Result, leaderboard, read_card, read_cards, write_card

WHEN = datetime(2026, 12, 3, 9, 30, tzinfo=timezone.utc)


def _card(spec="trained:face-clip", kind="image-text", weights="sha256:aa", results=None, **extra):
    results = results if results is not None else [
        Result("unmarked_rate", "markedness", 0.42, 0.35, 0.49, group="White", interval="Wilson 95%", n=108,
               unit="share", order="descending"),
        Result("vrbs", "t2i", np.float64(np.nan), np.nan, np.nan, note="undefined: only 2 profession(s)"),
    ]
    return Card(model={"spec": spec, "kind": kind, "weights": weights, "dtype": "float32"},
                provenance=cards.provenance("demo", data={"fairface": "world:abc"}, code_revision="be0c0e3",
                                            date=WHEN),
                results=results, reference=[{"measure": "unmarked_rate", "model": "CLIP ViT-B/32", "group": "White",
                                             "estimate": 0.8, "source": "Wolfe & Caliskan 2022, Fig. 4 (published)"}],
                failures=[{"measure": "weat_text", "error": "RuntimeError: out of memory"}],
                limits=["a stand-in world: says nothing about real faces"], **extra)


def test_a_version_1_card_is_read_with_a_note_and_no_findings(tmp_path):
    document = _card().to_json()
    document["schema_version"] = 1
    document.pop("findings")
    (tmp_path / "old.json").write_text(json.dumps(document))
    old = read_card(tmp_path / "old.json")
    assert old.findings == [] and old.note.startswith("schema version 1: written before cards stored the findings")
    document["findings"] = []  # a version 1 card knew no findings
    (tmp_path / "odd.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="breaks card schema version 1 at \\(top level\\)"):
        read_card(tmp_path / "odd.json")


def test_a_cards_findings_round_trip_as_the_page_judged_them(tmp_path):
    from vlbias.findings import Claim, Design, Estimate, finding_from_record, finding_record, judge

    row = judge(Claim("male", "Male unmarked more often", "Male 26.6%"), Estimate(0.3, 0.2, 0.4),
                Design("trained:face-clip", "trained:face-clip?uniform_named=0.5", True, frozenset({"male"})),
                Estimate(0.1, 0.0, 0.2), Estimate(0.2, float("nan"), float("nan")))
    card = _card()
    card.findings = [finding_record(row)]
    back = read_card(write_card(card, tmp_path / "card.json"))
    assert finding_from_record(back.findings[0]) == row
    assert back.findings[0]["estimates"]["contrast"]["low"] is None  # NaN written as null
    assert back.findings[0]["control_spec"] == "trained:face-clip?uniform_named=0.5"


def test_a_card_round_trips_through_its_file_with_undefined_numbers_as_null(tmp_path):
    path = write_card(_card(), tmp_path / "cards" / "face-clip.json")
    document = json.loads(path.read_text())
    assert document["format"] == "vlbias-card" and document["schema_version"] == 2 and document["findings"] == []
    assert document["results"][1]["estimate"] is None and document["results"][1]["ci_low"] is None
    assert document["provenance"] == {"vlbias_version": vlbias.__version__,
                                      "code_revision": "be0c0e3", "profile": "demo",
                                      "date": "2026-12-03T09:30:00+00:00", "data": {"fairface": "world:abc"}}
    back = read_card(path)
    assert back.model == _card().model and back.failures == _card().failures and back.limits == _card().limits
    assert back.results[0] == Result("unmarked_rate", "markedness", 0.42, 0.35, 0.49, group="White",
                                     interval="Wilson 95%", n=108, unit="share", order="descending")
    assert back.results[1].estimate is None and back.results[1].note.startswith("undefined")
    frame = back.results_frame()
    assert frame["spec"].unique().tolist() == ["trained:face-clip"] and len(frame) == 2
    assert list(tmp_path.joinpath("cards").iterdir()) == [path]  # no temporary file left beside it


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="clip_benchmark"), r"is not a vlbias card \(its 'format' is 'clip_benchmark'"),
    (lambda d: d.pop("format"), r"is not a vlbias card \(its 'format' is None"),
    (lambda d: d.update(schema_version=3), r"schema version 3, newer than this vlbias reads \(version 2\): upgrade"),
    (lambda d: d.update(schema_version=0), r"schema version 0, which this vlbias \(version 2\) no longer reads"),
    (lambda d: d.update(schema_version="1"), r"no integer schema_version \('1'\)"),
    (lambda d: d["model"].update(kind="chatbot"), r"breaks card schema version 2 at model/kind: 'chatbot' is not one of"),
    (lambda d: d["findings"].append({"claim": "x", "published": "", "ours": "", "verdict": ""}),
     r"at findings/0/verdict: '' should be non-empty"),
    (lambda d: d["model"].pop("weights"), r"at model: 'weights' is a required property"),
    (lambda d: d["results"][0].update(estimate="high"), r"at results/0/estimate: 'high' is not of type"),
    (lambda d: d["results"][0].update(order="best"), r"at results/0/order"),
    (lambda d: d["provenance"].update(date="2026-12-03T09:30:00"), r"at provenance/date: '2026-12-03T09:30:00' is not"),
    (lambda d: d["results"].append(dict(d["results"][0])), r"two results for measure 'unmarked_rate', group 'White'"),
    (lambda d: d.update(extra=1), r"at \(top level\): Additional properties are not allowed"),
])
def test_read_card_refuses_what_it_cannot_read_with_one_error_naming_the_file(tmp_path, edit, message):
    document = _card().to_json()
    edit(document)
    path = tmp_path / "card.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message) as error:
        read_card(path)
    assert str(path) in str(error.value)


def test_read_card_refuses_a_file_that_is_not_json_and_says_so_for_a_missing_one(tmp_path):
    (tmp_path / "notes.json").write_text("model: clip\n")
    with pytest.raises(ValueError, match=r"notes.json is not a JSON file"):
        read_card(tmp_path / "notes.json")
    with pytest.raises(FileNotFoundError, match="no card at"):
        read_card(tmp_path / "absent.json")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        read_cards(tmp_path / "absent")


def test_an_invalid_card_is_not_written_and_the_card_already_there_is_kept(tmp_path):
    path = write_card(_card(), tmp_path / "card.json")
    before = path.read_bytes()
    broken = _card(kind="chatbot")
    with pytest.raises(ValueError, match="the card for 'trained:face-clip' breaks card schema"):
        write_card(broken, path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["card.json"]
    with pytest.raises(ValueError, match="date needs a time zone"):
        cards.provenance("demo", date=datetime(2026, 12, 3))


def test_the_module_documents_every_field_of_the_schema():
    documented = cards.__doc__
    schema = cards.card_schema()
    for name, part in schema["properties"].items():
        assert f'"{name}"' in documented, name
        for inner in part.get("properties", {}) or part.get("items", {}).get("properties", {}):
            assert f'"{inner}"' in documented, (name, inner)
    schema["properties"].clear()
    assert cards.CARD_SCHEMA["properties"], "card_schema() must return a copy"


def _scored(spec, estimate, low, high, order="descending", kind="image-text", measure="colorfoil_accuracy", **more):
    return _card(spec=spec, kind=kind, weights=f"sha256:{spec}",
                 results=[Result(measure, "colorfoil", estimate, low, high, order=order, **more)])


def test_the_leaderboard_ranks_each_measure_by_its_order_and_says_which_ranks_are_beyond_the_intervals():
    board = leaderboard([_scored("b", 0.50, 0.45, 0.55), _scored("a", 0.90, 0.85, 0.95), _scored("c", 0.48, 0.40, 0.56),
                         _scored("d", np.nan, np.nan, np.nan)])
    assert board["spec"].tolist() == ["a", "b", "c", "d"] and board["rank"].tolist()[:3] == [1, 2, 3]
    assert pd.isna(board["rank"].iloc[3])  # undefined: not ranked
    assert board["separated"].tolist()[:2] == [True, False]  # a beyond b; b within c's interval
    low_first = leaderboard([_scored("b", 0.50, 0.45, 0.55, "ascending"), _scored("a", 0.90, 0.85, 0.95, "ascending")])
    assert low_first["spec"].tolist() == ["b", "a"] and bool(low_first["separated"].iloc[0])
    # closest to zero first, ranked by |estimate|
    zero = leaderboard([_scored("far", 0.30, 0.25, 0.35, "absolute"), _scored("near", 0.05, -0.02, 0.12, "absolute"),
                        _scored("mid", -0.10, -0.14, -0.06, "absolute")])
    assert zero["spec"].tolist() == ["near", "mid", "far"]
    # near's interval reaches 0.12, beyond mid's nearest end to zero (0.06): not separated; mid's (0.14) < far's 0.25
    assert zero["separated"].tolist()[:2] == [False, True]
    unranked = leaderboard([_scored("x", 1.0, 0.9, 1.1, None), _scored("y", 2.0, 1.9, 2.1, None)])
    assert unranked["rank"].isna().all()


def test_the_leaderboard_keeps_model_kinds_and_groups_apart_and_refuses_one_model_twice():
    board = leaderboard([_scored("clip", 0.6, 0.5, 0.7), _scored("lm", 0.9, 0.8, 1.0, kind="language"),
                         _scored("clip2", 0.7, 0.6, 0.8, group="White"), _scored("clip3", 0.65, 0.6, 0.7)])
    ranks = board.set_index("spec")["rank"]
    assert ranks["lm"] == 1 and ranks["clip2"] == 1  # alone in its kind, alone in its group
    assert ranks["clip3"] == 1 and ranks["clip"] == 2
    with pytest.raises(ValueError, match=r"two cards of 'clip' with weights 'sha256:clip'"):
        leaderboard([_scored("clip", 0.6, 0.5, 0.7), _scored("clip", 0.6, 0.5, 0.7)])
    assert leaderboard([]).empty and "rank" in leaderboard([]).columns


def test_cards_brought_from_another_machine_appear_when_dropped_into_the_folder(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    write_card(_scored("local", 0.6, 0.5, 0.7), here / "local.json")
    brought = write_card(_scored("remote", 0.8, 0.75, 0.85), there / "remote.json")
    assert [card.model["spec"] for card in read_cards(here)] == ["local"]
    shutil.copy(brought, here)
    assert leaderboard(read_cards(here))["spec"].tolist() == ["remote", "local"]
    (here / "stray.json").write_text(json.dumps({"results": []}))
    with pytest.raises(ValueError, match=r"stray.json is not a vlbias card"):
        read_cards(here)


def test_provenance_dates_keep_their_zone():
    later = cards.provenance("full", date=WHEN.astimezone(timezone(timedelta(hours=8))))
    assert later["date"] == "2026-12-03T17:30:00+08:00" and later["profile"] == "full" and later["data"] == {}
