"""Perceived attributes of images: zero-shot labels through the image-text model layer, and
human annotations (several annotators per image) with majority vote, arbitration and agreement.

Labels are *perceived* attributes (what an image looks like to a model or an annotator), never
a person's identity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from PIL import Image

from ..models.base import ImageTextModel
from ..stats import cohen_kappa

#: prompt(s) per label; several prompts for one label are averaged (a prompt ensemble)
GENDER_PROMPTS: dict[str, list[str]] = {
    "female": ["a photo of a woman", "a photo of a female person"],
    "male": ["a photo of a man", "a photo of a male person"],
    "no person": ["a photo with no people in it", "a photo of an object"],
}
AGE_PROMPTS: dict[str, list[str]] = {
    "under 25": ["a photo of a teenager or a young adult under 25"],
    "25-45": ["a photo of an adult between 25 and 45 years old"],
    "45-65": ["a photo of a middle-aged adult between 45 and 65 years old"],
    "over 65": ["a photo of an elderly person over 65 years old"],
    "no person": ["a photo with no people in it"],
}
#: three groups of the Fitzpatrick scale (I-II, III-IV, V-VI), the source text's skin-tone probe
SKIN_TONE_PROMPTS: dict[str, list[str]] = {
    "light (I-II)": ["a photo of a person with very light skin", "a photo of a person with light skin"],
    "medium (III-IV)": ["a photo of a person with medium skin", "a photo of a person with olive or light brown skin"],
    "dark (V-VI)": ["a photo of a person with dark brown skin", "a photo of a person with very dark skin"],
    "no person": ["a photo with no people in it"],
}
#: FairFace's seven perceived race groups, for a race probe instead of skin tone
RACE_PROMPTS: dict[str, list[str]] = {
    group: [f"a photo of a {group} person"]
    for group in ("White", "Black", "Latino Hispanic", "East Asian", "Southeast Asian", "Indian", "Middle Eastern")
} | {"no person": ["a photo with no people in it"]}


#: the probes of ``04d_extensions``: name -> its default prompts
PROBES: dict[str, dict[str, list[str]]] = {"skin tone": SKIN_TONE_PROMPTS, "race": RACE_PROMPTS}


def probe_prompts(probe: str, prompts: Mapping[str, str | Sequence[str]] | None = None):
    """The label prompts of a probe of :data:`PROBES` (``prompts`` replaces its defaults).

    An unknown ``probe`` is an error naming the known ones. Defined for ``04d_extensions``.
    """
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {list(PROBES)} or None, got {probe!r}")
    return prompts or PROBES[probe]


#: :func:`probe_prompts`, under a name that :func:`extension_prompts`' keyword of the same name does not hide
_probe_defaults = probe_prompts


def extension_prompts(t2i_spec: str, age_prompts: Mapping[str, str | Sequence[str]] | None = None,
                      probe: str | None = "skin tone", probe_prompts: Mapping[str, str | Sequence[str]] | None = None):
    """04d's label prompts, ``(age prompts, probe prompts)``: those given; else, when ``t2i_spec`` is a
    model trained on Part IV's profession world, the prompts of the stand-ins that world plants
    (:func:`vlbias.t2i.profession_world.stand_in_prompts`: a background tint for age, a shade for skin
    tone); else :data:`AGE_PROMPTS` and the probe's defaults. The probe prompts are ``None`` when
    ``probe`` is None. The profession world plants no race: ``probe="race"`` on such a model without
    ``probe_prompts`` is an error that says so."""
    from .profession_world import stand_in_prompts, world_reference

    world = world_reference(t2i_spec) is not None
    ages = age_prompts or (stand_in_prompts("age") if world else AGE_PROMPTS)
    if probe is None:
        return ages, None
    chosen = _probe_defaults(probe, probe_prompts)  # an unknown probe: its one error, naming the known ones
    if not world:
        return ages, chosen
    if probe == "race" and probe_prompts is None:
        raise ValueError(f"probe='race': {t2i_spec} was trained on the profession world, which plants a stand-in for "
                         "skin tone (the shade) but none for race; use probe='skin tone' or give probe_prompts")
    return ages, probe_prompts or stand_in_prompts(probe)


def _prompt_lists(prompts: Mapping[str, str | Sequence[str]]) -> dict[str, list[str]]:
    if not prompts:
        raise ValueError("prompts must name at least one label")
    lists = {label: [value] if isinstance(value, str) else list(value) for label, value in prompts.items()}
    empty = [label for label, value in lists.items() if not value]
    if empty:
        raise ValueError(f"labels without a prompt: {empty}")
    return lists


def zero_shot_scores(model: ImageTextModel, images: Sequence[Image.Image], prompts: Mapping[str, str | Sequence[str]],
                     batch_size: int = 32, progress: bool = True) -> pd.DataFrame:
    """(n_images, n_labels) scores: each label's prompts scored against each image and averaged."""
    lists = _prompt_lists(prompts)
    texts = [text for value in lists.values() for text in value]
    return _label_means(model.score(images, texts, batch_size=batch_size, progress=progress), lists)


