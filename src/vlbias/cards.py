"""Bias cards: one model's results across the book's measures, as a versioned JSON file.

A card is what ``python -m vlbias audit`` (issue 25) writes for one model, and what the leaderboard
reads, from this machine or another. This module owns the file format: it builds, writes, reads and
validates cards, and joins many into one table. It knows no part of the book: a result is a measure's
name, the group it is about, an estimate and its interval, whatever part computed it.

The format, schema version 1 (:data:`CARD_SCHEMA`, a JSON Schema; :func:`card_schema` returns it)::

    {
      "format": "vlbias-card",          # always this string: a JSON file without it is not a card
      "schema_version": 1,              # the version of this layout; a newer one is refused, not misread
      "model": {"spec": ..., "kind": ..., "weights": ..., "dtype": ..., "architecture": ..., "description": ...},
      "provenance": {"vlbias_version": ..., "code_revision": ..., "profile": ..., "date": ..., "data": {...}},
      "results": [{"measure": ..., "part": ..., "group": ..., "estimate": ..., "ci_low": ..., "ci_high": ...,
                   "interval": ..., "n": ..., "unit": ..., "order": ..., "note": ...}, ...],
      "reference": [{"measure": ..., "model": ..., "group": ..., "estimate": ..., "source": ...}, ...],
      "failures": [{"measure": ..., "error": ...}, ...],
      "limits": ["what these measures cannot tell", ...],
      "findings": [{"key": ..., "claim": ..., "published": ..., "ours": ..., "verdict": ..., "control": ...,
                    "contrast": ..., "note": ..., "estimates": {"model": {...}, "control": ..., "contrast": ...},
                    "control_spec": ...}, ...]
    }

- ``model.kind`` is the model interface: ``image-text``, ``language``, ``text-to-image`` or
  ``vision-language``. ``weights`` is :attr:`vlbias.models.identity.ModelIdentity.weights` (a
  fingerprint or a hub revision): two cards of one spec with other weights are two models.
- ``provenance.date`` is an ISO 8601 time with its zone; ``data`` maps each data set to its identity.
- A result's ``estimate``, ``ci_low`` and ``ci_high`` are numbers or ``null`` (undefined: ``note``
  says why); ``group`` is ``null`` for a measure of the whole model; ``interval`` names the interval
  ("Wilson 95%"); ``order`` says how the leaderboard ranks the measure: ``"descending"`` (higher
  first), ``"ascending"``, ``"absolute"`` (closest to zero first) or ``null`` (not ranked).
- ``reference`` holds the papers' published numbers, labelled with their source; ``failures`` the
  measures that failed, each with its error, so that one failure leaves the rest of the card standing.
- ``findings`` (schema version 2) are the rows of the papers' claims this card speaks to, as the pages'
  findings boxes compute them (:func:`vlbias.findings.finding_record`): the claim, the published number,
  this model's statistic and verdict, and for a model trained in the book its control's statistic, the
  contrast (model minus control) and ``control_spec``, the control it was judged against. A page and a
  card reach each row through one function, so they cannot disagree.

Version 1 cards (before ``findings``) are still read, with no findings and a note saying so.

A change that old readers would misread raises :data:`CARD_SCHEMA_VERSION`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from .cache import write_atomically

#: the ``format`` field of every card
CARD_FORMAT = "vlbias-card"
#: the layout this vlbias writes and reads; a card of a newer version is refused by :func:`read_card`
CARD_SCHEMA_VERSION = 2
#: the older versions this vlbias still reads, each with what it lacks
OLDER_VERSIONS = {1: "written before cards stored the findings of the papers' claims: audit the model again for them"}
#: the model interfaces a card can describe
KINDS = ("image-text", "language", "text-to-image", "vision-language")
#: how the leaderboard ranks a measure (``None``: it does not)
ORDERS = ("descending", "ascending", "absolute", None)

_NUMBER = {"type": ["number", "null"]}
_TEXT = {"type": ["string", "null"]}
#: the JSON Schema of :data:`CARD_SCHEMA_VERSION` (draft 2020-12)
CARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vlbias bias card",
    "type": "object",
    "required": ["format", "schema_version", "model", "provenance", "results", "reference", "failures", "limits",
                 "findings"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": CARD_FORMAT},
        "schema_version": {"const": CARD_SCHEMA_VERSION},
        "model": {
            "type": "object", "required": ["spec", "kind", "weights"], "additionalProperties": False,
            "properties": {"spec": {"type": "string", "minLength": 1}, "kind": {"enum": list(KINDS)},
                           "weights": {"type": "string", "minLength": 1}, "dtype": _TEXT, "architecture": _TEXT,
                           "description": _TEXT}},
        "provenance": {
            "type": "object", "required": ["vlbias_version", "profile", "date"], "additionalProperties": False,
            "properties": {"vlbias_version": {"type": "string"}, "code_revision": _TEXT,
                           "profile": {"type": "string"}, "date": {"type": "string", "format": "date-time"},
                           "data": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "results": {"type": "array", "items": {
            "type": "object", "required": ["measure", "part", "estimate", "ci_low", "ci_high"],
            "additionalProperties": False,
            "properties": {"measure": {"type": "string", "minLength": 1}, "part": {"type": "string"},
                           "group": _TEXT, "estimate": _NUMBER, "ci_low": _NUMBER, "ci_high": _NUMBER,
                           "interval": _TEXT, "n": {"type": ["integer", "null"], "minimum": 0}, "unit": _TEXT,
                           "order": {"enum": list(ORDERS)}, "note": _TEXT}}},
        "reference": {"type": "array", "items": {
            "type": "object", "required": ["measure", "model", "estimate", "source"], "additionalProperties": False,
            "properties": {"measure": {"type": "string"}, "model": {"type": "string"}, "group": _TEXT,
                           "estimate": {"type": "number"}, "source": {"type": "string", "minLength": 1}}}},
        "failures": {"type": "array", "items": {
            "type": "object", "required": ["measure", "error"], "additionalProperties": False,
            "properties": {"measure": {"type": "string"}, "error": {"type": "string"}}}},
        "limits": {"type": "array", "items": {"type": "string"}},
        "findings": {"type": "array", "items": {
            "type": "object", "required": ["claim", "published", "ours", "verdict"], "additionalProperties": False,
            "properties": {"key": {"type": "string"}, "claim": {"type": "string", "minLength": 1},
                           "published": {"type": "string"}, "ours": {"type": "string"},
                           "verdict": {"type": "string", "minLength": 1}, "control": {"type": "string"},
                           "contrast": {"type": "string"}, "note": {"type": "string"}, "control_spec": _TEXT,
                           "estimates": {"type": "object", "additionalProperties": {"type": ["object", "null"]}}}}},
    },
}


def card_schema() -> dict[str, Any]:
    """A copy of :data:`CARD_SCHEMA`, the JSON Schema a card of this version follows."""
    return json.loads(json.dumps(CARD_SCHEMA))


@dataclass
class Result:
    """One measured number of a card (see the module docstring for each field)."""

    measure: str
    part: str
    estimate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    group: str | None = None
    interval: str | None = None
    n: int | None = None
    unit: str | None = None
    order: str | None = None
    note: str | None = None


@dataclass
class Card:
    """One model's card: ``model`` and ``provenance`` as in the module docstring, and its results,
    the published reference rows, the failed measures and what the measures cannot tell."""

    model: dict[str, Any]
    provenance: dict[str, Any]
    results: list[Result] = field(default_factory=list)
    reference: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)
    #: the papers' claims as the pages judge them (:func:`vlbias.findings.finding_record`, plus ``control_spec``)
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: the schema version the card was read from, and what an older one lacks ("": current)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """The card as the JSON object of schema :data:`CARD_SCHEMA_VERSION` (NaN written as null)."""
        results = [{key: _plain(value) for key, value in asdict(result).items()} for result in self.results]
        return {"format": CARD_FORMAT, "schema_version": CARD_SCHEMA_VERSION, "model": dict(self.model),
                "provenance": dict(self.provenance), "results": results,
                "reference": [dict(row) for row in self.reference], "failures": [dict(row) for row in self.failures],
                "limits": list(self.limits), "findings": [_plain_tree(row) for row in self.findings]}

    @classmethod
    def from_json(cls, document: dict[str, Any], source: str = "the card") -> "Card":
        """The card of a JSON object, validated first (:func:`validate_card`); an older schema version's card
        gets what it lacks as empty, and ``note`` says so."""
        validate_card(document, source)
        version = document["schema_version"]
        return cls(model=document["model"], provenance=document["provenance"],
                   results=[Result(**row) for row in document["results"]], reference=document["reference"],
                   failures=document["failures"], limits=document["limits"], findings=document.get("findings", []),
                   note="" if version == CARD_SCHEMA_VERSION else f"schema version {version}: {OLDER_VERSIONS[version]}")

    def results_frame(self) -> pd.DataFrame:
        """The results as a table, one row each, with the model's spec, kind and weights."""
        rows = [asdict(result) for result in self.results]
        frame = pd.DataFrame(rows, columns=list(Result.__dataclass_fields__))
        return frame.assign(spec=self.model["spec"], kind=self.model["kind"], weights=self.model["weights"])


