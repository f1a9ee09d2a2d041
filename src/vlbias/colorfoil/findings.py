"""What Part II's numbers say, in sentences computed from them (each model against chance, the pairwise
matcher against the dual encoders, why a degenerate number is degenerate), and the findings boxes of its
pages: ColorFoil's claims judged by :func:`vlbias.findings.judge` (:func:`evaluation_findings` for 02b,
:func:`generative_findings` for 02d, :func:`colour_model_findings` for 02c, :func:`construction_findings`
for 02a), which the pages and the model card's audit both call.

Chance with ``k`` foils is ``1 / (k + 1)``: a model that cannot tell a caption from its foils ranks the
caption first that often (ties count as errors, so a model that scores caption and foils alike sits
below it, at 0%).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..stats import wilson_interval
from .evaluation import correct_at


def chance_percent(k: int) -> float:
    """Accuracy (%) of a model that cannot tell a caption from its ``k`` foils."""
    if k < 1:
        raise ValueError(f"k={k!r}: the number of foils must be at least 1.")
    return 100.0 / (k + 1)


def against_chance(scores: Mapping[str, np.ndarray], k: int = 1, labels: Mapping[str, str] | None = None,
                   confidence: float = 0.95) -> pd.DataFrame:
    """Per model: accuracy with ``k`` foils over every pair of ``scores`` (model -> score matrix, caption
    first), its Wilson interval, chance, ties, and whether the interval lies above, holds, or lies below
    chance."""
    labels = labels or {}
    chance = chance_percent(k)
    rows = []
    for spec, matrix in scores.items():
        usable, correct = correct_at(matrix, k)
        matrix = np.asarray(matrix, dtype=float)[usable][:, :k + 1]
        n, hits = len(correct), int(np.sum(correct))
        ties = int(np.sum(np.max(matrix[:, 1:], axis=1) == matrix[:, 0])) if n else 0
        low, high = (100 * np.asarray(wilson_interval(hits, n, confidence))).tolist() if n else (np.nan, np.nan)
        verdict = ("undefined: no pairs" if n == 0 else "above chance" if low > chance
                   else "below chance" if high < chance else "at chance")
        rows.append({"model": spec, "label": labels.get(spec, spec), "n": n,
                     "accuracy_%": 100 * hits / n if n else np.nan, "ci_low_%": low, "ci_high_%": high,
                     "chance_%": chance, "ties": ties, "verdict": verdict})
    return pd.DataFrame(rows)


def _why_degenerate(row) -> str:
    if row["n"] == 0:
        return " (undefined: no pair has a usable foil)"
    if row["ties"] == row["n"]:
        return " (every caption tied with a foil: the model scores them alike, and a tie counts as an error)"
    return ""


def chance_sentences(table: pd.DataFrame) -> str:
    """One sentence per model of :func:`against_chance`'s table."""
    parts = []
    for _, row in table.iterrows():
        if row["n"] == 0:
            parts.append(f"{row['label']}: undefined, no pair has a usable foil.")
            continue
        parts.append(f"{row['label']} ranks the caption first in {row['accuracy_%']:.1f}% "
                     f"[{row['ci_low_%']:.1f}, {row['ci_high_%']:.1f}] of {row['n']:,} pairs: "
                     f"{row['verdict']} ({row['chance_%']:.0f}%){_why_degenerate(row)}.")
    return " ".join(parts)


def matcher_comparison(paired: pd.DataFrame, matcher: str, dual: str, labels: Mapping[str, str] | None = None) -> str:
    """What :func:`vlbias.colorfoil.controls.paired_model_table` says about ``matcher`` against ``dual``
    (the paper: the pairwise matchers ViLT and BridgeTower beat the CLIP-like dual encoders)."""
    labels = labels or {}
    rows = paired[((paired.model_a == matcher) & (paired.model_b == dual)) | (
        (paired.model_a == dual) & (paired.model_b == matcher))]
    if rows.empty:
        raise ValueError(f"paired: no row compares {matcher!r} with {dual!r}; models: "
                         f"{', '.join(sorted(set(paired.model_a) | set(paired.model_b)))}.")
    row = rows.iloc[0]
    sign = 1.0 if row.model_a == matcher else -1.0
    low, high = sorted((sign * row.low_pp, sign * row.high_pp))
    difference = sign * row.difference_pp
    name_m, name_d = labels.get(matcher, matcher), labels.get(dual, dual)
    if low == high:
        return (f"{name_m} and {name_d} give the same answer on every pair, so their difference is 0 with an "
                "interval of zero width: these pairs cannot separate them.")
    verdict = ("the paper's ordering (the pairwise matcher above the dual encoder) holds here" if low > 0 else
               "the ordering is reversed here: the dual encoder is above the pairwise matcher" if high < 0 else
               "these pairs do not separate them")
    planted = (" Both were trained here on a world that plants no advantage for either kind: the order is what "
               "their training gave, not a finding on the paper's models." if all(
                   str(spec).startswith("trained:") for spec in (matcher, dual)) else "")
    return (f"{name_m} minus {name_d}: {difference:+.1f} points [{low:+.1f}, {high:+.1f}] (1 foil, paired "
            f"bootstrap; McNemar p = {row.p_mcnemar:.3g}): {verdict}.{planted}")


