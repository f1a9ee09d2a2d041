"""Markedness: is "a photo of a person" preferred to every label of a family?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .groups import _in_label_order, group_indices, selected, with_group_label
from ..stats import unit_rows
from .prompts import FAMILIES, OLDEST_AGE_WORDINGS, PERSON_PROMPT, label_prompts, prompt_set


def is_unmarked(person_scores: np.ndarray, label_scores: np.ndarray) -> np.ndarray:
    """True where the person prompt scores strictly above every label prompt.

    ``person_scores``: (n,); ``label_scores``: (n, k) for the k labels of one family.
    """
    person_scores = np.asarray(person_scores)
    label_scores = np.asarray(label_scores)
    if label_scores.ndim != 2 or label_scores.shape[0] != person_scores.shape[0]:
        raise ValueError(f"label_scores must be (n, k) with n={person_scores.shape[0]}, got {label_scores.shape}")
    return person_scores > label_scores.max(axis=1)


def checked_flags(unmarked, n_records: int, name: str = "unmarked") -> np.ndarray:
    """``unmarked`` as booleans, one per record; NaN or values other than 0/1 are an error (a NaN
    cast to bool is True, so a failed score would otherwise count as unmarked)."""
    values = np.asarray(unmarked)
    if values.shape != (n_records,):
        raise ValueError(f"{name} must hold one flag per record ({n_records}), got shape {values.shape}")
    if values.dtype != bool:
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        if not np.isin(numeric, (0.0, 1.0)).all():
            bad = int((~np.isin(numeric, (0.0, 1.0))).sum())
            raise ValueError(f"{name} has {bad} value(s) that are not True/False (NaN or missing scores?); "
                             "drop those records or recompute their flags")
        values = numeric.astype(bool)
    return values


def unmarked_flags(image_embeddings: np.ndarray, text_embed, prompts: dict[str, dict[str, str]] | None = None,
                   person_prompt: str = PERSON_PROMPT) -> pd.DataFrame:
    """One boolean column per family: is the image unmarked (person prompt beats every label)?

    ``text_embed(texts) -> (len(texts), dim)`` embeds prompts (e.g. ``lambda t: embed_texts(model, t)``);
    scores are raw cosines of the unit image and text embeddings, as in the paper.
    """
    prompts = prompts or label_prompts()
    texts = list(dict.fromkeys([person_prompt] + [p for labels in prompts.values() for p in labels.values()]))
    column = {text: i for i, text in enumerate(texts)}
    images = unit_rows(image_embeddings, "image_embeddings", np.float32)
    cosines = images @ unit_rows(text_embed(texts), "text embeddings", np.float32).T
    person = cosines[:, column[person_prompt]]
    return pd.DataFrame({family: is_unmarked(person, cosines[:, [column[p] for p in labels.values()]])
                         for family, labels in prompts.items()})


def unmarked_rates(records: pd.DataFrame, unmarked: np.ndarray, by: str, confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) per group of ``records[by]``, with a Wilson interval."""
    from ..stats import wilson_interval

    flags = pd.Series(checked_flags(unmarked, len(records)))
    grouped = flags.groupby(records[by].to_numpy())
    frame = pd.DataFrame({"n": grouped.size(), "unmarked": grouped.sum()}).rename_axis(by).reset_index()
    low, high = wilson_interval(frame["unmarked"].to_numpy(), frame["n"].to_numpy(), confidence)
    frame["unmarked_%"] = 100 * frame["unmarked"] / frame["n"]
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    return _in_label_order(frame.drop(columns="unmarked"), by)


