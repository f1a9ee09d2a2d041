"""Representation-harm measurements on language models."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .models.base import LanguageModel


def pronoun_shares(model: LanguageModel, occupations: Sequence[str], templates: Sequence[str],
                   pronouns: Sequence[str] = ("she", "he", "they"), batch_size: int = 16,
                   progress: bool = True) -> pd.DataFrame:
    """P(pronoun | template with occupation), renormalised over ``pronouns`` and averaged over templates.

    Each template holds ``{occupation}`` and the slot ``{slot}`` where the pronoun goes. Returns one
    row per occupation with a ``P(<pronoun>)`` column per pronoun.
    """
    for template in templates:
        if "{occupation}" not in template or model.SLOT not in template:
            raise ValueError(f"template needs {{occupation}} and {model.SLOT}: {template!r}")
    contexts = [t.replace("{occupation}", o) for o in occupations for t in templates]
    logprobs = model.fill_logprobs(contexts, list(pronouns), batch_size=batch_size, progress=progress)
    shares = np.exp(logprobs - np.logaddexp.reduce(logprobs, axis=1, keepdims=True))
    shares = shares.reshape(len(occupations), len(templates), len(pronouns)).mean(axis=1)
    return pd.DataFrame({"occupation": list(occupations),
                         **{f"P({p})": shares[:, i] for i, p in enumerate(pronouns)}})