def paired_sentence(paired: pd.DataFrame, labels: Mapping[str, str] | None = None) -> str:
    """How many model pairs differ, and, in words, which pairs the resampling cannot spread: two models
    right and wrong on exactly the same pairs differ by 0 on every resample, which is agreement, not a
    precise estimate (no interval is printed for them)."""
    labels = labels or {}
    separated = paired[(paired.low_pp > 0) | (paired.high_pp < 0)]
    text = (f"{int((paired.p_mcnemar < 0.05).sum())} of {len(paired)} model pairs differ at p < 0.05 (exact McNemar), "
            f"and the bootstrap interval of the difference excludes 0 for {len(separated)}.")
    same = paired[(paired.low_pp == paired.high_pp)]
    if len(same):
        names = "; ".join(f"{labels.get(a, a)} and {labels.get(b, b)}" for a, b in zip(same.model_a, same.model_b))
        text += (f" Right and wrong on exactly the same pairs: {names}. Every resample of the pairs gives such "
                 "two models the same difference, so the resampling has no spread to show: they agree pair by "
                 "pair, which says nothing about how precisely the difference is known.")
    return text


def paired_display(paired: pd.DataFrame) -> pd.DataFrame:
    """:func:`~vlbias.colorfoil.controls.paired_model_table` for reading: the bootstrap interval as one
    column of text, and where every resample gave the same difference (the two models right and wrong on the
    same pairs), words in its place instead of an interval of zero width."""
    shown = paired.copy()
    same = shown["low_pp"] == shown["high_pp"]
    shown.insert(shown.columns.get_loc("low_pp"), "interval_pp", [
        "none: the same answers on every pair" if flat else f"[{low:+.1f}, {high:+.1f}]"
        for flat, low, high in zip(same, shown["low_pp"], shown["high_pp"])])
    return shown.drop(columns=["low_pp", "high_pp"])


# --------------------------------------------------------------------------- findings: paper vs ours
# ColorFoil's claims, each as a statistic that is above 0 where the claim holds, computed pair by pair from
# the score matrices so that one bootstrap resamples a model and its control together (the same pairs:
# a paired bootstrap, vlbias.stats.bootstrap_contrast), and judged by vlbias.findings.judge: the papers'
# models by the statistic's own interval, the demo's models trained here as the planted model minus its
# control. The pages and the model card's audit call the same functions (evaluation_findings,
# generative_findings, colour_model_findings), so a card and a page cannot disagree.

#: the causes behind ColorFoil's claims, in words: the vocabulary the trained recipes' ``plants`` use
#: (:func:`vlbias.models.caption_world_models.caption_world_plants`,
#: :func:`vlbias.colorfoil.trained_models.colour_model_plants`); the last three no recipe plants
CAUSES = {
    "colour_named": "captions that name each picture's colour",
    "colour_foils": "training that sets a caption against its colour foil",
    "matcher_advantage": "an advantage of the pairwise matcher over the dual encoder",
    "answers_questions": "training to answer a question about the picture",
    "foil_count": "anything that makes accuracy fall with more foils beyond what the task itself does",
}
#: resamples of the pairs behind each claim's interval
CLAIM_DRAWS = 1000
#: how the claims' numbers are written: percentage points, one decimal, signed
_POINTS = dict(scale=100, unit=" points", digits=1)


def _published_accuracy(published: pd.DataFrame | None, model: str, foils: int = 1) -> str:
    if published is None:
        return "not stated"
    rows = published[(published["model"] == model) & (published["measure"] == "accuracy_%") & (published["foils"] == foils)]
    return ", ".join(f"{row.dataset} {row.value:.1f}%" for row in rows.itertuples()) or "not stated"


def above_chance_claim(kind: str = "dual", published: pd.DataFrame | None = None, by: str = ""):
    """The paper's first claim as a statistic: a model tells a caption from its colour foil well above
    chance (one foil: 50%); the statistic is its one-foil accuracy minus 50%. ``kind`` "dual" (the paper's
    CLIP-like dual encoders, CLIP's published row), "pairwise" (its matchers, ViLT's and BridgeTower's), or
    "generative" (a model read ``by`` likelihood, which the paper did not measure: CLIP's row beside it)."""
    from ..findings import Claim

    statistic = "one-foil accuracy minus chance (50%)"
    if kind == "pairwise":
        return Claim("above_chance", "A pairwise matcher (ViLT, BridgeTower) tells a caption from its colour foil well "
                     "above chance (1 foil: 50%)", f"ViLT: {_published_accuracy(published, 'ViLT')}; BridgeTower: "
                     f"{_published_accuracy(published, 'BridgeTower')}", statistic, ("colour_named", "colour_foils"),
                     **_POINTS)
    if kind == "generative":
        return Claim("above_chance", f"A model that reads the image tells a caption from its colour foil above chance"
                     f"{', ' + by if by else ''} (1 foil: 50%)",
                     f"CLIP (image-text, the paper): {_published_accuracy(published, 'CLIP')}",
                     statistic + (f", {by}" if by else ""), ("colour_named",), **_POINTS)
    return Claim("above_chance", "A CLIP-like dual encoder tells a caption from its colour foil well above chance "
                 "(1 foil: 50%)", f"CLIP: {_published_accuracy(published, 'CLIP')}", statistic,
                 ("colour_named", "colour_foils"), **_POINTS)


