"""Controls for Part III: how far a WEAT effect size or a stereotyping gap depends on the words,
the number of tests and the prompt template chosen.

- :func:`weat_bootstrap` resamples the words of each set with replacement (an interval over words,
  not over embeddings trained anew); :func:`leave_one_word_out` drops one word at a time.
- :func:`vlbias.stats.with_holm` (Holm's adjustment within each set of embeddings) controls the
  family-wise error across a battery of tests (WEAT 1-10).
- :func:`template_sensitivity` measures the stereotyping gap with each template alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..stats import unit_rows
from ..weat import effect_size_from_scores

WEAT_SETS = ("X", "Y", "A", "B")


# --------------------------------------------------------------------------- WEAT over words

@dataclass(frozen=True)
class WeatInterval:
    effect_size: float
    low: float
    high: float
    confidence: float
    n_bootstrap: int
    n_undefined: int       # resamples whose targets all had one score (d undefined), left out
    resampled: str         # "targets" or "all"


def _cosines(X, Y, A, B) -> tuple[np.ndarray, np.ndarray]:
    targets = unit_rows(np.concatenate([np.atleast_2d(X), np.atleast_2d(Y)]))
    return targets @ unit_rows(A).T, targets @ unit_rows(B).T


def weat_bootstrap(X, Y, A, B, n_bootstrap: int = 2000, confidence: float = 0.95, resample: str = "all",
                   seed: int | None = 0, per_word: int = 1) -> WeatInterval:
    """Percentile bootstrap interval of the WEAT effect size over words.

    Each resample draws the words of X and Y (and, with ``resample="all"``, of A and B) with
    replacement within their own set and recomputes d. Draws, in this order per call:
    ``rng.integers(0, n_S, (n_bootstrap, n_S))`` for S = X, Y, then A, B, where n_S is the set's
    number of words. A resample in which every target has the same score has no d; it is left out
    and counted in ``n_undefined``.

    ``per_word``: rows per word, consecutive (SEAT's units: each word in ``per_word`` template
    sentences). A word's rows are drawn together, so the interval is over words, as the sentences
    of one word are not independent; d is computed over the drawn rows, as SEAT computes it.
    """
    if resample not in ("targets", "all"):
        raise ValueError(f"resample must be 'targets' or 'all', got {resample!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    sizes = [len(np.atleast_2d(S)) for S in (X, Y, A, B)]
    if per_word < 1 or any(size % per_word for size in sizes):
        raise ValueError(f"per_word must be a whole divisor of every set's rows {sizes}, got {per_word}")
    n_x, n_y, n_a, n_b = (size // per_word for size in sizes)  # words
    cos_a, cos_b = _cosines(X, Y, A, B)
    observed = effect_size_from_scores(*np.split(cos_a.mean(1) - cos_b.mean(1), [n_x * per_word]))
    rng = np.random.default_rng(seed)
    rows = np.arange(per_word)
    # a drawn word brings its per_word rows: word i is rows i * per_word .. i * per_word + per_word - 1
    pick_x = (rng.integers(0, n_x, (n_bootstrap, n_x))[:, :, None] * per_word + rows).reshape(n_bootstrap, -1)
    pick_y = n_x * per_word + (rng.integers(0, n_y, (n_bootstrap, n_y))[:, :, None] * per_word
                               + rows).reshape(n_bootstrap, -1)
    if resample == "all":
        # a resampled attribute mean is a weighted mean: weights = how often each word was drawn
        weights_a = np.repeat(_draw_weights(rng, n_a, n_bootstrap), per_word, axis=1) / per_word
        weights_b = np.repeat(_draw_weights(rng, n_b, n_bootstrap), per_word, axis=1) / per_word
        scores = cos_a @ weights_a.T - cos_b @ weights_b.T          # (targets, resamples)
    else:
        scores = np.repeat((cos_a.mean(1) - cos_b.mean(1))[:, None], n_bootstrap, axis=1)
    column = np.arange(n_bootstrap)[:, None]
    scores_x, scores_y = scores[pick_x, column], scores[pick_y, column]
    pooled = np.concatenate([scores_x, scores_y], axis=1)
    spread = pooled.std(axis=1, ddof=1)
    defined = spread > 1e-12 * np.maximum(1.0, np.abs(pooled).max(axis=1))
    d = (scores_x.mean(1) - scores_y.mean(1))[defined] / spread[defined]
    tail = (1 - confidence) / 2
    low, high = np.quantile(d, [tail, 1 - tail]) if d.size else (np.nan, np.nan)
    return WeatInterval(observed, float(low), float(high), confidence, n_bootstrap,
                        int(n_bootstrap - defined.sum()), resample)


def _draw_weights(rng: np.random.Generator, n: int, n_bootstrap: int) -> np.ndarray:
    picks = rng.integers(0, n, (n_bootstrap, n))
    counts = np.zeros((n_bootstrap, n))
    np.add.at(counts, (np.arange(n_bootstrap)[:, None], picks), 1.0)
    return counts / n


def leave_one_word_out(X, Y, A, B, words: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """The effect size with each word of X, Y, A and B left out in turn.

    Columns ``set``, ``word`` (from ``words[set]``, else its position), ``effect_size`` without it
    and ``change`` from the effect size with every word. A word whose removal moves d a lot carries
    the result by itself.
    """
    sets = dict(zip(WEAT_SETS, (np.atleast_2d(np.asarray(v, dtype=float)) for v in (X, Y, A, B))))
    words = dict(words or {})
    for key, vectors in sets.items():
        labels = words.get(key)
        if labels is not None and len(labels) != len(vectors):
            raise ValueError(f"words[{key!r}] names {len(labels)} words for {len(vectors)} vectors")
    cos_a, cos_b = _cosines(sets["X"], sets["Y"], sets["A"], sets["B"])
    n_x = len(sets["X"])

    def d(keep_targets, keep_a, keep_b):
        scores = cos_a[:, keep_a].mean(1) - cos_b[:, keep_b].mean(1)
        scores_x, scores_y = scores[:n_x][keep_targets[:n_x]], scores[n_x:][keep_targets[n_x:]]
        return effect_size_from_scores(scores_x, scores_y)

    everything = (np.ones(cos_a.shape[0], bool), np.ones(cos_a.shape[1], bool), np.ones(cos_b.shape[1], bool))
    full = d(*everything)
    rows = []
    for key, vectors in sets.items():
        if len(vectors) < 2:
            continue  # leaving the only word out leaves an empty set
        offset = n_x if key == "Y" else 0
        for i in range(len(vectors)):
            keep = [mask.copy() for mask in everything]
            slot = {"X": 0, "Y": 0, "A": 1, "B": 2}[key]
            keep[slot][offset + i] = False
            value = d(*keep)
            label = words[key][i] if key in words else str(i)
            rows.append({"set": key, "word": label, "effect_size": value, "change": value - full})
    table = pd.DataFrame(rows, columns=["set", "word", "effect_size", "change"])
    table.attrs["effect_size"] = full
    return table


def plot_leave_one_word_out(table: pd.DataFrame, ax=None, top: int | None = 20, title: str = ""):
    """Dots: d with each word left out (the ``top`` largest moves), coloured by set; line: d with all."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.25 * min(len(table), top or len(table)) + 1.2))
    shown = table.reindex(table["change"].abs().sort_values(ascending=False).index)
    shown = shown.head(top) if top else shown
    shown = shown.iloc[::-1]
    labels = [f"{s}: {w}" for s, w in zip(shown["set"], shown["word"])]
    colours = {key: f"C{i}" for i, key in enumerate(WEAT_SETS)}
    ax.scatter(shown["effect_size"], range(len(shown)), c=[colours[s] for s in shown["set"]], s=20, zorder=3)
    ax.axvline(table.attrs.get("effect_size", np.nan), color="black", linewidth=1, label="all words")
    ax.set_yticks(range(len(shown)), labels, fontsize=7)
    ax.set(xlabel="effect size d without the word", title=title)
    return ax