def _label_means(scores, lists: dict[str, list[str]]) -> pd.DataFrame:
    """(n_images, n_labels): each label's columns of ``scores`` (its prompts, in order) averaged."""
    scores = np.asarray(scores, dtype=float)
    columns, start = {}, 0
    for label, value in lists.items():
        columns[label] = scores[:, start:start + len(value)].mean(axis=1)
        start += len(value)
    return pd.DataFrame(columns)


def zero_shot_labels(model: ImageTextModel, images: Sequence[Image.Image], prompts: Mapping[str, str | Sequence[str]],
                     batch_size: int = 32, progress: bool = True) -> np.ndarray:
    """The label whose prompt (or mean over its prompts) scores highest for each image.

    ``prompts`` maps each label to a prompt or a list of prompts, e.g.
    ``{"female": "a photo of a woman", "male": "a photo of a man", "no person": "a photo of an object"}``;
    a label such as ``no person`` simply competes with the others. Works for dual and pairwise models.
    """
    scores = zero_shot_scores(model, images, prompts, batch_size=batch_size, progress=progress)
    return scores.columns.to_numpy()[scores.to_numpy().argmax(axis=1)]


def load_annotator(spec: str, device=None):
    """The annotator a spec names: the offline face predictor for
    :data:`~vlbias.t2i.face_annotation.FACE_ANNOTATOR_SPEC`, else a zero-shot image-text model.
    Either one goes to :func:`label_image_files`."""
    from .face_annotation import FACE_ANNOTATOR_SPEC, FaceGenderAnnotator

    if str(spec).strip() == FACE_ANNOTATOR_SPEC:
        return FaceGenderAnnotator()
    from ..models import load_image_text_model

    return load_image_text_model(spec, device=device)


def label_image_files(model: ImageTextModel, files: Sequence[str | Path], prompts: Mapping[str, str | Sequence[str]],
                      batch_size: int = 32, chunk: int = 256, progress: bool = True) -> np.ndarray:
    """Zero-shot labels of image files, opened ``chunk`` at a time (bounded memory for large runs).

    ``model`` may also be the face annotator (:func:`load_annotator`): it labels by face, gives
    ``"no face"`` where it finds none, and needs ``prompts`` to name its labels (female, male)."""
    from tqdm import tqdm

    from .face_annotation import FACE_LABELS, FaceGenderAnnotator

    if isinstance(model, FaceGenderAnnotator):
        missing = set(FACE_LABELS) - set(prompts)
        if missing:
            raise ValueError(f"prompts lack the face annotator's labels {sorted(missing)}: name the gender labels "
                             f"{list(FACE_LABELS)} so that both annotators' labels can be compared")
        return model.label_image_files(files, progress=progress)
    files = [Path(f) for f in files]
    if files and getattr(model, "kind", None) == "dual" and getattr(model, "has_embeddings", True):
        scores = dual_encoder_file_scores(model, files, prompts, batch_size, chunk, progress)
        return scores.columns.to_numpy()[scores.to_numpy().argmax(axis=1)]
    labels = []
    for start in tqdm(range(0, len(files), chunk), desc="annotating", unit="chunk", disable=not progress):
        images = [Image.open(f).convert("RGB") for f in files[start:start + chunk]]
        labels.append(zero_shot_labels(model, images, prompts, batch_size=batch_size, progress=False))
    return np.concatenate(labels) if labels else np.array([], dtype=object)