def matcher_claim(published: pd.DataFrame | None = None):
    """The paper's second claim: the pairwise matchers (ViLT, BridgeTower) beat the CLIP-like dual encoders;
    the statistic is the matcher's one-foil accuracy minus the dual encoder's on the same pairs. No world
    here plants such an advantage."""
    from ..findings import Claim

    return Claim("matcher_beats_dual", "The pairwise matchers (ViLT, BridgeTower) beat the CLIP-like dual encoders",
                 f"ViLT: {_published_accuracy(published, 'ViLT')}; CLIP: {_published_accuracy(published, 'CLIP')}",
                 "the pairwise matcher's one-foil accuracy minus the dual encoder's, on the same pairs",
                 ("matcher_advantage",), **_POINTS)


def _datasets(scores: Mapping, spec: str) -> list[str]:
    """The data sets ``spec`` was scored on, in ``scores``' order."""
    return [name for model, name in scores if model == spec]


def _pooled(scores: Mapping, spec: str, datasets: Sequence[str], k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``spec``'s pairs over ``datasets``, pooled in order: whether the caption beat its first ``k`` foils
    (1.0 or 0.0; NaN where the pair has no ``k`` usable foils), and each pair's data set."""
    correct, where = [], []
    for name in datasets:
        matrix = np.asarray(scores[spec, name], dtype=float)
        usable, right = correct_at(matrix, k) if len(matrix) else (np.zeros(0, bool), np.zeros(0, bool))
        values = np.full(len(matrix), np.nan)
        values[usable] = right
        correct.append(values)
        where.append(np.full(len(matrix), name, dtype=object))
    if not correct:
        return np.zeros(0), np.zeros(0, dtype=object)
    return np.concatenate(correct), np.concatenate(where)


def _mean_minus(values: np.ndarray, offset: float):
    """The statistic ``weighted mean of values - offset`` as a function of a ``(B, n)`` weight matrix."""
    values = np.asarray(values, dtype=float)

    def statistic(weights):
        weights = np.asarray(weights, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return weights @ values / weights.sum(axis=1) - offset

    return statistic


def _judged(claim, found, own: np.ndarray, other: np.ndarray | None, strata: np.ndarray, offset: float,
            n_boot: int, seed: int, note: str = "", empty: str = "no pair is usable"):
    """:func:`vlbias.findings.judge` of ``claim`` on the per-pair values ``own`` (and the control's ``other``
    on the same pairs, resampled with them) less ``offset``."""
    from ..findings import Estimate, judge
    from ..stats import bootstrap_contrast

    if own.size == 0:
        return judge(claim, Estimate(float("nan"), how=empty), found, note=note)
    items = "pairs" if len(set(strata.tolist())) < 2 else "pairs, resampled within each data set"
    planted, control, contrast = bootstrap_contrast(
        _mean_minus(own, offset), None if other is None else _mean_minus(other, offset), strata,
        n_boot=n_boot, seed=seed, items=items)
    return judge(claim, planted, found, control, contrast, note)


def _design(model_spec: str, control: str | None, names: Mapping[str, str]):
    """:func:`vlbias.findings.design` with :data:`CAUSES` behind the recipes' own words."""
    from dataclasses import replace

    from ..findings import design

    found = design(model_spec, control, names)
    return replace(found, causes={**CAUSES, **found.causes})


def _paired_rows(scores: Mapping, model_spec: str, control: str | None, datasets: Sequence[str], k: int = 1):
    """The pairs both ``model_spec`` and ``control`` (when scored) can be judged on: ``(own, other, strata)``,
    ``other`` None without a control's scores."""
    own, strata = _pooled(scores, model_spec, datasets, k)
    other = None
    if control is not None and all((control, name) in scores for name in datasets):
        other, _ = _pooled(scores, control, datasets, k)
        if other.size != own.size:
            raise ValueError(f"scores: {model_spec} and its control {control} were not scored on the same pairs "
                             f"({own.size} against {other.size}); score both on the same benchmarks")
    keep = ~np.isnan(own) & (np.ones(own.size, bool) if other is None else ~np.isnan(other))
    return own[keep], None if other is None else other[keep], strata[keep]


def _accuracy_note(name: str, own: np.ndarray, control_name: str = "", other: np.ndarray | None = None,
                   by: str = "") -> str:
    text = f"One-foil accuracy{' ' + by if by else ''}: {name} {100 * own.mean():.1f}%"
    if other is None:
        return text + f", on {own.size:,} pairs."
    return text + f", {control_name} (the control) {100 * other.mean():.1f}%, on the same {own.size:,} pairs."


def _missing_control(control: str | None, scores: Mapping, datasets: Sequence[str], names: Mapping) -> str:
    if control is None or all((control, name) in scores for name in datasets):
        return ""
    return f"The control {names.get(control, control)} has no scores in this run (it failed or was not scored)."


def judged_model(model_specs: Sequence[str], kinds: Mapping[str, str]) -> str | None:
    """The model whose claims 02b's box judges: its first dual encoder (the paper's CLIP-like claim), else its
    first model; None without one."""
    scored = [spec for spec in model_specs if spec in kinds]
    return next((spec for spec in scored if kinds[spec] == "dual"), scored[0] if scored else None)


def evaluation_findings(model_spec: str, scores: Mapping, kinds: Mapping[str, str],
                        controls: Mapping[str, str] | None = None, published: pd.DataFrame | None = None,
                        names: Mapping[str, str] | None = None, n_boot: int = CLAIM_DRAWS, seed: int = 0) -> list:
    """02b's findings box for ``model_spec`` (the page: its first dual encoder; the model card: the audited
    model), as :func:`vlbias.findings.judge` reaches each verdict:

    1. :func:`above_chance_claim` for the model's kind: its one-foil accuracy minus chance, over the pairs
       of every data set it was scored on, pooled (the bootstrap resamples pairs within each data set). A
       model trained here is judged against its control, ``controls[model_spec]`` (the same recipe without
       the planted cause), on the same pairs: the difference of their accuracies with a paired bootstrap
       interval. Without a control the row judges the model alone and says why that is weaker.
    2. :func:`matcher_claim`: the first pairwise matcher's accuracy minus the first dual encoder's on the
       same pairs (``model_spec`` itself in its own role), paired bootstrap; "cannot test" without both
       kinds. No world here plants an advantage of either kind.

    ``scores``: ``{(spec, data set): score matrix}`` as :func:`vlbias.colorfoil.evaluation.score_models`
    returns it, holding ``model_spec``, its control, and for claim 2 a model of the other kind; ``kinds``:
    spec -> "dual" or "pairwise" (its second return, in the page's order); ``controls``: spec -> its
    control's spec (the page's parameter; ``{}``: none); ``published``: the paper's Table 1
    (``book.published("colorfoil_table1_samin2024")``); ``names``: spec -> the page's name for it."""
    from dataclasses import replace

    from ..findings import Finding

    controls, names = dict(controls or {}), dict(names or {})
    datasets = _datasets(scores, model_spec)
    kind = kinds.get(model_spec, "dual")
    claim = above_chance_claim("pairwise" if kind == "pairwise" else "dual", published)
    name = names.get(model_spec, model_spec)
    found = []
    if not datasets:
        found.append(Finding(claim.text, claim.published, f"{name}: no scores in this run", "cannot test",
                             key=claim.key))
    else:
        control = controls.get(model_spec)
        own, other, strata = _paired_rows(scores, model_spec, control, datasets)
        note = " ".join(part for part in (_missing_control(control, scores, datasets, names),
                                          _accuracy_note(name, own, names.get(control, control or ""), other)
                                          if own.size else "") if part)
        found.append(_judged(claim, _design(model_spec, control, names), own, other, strata, 0.5, n_boot, seed, note,
                             empty="no pair has a usable foil"))
    second = matcher_claim(published)
    matcher = model_spec if kind == "pairwise" else next((s for s, k in kinds.items() if k == "pairwise"), None)
    dual = model_spec if kind == "dual" else next((s for s, k in kinds.items() if k == "dual"), None)
    pair = [spec for spec in (matcher, dual) if spec is not None]
    if len(pair) < 2 or not all((spec, name) in scores for spec in pair for name in datasets) or not datasets:
        found.append(Finding(second.text, second.published, "this run has no pairwise matcher" if matcher is None
                             else "this run has no dual encoder" if dual is None else "no scores of both on the same pairs",
                             "cannot test", key=second.key))
        return found
    a, strata = _pooled(scores, matcher, datasets)
    b, _ = _pooled(scores, dual, datasets)
    keep = ~np.isnan(a) & ~np.isnan(b)
    a, b, strata = a[keep], b[keep], strata[keep]
    design = _design(matcher, None, names)
    design = replace(design, trained=design.trained or str(dual).startswith("trained:"))
    note = (f"{names.get(matcher, matcher)} minus {names.get(dual, dual)}: {100 * a.mean():.1f}% against "
            f"{100 * b.mean():.1f}% on the same {a.size:,} pairs." if a.size else "")
    found.append(_judged(second, design, a - b, None, strata, 0.0, n_boot, seed, note,
                         empty="no pair both models can be judged on"))
    return found


def evaluation_planted(model_spec: str | None, controls: Mapping[str, str] | None = None,
                       kinds: Mapping[str, str] | None = None, names: Mapping[str, str] | None = None
                       ) -> tuple[str | None, str | None]:
    """For :func:`vlbias.findings.findings_box` with :func:`evaluation_findings`: what the model's world
    plants, in words, with the pairwise matcher where one trained here stands beside it, and what its control
    is; ``(None, None)`` for a model not trained here (the papers' own)."""
    from ..models.trained import describe_trained

    if not str(model_spec or "").startswith("trained:"):
        return None, None
    names, kinds = dict(names or {}), dict(kinds or {})
    describe = lambda spec: describe_trained(str(spec).partition(":")[2])  # noqa: E731
    text = f"The model, {names.get(model_spec, model_spec)}: {describe(model_spec)}."
    matchers = [spec for spec, kind in kinds.items() if kind == "pairwise" and str(spec).startswith("trained:")
                and spec != model_spec]
    if matchers:
        text += (f" Beside it, {names.get(matchers[0], matchers[0])}: {describe(matchers[0])}. The world gives neither "
                 "kind an advantage by design: which one wins is what their training gave.")
    control = (controls or {}).get(model_spec)
    if not control:
        return text, None
    about = describe(control) if str(control).startswith("trained:") else "a model not trained here"
    return text, (f"The control, {names.get(control, control)}: {about}. Intervals: a paired bootstrap over the "
                  "pairs, resampled within each data set, the model and its control on the same pairs together.")


# --------------------------------------------------------------------------- 02a: the benchmark's construction

def foil_truth(dataset, benchmark: pd.DataFrame) -> dict[str, int] | None:
    """On a caption world (whose writer recorded the main colour drawn in each picture:
    :func:`vlbias.data.caption_world.main_colours`), how many benchmark captions name exactly the colour
    their picture shows and how many foils name a colour it does not: the benchmark's premise, that a
    foil is false and its caption true, checked against the truth. ``None`` for data without such a
    record (the real releases, the fixtures)."""
    from pathlib import Path

    from ..data.caption_world import main_colours

    if not (Path(dataset.root) / "main_colours.json").exists():
        return None
    truth = main_colours(dataset.root)
    files = dataset.records["file"]
    captions_true = foils = foils_false = 0
    for row in benchmark.itertuples():
        drawn = truth[files.iat[int(row.image_index)]]
        captions_true += list(row.words) == [drawn]
        for replacement in row.replacements:
            targets = [pair.split("->")[1].strip() for pair in replacement.split(";") if "->" in pair]
            foils += 1
            foils_false += drawn not in targets
    return {"captions": len(benchmark), "captions naming the drawn colour": captions_true,
            "foils": foils, "foils naming another colour": foils_false}


def construction_findings(counts: Mapping[str, Mapping[str, int]], published_counts: pd.DataFrame,
                          truths: Mapping[str, dict | None], real_data: bool, why_not: str = "") -> list:
    """02a's claims: the paper's benchmark sizes (COCO val2017: 2,511 images with a colour word;
    Flickr30k: 2,500 pairs), testable on the real releases only (``real_data``; else "cannot test" for
    the reason ``why_not``), equal or not; and the benchmark's premise that each caption names what its
    picture shows and each foil does not, testable where the data record what each picture shows
    (``truths``: :func:`foil_truth` per data set). The premise is an exact count over every caption and
    foil (no sampling, so no interval): it holds only where every one of them does."""
    from ..findings import Estimate, Finding

    stated = published_counts.set_index(["dataset", "measure"])["value"]
    found = []
    for dataset, measure, ours_key, claim in (
            ("coco", "pairs_with_colour_word", "with a colour word (whole word, ours)",
             "COCO val2017 holds 2,511 images with a caption naming a colour"),
            ("flickr30k", "benchmark_pairs", "benchmark pairs", "Flickr30k (Karpathy val + test) gives 2,500 pairs")):
        if dataset not in counts or (dataset, measure) not in stated.index:
            continue
        paper, ours = int(stated[(dataset, measure)]), int(counts[dataset][ours_key])
        if not real_data:
            found.append(Finding(claim, f"{paper:,}", f"{ours:,}, {why_not or 'not on the real data'}", "cannot test"))
        else:
            found.append(Finding(claim, f"{paper:,}", f"{ours:,} ({ours - paper:+,})",
                                 "supports" if ours == paper else "contradicts"))
    tested = {name: truth for name, truth in truths.items() if truth}
    claim = "Each benchmark caption names the colour its picture shows, and each foil a colour it does not"
    if not tested:
        found.append(Finding(claim, "the benchmark's premise (Section 3)",
                             "these data record nothing of what each picture shows", "cannot test", key="premise"))
        return found
    def share(count: int, total: int, what: str) -> str:
        return f"all {total:,} {what}" if count == total else f"{count:,} of {total:,} {what}"

    parts = []
    for name, truth in tested.items():
        captions, foils = truth["captions"], truth["foils"]
        named, other = truth["captions naming the drawn colour"], truth["foils naming another colour"]
        parts.append(f"{name}: {share(named, captions, 'captions')} name the drawn colour, "
                     f"{share(other, foils, 'foils')} another")
    captions = sum(truth["captions"] for truth in tested.values())
    foils = sum(truth["foils"] for truth in tested.values())
    holding = sum(truth["captions naming the drawn colour"] + truth["foils naming another colour"]
                  for truth in tested.values())
    how = f"all {captions:,} captions and {foils:,} foils counted"
    estimate = Estimate(holding / (captions + foils) if captions + foils else float("nan"), how=how, exact=True)
    found.append(Finding(claim, "the benchmark's premise (Section 3)", "; ".join(parts) + f" (exact: {how})",
                         "supports" if captions + foils and holding == captions + foils else "contradicts",
                         note="An exact count of every caption and foil against the colour the data record for its "
                              "picture, none sampled: it has no interval, and it holds only if every one does.",
                         key="premise", estimates={"model": estimate}))
    return found


def construction_planted(datasets: Mapping[str, object]) -> str | None:
    """For :func:`construction_findings` on caption worlds: what they plant, in words (the main colour of
    each picture and the share of captions naming it); ``None`` for other data."""
    from pathlib import Path

    from ..data.registry import world_of

    worlds = {name: world_of(d.root) for name, d in datasets.items() if (Path(d.root) / "main_colours.json").exists()}
    worlds = {name: world for name, world in worlds.items() if world}
    if not worlds:
        return None
    shares = {options.get("colour_share") for _, options in worlds.values()}
    share = f"{shares.pop():.0%} of captions" if len(shares) == 1 else "a set share of captions"
    names = {"coco": "COCO", "flickr30k": "Flickr30k"}
    return (f"Caption worlds in {' and '.join(names.get(name, name) + chr(39) + 's' for name in worlds)} layouts: each "
            f"picture a big shape in a recorded main colour beside a small one, {share} naming the main colour and no "
            "other colour word. The world's size is not the paper's, so the paper's counts cannot be tested on it; "
            "what each picture shows is recorded, so the premise is counted exactly.")


# --------------------------------------------------------------------------- 02c: a colour model trained here

def colour_model_findings(model: str, scores: Mapping, control: str | None = None, specs: Mapping[str, str] | None = None,
                          published: pd.DataFrame | None = None, foil_counts: Sequence[int] = (1, 2, 4),
                          n_boot: int = CLAIM_DRAWS, seed: int = 0) -> list:
    """02c's claims for the page's ``model`` (a name among ``scores``' models: ``{(name, data set): score
    matrix}``), against ``control`` (another name: the same network untrained; None: no control), on the
    same pairs:

    1. a model that has learned colours tells a caption from its colour foil above chance: one-foil
       accuracy minus 50% (:func:`above_chance_claim`), planted minus control with a paired bootstrap;
    2. accuracy falls as foils are added (the paper's Table 1: every model lower with 4 foils than with 1):
       accuracy with the fewest of ``foil_counts`` minus with the most, on the pairs that have that many
       foils. Even a model at chance falls (50% to 20%): nothing the training plants is behind it.

    ``specs`` (name -> its ``trained:easy-vqa-colour`` spec, :func:`vlbias.colorfoil.trained_models.colour_model_spec`)
    says what each one plants; without it the names are judged as models not trained here."""
    from ..findings import Claim, Finding

    specs = dict(specs or {})
    datasets = _datasets(scores, model)
    if not datasets:
        raise ValueError(f"colour_model_findings: no scores of model {model!r}; models: "
                         f"{sorted({key[0] for key in scores})}.")
    if control is not None and not _datasets(scores, control):
        raise ValueError(f"colour_model_findings: control={control!r} has no scores; give one of "
                         f"{sorted({key[0] for key in scores})}, or None for no control.")
    spec, control_spec = specs.get(model, model), None if control is None else specs.get(control, control)
    names = {spec: model, **({control_spec: control} if control_spec else {})}
    found = _design(spec, control_spec, names)
    clip = f"CLIP: {_published_accuracy(published, 'CLIP')}"
    first = Claim("above_chance", "A model that has learned colours tells a caption from its colour foil above chance "
                  "(1 foil: 50%)", clip, "one-foil accuracy minus chance (50%)", ("colour_named",), **_POINTS)
    own, other, strata = _paired_rows(scores, model, control, datasets)
    rows = [_judged(first, found, own, other, strata, 0.5, n_boot, seed,
                    _accuracy_note(model, own, control or "", other) if own.size else "")]
    fewest, most = min(foil_counts), max(foil_counts)
    second = Claim("fewer_with_more_foils", "Accuracy falls as foils are added",
                   f"CLIP {_published_accuracy(published, 'CLIP', 1)} with 1 foil; "
                   f"{_published_accuracy(published, 'CLIP', 4)} with 4",
                   f"accuracy with {fewest} foil{'s' if fewest > 1 else ''} minus with {most}", ("foil_count",), **_POINTS)
    if fewest == most:
        rows.append(Finding(second.text, second.published, "one foil count only in this run", "cannot test",
                            key=second.key))
        return rows
    drops = {}
    for name in [model] + ([control] if control is not None else []):
        at_fewest, strata = _pooled(scores, name, datasets, fewest)
        at_most, _ = _pooled(scores, name, datasets, most)
        drops[name] = at_fewest - at_most  # NaN where the pair lacks the most foils
    keep = ~np.isnan(drops[model]) & (~np.isnan(drops[control]) if control is not None else True)
    note = (f"Even a model at chance falls from {100 / (fewest + 1):.0f}% to {100 / (most + 1):.0f}%: more foils make "
            "the task harder for any model that is not perfect.")
    rows.append(_judged(second, found, drops[model][keep], None if control is None else drops[control][keep],
                        strata[keep], 0.0, n_boot, seed, note, empty=f"no pair has {most} foils"))
    return rows


def colour_model_planted(epochs: int, control: str | None = None) -> tuple[str, str | None]:
    """For :func:`colour_model_findings`: what 02c's training plants (captions naming each shape's colour)
    and what its control is (``control``: its name on the page, None: none)."""
    text = (f"A mini-CLIP trained here for {epochs} epochs on easy-VQA pictures whose captions name each shape's "
            "colour: it learns colours by construction; nothing in its training sets how accuracy moves with more "
            "foils.")
    if control is None:
        return text, None
    which = "untrained, at its random initialisation" if control == "untrained" else f"after {control}"
    return text, (f"The control: the same network {which} (a snapshot of the same training), on the same test "
                  "pairs. Intervals: a paired bootstrap over the pairs.")


# --------------------------------------------------------------------------- 02d: generative models

def _two_choice_reading(average, bias) -> str:
    """What one model's two-choice rows say (``average``: its "averaged over orders" row, ``bias``: its
    position-bias row): "none" (no pair asked), "position" (the same label won in both orders for every
    pair, so the 50% average is the position, not the content), else where the average's interval lies
    against chance (50%): "above chance", "below chance" or "at chance"."""
    if int(average["n"]) == 0:
        return "none"
    if bias["accuracy_%"] == 100:
        return "position"
    return ("above chance" if average["ci_low_%"] > 50 else "below chance" if average["ci_high_%"] < 50
            else "at chance")


def two_choice_sentences(table: pd.DataFrame, labels: Mapping[str, str] | None = None) -> str:
    """One sentence per model and data set of :func:`~vlbias.colorfoil.generative.two_choice_table`:
    the accuracy averaged over the orders against chance (50%), and the position-bias rate. Where the
    same label won in both orders for every pair, the average is no finding (a model that always
    answers "A" scores exactly 50%), and the sentence says so instead."""
    labels = labels or {}
    parts = []
    for (model, dataset), rows in table.groupby(["model", "dataset"], sort=False):
        rows = rows.set_index("reading")
        average, bias = rows.loc["averaged over orders"], rows.loc["same label in both orders (position bias)"]
        name, where = labels.get(model, model), _two_choice_reading(average, bias)
        if where == "none":
            parts.append(f"{name} on {dataset}: undefined, no pair has a foil.")
            continue
        if where == "position":
            parts.append(f"{name} on {dataset}: the same label won in both orders for all {int(bias['n'])} pairs, so its "
                         "choices follow the position, not the content; its 50% average is no finding.")
            continue
        parts.append(f"{name} on {dataset}: {average['accuracy_%']:.1f}% [{average['ci_low_%']:.1f}, "
                     f"{average['ci_high_%']:.1f}] averaged over the orders, {where} (50%); the same label won in both "
                     f"orders for {bias['accuracy_%']:.0f}% of pairs.")
    return " ".join(parts)


def two_choice_claim():
    """The two-choice reading as a claim: asked which caption describes the image, a model chooses the caption
    above chance, averaged over the two orders (50%); the paper did not measure it, and no world here plants
    an answer to a question."""
    from ..findings import Claim

    return Claim("two_choice", "Asked which caption describes the image, it chooses the caption above chance "
                 "(averaged over the orders: 50%)", "not measured (the paper scores image-text models only)",
                 "the share of pairs whose caption it chooses, averaged over the two orders, minus 50%",
                 ("answers_questions",), **_POINTS)


def _choices_pooled(choices: Mapping, spec: str, datasets: Sequence[str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """``spec``'s two-choice answers over ``datasets``: per pair the caption chosen averaged over the orders
    (1, 1/2 or 0), each pair's data set, and whether the same label won in both orders for every pair."""
    from .generative import READINGS, _per_example

    values, where, same = [], [], []
    for name in datasets:
        readings = _per_example(choices[spec, name])
        values.append(readings[READINGS[2]])
        same.append(readings[READINGS[4]])
        where.append(np.full(len(values[-1]), name, dtype=object))
    values, same = np.concatenate(values), np.concatenate(same)
    return values, np.concatenate(where), bool(values.size) and bool((same == 1).all())


def generative_findings(model_spec: str, scores: Mapping, choices: Mapping | None = None,
                        controls: Mapping[str, str] | None = None, published: pd.DataFrame | None = None,
                        names: Mapping[str, str] | None = None, n_boot: int = CLAIM_DRAWS, seed: int = 0,
                        by: str = "by likelihood") -> list:
    """02d's findings box for the generative ``model_spec`` (the page: its first model; the model card: the
    audited one), as :func:`vlbias.findings.judge` reaches each verdict:

    1. :func:`above_chance_claim` read ``by`` likelihood: one-foil accuracy minus chance, pooled over the
       data sets (resampled within each); a model trained here against its control
       (``controls[model_spec]``) on the same pairs, paired bootstrap.
    2. :func:`two_choice_claim` (only with ``choices``): the caption chosen averaged over the orders, minus
       50%, against the control on the same pairs. A model whose answer followed the position for every
       pair cannot test it (its 50% is the position); on a model trained here no world plants an answer.

    ``scores``: ``{(spec, data set): score matrix}`` under the page's headline score (02d's
    ``scores[score]``, :func:`vlbias.colorfoil.generative.score_generative_models`, or the audit's
    :func:`~vlbias.colorfoil.generative.likelihood_scores`); ``choices``: ``{(spec, data set): two_choice
    table}`` (None: claim 2 is left out); ``controls``: spec -> its control's spec; ``names``: spec -> name."""
    from ..findings import Estimate, Finding, judge

    controls, names = dict(controls or {}), dict(names or {})
    name = names.get(model_spec, model_spec)
    datasets = _datasets(scores, model_spec)
    claim = above_chance_claim("generative", published, by)
    control = controls.get(model_spec)
    design = _design(model_spec, control, names)
    if not datasets:
        found = [Finding(claim.text, claim.published, f"{name}: no pair scored", "cannot test", key=claim.key)]
    else:
        own, other, strata = _paired_rows(scores, model_spec, control, datasets)
        note = " ".join(part for part in (_missing_control(control, scores, datasets, names),
                                          _accuracy_note(name, own, names.get(control, control or ""), other, by)
                                          if own.size else "") if part)
        found = [_judged(claim, design, own, other, strata, 0.5, n_boot, seed, note, empty="no pair scored")]
    if choices is None:
        return found
    second = two_choice_claim()
    asked = [key[1] for key in choices if key[0] == model_spec]
    if not asked:
        found.append(Finding(second.text, second.published, f"{name}: no pair asked", "cannot test", key=second.key))
        return found
    own, strata, position = _choices_pooled(choices, model_spec, asked)
    other = None
    if control is not None and all((control, dataset) in choices for dataset in asked):
        other, _, control_position = _choices_pooled(choices, control, asked)
        if other.size != own.size:
            raise ValueError(f"choices: {model_spec} and its control {control} were not asked the same pairs")
    if own.size == 0:
        found.append(Finding(second.text, second.published, f"{name}: no pair asked", "cannot test", key=second.key))
        return found
    notes = []
    if position:
        notes.append(f"{name} chose the same label in both orders for every pair: its choices follow the position, "
                     "not the content, so its 50% average is no finding.")
    if other is not None and control_position:
        notes.append(f"So did the control, {names.get(control, control)}.")
    if position and not design.trained:  # a paper's model answering by position: nothing to judge
        found.append(judge(second, Estimate(float("nan"), how=f"{name} chose the same label in both orders for "
                                            "every pair"), design,
                           note="Its choices follow the position, not the content: its 50% average is no finding."))
        return found
    found.append(_judged(second, design, own, other, strata, 0.5, n_boot, seed, " ".join(notes)))
    return found


def generative_planted(model_spec: str | None, controls: Mapping[str, str] | None = None,
                       names: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """For :func:`generative_findings`: what the caption world plants when ``model_spec`` was trained there
    (its colour words, or none), that it was never asked a question, and what its control is; ``(None,
    None)`` for the papers' models."""
    from ..models.trained import describe_trained

    if not str(model_spec or "").startswith("trained:"):
        return None, None
    names = dict(names or {})
    text = (f"The model, {names.get(model_spec, model_spec)}: {describe_trained(str(model_spec).partition(':')[2])}. "
            "It was never asked a question, so the world plants no answer to the two-choice one.")
    control = (controls or {}).get(model_spec)
    if not control:
        return text, None
    about = describe_trained(str(control).partition(":")[2]) if str(control).startswith("trained:") else \
        "a model not trained here"
    return text, (f"The control, {names.get(control, control)}: {about}. Intervals: a paired bootstrap over the "
                  "pairs, resampled within each data set, the model and its control on the same pairs together.")