def weat_battery_controls(embed, tests: list[dict], n_bootstrap: int = 2000, confidence: float = 0.95,
                          resample: str = "all", seed: int = 0, name: str = "") -> pd.DataFrame:
    """Per test: the bootstrap interval of d over words and the range of d when one word is left out.

    ``embed`` and ``tests`` as in :func:`vlbias.weat.run_weat_battery` (merge on
    ``embeddings``, ``test``). Tests with fewer than 3 target words get NaN.
    """
    rows = []
    for test in tests:
        looked_up = {key: embed(test[key]) for key in WEAT_SETS}
        row = {"embeddings": name, "test": test["id"]}
        sizes = {key: len(looked_up[key][1]) for key in WEAT_SETS}
        if min(sizes.values()) == 0 or sizes["X"] + sizes["Y"] < 3:
            rows.append({**row, "d_low": np.nan, "d_high": np.nan, "loo_min": np.nan, "loo_max": np.nan,
                         "most_influential": ""})
            continue
        vectors = [looked_up[key][0] for key in WEAT_SETS]
        interval = weat_bootstrap(*vectors, n_bootstrap=n_bootstrap, confidence=confidence, resample=resample,
                                  seed=seed)
        loo = leave_one_word_out(*vectors, words={key: looked_up[key][1] for key in WEAT_SETS})
        top = loo.loc[loo["change"].abs().idxmax()] if len(loo) else None
        rows.append({**row, "d_low": interval.low, "d_high": interval.high,
                     "loo_min": loo["effect_size"].min(), "loo_max": loo["effect_size"].max(),
                     "most_influential": "" if top is None else f"{top['set']}: {top['word']} ({top['change']:+.2f})"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- stereotyping templates

def template_sensitivity(model, occupations: Sequence[str], female_share, templates: Sequence[str],
                         pronouns: Sequence[str] = ("she", "he", "they"), scoring: str = "slot",
                         confidence: float = 0.95, batch_size: int = 16, progress: bool = False,
                         cache: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stereotyping gap measured with each template alone.

    Returns ``(per_template, per_occupation)``: per template, the amplification slope (with its
    interval), Pearson r, the mean absolute gap and the mean model female share; per occupation,
    the model female share under each template and its spread (min, max, sd) across templates.
    The spread across templates is what a single template's number does not show.
    """
    from .measures import amplification_slope

    if len(templates) < 2:
        raise ValueError(f"templates: give at least 2 (3 or more to see a spread), got {len(templates)}")
    female = per_template_female_shares(model, occupations, templates, pronouns, scoring, batch_size, progress, cache)
    real = np.asarray(female_share, dtype=float)
    per_template = pd.DataFrame([{"template": template, **amplification_slope(column, real, confidence),
                                  "mean_model_share": float(column.mean())}
                                 for template, column in zip(templates, female.T)])
    per_occupation = pd.DataFrame({"occupation": list(occupations), "real female share": real})
    per_occupation[[f"template {i + 1}" for i in range(len(templates))]] = female
    per_occupation["min"], per_occupation["max"] = female.min(1), female.max(1)
    per_occupation["sd"] = female.std(1, ddof=1)
    return per_template, per_occupation


def per_template_female_shares(model, occupations: Sequence[str], templates: Sequence[str],
                               pronouns: Sequence[str] = ("she", "he", "they"), scoring: str = "slot",
                               batch_size: int = 16, progress: bool = False, cache: bool = False) -> np.ndarray:
    """(n_occupations, n_templates) model female share P(she | she or he) under each template alone.

    Slot scoring asks the model for exactly the contexts of
    :func:`vlbias.harms.measures.stereotyping_table` with the same templates, in the same order, so
    with ``cache=True`` the scores that table cached are reused rather than computed again.
    """
    from .measures import cached_scores, stereotyping_table

    if "she" not in pronouns or "he" not in pronouns:
        raise ValueError("pronouns must include 'she' and 'he'")
    if scoring == "sentence":
        return np.column_stack([stereotyping_table(model, occupations, np.zeros(len(occupations)), [template], pronouns,
                                                   scoring="sentence", batch_size=batch_size, progress=progress,
                                                   cache=cache)["model female share"].to_numpy()
                                for template in templates])
    if scoring != "slot":
        raise ValueError(f"scoring must be 'slot' or 'sentence', got {scoring!r}")
    for template in templates:
        if "{occupation}" not in template or model.SLOT not in template:
            raise ValueError(f"template needs {{occupation}} and {model.SLOT}: {template!r}")
    contexts = [t.replace("{occupation}", o) for o in occupations for t in templates]
    logprobs = cached_scores(model, "fill_logprobs", contexts, list(pronouns), batch_size, progress, cache)
    logprobs = logprobs.reshape(len(occupations), len(templates), len(pronouns))
    she, he = logprobs[..., list(pronouns).index("she")], logprobs[..., list(pronouns).index("he")]
    return 1.0 / (1.0 + np.exp(he - she))  # P(she) / (P(she) + P(he)): the renormalisation cancels


def template_spread(per_template: pd.DataFrame, columns: Sequence[str] = ("slope", "r", "mean_abs_gap")) -> pd.DataFrame:
    """Mean, sd, min and max across templates of each summary in ``columns``."""
    return per_template[list(columns)].agg(["mean", "std", "min", "max"]).T


def plot_template_sensitivity(per_template: pd.DataFrame, ax=None):
    """Amplification slope with its interval, one row per template; dashed line: slope 1."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.45 * len(per_template) + 1.2))
    y = np.arange(len(per_template))
    ax.errorbar(per_template["slope"], y, xerr=[per_template["slope"] - per_template["slope_low"],
                                                 per_template["slope_high"] - per_template["slope"]],
                fmt="o", capsize=3)
    ax.axvline(1, color="grey", linestyle="--", linewidth=0.8)
    ax.set_yticks(y, [t if len(t) < 50 else t[:47] + "..." for t in per_template["template"]], fontsize=7)
    ax.set(xlabel="amplification slope (model share on BLS share)", title="one template at a time")
    return ax
