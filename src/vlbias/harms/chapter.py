"""The handbook chapter's simulated measurements, recomputed from its simulated inputs.

``source = "simulated"`` in Part III's notebooks: a teaching baseline that reproduces the chapter's
printed tables from the inputs it simulates (``resources/harms/chapter_simulated.json``), through
the same measurement functions that the ``model`` source applies to real models.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

from ..weat import weat_test
from . import measures as harms


#: where a Part III page's numbers come from: the chapter's simulation only, or also a real model
SOURCES = ("simulated", "model")


def check_source(source: str) -> str:
    """``source`` if it is one of :data:`SOURCES`, else the error that names the choices (03a-03e)."""
    if source not in SOURCES:
        raise ValueError(f"source must be 'simulated' or 'model', got {source!r}")
    return source


@lru_cache(maxsize=1)
def chapter_inputs() -> dict:
    """The chapter's simulated inputs and printed numbers (``source`` says where they come from)."""
    text = resources.files("vlbias").joinpath("resources", "harms", "chapter_simulated.json").read_text(encoding="utf-8")
    return json.loads(text)


def simulated_stereotyping() -> pd.DataFrame:
    """The chapter's gap table: simulated P(she) minus the BLS rate, sorted by gap."""
    inputs = chapter_inputs()["stereotyping"]
    occupations = list(inputs["model_probabilities"])
    table = pd.DataFrame({"occupation": occupations,
                          "model P(she)": [inputs["model_probabilities"][o]["she"] for o in occupations],
                          "BLS female share": [inputs["bls_female_share"][o] for o in occupations]})
    table["gap"] = table["model P(she)"] - table["BLS female share"]
    table["direction"] = harms.gap_direction(table["gap"])
    return table.sort_values("gap", kind="stable").reset_index(drop=True)


def simulated_weat_vectors(seed: int | None = None, dim: int | None = None, noise: float | None = None):
    """X, Y, A, B built as the chapter builds them: two random directions, then noisy unit vectors.

    The draws follow the chapter's order on a legacy ``RandomState`` (what ``np.random.seed``
    drives), so the default seed 42 gives the chapter's vectors exactly.
    """
    spec = chapter_inputs()["weat"]
    seed, dim, noise = (spec["seed"] if seed is None else seed, spec["dim"] if dim is None else dim,
                        spec["noise"] if noise is None else noise)
    rng = np.random.RandomState(seed)
    pleasant = rng.randn(dim)
    pleasant /= np.linalg.norm(pleasant)
    competence = rng.randn(dim)
    competence /= np.linalg.norm(competence)

    def word_vector(pleasant_score, competence_score):
        vector = pleasant_score * pleasant + competence_score * competence + noise * rng.randn(dim)
        return vector / np.linalg.norm(vector)

    sets = {}
    for key in "XYAB":
        scores = spec["sets"][key]
        sets[key] = np.array([word_vector(scores["pleasant"], scores["competence"]) for _ in range(spec["n_per_set"])])
    return sets["X"], sets["Y"], sets["A"], sets["B"]


def simulated_weat(vector_seed: int | None = None, **test_options):
    """:func:`vlbias.weat.weat_test` on the chapter's simulated vectors (exact: 12,870 partitions).

    ``vector_seed`` builds the vectors (default: the chapter's 42); ``test_options`` go to
    ``weat_test`` (its ``seed`` only drives Monte Carlo draws).
    """
    return weat_test(*simulated_weat_vectors(vector_seed), **test_options)


def simulated_erasure() -> pd.DataFrame:
    """The chapter's erasure table: simulated generated share minus population share, per group."""
    inputs = chapter_inputs()["erasure"]
    shares = pd.DataFrame(inputs["generated_shares"]).T
    return harms.erasure_index(shares, pd.Series(inputs["population_reference"]))


def simulated_toxicity() -> tuple[np.ndarray, np.ndarray, float]:
    """(standard scores, AAVE scores, threshold) as the chapter simulates them."""
    inputs = chapter_inputs()["toxicity"]
    return np.array(inputs["scores"]["standard"]), np.array(inputs["scores"]["aave"]), inputs["threshold"]
