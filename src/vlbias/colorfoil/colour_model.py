"""A small CLIP-style colour model trained offline on easy-VQA, so the demo's ColorFoil numbers mean something.

easy-VQA (the ``easy-vqa`` package) ships 4,000 training and 1,000 test images, 64x64, each one
shape (circle, rectangle, triangle) in one of eight colours, with questions about them. The labels
of an image are read from its questions' answers (:func:`easy_vqa_labels`); its caption is "a red
circle" and the like. :func:`train_colour_model` trains a transformers ``CLIPModel`` (ViT image
tower, BERT-style WordPiece text tower; the book's one trainer, :mod:`vlbias.models.mini_clip`) contrastively on the training images in about a minute on
a CPU and saves it with ``save_pretrained``, so ``load_image_text_model(<directory>)`` loads it
through the same code as any hub checkpoint. Trained models are cached by their settings.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..models.mini_clip import MiniClipConfig, TrainingExamples, snapshot, train_mini_clip, training_history  # noqa: F401

#: easy-VQA's colours and shapes (its answers.txt)
EASY_VQA_COLOURS = ("red", "green", "blue", "yellow", "teal", "brown", "gray", "black")
EASY_VQA_SHAPES = ("circle", "rectangle", "triangle")
CAPTION_TEMPLATES = ("a {colour} {shape}", "there is a {colour} {shape} in the image", "a picture of a {colour} {shape}")
#: bump when training changes what a given configuration produces
COLOUR_MODEL_VERSION = 1


def _easy_vqa_root() -> Path:
    try:
        import easy_vqa
    except ImportError as error:
        raise ImportError("The colour model trains on easy-VQA: pip install easy-vqa==1.0") from error
    return Path(easy_vqa.__file__).parent / "data"


def easy_vqa_labels(split: str = "train") -> pd.DataFrame:
    """One row per image whose colour the questions reveal: ``image_id, file, colour, shape``.

    A colour (or shape) is known when it is the answer to a "what colour/shape" question, or when a
    yes/no question about it says it is present ("is there a red shape?" yes, "is there not a red
    shape?" no). About 88% of the images are named this way; the shape may stay unknown ("shape").
    """
    if split not in ("train", "test"):
        raise ValueError(f"easy-VQA splits are 'train' and 'test', got {split!r}")
    root = _easy_vqa_root()
    questions = json.loads((root / split / "questions.json").read_text())
    colours, shapes = {}, {}
    for question, answer, image_id in questions:
        words = re.findall(r"[a-z]+", question.lower())
        if answer in EASY_VQA_COLOURS:
            colours.setdefault(image_id, set()).add(answer)
        elif answer in EASY_VQA_SHAPES:
            shapes.setdefault(image_id, set()).add(answer)
        elif answer in ("yes", "no") and ((answer == "yes") != ("not" in words or "no" in words)):
            colours.setdefault(image_id, set()).update(w for w in words if w in EASY_VQA_COLOURS)
            shapes.setdefault(image_id, set()).update(w for w in words if w in EASY_VQA_SHAPES)
    rows = []
    for image_id in sorted(colours):
        if len(colours[image_id]) != 1 or len(shapes.get(image_id, ())) > 1:
            continue  # contradictory questions: leave the image out rather than guess
        shape = next(iter(shapes[image_id])) if shapes.get(image_id) else "shape"
        rows.append({"image_id": int(image_id), "file": f"{split}/images/{image_id}.png",
                     "colour": next(iter(colours[image_id])), "shape": shape})
    return pd.DataFrame(rows)


def easy_vqa_captions(split: str = "test", template: int | None = 0, max_images: int | None = None):
    """easy-VQA images of ``split`` as a caption data set (the COCO loader's interface), one caption
    each from ``CAPTION_TEMPLATES[template]`` (``None``: every template, one caption each)."""
    from ..data.base import CaptionDataset, file_sha256, make_identity

    labels = easy_vqa_labels(split)
    if max_images is not None:
        labels = labels.iloc[:max_images]
    templates = CAPTION_TEMPLATES if template is None else (CAPTION_TEMPLATES[template],)
    captions = [[t.format(colour=c, shape=s) for t in templates] for c, s in zip(labels["colour"], labels["shape"])]
    records = labels.assign(captions=captions)
    root = _easy_vqa_root()
    identity = make_identity("easy-vqa", "captions", split, file_sha256(root / split / "questions.json"),
                             json.dumps(captions), str(len(records)))
    ids = [[f"{image_id}-{k}" for k in range(len(templates))] for image_id in records["image_id"]]
    return CaptionDataset("easy-vqa", split, root, records, identity, caption_ids=ids)


@dataclass(frozen=True)
class ColourModelConfig(MiniClipConfig):
    """Everything the trained weights depend on (and so the cache key)."""

    max_train_images: int | None = None


def _key(config: ColourModelConfig) -> str:
    import hashlib

    text = json.dumps({"version": COLOUR_MODEL_VERSION, **asdict(config)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _training_examples(config: ColourModelConfig) -> TrainingExamples:
    from ..data.base import open_rgb

    labels = easy_vqa_labels("train")
    if config.max_train_images is not None:
        labels = labels.iloc[:config.max_train_images]
    root = _easy_vqa_root()
    return TrainingExamples(
        images=[open_rgb(root / f) for f in labels["file"]],
        captions=[[t.format(colour=c, shape=s) for t in CAPTION_TEMPLATES]
                  for c, s in zip(labels["colour"], labels["shape"])],
        classes=pd.factorize(labels["colour"] + " " + labels["shape"])[0])


def train_colour_model(config: ColourModelConfig | None = None, directory: str | Path | None = None,
                       snapshots: tuple[int, ...] = (), progress: bool = True) -> Path:
    """The directory of a trained colour model, training it on first use (cached by ``config``).

    The book's one contrastive trainer, :func:`vlbias.models.mini_clip.train_mini_clip`, on the
    easy-VQA training images: images naming the same colour and shape are positives of each other,
    and each caption is drawn from the three templates afresh in every batch. ``training.json`` in
    the directory holds the loss per epoch and the training time. The model after each epoch in
    ``snapshots`` is saved too, in ``<directory>/epoch-<n>`` (see :func:`snapshot`).
    """
    from ..paths import cache_dir

    config = config or ColourModelConfig()
    target = Path(directory) if directory is not None else cache_dir() / "colour_model" / f"easy-vqa-clip-{_key(config)}"
    # words a reader may try in a foil, beyond those the captions use
    words = set(EASY_VQA_COLOURS) | set(EASY_VQA_SHAPES) | {"shape", "grey", "white", "pink", "orange", "purple"}
    training = {field: getattr(config, field) for field in MiniClipConfig.__dataclass_fields__}
    return train_mini_clip(target, lambda: _training_examples(config), MiniClipConfig(**training), words=words,
                           snapshots=snapshots, progress=progress, description="training colour model",
                           about={"version": COLOUR_MODEL_VERSION, "max_train_images": config.max_train_images})
