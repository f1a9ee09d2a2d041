"""What 02b's numbers say, in sentences computed from them: each model against chance, the pairwise
matcher against the dual encoders, and why a degenerate number is degenerate.

Chance with ``k`` foils is ``1 / (k + 1)``: a model that cannot tell a caption from its foils ranks the
caption first that often (ties count as errors, so a model that scores caption and foils alike sits
below it, at 0%).
"""

from __future__ import annotations

from typing import Mapping

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
    return (f"{name_m} minus {name_d}: {difference:+.1f} points [{low:+.1f}, {high:+.1f}] (1 foil, paired "
            f"bootstrap; McNemar p = {row.p_mcnemar:.3g}): {verdict}.")


def paired_sentence(paired: pd.DataFrame, labels: Mapping[str, str] | None = None) -> str:
    """How many model pairs differ, and which intervals have zero width and why."""
    labels = labels or {}
    separated = paired[(paired.low_pp > 0) | (paired.high_pp < 0)]
    text = (f"{int((paired.p_mcnemar < 0.05).sum())} of {len(paired)} model pairs differ at p < 0.05 (exact McNemar), "
            f"and the bootstrap interval of the difference excludes 0 for {len(separated)}.")
    same = paired[(paired.low_pp == paired.high_pp)]
    if len(same):
        names = "; ".join(f"{labels.get(a, a)} and {labels.get(b, b)}" for a, b in zip(same.model_a, same.model_b))
        text += (f" Zero-width intervals ({names}): the two models are right and wrong on exactly the same pairs, "
                 "so every resample gives the same difference; it is not a precise estimate.")
    return text


# --------------------------------------------------------------------------- findings: paper vs ours

def _published_accuracy(published: pd.DataFrame, model: str, foils: int = 1) -> str:
    rows = published[(published["model"] == model) & (published["measure"] == "accuracy_%") & (published["foils"] == foils)]
    return ", ".join(f"{row.dataset} {row.value:.1f}%" for row in rows.itertuples()) or "not stated"


def paper_findings(chance: pd.DataFrame, paired: pd.DataFrame, kinds: Mapping[str, str], published: pd.DataFrame,
                   labels: Mapping[str, str] | None = None) -> list:
    """02b's claims, from its tables: (1) a CLIP-like dual encoder tells a caption from its colour foil
    well above chance (the first dual encoder of ``chance``, 1 foil); (2) the pairwise matchers (ViLT,
    BridgeTower) beat the dual encoders (the first matcher against the first dual encoder, paired
    difference with its bootstrap interval from ``paired``: :func:`vlbias.colorfoil.controls.paired_model_table`).
    A claim whose models this run lacks is "cannot test"."""
    from ..findings import Finding, difference_verdict

    labels = labels or {}
    one = chance[chance["foils"] == 1] if "foils" in chance else chance
    duals = [spec for spec in one["model"] if kinds.get(spec) == "dual"]
    matchers = [spec for spec in one["model"] if kinds.get(spec) == "pairwise"]
    found = []
    published_clip = _published_accuracy(published, "CLIP")
    if duals:
        row = one.set_index("model").loc[duals[0]]
        # against_chance's own verdict on the interval: above, at or below chance (or undefined: no pairs)
        verdict = {"above chance": "supports", "below chance": "contradicts"}.get(row["verdict"], "cannot tell")
        found.append(Finding("A CLIP-like dual encoder tells a caption from its colour foil well above chance (1 foil: 50%)",
                             f"CLIP: {published_clip}",
                             f"{labels.get(duals[0], duals[0])}: {row['accuracy_%']:.1f}% [{row['ci_low_%']:.1f}, "
                             f"{row['ci_high_%']:.1f}] of {int(row['n'])} pairs", verdict))
    else:
        found.append(Finding("A CLIP-like dual encoder tells a caption from its colour foil well above chance (1 foil: 50%)",
                             f"CLIP: {published_clip}", "no dual encoder in this run", "cannot test"))
    claim = "The pairwise matchers (ViLT, BridgeTower) beat the CLIP-like dual encoders"
    published_matchers = f"ViLT: {_published_accuracy(published, 'ViLT')}; CLIP: {published_clip}"
    if duals and matchers:
        a, b = matchers[0], duals[0]
        rows = paired[((paired["model_a"] == a) & (paired["model_b"] == b)) | ((paired["model_a"] == b) & (paired["model_b"] == a))]
        row = rows.iloc[0]
        sign = 1 if row["model_a"] == a else -1
        difference, low, high = sign * row["difference_pp"], *sorted((sign * row["low_pp"], sign * row["high_pp"]))
        found.append(Finding(claim, published_matchers,
                             f"{labels.get(a, a)} minus {labels.get(b, b)}: {difference:+.1f} points [{low:+.1f}, {high:+.1f}] "
                             f"on the same {int(row['n'])} pairs", difference_verdict(low, high)))
    else:
        found.append(Finding(claim, published_matchers, "this run has no pairwise matcher" if duals else
                             "this run has no dual encoder", "cannot test"))
    return found


