"""The "Findings: paper vs ours" box that ends each paper page, computed from the page's own run.

Each :class:`Finding` is one published claim, the paper's number beside it, what this run measured
(with its interval) and a verdict the code reaches from the intervals, never typed in:

- **supports**: the run's intervals order the groups as the paper says;
- **contradicts**: they order them the other way;
- **cannot tell**: within noise: the intervals overlap, or a test is not significant;
- **cannot test**: this run lacks what the claim needs (say why in ``ours``).

On the demo's planted worlds, the box also says what the planted truth was and whether the page
recovered it (:func:`findings_box`'s ``planted``): the models there were trained so that the paper's
claims hold by construction, so a "supports" is the method recovering a known cause, not evidence
about the paper's models.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

#: the verdicts a finding can have, and how the box shows each
VERDICTS = {
    "supports": ("✔ supports", "#1a7f37"),
    "contradicts": ("✘ contradicts", "#b42318"),
    "cannot tell": ("~ cannot tell (within noise)", "#8a6d00"),
    "cannot test": ("– cannot test here", "#57606a"),
}


@dataclass(frozen=True)
class Finding:
    """One published claim beside this run's measurement, and the verdict the intervals give."""

    claim: str
    published: str
    ours: str
    verdict: str

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"Finding: verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")


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


def findings_box(findings: list[Finding], planted: str | None = None, causes: list[bool] | None = None) -> object:
    """The page's closing box: one row per finding (claim, published, this run, verdict) and a count of
    the verdicts. On a planted world, ``planted`` says in sentences what the world plants and ``causes``
    (one per finding; default: every one) whether it plants that claim's cause; a planted cause counts
    as recovered where the finding's verdict is "supports". Rendered as HTML with Sphinx's admonition
    classes."""
    from IPython.display import HTML

    if not findings:
        raise ValueError("findings_box: give at least one Finding")
    rows = "".join(
        f"<tr><td>{html.escape(f.claim)}</td><td>{html.escape(f.published)}</td><td>{html.escape(f.ours)}</td>"
        f'<td style="color:{VERDICTS[f.verdict][1]}"><b>{VERDICTS[f.verdict][0]}</b></td></tr>'
        for f in findings)
    counts = {verdict: sum(f.verdict == verdict for f in findings) for verdict in VERDICTS}
    summary = ", ".join(f"{verdict} {count}" for verdict, count in counts.items() if count)
    style = ('<style>table.vlbias-findings td, table.vlbias-findings th {padding: 0.3em 0.6em; vertical-align: top; '
             'text-align: left; border-bottom: 1px solid #dde1e6}</style>')
    claims = "the published claim" if len(findings) == 1 else f"the {len(findings)} published claims"
    body = (f"<p>{claims[0].upper() + claims[1:]} this page tests, and what this run says of "
            f"{'it' if len(findings) == 1 else 'each'} ({summary}):</p>{style}"
            # fixed column widths: the claims and this run's numbers get the room, not the longest word
            '<table class="vlbias-findings" style="table-layout:fixed;width:97%"><colgroup><col style="width:28%">'
            '<col style="width:22%"><col style="width:34%"><col style="width:16%"></colgroup>'
            '<thead><tr><th>the paper says</th><th>published</th><th>this run</th>'
            f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table>")
    if planted:
        causes = list(causes) if causes is not None else [True] * len(findings)
        if len(causes) != len(findings):
            raise ValueError(f"findings_box: causes has {len(causes)} entries for {len(findings)} findings")
        # a planted claim this run cannot test is neither recovered nor missed: it is named apart
        untestable = [f.claim for f, cause in zip(findings, causes) if cause and f.verdict == "cannot test"]
        recovered = [(f.verdict == "supports") if cause and f.verdict != "cannot test" else None
                     for f, cause in zip(findings, causes)]
        causes = [(f, r) for f, r in zip(findings, recovered) if r is not None]
        untested = (f" The world plants a cause this run cannot test for: {html.escape('; '.join(untestable))}."
                    if untestable else "")
        got = sum(bool(r) for _, r in causes)
        missed = [f.claim for f, r in causes if not r]
        # a claim this run cannot test has no verdict for the world to explain
        unplanted = [f.claim for f, r in zip(findings, recovered) if r is None and f.verdict != "cannot test"]
        if not causes:
            body += (f"<p><b>The planted truth.</b> {html.escape(planted)} This world plants no cause for the claims "
                     "this run tests: each verdict is what the drawing, the training and the sampling gave by "
                     f"themselves.{untested}</p>")
        else:
            claims = "claim" if len(causes) == 1 else "claims"
            body += (f"<p><b>The planted truth.</b> {html.escape(planted)} Of the {len(causes)} {claims} "
                     f"whose cause this world plants, the page recovered {got} beyond its intervals"
                     + (f" (not: {html.escape('; '.join(missed))})" if missed else "") + "."
                     + (f" The world plants no cause for: {html.escape('; '.join(unplanted))}; a verdict there is "
                        "what the drawing and the training gave by themselves." if unplanted else "")
                     + untested
                     + " A \"supports\" here shows the method recovering a cause put in by construction, not what "
                     "the papers' models do.</p>")
    return HTML(f'<div class="admonition important"><p class="admonition-title">Findings: paper vs ours</p>{body}</div>')
