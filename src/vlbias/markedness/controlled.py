"""Part I as a controlled experiment: markedness in mini-CLIPs trained on a planted world.

The paper's hypothesis is that a default goes unnamed in captions and so becomes *unmarked*: the
bare prompt ("a photo of a person") fits its pictures better than any labelled one. In the planted
world (:mod:`vlbias.data.planted_world`) the cause is a dial: how often captions name each colour.
The measures are Part I's own, unchanged: :func:`unmarked_flags` with the kind's bare prompt
against one prompt per colour, :func:`unmarked_rates` (Wilson intervals) and
:func:`self_similarity_by_group`, here run once per kind and per trained model.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..stats import rate_difference_interval
from .self_similarity import self_similarity_by_group
from .unmarked import unmarked_flags, unmarked_rates

#: bare and labelled prompts, as in the paper ("a photo of a person" / "a photo of a White person")
WORLD_PROMPT = "a photo of a {kind}"
WORLD_LABEL_PROMPT = "a photo of a {attribute} {kind}"


def world_prompts(kind: str, attributes: list[str], family: str = "colour") -> tuple[str, dict[str, dict[str, str]]]:
    """The bare prompt of ``kind`` and its labelled prompts, in :func:`unmarked_flags`'s shape."""
    labelled = {attribute: WORLD_LABEL_PROMPT.format(attribute=attribute, kind=kind) for attribute in attributes}
    return WORLD_PROMPT.format(kind=kind), {family: labelled}


def world_unmarked_flags(records: pd.DataFrame, image_embeddings: np.ndarray, text_embed,
                         family: str = "colour") -> np.ndarray:
    """Per picture: does its kind's bare prompt beat every "a photo of a <colour> <kind>"?

    :func:`unmarked_flags` unchanged, called once per kind with that kind's prompts.
    """
    attributes = sorted(records[family].unique())
    flags = np.zeros(len(records), dtype=bool)
    for kind, index in records.groupby("kind").indices.items():
        bare, prompts = world_prompts(kind, attributes, family)
        flags[index] = unmarked_flags(image_embeddings[index], text_embed, prompts, bare)[family].to_numpy()
    return flags


def reporting_conditions(default_named: list[float], others: float = 0.9, uniform: float | None = 0.5,
                         default: str = "red", other: str = "blue", seeds: Sequence[int] = (0,),
                         **options) -> pd.DataFrame:
    """One row per trained model of the sweep: ``default`` named with each of ``default_named``,
    ``other`` with ``others``; plus the uniform-reporting control (both named with ``uniform``);
    each condition once per seed in ``seeds`` (another world and another training run).

    Columns: ``condition``, ``seed``, ``spec`` (a ``trained:world-clip`` spec; ``options`` such as
    ``epochs`` are added to it), ``<default>_named``, ``<other>_named``, ``reporting_gap`` (how much
    more often the other colour is named) and ``control``.
    """
    rows = [(p, others, False) for p in default_named] + ([(uniform, uniform, True)] if uniform is not None else [])
    return pd.DataFrame([{
        "condition": f"{'control: both' if control else default} named {p:g}" + ("" if control else f", {other} {q:g}"),
        "seed": int(seed),
        "spec": "trained:world-clip?" + "&".join(f"{k}={v}" for k, v in
                                                 {f"{default}_named": p, f"{other}_named": q, "seed": int(seed),
                                                  **options}.items()),
        f"{default}_named": p, f"{other}_named": q, "reporting_gap": round(q - p, 10), "control": control}
        for seed in seeds for p, q, control in rows])