def dual_encoder_file_scores(model: ImageTextModel, files: Sequence[str | Path],
                             prompts: Mapping[str, str | Sequence[str]], batch_size: int = 32, chunk: int = 256,
                             progress: bool = True) -> pd.DataFrame:
    """A dual encoder's zero-shot scores of image files (:func:`zero_shot_scores`) from its image embeddings,
    cached per chunk of ``chunk`` files and named by the files' bytes (:func:`vlbias.embeddings.embed_images`),
    so that a rerun, or another notebook labelling the same images (05a's model card after 04b and 04c), reads
    them instead of encoding again. The images are encoded in the batches, and the prompts at the batch size,
    that :meth:`~vlbias.models.base.ImageTextModel.score` uses: the scores equal :func:`zero_shot_scores` on
    the images opened ``chunk`` at a time, and :func:`label_image_files` takes its labels from them."""
    from ..embeddings import FileImages, embed_images, embed_texts

    lists = _prompt_lists(prompts)
    texts = [text for value in lists.values() for text in value]
    images = embed_images(model, FileImages(files), batch_size=batch_size, chunk_size=chunk, progress=progress)
    prompts_embedded = embed_texts(model, texts, batch_size=max(batch_size, 256), progress=False)
    return _label_means(images @ prompts_embedded.T, lists)


# --------------------------------------------------------------------------- human annotations

ANNOTATION_COLUMNS = ("image", "annotator", "label")


def read_annotations(source: str | Path | pd.DataFrame, image: str = "image", annotator: str = "annotator",
                     label: str = "label") -> pd.DataFrame:
    """Human annotations in long form, one row per (image, annotator): columns image, annotator, label.

    ``source`` is a CSV path or a DataFrame; the column names are parameters. An annotator who
    labelled one image twice is an error (which label would count?).
    """
    frame = pd.read_csv(source, dtype=str, keep_default_na=False) if not isinstance(source, pd.DataFrame) else source
    missing = {image, annotator, label} - set(frame.columns)
    if missing:
        raise ValueError(f"annotation table lacks columns {sorted(missing)}; it has {list(frame.columns)}. "
                         "Pass image=, annotator=, label= to name yours.")
    frame = frame[[image, annotator, label]].astype(str).set_axis(list(ANNOTATION_COLUMNS), axis=1)
    frame = frame[frame["label"].str.strip() != ""]
    twice = frame.duplicated(["image", "annotator"], keep=False)
    if twice.any():
        example = frame[twice].iloc[0]
        raise ValueError(f"annotator {example.annotator!r} labelled image {example.image!r} more than once")
    return frame.reset_index(drop=True)


def majority_vote(annotations: pd.DataFrame, arbiter: str | None = None) -> pd.DataFrame:
    """One label per image by majority of the (non-arbiter) annotators.

    A tie goes to the ``arbiter``'s label (the source text's fourth, senior annotator) when the
    arbiter labelled that image; otherwise the image stays ``unresolved`` (label NaN). The
    arbiter's labels count for ties only. Columns: label, votes (for the winner), n_annotators,
    resolved_by (``majority``, ``unanimous``, ``arbiter`` or ``unresolved``).
    """
    voters = annotations[annotations["annotator"] != arbiter] if arbiter is not None else annotations
    arbiter_labels = (annotations[annotations["annotator"] == arbiter].set_index("image")["label"]
                      if arbiter is not None else pd.Series(dtype=str))
    rows = {}
    for image, labels in voters.groupby("image", sort=True)["label"]:
        counts = labels.value_counts()
        top = counts[counts == counts.iloc[0]]
        if len(top) == 1:
            how = "unanimous" if len(counts) == 1 else "majority"
            rows[image] = (top.index[0], int(top.iloc[0]), len(labels), how)
        elif image in arbiter_labels.index:
            chosen = arbiter_labels[image]
            rows[image] = (chosen, int(counts.get(chosen, 0)), len(labels), "arbiter")
        else:
            rows[image] = (np.nan, int(top.iloc[0]), len(labels), "unresolved")
    return pd.DataFrame.from_dict(rows, orient="index", columns=["label", "votes", "n_annotators", "resolved_by"]
                                  ).rename_axis("image")


