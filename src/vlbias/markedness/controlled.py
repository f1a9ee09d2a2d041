"""Part I as a controlled experiment: markedness in mini-CLIPs trained on a planted world.

The paper's hypothesis is that a default goes unnamed in captions and so becomes *unmarked*: the
bare prompt ("a photo of a person") fits its pictures better than any labelled one. In the planted
world (:mod:`vlbias.data.planted_world`) the cause is a dial: how often captions name each colour.
The measures are Part I's own, unchanged: :func:`unmarked_flags` with the kind's bare prompt
against one prompt per colour, :func:`unmarked_rates` (Wilson intervals) and
:func:`self_similarity_by_group`, here run once per kind and per trained model.
"""

from __future__ import annotations

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
                         default: str = "red", other: str = "blue", **options) -> pd.DataFrame:
    """One row per trained model of the sweep: ``default`` named with each of ``default_named``,
    ``other`` with ``others``; plus the uniform-reporting control (both named with ``uniform``).

    Columns: ``condition``, ``spec`` (a ``trained:world-clip`` spec; ``options`` such as ``seed`` or
    ``epochs`` are added to it), ``<default>_named``, ``<other>_named``, ``reporting_gap`` (how much
    more often the other colour is named) and ``control``.
    """
    rows = [(p, others, False) for p in default_named] + ([(uniform, uniform, True)] if uniform is not None else [])
    extra = {"seed": 0, **options}
    frame = pd.DataFrame([{
        "condition": f"{'control: both' if control else default} named {p:g}" + ("" if control else f", {other} {q:g}"),
        "spec": "trained:world-clip?" + "&".join(f"{k}={v}" for k, v in
                                                 {f"{default}_named": p, f"{other}_named": q, **extra}.items()),
        f"{default}_named": p, f"{other}_named": q, "reporting_gap": round(q - p, 10), "control": control}
        for p, q, control in rows])
    return frame


def reporting_experiment(conditions: pd.DataFrame, test, family: str = "colour", device=None) -> dict:
    """Part I's measures on one mini-CLIP per reporting condition, on the same held-out pictures.

    ``conditions``: rows with a ``condition`` label and a model ``spec`` (see
    :func:`reporting_conditions`); ``test``: the held-out split of the world. Returns
    ``{"rates": ..., "self_similarity": ..., "gaps": ...}``: unmarked rate per condition and colour
    (Wilson interval), self-similarity per condition and colour, and per condition the
    unmarked-rate gap of the first colour over the second (percentage points, Newcombe interval);
    each table keeps the condition's other columns.
    """
    from ..embeddings import embed_images, embed_texts
    from ..models import load_image_text_model

    records = test.records
    first, second = test.parameters["colours"][:2]
    rates, similarity, gaps = [], [], []
    for label, spec in zip(conditions["condition"], conditions["spec"]):
        model = load_image_text_model(spec, device=device)
        images = embed_images(model, test, progress=False)
        flags = world_unmarked_flags(records, images,
                                     lambda texts, model=model: embed_texts(model, texts, progress=False), family)
        table = unmarked_rates(records, flags, family).assign(condition=label)
        rates.append(table)
        similarity.append(self_similarity_by_group(records, images, family).assign(condition=label))
        unmarked = {colour: int(flags[(records[family] == colour).to_numpy()].sum()) for colour in (first, second)}
        n = records[family].value_counts()
        gap, low, high = rate_difference_interval(unmarked[first], n[first], unmarked[second], n[second])
        gaps.append({"condition": label, "gap_pp": 100 * gap, "ci_low_pp": 100 * low, "ci_high_pp": 100 * high})

    return {"rates": conditions.merge(pd.concat(rates, ignore_index=True), on="condition"),
            "self_similarity": conditions.merge(pd.concat(similarity, ignore_index=True), on="condition"),
            "gaps": conditions.merge(pd.DataFrame(gaps), on="condition")}