def planted(model_specs, kinds: Mapping[str, str]) -> tuple[str | None, list[bool] | None]:
    """For :func:`vlbias.findings.findings_box` with :func:`paper_findings`: what the caption world plants
    for its two claims, when the first dual encoder is one trained there (``trained:caption-clip``):
    the colour words in its captions (claim 1 planted when ``colour_words=1``); no world plants an
    advantage of the matcher (claim 2). ``(None, None)`` for the papers' models."""
    from ..models.trained import describe_trained, trained_options

    duals = [spec for spec in model_specs if kinds.get(spec) == "dual"]
    if not duals or not str(duals[0]).startswith("trained:caption-clip"):
        return None, None
    body = str(duals[0]).partition(":")[2]
    _, options = trained_options(body)
    matchers = [spec for spec in model_specs if kinds.get(spec) == "pairwise" and str(spec).startswith("trained:")]
    text = f"The dual encoder: {describe_trained(body)}."
    if matchers:
        text += (f" The pairwise matcher: {describe_trained(str(matchers[0]).partition(':')[2])}. The world gives neither "
                 "kind an advantage by design: which one wins is what their training gave.")
    return text, [bool(options["colour_words"]), False]


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
    (``truths``: :func:`foil_truth` per data set)."""
    from ..findings import Finding

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
                             "these data record nothing of what each picture shows", "cannot test"))
    else:
        parts, holds = [], True
        for name, truth in tested.items():
            parts.append(f"{name}: {truth['captions naming the drawn colour']:,} of {truth['captions']:,} captions, "
                         f"{truth['foils naming another colour']:,} of {truth['foils']:,} foils")
            holds &= (truth["captions naming the drawn colour"] == truth["captions"]
                      and truth["foils naming another colour"] == truth["foils"])
        found.append(Finding(claim, "the benchmark's premise (Section 3)", "; ".join(parts),
                             "supports" if holds else "contradicts"))
    return found


def construction_planted(datasets: Mapping[str, object]) -> tuple[str | None, list[bool] | None]:
    """For :func:`construction_findings` on caption worlds: what they plant, in words (the main colour of
    each picture and the share of captions naming it), and which claims' cause they plant (the premise
    only: a world's size is not the paper's); ``(None, None)`` for other data."""
    from pathlib import Path

    from ..data.registry import world_of

    worlds = {name: world_of(d.root) for name, d in datasets.items() if (Path(d.root) / "main_colours.json").exists()}
    worlds = {name: world for name, world in worlds.items() if world}
    if not worlds:
        return None, None
    shares = {options.get("colour_share") for _, options in worlds.values()}
    share = f"{shares.pop():.0%} of captions" if len(shares) == 1 else "a set share of captions"
    names = {"coco": "COCO", "flickr30k": "Flickr30k"}
    text = (f"Caption worlds in {' and '.join(names.get(name, name) + chr(39) + 's' for name in worlds)} layouts: each picture a big shape in a recorded main colour "
            f"beside a small one, {share} naming the main colour and no other colour word.")
    return text, [False] * sum(name in datasets for name in ("coco", "flickr30k")) + [True]


# --------------------------------------------------------------------------- 02c: a colour model trained here

def colour_model_findings(table: pd.DataFrame, model: str, published: pd.DataFrame) -> list:
    """02c's claims, from its evaluation table (:func:`vlbias.colorfoil.evaluation.evaluation_table` with a
    ``chance_%`` column) for ``model`` (a name in its ``model`` column): (1) a model that has learned colours
    tells a caption from its colour foil above chance (1 foil, its Wilson interval against 50%); (2)
    accuracy falls as foils are added (the paper's Table 1: every model lower with 4 foils than with 1),
    from the intervals at the fewest and the most foils."""
    from ..findings import Finding, order_verdict

    rows = table[table["model"] == model].sort_values("foils")
    if rows.empty:
        raise ValueError(f"colour_model_findings: no row of model {model!r}; models: {sorted(set(table['model']))}.")
    clip = published[(published["model"] == "CLIP") & (published["measure"] == "accuracy_%")]
    first, last = rows.iloc[0], rows.iloc[-1]

    def accuracy(row) -> str:
        return f"{row['accuracy_%']:.1f}% [{row['ci_low_%']:.1f}, {row['ci_high_%']:.1f}]"

    def stated(foils: int) -> str:
        return ", ".join(f"{row.dataset} {row.value:.1f}%" for row in clip[clip["foils"] == foils].itertuples())

    chance = float(first["chance_%"])
    verdict = ("supports" if first["ci_low_%"] > chance else "contradicts" if first["ci_high_%"] < chance
               else "cannot tell")
    found = [Finding(f"A model that has learned colours tells a caption from its colour foil above chance "
                     f"({int(first['foils'])} foil: {chance:.0f}%)", f"CLIP: {stated(int(first['foils']))}",
                     f"{model}: {accuracy(first)} of {int(first['n'])} pairs", verdict)]
    claim = "Accuracy falls as foils are added"
    said = f"CLIP {stated(1)} with 1 foil; {stated(4)} with 4"
    if len(rows) < 2:
        found.append(Finding(claim, said, "one foil count only in this run", "cannot test"))
    else:
        found.append(Finding(claim, said, f"{model}: {accuracy(first)} with {int(first['foils'])} "
                             f"foil{'s' if first['foils'] > 1 else ''}, "
                             f"{accuracy(last)} with {int(last['foils'])}",
                             order_verdict((first["ci_low_%"], first["ci_high_%"]), (last["ci_low_%"], last["ci_high_%"]))))
    return found


def colour_model_planted(epochs: int, control: pd.Series | None = None) -> tuple[str, list[bool]]:
    """For :func:`colour_model_findings`: what 02c's training plants (captions naming each shape's colour:
    claim 1's cause; nothing sets how accuracy moves with more foils), and the untrained control's
    1-foil accuracy when given (a row of the evaluation table)."""
    text = (f"A mini-CLIP trained here for {epochs} epochs on easy-VQA pictures whose captions name each shape's "
            "colour: it learns colours by construction.")
    if control is not None:
        text += (f" The same network untrained, the control: {control['accuracy_%']:.1f}% "
                 f"[{control['ci_low_%']:.1f}, {control['ci_high_%']:.1f}] with {int(control['foils'])} foil "
                 f"(chance {control['chance_%']:.0f}%).")
    return text, [True, False]


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


def generative_findings(chance: pd.DataFrame, choices: pd.DataFrame, published: pd.DataFrame, model: str,
                        labels: Mapping[str, str] | None = None) -> list:
    """02d's claims for the generative ``model``: (1) the paper's first claim, that a model which reads
    the image tells a caption from its colour foil above chance, by likelihood (``chance``:
    :func:`against_chance` rows with a ``dataset`` column, 1 foil); (2) asked as a two-choice question
    (``choices``: :func:`~vlbias.colorfoil.generative.two_choice_table`), it chooses the caption above
    chance averaged over the orders, which the paper did not measure. A model that answered by position
    alone for every pair cannot test (2): its 50% is the position, not the content."""
    from ..findings import Finding

    labels = labels or {}
    name = labels.get(model, model)
    published_clip = _published_accuracy(published, "CLIP")
    rows = chance[chance["model"] == model]
    if rows.empty or not rows["n"].sum():
        first = Finding("A model that reads the image tells a caption from its colour foil above chance (1 foil: 50%)",
                        f"CLIP (image-text, the paper): {published_clip}", f"{name}: no pair scored", "cannot test")
    else:
        verdicts = set(rows["verdict"])
        verdict = ("supports" if verdicts == {"above chance"} else "contradicts" if verdicts == {"below chance"}
                   else "cannot tell")
        first = Finding("A model that reads the image tells a caption from its colour foil above chance (1 foil: 50%)",
                        f"CLIP (image-text, the paper): {published_clip}",
                        f"{name} by likelihood: " + "; ".join(
                            f"{row['dataset']} {row['accuracy_%']:.1f}% [{row['ci_low_%']:.1f}, {row['ci_high_%']:.1f}]"
                            for _, row in rows.iterrows()), verdict)
    claim = "Asked which caption describes the image, it chooses the caption above chance (averaged over the orders: 50%)"
    unmeasured = "not measured (the paper scores image-text models only)"
    asked = choices[choices["model"] == model].set_index(["dataset", "reading"])
    datasets = list(dict.fromkeys(asked.index.get_level_values("dataset")))
    readings = {dataset: _two_choice_reading(asked.loc[(dataset, "averaged over orders")],
                                             asked.loc[(dataset, "same label in both orders (position bias)")])
                for dataset in datasets}
    if not readings or set(readings.values()) == {"none"}:
        second = Finding(claim, unmeasured, f"{name}: no pair asked", "cannot test")
    elif set(readings.values()) == {"position"}:
        second = Finding(claim, unmeasured,
                         f"{name}: the same label won in both orders for every pair: it answers by position",
                         "cannot test")
    else:
        text = "; ".join(f"{dataset} {row['accuracy_%']:.1f}% [{row['ci_low_%']:.1f}, {row['ci_high_%']:.1f}]"
                         for dataset in datasets for row in [asked.loc[(dataset, "averaged over orders")]])
        verdicts = set(readings.values())
        second = Finding(claim, unmeasured, f"{name}: {text}", "supports" if verdicts == {"above chance"}
                         else "contradicts" if verdicts == {"below chance"} else "cannot tell")
    return [first, second]


def generative_planted(model: str) -> tuple[str | None, list[bool] | None]:
    """For :func:`generative_findings`: what the caption world plants when ``model`` was trained there
    (``trained:caption-captioner``): claim 1 where its captions kept their colour words; claim 2 never
    (the captioners were trained to caption, never asked a question). ``(None, None)`` for the papers'
    models."""
    from ..models.trained import describe_trained, trained_options

    if not str(model).startswith("trained:caption-captioner"):
        return None, None
    body = str(model).partition(":")[2]
    _, options = trained_options(body)
    return (f"The model: {describe_trained(body)}. It was never asked a question, so the world plants no answer "
            "to the two-choice one.", [bool(options["colour_words"]), False])