def across_seeds(table: pd.DataFrame, value: str, low: str, high: str, by: Sequence[str],
                 confidence: float = 0.95, bounds: tuple[float, float] = (-np.inf, np.inf)) -> pd.DataFrame:
    """Per ``by`` group, the mean of ``value`` over the seeds and its t interval across seeds
    (mean ± t(k−1) · sd / √k: the spread of retrained models, the larger source of variation here),
    cut to ``bounds``, the values the measure can take (a rate lies in [0, 100]).

    With one seed the group keeps its own interval (``low``, ``high``: test pictures only). Other
    columns of the first row of each group are kept; ``seeds`` counts the seeds and ``seed_min``,
    ``seed_max`` give the range of the per-seed values.
    """
    from scipy import stats

    rows = []
    for _, part in table.groupby(list(by), sort=False):
        k, mean = len(part), float(part[value].mean())
        if k > 1:
            half = float(stats.t.ppf(0.5 + confidence / 2, k - 1) * part[value].std(ddof=1) / np.sqrt(k))
            interval = (max(mean - half, bounds[0]), min(mean + half, bounds[1]))
        else:
            interval = (float(part[low].iloc[0]), float(part[high].iloc[0]))
        rows.append({**part.iloc[0].to_dict(), value: mean, low: interval[0], high: interval[1], "seeds": k,
                     "seed_min": float(part[value].min()), "seed_max": float(part[value].max())})
    return pd.DataFrame(rows).drop(columns=["seed", "spec"], errors="ignore")


def reporting_experiment(conditions: pd.DataFrame, test, family: str = "colour", device=None,
                         workers: int | None = None) -> dict:
    """Part I's measures on one mini-CLIP per reporting condition and seed, on the same held-out pictures.

    ``conditions``: rows with a ``condition`` label, a ``seed`` and a model ``spec`` (see
    :func:`reporting_conditions`); ``test``: the held-out split of the world. Returns per seed
    (``by_seed``: ``rates``, ``self_similarity``, ``gaps``) the unmarked rate per condition and
    colour (Wilson interval), self-similarity per condition and colour, and per condition the
    unmarked-rate gap of the first colour over the second (percentage points, Newcombe interval);
    and the same three tables :func:`across_seeds` (mean over seeds, t interval across seeds).
    Each table keeps the condition's other columns. Models not yet trained train first, ``workers``
    at once (:func:`vlbias.models.trained.build_trained`; default: the cores this process is given),
    with the same weights as trained one after another.
    """
    from ..embeddings import embed_images, embed_texts
    from ..models import load_image_text_model
    from ..models.trained import build_trained

    build_trained(conditions["spec"], workers=workers)  # side by side, on the cores this notebook is given
    records = test.records
    first, second = test.parameters["colours"][:2]
    rates, similarity, gaps = [], [], []
    for label, seed, spec in zip(conditions["condition"], conditions["seed"], conditions["spec"]):
        model = load_image_text_model(spec, device=device)
        images = embed_images(model, test, progress=False)
        flags = world_unmarked_flags(records, images,
                                     lambda texts, model=model: embed_texts(model, texts, progress=False), family)
        rates.append(unmarked_rates(records, flags, family).assign(condition=label, seed=seed))
        similarity.append(self_similarity_by_group(records, images, family).assign(condition=label, seed=seed))
        unmarked = {colour: int(flags[(records[family] == colour).to_numpy()].sum()) for colour in (first, second)}
        n = records[family].value_counts()
        gap, low, high = rate_difference_interval(unmarked[first], n[first], unmarked[second], n[second])
        gaps.append({"condition": label, "seed": seed, "gap_pp": 100 * gap, "ci_low_pp": 100 * low,
                     "ci_high_pp": 100 * high})

    keys = ["condition", "seed"]
    by_seed = {"rates": conditions.merge(pd.concat(rates, ignore_index=True), on=keys),
               "self_similarity": conditions.merge(pd.concat(similarity, ignore_index=True), on=keys),
               "gaps": conditions.merge(pd.DataFrame(gaps), on=keys)}
    return {"rates": across_seeds(by_seed["rates"], "unmarked_%", "ci_low_%", "ci_high_%", ["condition", family],
                                  bounds=(0, 100)),
            "self_similarity": by_seed["self_similarity"].groupby(["condition", family], sort=False, as_index=False
                                                                  ).agg(self_similarity=("self_similarity", "mean"),
                                                                        n=("n", "first"), seeds=("seed", "size")),
            "gaps": across_seeds(by_seed["gaps"], "gap_pp", "ci_low_pp", "ci_high_pp", ["condition"],
                                 bounds=(-100, 100)),
            "by_seed": by_seed}
