"""Groups of FairFace records, in the paper's label order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .prompts import AGES, GENDERS, RACES


def _in_label_order(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Rows in the paper's label order (RACES, GENDERS, AGES), unknown labels last."""
    order = {label: i for i, label in enumerate(RACES + GENDERS + AGES)}
    return frame.sort_values(column, key=lambda c: c.map(order).fillna(len(order)), kind="stable", ignore_index=True)


def group_indices(records: pd.DataFrame, by: str | list[str]) -> dict[tuple, np.ndarray]:
    """Record positions of every group of ``records[by]``, keys as tuples, in the paper's label order."""
    keys = [by] if isinstance(by, str) else list(by)
    order = {label: i for i, label in enumerate(RACES + GENDERS + AGES)}
    indices = {(k if isinstance(k, tuple) else (k,)): np.asarray(v) for k, v in records.groupby(keys).indices.items()}
    return dict(sorted(indices.items(), key=lambda item: [order.get(label, len(order)) for label in item[0]]))


def select(records: pd.DataFrame, **labels) -> np.ndarray:
    """Boolean mask of the records whose columns equal the given labels (``select(r, race="White")``)."""
    mask = np.ones(len(records), dtype=bool)
    for column, label in labels.items():
        mask &= (records[column] == label).to_numpy()
    return mask


def with_group_label(table: pd.DataFrame, keys: list[str], column: str = "group") -> pd.DataFrame:
    """``table`` with a ``group`` column naming each row as the published file does ("White, Male, 0-2")."""
    result = table.copy()
    result.insert(0, column, result[list(keys)].astype(str).agg(", ".join, axis=1))
    return result


def selected(records: pd.DataFrame, where: np.ndarray | None = None) -> np.ndarray:
    """A boolean mask of the records to measure: ``where`` itself, or every record when it is None."""
    return np.ones(len(records), bool) if where is None else np.asarray(where, bool)


def sample_per_group(records: pd.DataFrame, by: str | list[str], per_group: int | None, seed: int = 0) -> np.ndarray:
    """Sorted record positions: ``per_group`` records drawn without replacement from every group of
    ``records[by]`` (all of a smaller group's), under ``seed``; every position when ``per_group`` is None.

    For measures too slow for a whole data set (a generative model scoring every image against every
    prompt): a stratified sample keeps every group, and every intersection when ``by`` lists the
    families, at a known size.
    """
    if per_group is None:
        return np.arange(len(records))
    if isinstance(per_group, bool) or not isinstance(per_group, (int, np.integer)) or per_group < 1:
        raise ValueError(f"per_group must be a positive whole number of records per group (or None for all), "
                         f"got {per_group!r}.")
    rng = np.random.default_rng(seed)
    chosen = [index if len(index) <= per_group else rng.choice(index, per_group, replace=False)
              for index in group_indices(records.reset_index(drop=True), by).values()]
    return np.sort(np.concatenate(chosen)) if chosen else np.arange(0)
