"""A small CLIP trained in the book: the one contrastive trainer behind Part II's colour model and the
controlled experiments' world model.

:func:`train_mini_clip` trains a transformers ``CLIPModel`` (ViT image tower, BERT-style WordPiece
text tower) on pictures and captions and saves it with ``save_pretrained``, so
``load_image_text_model(<directory>)`` loads it through the same code as any hub checkpoint. The
caller names the directory (its cache key); a directory that holds ``training.json`` is reused.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..paths import build_once


@dataclass(frozen=True)
class MiniClipConfig:
    """Everything the trained weights depend on, besides the data."""

    epochs: int = 6
    batch_size: int = 128
    learning_rate: float = 2e-3
    width: int = 64
    layers: int = 2
    heads: int = 2
    patch_size: int = 8
    projection_dim: int = 32
    seed: int = 0


@dataclass
class TrainingExamples:
    """What the trainer sees: one picture per example, its caption alternatives, its positive class.

    Examples of the same ``classes`` value are positives of each other; one of an example's
    ``captions`` is drawn afresh every time it is in a batch.
    """

    images: Sequence  # PIL images, all of one square size
    captions: list[list[str]]
    classes: np.ndarray


def _new_model(directory: Path, config: MiniClipConfig, words: set[str], image_size: int, max_tokens: int = 16):
    """A randomly initialised CLIPModel with its tokenizer and image processor saved in ``directory``;
    texts of up to ``max_tokens`` tokens (with [CLS] and [SEP])."""
    import torch
    from transformers import BertTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    from .tiny.tokenizers import write_wordpiece_vocab

    write_wordpiece_vocab(directory, extra_words=sorted(words))
    tokenizer = BertTokenizer.from_pretrained(directory, model_max_length=max_tokens)
    tower = dict(hidden_size=config.width, intermediate_size=2 * config.width, num_hidden_layers=config.layers,
                 num_attention_heads=config.heads)
    # CLIP pools the text at the first end-of-sequence token: BERT's [SEP] here (an id other than
    # 2, which would make CLIP pool at the largest id instead)
    text = dict(tower, vocab_size=len(tokenizer), max_position_embeddings=max_tokens, pad_token_id=tokenizer.pad_token_id,
                bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    vision = dict(tower, image_size=image_size, patch_size=config.patch_size)
    torch.manual_seed(config.seed)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=config.projection_dim))
    image_processor = CLIPImageProcessor(size={"shortest_edge": image_size},
                                         crop_size={"height": image_size, "width": image_size})
    return model, tokenizer, image_processor


def caption_words(captions: list[list[str]]) -> set[str]:
    """Every word of the captions, lower-cased as the trained tokenizer reads them: it keeps each as one token."""
    return {word for alternatives in captions for caption in alternatives
            for word in re.findall(r"[a-z]+", caption.lower())}


def train_mini_clip(target: str | Path, examples: Callable[[], TrainingExamples], config: MiniClipConfig,
                    words: set[str] = frozenset(), snapshots: tuple[int, ...] = (), progress: bool = True,
                    about: dict | None = None, description: str = "training a mini-CLIP", max_tokens: int = 16) -> Path:
    """``target``, holding the model trained on ``examples()`` under ``config``, trained on first use.

    Contrastive training as CLIP's, except that examples of the same class are all positives of
    each other (a batch holds many), so the targets are spread over them. ``examples`` is only
    called when training is needed. ``words`` join the captions' words in the vocabulary. Texts
    hold up to ``max_tokens`` tokens (the caller's cache key must name a value other than 16).
    ``training.json`` holds ``about``, the loss per epoch and the training time. Training runs on
    one torch thread, so the weights do not depend on the machine's thread count. The model after
    each epoch in ``snapshots`` is saved too, in ``<target>/epoch-<n>`` (see :func:`snapshot`).
    """
    import torch
    from tqdm import tqdm

    target = Path(target)

    def trained(directory: Path) -> bool:
        return (directory / "training.json").exists() and all(snapshot(directory, n).exists() for n in snapshots)

    def build(staging: Path) -> None:
        data = examples()
        image_size = data.images[0].size[0]
        model, tokenizer, image_processor = _new_model(staging, config, set(words) | caption_words(data.captions),
                                                       image_size, max_tokens)
        pixels = image_processor(images=list(data.images), return_tensors="pt")["pixel_values"]
        classes, texts = np.asarray(data.classes), data.captions
        tokens_of = CaptionTokens(tokenizer)
        generator = np.random.default_rng(config.seed)
        # foreach: one call updates every tensor, bit for bit as the per-tensor loop (tests/core/models/test_trained.py)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01, foreach=True)
        history, started = [], time.monotonic()
        if 0 in snapshots:
            _save(model, tokenizer, image_processor, snapshot(staging, 0))
        model.train()
        torch.manual_seed(config.seed)
        for epoch in tqdm(range(config.epochs), desc=description, disable=not progress, leave=False):
            order, losses = generator.permutation(len(texts)), []
            for start in range(0, len(order), config.batch_size):
                batch = order[start:start + config.batch_size]
                captions = [texts[i][generator.integers(len(texts[i]))] for i in batch]
                tokens = tokens_of(captions)
                image = _pooled(model.get_image_features(pixel_values=pixels[batch]))
                text = _pooled(model.get_text_features(**tokens))
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
            {**(about or {}), "config": asdict(config), "train_images": len(texts), "history": history,
             "seconds": round(time.monotonic() - started, 1), "caption_words": sorted(caption_words(texts))},
            indent=1))

    return build_once(target, build, ".mini-clip-", complete=trained, threads=1)


class CaptionTokens:
    """``tokenizer(captions, padding=True, return_tensors="pt")``, with each distinct caption tokenized once.

    A training run draws a batch of captions every step from a few thousand distinct ones; the slow
    (Python) WordPiece tokenizer took about a seventh of a mini-CLIP's step. Each caption's encoding is
    kept, and a batch is padded on the right to its longest caption with the tokenizer's pad id (0 in
    every other field), which is what the tokenizer's own call returns, tensor for tensor (tested).
    """

    def __init__(self, tokenizer):
        if tokenizer.padding_side != "right":
            raise ValueError(f"CaptionTokens pads on the right; this tokenizer pads on the {tokenizer.padding_side}")
        self.tokenizer = tokenizer
        self.encoded: dict[str, dict[str, list[int]]] = {}

    def __call__(self, captions: Sequence[str]) -> dict:
        import torch

        for caption in captions:
            if caption not in self.encoded:
                self.encoded[caption] = dict(self.tokenizer(caption))
        rows = [self.encoded[caption] for caption in captions]
        length = max(len(row["input_ids"]) for row in rows)
        pad = {"input_ids": self.tokenizer.pad_token_id, "token_type_ids": self.tokenizer.pad_token_type_id}
        return {name: torch.tensor([row[name] + [pad.get(name, 0)] * (length - len(row[name])) for row in rows])
                for name in rows[0]}


def snapshot(directory: str | Path, epoch: int) -> Path:
    """Where :func:`train_mini_clip` saved the model after ``epoch`` (``snapshots``)."""
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


def trained_words(directory: str | Path) -> set[str] | None:
    """The words of the captions a mini-CLIP was trained on (``None`` when its ``training.json`` does
    not list them: trained before they were recorded, or not a mini-CLIP)."""
    try:
        words = json.loads((Path(directory) / "training.json").read_text()).get("caption_words")
    except (OSError, ValueError):
        return None
    return None if words is None else set(words)


def training_history(directory: str | Path) -> pd.DataFrame:
    """Loss per epoch of a trained mini-CLIP."""
    return pd.DataFrame(json.loads((Path(directory) / "training.json").read_text())["history"])