def _plain(value):
    """A value JSON can hold: NaN and infinities become null, numpy scalars Python ones."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _plain_tree(value):
    """:func:`_plain` through nested dicts and lists."""
    if isinstance(value, dict):
        return {key: _plain_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_tree(item) for item in value]
    return _plain(value)


def provenance(profile: str, data: dict[str, str] | None = None, code_revision: str | None = None,
               date: datetime | None = None) -> dict[str, Any]:
    """A card's ``provenance``: this vlbias's version, ``code_revision`` (a git commit, when known),
    the ``profile``, ``date`` (default: now, in UTC) and each data set's identity."""
    from . import __version__

    when = (date or datetime.now(timezone.utc))
    if when.tzinfo is None:
        raise ValueError("provenance: date needs a time zone (e.g. datetime.now(timezone.utc)), so cards from "
                         "machines in other zones sort and compare right")
    return {"vlbias_version": __version__, "code_revision": code_revision, "profile": profile,
            "date": when.isoformat(timespec="seconds"), "data": dict(data or {})}


def validate_card(document: Any, source: str = "the card") -> None:
    """Raise one :class:`ValueError` naming ``source`` if ``document`` is not a card this vlbias reads:
    not a card at all, a newer schema version (upgrade vlbias), or a card that breaks the schema (the
    first problem, with where it is)."""
    import jsonschema

    if not isinstance(document, dict) or document.get("format") != CARD_FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"{source} is not a vlbias card (its 'format' is {found!r}, a card's is {CARD_FORMAT!r}); "
                         "only files written by vlbias.cards.write_card belong in a card folder")
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{source} has no integer schema_version ({version!r}); it was not written by "
                         "vlbias.cards.write_card")
    if version > CARD_SCHEMA_VERSION:
        raise ValueError(f"{source} is a card of schema version {version}, newer than this vlbias reads "
                         f"(version {CARD_SCHEMA_VERSION}): upgrade vlbias to read it")
    if version < CARD_SCHEMA_VERSION and version not in OLDER_VERSIONS:
        raise ValueError(f"{source} is a card of schema version {version}, which this vlbias (version "
                         f"{CARD_SCHEMA_VERSION}) no longer reads: audit the model again to write a current card")
    schema = CARD_SCHEMA if version == CARD_SCHEMA_VERSION else _older_schema(version)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    problems = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    if problems:
        first = problems[0]
        where = "/".join(str(part) for part in first.absolute_path) or "(top level)"
        more = f" ({len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise ValueError(f"{source} breaks card schema version {version} at {where}: "
                         f"{first.message}{more}")
    try:
        stamped = datetime.fromisoformat(document["provenance"]["date"])
    except ValueError:
        stamped = None
    if stamped is None or stamped.tzinfo is None:
        raise ValueError(f"{source} breaks card schema version {CARD_SCHEMA_VERSION} at provenance/date: "
                         f"{document['provenance']['date']!r} is not an ISO 8601 time with its zone")
    keys = [(row["measure"], row.get("group")) for row in document["results"]]
    repeated = next((key for number, key in enumerate(keys) if key in keys[:number]), None)
    if repeated is not None:
        raise ValueError(f"{source} has two results for measure {repeated[0]!r}, group {repeated[1]!r}; each "
                         "(measure, group) appears once in a card")


