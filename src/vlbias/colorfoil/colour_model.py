"""A small CLIP-style colour model trained offline on easy-VQA, so the demo's ColorFoil numbers mean something.

easy-VQA (the ``easy-vqa`` package) ships 4,000 training and 1,000 test images, 64x64, each one
shape (circle, rectangle, triangle) in one of eight colours, with questions about them. The labels
of an image are read from its questions' answers (:func:`easy_vqa_labels`); its caption is "a red
circle" and the like. :func:`train_colour_model` trains a transformers ``CLIPModel`` (ViT image
tower, BERT-style WordPiece text tower) contrastively on the training images in about a minute on
a CPU and saves it with ``save_pretrained``, so ``load_image_text_model(<directory>)`` loads it
through the same code as any hub checkpoint. Trained models are cached by their settings.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

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
class ColourModelConfig:
    """Everything the trained weights depend on (and so the cache key)."""

    epochs: int = 6
    batch_size: int = 128
    learning_rate: float = 2e-3
    width: int = 64
    layers: int = 2
    heads: int = 2
    patch_size: int = 8
    projection_dim: int = 32
    seed: int = 0
    max_train_images: int | None = None


def _key(config: ColourModelConfig) -> str:
    import hashlib

    text = json.dumps({"version": COLOUR_MODEL_VERSION, **asdict(config)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _new_model(directory: Path, config: ColourModelConfig):
    """A randomly initialised CLIPModel with its tokenizer and image processor saved in ``directory``."""
    import torch
    from transformers import BertTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    from ..models.tiny_tokenizers import write_wordpiece_vocab

    words = sorted({w for t in CAPTION_TEMPLATES for w in re.findall(r"[a-z]+", t.format(colour="", shape=""))}
                   | set(EASY_VQA_COLOURS) | set(EASY_VQA_SHAPES) | {"shape", "grey", "white", "pink", "orange",
                                                                     "purple"})
    write_wordpiece_vocab(directory, extra_words=words)
    tokenizer = BertTokenizer.from_pretrained(directory, model_max_length=16)
    tower = dict(hidden_size=config.width, intermediate_size=2 * config.width, num_hidden_layers=config.layers,
                 num_attention_heads=config.heads)
    # CLIP pools the text at the first end-of-sequence token: BERT's [SEP] here (an id other than
    # 2, which would make CLIP pool at the largest id instead)
    text = dict(tower, vocab_size=len(tokenizer), max_position_embeddings=16, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    vision = dict(tower, image_size=64, patch_size=config.patch_size)
    torch.manual_seed(config.seed)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=config.projection_dim))
    image_processor = CLIPImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64})
    return model, tokenizer, image_processor


def train_colour_model(config: ColourModelConfig | None = None, directory: str | Path | None = None,
                       snapshots: tuple[int, ...] = (), progress: bool = True) -> Path:
    """The directory of a trained colour model, training it on first use (cached by ``config``).

    Contrastive training as CLIP's, except that images and captions naming the same colour and shape
    are all positives of each other (a batch holds many), so the targets are spread over them.
    ``training.json`` in the directory holds the loss per epoch and the training time. The model
    after each epoch in ``snapshots`` is saved too, in ``<directory>/epoch-<n>`` (see :func:`snapshot`).
    """
    import torch
    from tqdm import tqdm

    from ..data.base import open_rgb
    from ..paths import cache_dir

    config = config or ColourModelConfig()
    target = Path(directory) if directory is not None else cache_dir() / "colour_model" / f"easy-vqa-clip-{_key(config)}"
    if (target / "training.json").exists() and all(snapshot(target, n).exists() for n in snapshots):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".colour-model-", dir=target.parent))
    try:
        model, tokenizer, image_processor = _new_model(staging, config)
        labels = easy_vqa_labels("train")
        if config.max_train_images is not None:
            labels = labels.iloc[:config.max_train_images]
        root = _easy_vqa_root()
        pixels = image_processor(images=[open_rgb(root / f) for f in labels["file"]], return_tensors="pt")["pixel_values"]
        classes = pd.factorize(labels["colour"] + " " + labels["shape"])[0]
        texts = [[t.format(colour=c, shape=s) for t in CAPTION_TEMPLATES] for c, s in zip(labels["colour"], labels["shape"])]
        generator = np.random.default_rng(config.seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
        history, started = [], time.monotonic()
        if 0 in snapshots:
            _save(model, tokenizer, image_processor, snapshot(staging, 0))
        model.train()
        torch.manual_seed(config.seed)
        for epoch in tqdm(range(config.epochs), desc="training colour model", disable=not progress, leave=False):
            order, losses = generator.permutation(len(labels)), []
            for start in range(0, len(order), config.batch_size):
                batch = order[start:start + config.batch_size]
                captions = [texts[i][generator.integers(len(CAPTION_TEMPLATES))] for i in batch]
                tokens = tokenizer(captions, padding=True, return_tensors="pt")
                image = model.get_image_features(pixel_values=pixels[batch])
                text = model.get_text_features(**tokens)
                image = _pooled(image)
                text = _pooled(text)
                logits = model.logit_scale.exp() * (image / image.norm(dim=-1, keepdim=True)) @ (
                    text / text.norm(dim=-1, keepdim=True)).T
                same = torch.from_numpy(classes[batch][:, None] == classes[batch][None, :]).float()
                targets = same / same.sum(dim=1, keepdim=True)  # symmetric, so rows serve both directions
                loss = 0.5 * (torch.sum(-targets * logits.log_softmax(dim=1), dim=1).mean()
                              + torch.sum(-targets * logits.T.log_softmax(dim=1), dim=1).mean())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    model.logit_scale.clamp_(0, np.log(100))
                losses.append(float(loss.detach()))
            history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)),
                            "seconds": round(time.monotonic() - started, 1)})
            if epoch + 1 in snapshots:
                _save(model, tokenizer, image_processor, snapshot(staging, epoch + 1))
        _save(model, tokenizer, image_processor, staging)
        (staging / "training.json").write_text(json.dumps(
            {"version": COLOUR_MODEL_VERSION, "config": asdict(config), "train_images": len(labels),
             "history": history, "seconds": round(time.monotonic() - started, 1)}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def snapshot(directory: str | Path, epoch: int) -> Path:
    """Where :func:`train_colour_model` saved the model after ``epoch`` (``snapshots``)."""
    return Path(directory) / f"epoch-{epoch}"


def _save(model, tokenizer, image_processor, directory: Path) -> None:
    model.eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    image_processor.save_pretrained(directory)
    model.train()


def _pooled(output):
    import torch

    return output if isinstance(output, torch.Tensor) else output.pooler_output


def training_history(directory: str | Path) -> pd.DataFrame:
    """Loss per epoch of a trained colour model."""
    return pd.DataFrame(json.loads((Path(directory) / "training.json").read_text())["history"])