def rating_counts(annotations: pd.DataFrame, arbiter: str | None = None,
                  categories: Sequence[str] | None = None) -> pd.DataFrame:
    """Images × categories: how many (non-arbiter) annotators gave each label to each image."""
    voters = annotations[annotations["annotator"] != arbiter] if arbiter is not None else annotations
    counts = pd.crosstab(voters["image"], voters["label"]).rename_axis(columns=None)
    return counts.reindex(columns=list(categories), fill_value=0) if categories is not None else counts


def fleiss_kappa(counts) -> float:
    """Fleiss' kappa for an items × categories matrix of rater counts (same number of raters per item).

    κ = (P̄ − P̄_e) / (1 − P̄_e) with P̄ the mean per-item agreement
    Σ_j n_ij (n_ij − 1) / (n (n − 1)) and P̄_e = Σ_j p_j², p_j the share of all ratings in category j.
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        raise ValueError("counts must be a non-empty items × categories matrix")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError(f"Fleiss' kappa needs the same number (>= 2) of raters for every item, got {sorted(set(raters))}")
    n = raters[0]
    per_item = ((table * (table - 1)).sum(axis=1)) / (n * (n - 1))
    p_j = table.sum(axis=0) / table.sum()
    expected = float((p_j ** 2).sum())
    if expected == 1.0:
        return float("nan")  # every rating in one category: agreement beyond chance is undefined
    return float((per_item.mean() - expected) / (1.0 - expected))


def agreement(automatic: pd.Series, human: pd.Series) -> dict[str, float]:
    """How far automatic labels agree with (majority) human labels on the images both have.

    Both are Series indexed by image; unresolved human labels (NaN) are left out.
    Returns n, accuracy (share of identical labels) and Cohen's kappa.
    """
    both = pd.concat({"automatic": automatic, "human": human}, axis=1, join="inner").dropna()
    if both.empty:
        raise ValueError("no image has both an automatic and a human label (do the image names match?)")
    return {"n": len(both), "accuracy": float((both["automatic"] == both["human"]).mean()),
            "cohen_kappa": cohen_kappa(both["automatic"], both["human"])}


def confusion(automatic: pd.Series, human: pd.Series) -> pd.DataFrame:
    """Counts of (human label, automatic label) over the images both have."""
    both = pd.concat({"automatic": automatic, "human": human}, axis=1, join="inner").dropna()
    return pd.crosstab(both["human"], both["automatic"])


def simulated_annotations(truth: pd.Series, annotators: Sequence[str] = ("a1", "a2", "a3"), arbiter: str | None = "senior",
                          error_rate: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """A fixture in the import format: each annotator copies ``truth`` (indexed by image) and
    relabels a share ``error_rate`` of images at random among the other labels. For the demo
    profile only, where no human annotations exist; the arbiter labels every image."""
    rng = np.random.default_rng(seed)
    labels = sorted(set(truth), key=str)
    rows = []
    for who in [*annotators, *([arbiter] if arbiter else [])]:
        rate = error_rate / 2 if who == arbiter else error_rate
        for image, value in truth.items():
            given = value
            if len(labels) > 1 and rng.random() < rate:
                given = rng.choice([label for label in labels if label != value])
            rows.append({"image": image, "annotator": who, "label": given})
    return pd.DataFrame(rows)


def write_simulated_annotations(truth: pd.Series, path: str | Path, seed: int = 0) -> Path:
    """:func:`simulated_annotations` of ``truth`` written to ``path`` in the import format that
    :func:`read_annotations` reads: the demo's stand-in for a human annotation file
    (``04b_annotation_and_metrics`` with ``human_annotations="fixture"``)."""
    path = Path(path)
    simulated_annotations(truth, seed=seed).to_csv(path, index=False)
    return path