def _older_schema(version: int) -> dict[str, Any]:
    """The JSON Schema of an older version this vlbias still reads: version 1 had no ``findings``."""
    schema = card_schema()
    schema["properties"]["schema_version"] = {"const": version}
    schema["required"] = [key for key in schema["required"] if key != "findings"]
    schema["properties"].pop("findings")
    return schema


def write_card(card: Card, path: str | Path) -> Path:
    """Validate ``card`` and write it to ``path`` (whole or not at all: a kill leaves no half card)."""
    path = Path(path)
    document = card.to_json()
    validate_card(document, f"the card for {card.model.get('spec')!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, (json.dumps(document, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode())
    return path


def read_card(path: str | Path) -> Card:
    """The card at ``path``; one :class:`ValueError` naming the file if it is not JSON, not a card, of a
    newer (or retired) schema version, or not valid (:func:`validate_card`)."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"read_card: no card at {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a JSON file ({error}); a card is the JSON that vlbias.cards.write_card "
                         "writes") from None
    return Card.from_json(document, str(path))


def read_cards(folder: str | Path, pattern: str = "*.json") -> list[Card]:
    """Every card in ``folder`` (files matching ``pattern``, in name order): cards brought from
    another machine are read like this machine's. A file that is not a readable card stops it with
    :func:`read_card`'s error, which names the file to move out of the folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"read_cards: {folder} is not a folder; give the folder the cards were written to")
    return [read_card(path) for path in sorted(folder.glob(pattern))]


def leaderboard(cards: Iterable[Card]) -> pd.DataFrame:
    """All results of ``cards`` in one table (measures and groups in the cards' order), ranked within each (kind, measure, group) by the
    measure's ``order``: ``rank`` 1 is first; ``separated`` says whether a row's interval lies wholly
    beyond the next-ranked row's (so its rank is not sampling noise alone). Undefined results and
    unranked measures get no rank. Model kinds are never ranked against each other. The same model
    (spec and weights) on two cards raises, naming both; audit it once or give the cards other weights."""
    cards = list(cards)
    seen: dict[tuple[str, str], str] = {}
    for card in cards:
        key = (card.model["spec"], card.model["weights"])
        date = card.provenance.get("date", "")
        if key in seen:
            raise ValueError(f"leaderboard: two cards of {key[0]!r} with weights {key[1]!r} (dated {seen[key]} and "
                             f"{date}); keep one of them in the card folder")
        seen[key] = date
    columns = ["kind", "measure", "group", "rank", "spec", "estimate", "ci_low", "ci_high", "interval", "n", "unit",
               "separated", "note", "weights", "part", "order"]
    frames = [card.results_frame() for card in cards]
    if not frames or all(frame.empty for frame in frames):
        return pd.DataFrame(columns=columns)
    table = pd.concat([frame for frame in frames if not frame.empty], ignore_index=True)
    table["group"] = table["group"].astype(object).where(table["group"].notna(), "")
    table["rank"], table["separated"] = pd.NA, pd.NA
    for _, rows in table.groupby(["kind", "measure", "group"], sort=False):
        order = rows["order"].dropna().unique()
        if len(order) != 1:
            continue  # unranked, or cards that disagree on the order: not ranked
        defined = rows[rows["estimate"].notna()]
        key = {"descending": -defined["estimate"], "ascending": defined["estimate"],
               "absolute": defined["estimate"].abs()}[order[0]]
        ranked = defined.loc[key.sort_values(kind="stable").index]
        table.loc[ranked.index, "rank"] = range(1, len(ranked) + 1)
        for (index, row), (_, after) in zip(ranked.iterrows(), ranked.iloc[1:].iterrows()):
            table.loc[index, "separated"] = _beyond(row, after, order[0])
    table["rank"] = table["rank"].astype("Int64")
    # measures and groups in the order the cards give them (a family's labels in their order, "0-2" before
    # "10-19"), each group's models by rank
    for column in ("measure", "group"):
        table[f"{column}_position"] = table[column].map({value: i for i, value in enumerate(dict.fromkeys(table[column]))})
    ordered = table.sort_values(["kind", "measure_position", "group_position", "rank"], na_position="last", kind="stable")
    return ordered[columns].reset_index(drop=True)


def _beyond(first: pd.Series, second: pd.Series, order: str) -> bool | pd.NA:
    """Whether ``first``'s interval lies wholly before ``second``'s in ``order`` (NA without intervals)."""
    if any(pd.isna(first[end]) or pd.isna(second[end]) for end in ("ci_low", "ci_high")):
        return pd.NA
    if order == "descending":
        return bool(first["ci_low"] > second["ci_high"])
    if order == "ascending":
        return bool(first["ci_high"] < second["ci_low"])
    # closest to zero first: the farthest end of first's interval from zero is nearer than second's nearest
    near = 0.0 if second["ci_low"] <= 0 <= second["ci_high"] else min(abs(second["ci_low"]), abs(second["ci_high"]))
    return bool(max(abs(first["ci_low"]), abs(first["ci_high"])) < near)
