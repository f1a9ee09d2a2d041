"""The "Findings: paper vs ours" box that ends each paper page, computed from the page's own run.

Each :class:`Finding` is one published claim, the paper's number beside it, what this run measured
(with its interval) and a verdict the code reaches from the intervals, never typed in. Which verdicts
a row can have depends on the model it judges:

- **the papers' models, and real models** (the full profile; Part III's small real models): the
  claim's statistic on the model, with its interval, decides: **supports** (the interval lies on the
  claim's side of 0), **contradicts** (on the other side), **cannot tell** (it holds 0), **cannot
  test** (this run lacks what the claim needs; ``ours`` says why);
- **a model trained here on a planted world** (the demo): no verdict on a paper's claim comes from it.
  The row asks whether the run recovered the planted analogue of the claim, and a planted cause counts
  only against its **control**, the same recipe without that cause, measured on the same pictures or
  prompts where they are shared: the claim's statistic on both, and their difference (planted minus
  control) with its interval (a paired bootstrap over shared inputs, independent resampling
  otherwise). **recovered**: that interval lies on the planted side of 0; **not recovered**: it does
  not; **this world plants no such cause**: the model's world plants nothing behind the claim (its
  numbers stand, explained by nothing planted); **no contrast**: the control given is the planted model
  itself. Without a control the row judges the planted model alone and says why that is weaker.

:func:`judge` reaches every verdict from a claim's :class:`Estimate` s and a :class:`Design` (the model,
its control, what each plants); a part computes the estimates once, and the page, the model card and
the leaderboard all read the same :class:`Finding` (:func:`finding_record` stores it in a card).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

#: the verdicts a finding can have, and how the box shows each
VERDICTS = {
    "supports": ("✔ supports", "#1a7f37"),
    "contradicts": ("✘ contradicts", "#b42318"),
    "cannot tell": ("~ cannot tell (within noise)", "#8a6d00"),
    "cannot test": ("– cannot test here", "#57606a"),
    "recovered": ("✔ recovered", "#1a7f37"),
    "not recovered": ("✘ not recovered", "#b42318"),
    "not planted": ("– this world plants no such cause", "#57606a"),
    "no contrast": ("– no contrast", "#57606a"),
}
#: the verdicts of a row about a model trained here: whether the planted analogue was recovered
RECOVERY_VERDICTS = ("recovered", "not recovered", "not planted", "no contrast")
#: what every such row also says: the paper's own claim is not what it tests
FULL_PROFILE_ONLY = "the paper's claim is tested in the full profile"


def _nan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@dataclass(frozen=True)
class Estimate:
    """One number of a claim with its interval: ``value`` in ``[low, high]``, and ``how`` the interval
    was made ("paired bootstrap over 3,024 pictures, 1,000 draws", "Newcombe 95%"). ``exact`` marks a
    statistic of the whole group, which has no sampling interval: it is shown as "exact: ``how``"."""

    value: float
    low: float = float("nan")
    high: float = float("nan")
    how: str = ""
    exact: bool = False

    @property
    def defined(self) -> bool:
        return not _nan(self.value)

    @property
    def has_interval(self) -> bool:
        return not (self.exact or _nan(self.low) or _nan(self.high))

    def side(self) -> int:
        """+1 where the interval lies wholly above 0, -1 wholly below, 0 where it holds 0 or is undefined
        (an exact value counts by its sign)."""
        if not self.defined:
            return 0
        if self.exact:
            return (self.value > 0) - (self.value < 0)
        if not self.has_interval:
            return 0
        return 1 if self.low > 0 else -1 if self.high < 0 else 0

    def text(self, digits: int = 3, unit: str = "", scale: float = 1.0, signed: bool = False) -> str:
        """``0.362 [0.277, 0.455]``; ``+28.7 points [+19.2, +37.9]`` with ``scale=100, unit=" points",
        signed=True``; "exact: all 756 pictures" in place of an interval; "undefined" where there is no
        value. A resampled interval of zero width says so instead of printing ``[x, x]``."""
        if not self.defined:
            return "undefined" + (f" ({self.how})" if self.how else "")
        form = f"{{:{'+' if signed else ''}.{digits}f}}"
        value = form.format(scale * self.value) + unit
        if self.exact:
            return f"{value} (exact: {self.how})" if self.how else f"{value} (exact)"
        if not self.has_interval:
            return value
        low, high = form.format(scale * self.low), form.format(scale * self.high)
        if low == high:  # every resample gave the same value: no sampling spread to show
            return f"{value} (every resample the same)"
        return f"{value} [{low}, {high}]"

    def record(self) -> dict:
        """A JSON-ready dict (NaN as None)."""
        return {"value": None if _nan(self.value) else float(self.value),
                "low": None if _nan(self.low) else float(self.low),
                "high": None if _nan(self.high) else float(self.high), "how": self.how, "exact": self.exact}

    @classmethod
    def from_record(cls, record: Mapping | None) -> "Estimate | None":
        if record is None:
            return None
        number = lambda v: float("nan") if v is None else float(v)  # noqa: E731
        return cls(number(record.get("value")), number(record.get("low")), number(record.get("high")),
                   record.get("how") or "", bool(record.get("exact")))


@dataclass(frozen=True)
class Claim:
    """A published claim as a statistic that is above 0 where the claim holds.

    ``statistic`` says in words what the number is ("White's unmarked rate minus the highest other
    race's"); ``causes``: the planted causes (keys of a part's cause vocabulary) that would produce it
    in a world; ``scale``, ``unit``, ``digits`` and ``signed`` how its numbers are written."""

    key: str
    text: str
    published: str = "not stated"
    statistic: str = ""
    causes: tuple[str, ...] = ()
    scale: float = 1.0
    unit: str = ""
    digits: int = 3
    signed: bool = True

    def format(self, estimate: Estimate | None) -> str:
        return "" if estimate is None else estimate.text(self.digits, self.unit, self.scale, self.signed)


@dataclass(frozen=True)
class Design:
    """Who a claim is judged on: the ``model`` and its ``control`` (specs; ``None``: no control), the
    names the page gives them, whether the model was ``trained`` here on a planted world (then every
    verdict is about recovering the planted analogue), the causes each one's world ``plants``, and in
    ``causes`` what each cause key means in words."""

    model: str
    control: str | None = None
    trained: bool = False
    plants: frozenset = frozenset()
    control_plants: frozenset = frozenset()
    causes: Mapping[str, str] = field(default_factory=dict)
    model_name: str = ""
    control_name: str = ""

    @property
    def same_control(self) -> bool:
        return self.control is not None and self.control == self.model

    def words(self, keys) -> str:
        return "; ".join(self.causes.get(key, key) for key in keys)


@dataclass(frozen=True)
class Finding:
    """One published claim beside this run's measurement, and the verdict the intervals give.

    ``ours`` is this run's number for the model (on a planted page: the planted model); ``control`` and
    ``contrast`` the control's and the difference, where the page has a control; ``note`` what the row
    adds in words (the control's own gap, no control, ...); ``estimates`` the numbers behind the texts
    (``{"model": Estimate, "control": ..., "contrast": ...}``) for a card and the leaderboard."""

    claim: str
    published: str
    ours: str
    verdict: str
    control: str = ""
    contrast: str = ""
    note: str = ""
    key: str = ""
    estimates: Mapping[str, Estimate] = field(default_factory=dict, compare=False)
    #: the spec of the control the row was judged against ("": none)
    control_spec: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"Finding: verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")

    @property
    def recovery(self) -> bool:
        """Whether this row judges a model trained here (a planted analogue), not a paper's claim."""
        return self.verdict in RECOVERY_VERDICTS


def order_verdict(higher: tuple[float, float], lower: tuple[float, float]) -> str:
    """The verdict on a claim that one quantity exceeds another, from their intervals ``(low, high)``:
    "supports" when the first's interval lies wholly above the second's, "contradicts" when wholly
    below, "cannot tell" when they overlap or either is undefined."""
    (a_low, a_high), (b_low, b_high) = higher, lower
    if any(value != value for value in (a_low, a_high, b_low, b_high)):  # NaN: undefined
        return "cannot tell"
    if a_low > b_high:
        return "supports"
    if a_high < b_low:
        return "contradicts"
    return "cannot tell"


def difference_verdict(low: float, high: float) -> str:
    """The verdict on a claim that a difference is positive, from the difference's interval."""
    if low != low or high != high:
        return "cannot tell"
    return "supports" if low > 0 else "contradicts" if high < 0 else "cannot tell"


def estimate_verdict(estimate: Estimate) -> str:
    """:func:`difference_verdict` of a claim's statistic (an exact statistic by its sign)."""
    return {1: "supports", -1: "contradicts"}.get(estimate.side(), "cannot tell")


def judge(claim: Claim, model: Estimate, design: Design, control: Estimate | None = None,
          contrast: Estimate | None = None, note: str = "") -> Finding:
    """The row of ``claim``: the model's statistic ``model``, and on a planted page its control's and
    the difference planted minus control (``contrast``), judged as the module docstring says.

    On a planted page, where the control's own statistic lies beyond 0 (a gap of its own), the row says
    so and names the cause if the control's world plants one of the claim's causes, or says it is
    unexplained. ``note`` is added to what the row says."""
    notes = [note] if note else []
    texts = {"ours": claim.format(model), "control": claim.format(control), "contrast": claim.format(contrast)}
    estimates = {name: value for name, value in (("model", model), ("control", control), ("contrast", contrast))
                 if value is not None}

    def row(verdict: str) -> Finding:
        return Finding(claim.text, claim.published, texts["ours"], verdict, texts["control"], texts["contrast"],
                       " ".join(notes), claim.key, estimates, design.control or "")

    if not model.defined:
        notes.insert(0, f"undefined{': ' + model.how if model.how else ''}")
        return row("cannot test")
    if not design.trained:
        return row(estimate_verdict(model))
    planted = [cause for cause in claim.causes if cause in design.plants]
    if control is not None and design.control is not None and not design.same_control and control.side() > 0:
        shared = [cause for cause in claim.causes if cause in design.control_plants]
        notes.append(f"The control has a gap of its own ({texts['control']}): "
                     + (f"its world plants {design.words(shared)}, a cause behind this claim."
                        if shared else "nothing its world plants explains it (the drawing or the training give it)."))
    if not planted:
        notes.insert(0, "This world plants nothing behind this claim: the number is what the drawing, the "
                        "training and the sampling gave by themselves.")
        return row("not planted")
    if design.same_control:
        notes.insert(0, "The control is the planted model: no contrast.")
        return row("no contrast")
    if design.control is None or control is None or contrast is None:
        notes.insert(0, "No control: the verdict is about the planted model alone, which is weaker: a gap the "
                        "drawing, the training or the sampling give by themselves would read as recovered too.")
        return row("recovered" if model.side() > 0 else "not recovered")
    added = [cause for cause in claim.causes if cause in design.control_plants and cause not in design.plants]
    if added:
        notes.append(f"The control plants {design.words(added)}, which the model does not: the contrast sets that "
                     "cause against the model's own.")
    removed = [cause for cause in planted if cause not in design.control_plants]
    kept = [cause for cause in planted if cause in design.control_plants]
    if not removed:
        notes.insert(0, f"The control plants the same cause ({design.words(planted)}): the contrast shows only "
                        "what differs besides it.")
    elif kept:
        notes.insert(0, f"The contrast isolates {design.words(removed)}; {design.words(kept)}, which the control "
                        "keeps, is not part of it.")
    return row("recovered" if contrast.side() > 0 else "not recovered")


def finding_record(finding: Finding) -> dict:
    """A JSON-ready dict of ``finding`` (a card stores the page's rows with it)."""
    return {"key": finding.key, "claim": finding.claim, "published": finding.published, "ours": finding.ours,
            "verdict": finding.verdict, "control": finding.control, "contrast": finding.contrast,
            "note": finding.note, "estimates": {name: value.record() for name, value in finding.estimates.items()},
            "control_spec": finding.control_spec or None}


def finding_from_record(record: Mapping) -> Finding:
    """The :class:`Finding` a :func:`finding_record` stored."""
    return Finding(record["claim"], record["published"], record["ours"], record["verdict"],
                   record.get("control") or "", record.get("contrast") or "", record.get("note") or "",
                   record.get("key") or "", {name: Estimate.from_record(value)
                                             for name, value in (record.get("estimates") or {}).items()},
                   record.get("control_spec") or "")


_STYLE = ('<style>table.vlbias-findings td, table.vlbias-findings th {padding: 0.3em 0.5em; vertical-align: top; '
          'text-align: left; border-bottom: 1px solid #dde1e6; overflow-wrap: anywhere} '
          'table.vlbias-findings small {color: #57606a}</style>')


def _verdict_cell(finding: Finding, number: int | None = None) -> str:
    label, colour = VERDICTS[finding.verdict]
    cell = f'<td style="color:{colour}"><b>{label}</b>'
    if finding.recovery:
        cell += f"<br><small>the planted analogue; {FULL_PROFILE_ONLY}</small>"
    if finding.note and number is not None:
        cell += f" <small>(note {number})</small>"
    return cell + "</td>"


def findings_box(findings: list[Finding], planted: str | None = None, control: str | None = None) -> object:
    """The page's closing box: one row per finding and a count of the verdicts.

    Rows about papers' or real models show the claim, the published number, this run's number and the
    verdict. Rows about models trained here show the claim with its published number, the planted
    model's statistic, the control's, their difference and whether the planted analogue was recovered,
    each saying that the paper's claim itself is tested in the full profile only. ``planted`` says in
    sentences what the world plants, ``control`` what the control is ("The control: ..."). Rows' notes
    follow the table.
    Rendered as HTML with Sphinx's admonition classes."""
    from IPython.display import HTML

    if not findings:
        raise ValueError("findings_box: give at least one Finding")
    counts = {verdict: sum(f.verdict == verdict for f in findings) for verdict in VERDICTS}
    summary = ", ".join(f"{VERDICTS[verdict][0].split(' ', 1)[1] if verdict in RECOVERY_VERDICTS else verdict} {count}"
                        for verdict, count in counts.items() if count)
    noted = {id(f): i for i, f in enumerate((f for f in findings if f.note), start=1)}
    wide = any(f.recovery or f.control or f.contrast for f in findings)
    if wide:
        rows = "".join(
            f"<tr><td>{html.escape(f.claim)}<br><small>published: {html.escape(f.published)}</small></td>"
            f"<td>{html.escape(f.ours)}</td><td>{html.escape(f.control or '–')}</td>"
            f"<td>{html.escape(f.contrast or '–')}</td>{_verdict_cell(f, noted.get(id(f)))}</tr>" for f in findings)
        table = ('<table class="vlbias-findings" style="table-layout:fixed;width:97%"><colgroup><col style="width:27%">'
                 '<col style="width:17%"><col style="width:17%"><col style="width:17%"><col style="width:22%"></colgroup>'
                 '<thead><tr><th>the paper says</th><th>planted model</th><th>control</th><th>planted − control</th>'
                 f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table>")
    else:
        rows = "".join(
            f"<tr><td>{html.escape(f.claim)}</td><td>{html.escape(f.published)}</td><td>{html.escape(f.ours)}"
            + (f" <small>(note {noted[id(f)]})</small>" if id(f) in noted else "") + f"</td>{_verdict_cell(f)}</tr>"
            for f in findings)
        # fixed column widths: the claims and this run's numbers get the room, not the longest word
        table = ('<table class="vlbias-findings" style="table-layout:fixed;width:97%"><colgroup><col style="width:28%">'
                 '<col style="width:22%"><col style="width:34%"><col style="width:16%"></colgroup>'
                 '<thead><tr><th>the paper says</th><th>published</th><th>this run</th>'
                 f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table>")
    claims = "the published claim" if len(findings) == 1 else f"the {len(findings)} published claims"
    body = (f"<p>{claims[0].upper() + claims[1:]} this page tests, and what this run says of "
            f"{'it' if len(findings) == 1 else 'each'} ({summary}):</p>{_STYLE}{table}")
    if noted:
        body += "<ol style='font-size:0.9em'>" + "".join(
            f"<li><b>{html.escape(f.claim)}.</b> {html.escape(f.note)}</li>" for f in findings if f.note) + "</ol>"
    recovery = [f for f in findings if f.recovery]
    if recovery or planted:
        body += _planted_paragraph(recovery, planted, control)
    return HTML(f'<div class="admonition important"><p class="admonition-title">Findings: paper vs ours</p>{body}</div>')


def _planted_paragraph(recovery: list[Finding], planted: str | None, control: str | None) -> str:
    """What the world plants, what the control is, and how many planted analogues the page recovered."""
    text = f"<p><b>The planted truth.</b> {html.escape(planted)}" if planted else "<p>"
    if control:
        text += f" {html.escape(control)}"
    tested = [f for f in recovery if f.verdict in ("recovered", "not recovered")]
    if tested:
        got = [f for f in tested if f.verdict == "recovered"]
        missed = [f.claim for f in tested if f.verdict == "not recovered"]
        claims = "claim" if len(tested) == 1 else "claims"
        against = [f for f in tested if f.contrast]
        how = ("beyond its control (the interval of planted minus control on the planted side of 0)"
               if len(against) == len(tested) else
               "on the planted model alone, with no control (its own interval on the planted side of 0)"
               if not against else "beyond its control where it has one, else on the planted model alone")
        text += (f" Of the {len(tested)} {claims} whose cause this world plants, the page recovered {len(got)} {how}"
                 + (f"; not: {html.escape('; '.join(missed))}" if missed else "") + ".")
    elif recovery:
        text += " This world plants no cause for the claims this run tests: each number is what the drawing, the " \
                "training and the sampling gave by themselves."
    if recovery:
        text += (" These rows show the method recovering (or not) a cause put in by construction; no verdict on a "
                 "paper's claim comes from a model trained here.")
    return text + "</p>"


def controls_of(model: str, controls) -> list[str]:
    """Which of a page's ``controls`` (specs) are controls of ``model``: for a model trained here, those trained
    by its own recipe (the same recipe without a cause: another model's control is no control of it); for any
    other model none, since nobody planted its world and its claims are judged on its own intervals."""
    def recipe(spec) -> str:
        return str(spec).partition(":")[2].partition("?")[0] if str(spec).startswith("trained:") else ""

    own = recipe(model)
    return [spec for spec in dict.fromkeys(controls or []) if own and recipe(spec) == own]


def design(model: str, control: str | None = None, names: Mapping[str, str] | None = None) -> Design:
    """The :class:`Design` of judging ``model`` against ``control``: trained here or not, and the causes
    each one's recipe plants (:func:`vlbias.models.trained.planted_causes`), by the names ``names`` gives
    them (spec -> name; the spec otherwise). ``control`` None, or empty: no control."""
    from .models.trained import planted_causes

    names = names or {}
    control = control or None
    plants, control_plants = planted_causes(model), planted_causes(control) if control else {}
    return Design(str(model), control, str(model).startswith("trained:"), frozenset(plants), frozenset(control_plants),
                  {**control_plants, **plants}, names.get(model, str(model)),
                  names.get(control, str(control)) if control else "")