def unmarked_table(records: pd.DataFrame, unmarked: np.ndarray, by: str | list[str], balance: bool = False,
                   repetitions: int = 10_000, seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) per group of ``records[by]`` with a 95% Wilson interval.

    ``balance=True`` also downsamples every group to the smallest one ``repetitions`` times, as the
    paper describes: the number unmarked in a subsample of m of a group's n images, K of them
    unmarked, is hypergeometric, so the draws are exact and O(1) each. Columns ``balanced_%``
    (mean of the draws) and ``balanced_low_%``/``balanced_high_%`` (percentile interval) are added;
    the mean equals the full-group rate in expectation, the interval widens as m shrinks; a group of
    the smallest size is drawn whole every time, so its rate is exact and its interval left empty (NaN).
    """
    from ..stats import wilson_interval

    keys = [by] if isinstance(by, str) else list(by)
    flags = checked_flags(unmarked, len(records))
    groups = group_indices(records, keys)
    n = np.array([len(index) for index in groups.values()])
    k = np.array([int(flags[index].sum()) for index in groups.values()])
    frame = pd.DataFrame([dict(zip(keys, key)) for key in groups])
    frame["n"] = n
    frame["unmarked_%"] = 100 * k / n
    low, high = wilson_interval(k, n, confidence)
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    if balance:
        m = int(n.min())
        rng = np.random.default_rng(seed)
        draws = np.stack([rng.hypergeometric(kk, nn - kk, m, size=repetitions) for kk, nn in zip(k, n)]) / m
        tail = (1 - confidence) / 2
        frame["sample_size"] = m
        frame["balanced_%"] = 100 * draws.mean(axis=1)
        frame["balanced_low_%"] = 100 * np.quantile(draws, tail, axis=1)
        frame["balanced_high_%"] = 100 * np.quantile(draws, 1 - tail, axis=1)
        # a group of the smallest size is drawn whole every time: its rate is exact, with no interval
        frame.loc[n == m, ["balanced_low_%", "balanced_high_%"]] = np.nan
    return frame


def prompt_sensitivity(records: pd.DataFrame, image_embeddings: np.ndarray, text_embed, prefixes: list[str],
                       oldest_age_wordings: list[str] = tuple(OLDEST_AGE_WORDINGS.values()),
                       race_phrases: dict[str, str] | None = None,
                       gender_words: dict[str, str] | None = None) -> pd.DataFrame:
    """Unmarked % per family and label for every prompt prefix × oldest-age wording.

    Long table: prefix, oldest_age_wording, family, group, n, unmarked_%.
    """
    frames = []
    for prefix in prefixes:
        for wording in oldest_age_wordings:
            person, prompts = prompt_set(prefix, wording, race_phrases, gender_words)
            flags = unmarked_flags(image_embeddings, text_embed, prompts, person)
            for family in FAMILIES:
                table = unmarked_rates(records, flags[family].to_numpy(), family)
                frames.append(pd.DataFrame({"prefix": prefix, "oldest_age_wording": wording, "family": family,
                                            "group": table[family], "n": table["n"],
                                            "unmarked_%": table["unmarked_%"]}))
    return pd.concat(frames, ignore_index=True)


def unmarked_by(records: pd.DataFrame, flags: pd.DataFrame, family: str, by: str | list[str],
                where: np.ndarray | None = None, **table_options) -> pd.DataFrame:
    """:func:`unmarked_table` of ``family``'s labels (a column of :func:`unmarked_flags`) per group
    of ``by`` among the records ``where`` selects (all by default), with a ``group`` column.

    Defined for ``01b_markedness``: ``rates = partial(unmarked_by, records, flags, balance=...)``,
    then ``rates("age", ["gender", "age"])``; ``table_options`` go to :func:`unmarked_table`.
    """
    keys = [by] if isinstance(by, str) else list(by)
    mask = selected(records, where)
    table = unmarked_table(records[mask], flags[family].to_numpy()[mask], keys, **table_options)
    return with_group_label(table, keys)


def unmarked_gap(records: pd.DataFrame, flags: pd.DataFrame, family: str, groups) -> tuple[float, float, float]:
    """How much more often ``groups`` (labels of ``family``) are left unmarked by ``family``'s labels
    than every other group of it, pooled: the rate difference (a share) with Newcombe's 95% interval,
    ``(gap, low, high)``, from the images' flags (:func:`unmarked_flags`)."""
    from ..stats import rate_difference_interval

    inside = records[family].isin(list(groups)).to_numpy()
    unmarked = flags[family].to_numpy().astype(bool)
    return rate_difference_interval(int(unmarked[inside].sum()), int(inside.sum()), int(unmarked[~inside].sum()),
                                    int((~inside).sum()))


def unmarked_columns(balance: bool) -> tuple[str, str, str]:
    """The (rate, interval low, interval high) columns of :func:`unmarked_table` to report: the
    balanced-subsample ones when ``balance``, else the whole groups' (``01b_markedness``)."""
    if balance:
        return "balanced_%", "balanced_low_%", "balanced_high_%"
    return "unmarked_%", "ci_low_%", "ci_high_%"
