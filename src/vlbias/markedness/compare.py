"""One table per model, and per family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .groups import group_indices
from .prompts import PERSON_PROMPT
from .unmarked import unmarked_flags


def family_summary(records: pd.DataFrame, embeddings: np.ndarray, flags: pd.DataFrame) -> pd.DataFrame:
    """Long table: family, group, n, exact self-similarity and unmarked % for every label of every family."""
    from ..stats import self_similarity

    rows = []
    for family in flags.columns:
        for key, index in group_indices(records, family).items():
            rows.append({"family": family, "group": key[0], "n": len(index),
                         "self_similarity": self_similarity(embeddings[index]) if len(index) > 1 else np.nan,
                         "unmarked_%": 100 * flags[family].to_numpy()[index].mean()})
    return pd.DataFrame(rows)


def model_comparison(model_specs: list[str], dataset, prompts: dict[str, dict[str, str]] | None = None,
                     person_prompt: str = PERSON_PROMPT, device: str = "auto", batch_size: int = 64,
                     decode_workers: int | None = None, half: bool = False) -> pd.DataFrame:
    """:func:`family_summary` (self-similarity and unmarked % per label) for every model in the list.

    Any dual encoder spec works; embeddings are cached, so models embedded before cost nothing. A
    model that fails to load or run leaves its rows out and a row in ``result.attrs["failures"]``
    (model, stage, error); the other models' rows are all there.
    """
    from ..embeddings import embed_images, embed_texts
    from ..models import for_each_model

    def summarise(spec, model):
        if getattr(model, "kind", "dual") != "dual":
            raise TypeError(f"{spec} is a {model.kind} model; markedness needs a dual encoder (separate embeddings)")
        images = embed_images(model, dataset, batch_size=batch_size, decode_workers=decode_workers)
        flags = unmarked_flags(images, lambda texts: embed_texts(model, texts, progress=False), prompts, person_prompt)
        return family_summary(dataset.records, images, flags).assign(model=spec, dtype=model.dtype)

    frames, failures = for_each_model(model_specs, summarise, device=device, half=half)
    columns = ["family", "group", "n", "self_similarity", "unmarked_%", "model", "dtype"]
    result = pd.concat(list(frames.values()), ignore_index=True) if frames else pd.DataFrame(columns=columns)
    result.attrs["failures"] = failures
    return result
