"""Markedness (Wolfe & Caliskan 2022): is "a photo of a person" preferred to every label of a family?

Labels and prompts follow the authors' released code; the age template for the oldest group is a
parameter because the paper's text says "more than 70 years old" while the code says
"70 or more years old".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PERSON_PROMPT = "a photo of a person"

RACES = ("East Asian", "Indian", "Southeast Asian", "White", "Middle Eastern", "Latino_Hispanic", "Black")
GENDERS = ("Female", "Male")
AGES = ("0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70")

RACE_PHRASES = {
    "East Asian": "an East Asian", "Indian": "an Indian", "Southeast Asian": "a Southeast Asian",
    "White": "a White", "Middle Eastern": "a Middle Eastern", "Latino_Hispanic": "a Latino or Hispanic",
    "Black": "a Black",
}


def label_prompts(oldest_age_template: str = "a photo of a person 70 or more years old") -> dict[str, dict[str, str]]:
    """Prompt per label, per family (race, gender, age)."""
    race = {label: f"a photo of {phrase} person" for label, phrase in RACE_PHRASES.items()}
    gender = {label: f"a photo of a {label.lower()} person" for label in GENDERS}
    age = {}
    for label in AGES[:-1]:
        low, high = label.split("-")
        age[label] = f"a photo of a person between {low} and {high} years old"
    age[AGES[-1]] = oldest_age_template
    return {"race": race, "gender": gender, "age": age}


def is_unmarked(person_scores: np.ndarray, label_scores: np.ndarray) -> np.ndarray:
    """True where the person prompt scores strictly above every label prompt.

    ``person_scores``: (n,); ``label_scores``: (n, k) for the k labels of one family.
    """
    person_scores = np.asarray(person_scores)
    label_scores = np.asarray(label_scores)
    if label_scores.ndim != 2 or label_scores.shape[0] != person_scores.shape[0]:
        raise ValueError(f"label_scores must be (n, k) with n={person_scores.shape[0]}, got {label_scores.shape}")
    return person_scores > label_scores.max(axis=1)


def _in_label_order(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows in the paper's label order (RACES, GENDERS, AGES), unknown labels last."""
    order = {label: i for i, label in enumerate(RACES + GENDERS + AGES)}
    return frame.sort_values(column, key=lambda c: c.map(order).fillna(len(order)), kind="stable", ignore_index=True)


def self_similarity_by_group(records: pd.DataFrame, embeddings: np.ndarray, by: str | list[str]) -> pd.DataFrame:
    """Self-similarity of every group of ``records[by]`` (groups of one image are left out)."""
    from .metrics import self_similarity

    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for group, index in records.groupby(keys).indices.items():
        if len(index) > 1:
            group = group if isinstance(group, tuple) else (group,)
            rows.append({**dict(zip(keys, group)), "n": len(index),
                         "self_similarity": self_similarity(embeddings[index])})
    frame = pd.DataFrame(rows)
    for key in reversed(keys):
        frame = _in_label_order(frame, key)
    return frame


def unmarked_rates(records: pd.DataFrame, unmarked: np.ndarray, by: str, confidence: float = 0.95) -> pd.DataFrame:
    """Unmarked rate (percent) per group of ``records[by]``, with a Wilson interval."""
    from .stats import wilson_interval

    flags = pd.Series(np.asarray(unmarked, dtype=bool))
    grouped = flags.groupby(records[by].to_numpy())
    frame = pd.DataFrame({"n": grouped.size(), "unmarked": grouped.sum()}).rename_axis(by).reset_index()
    low, high = wilson_interval(frame["unmarked"].to_numpy(), frame["n"].to_numpy(), confidence)
    frame["unmarked_%"] = 100 * frame["unmarked"] / frame["n"]
    frame["ci_low_%"], frame["ci_high_%"] = 100 * low, 100 * high
    return _in_label_order(frame.drop(columns="unmarked"), by)
