"""Part II's demo models: trained in the book on the caption world (:mod:`vlbias.data.caption_world`).

They stand in for the paper's seven models by differing in the ways those do, on a world where the
answer is known (colour is the only thing a caption says that the picture shows):

* ``trained:caption-clip?colour_words=1``: a mini-CLIP dual encoder trained contrastively on the
  COCO world's ``train2017`` captions (each image's five captions are its positives);
* ``trained:caption-clip?colour_words=0``: the same, with every colour word removed from its
  training captions: it never saw a colour named, so on colour foils it should sit at chance;
* ``trained:caption-matcher``: a small cross-attention pairwise matcher (a transformers
  ``ViltForImageAndTextRetrieval``, loaded by the ViLT backend unchanged) trained with an
  image-text-matching loss, each caption that names a colour against its colour foil;
* ``trained:caption-captioner?colour_words=1`` and ``=0``: small LLaVA captioners (02d's generative
  stand-ins, :mod:`vlbias.models.small_llava`) trained to write those captions, with and without their
  colour words;
* ``trained:easy-vqa-colour``: 02c's easy-VQA colour model (the same cache directory as 02c's, so
  it trains once for both pages).

Every model trains on one torch thread into a directory keyed by every option; the world options
(``train_images``, ``eval_images``, ``colour_share``, ``colours``, ``image_size``, ``world_seed``)
name the world the page reads, so a changed world is a new world and new models.

Each recipe says which causes behind ColorFoil's claims it plants (:func:`caption_world_plants`, the
``plants`` of :func:`~vlbias.models.trained.register_trained`): captions that name each picture's colour
(``colour_named``), and for the matcher, training against colour foils (``colour_foils``). None plants an
advantage of one kind of model over the other.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..data.base import sha256_hex
from ..data.caption_world import CAPTION_WORLD_DEFAULTS, PALETTE, main_colours, world_colours
from ..paths import build_once, cache_dir
from .mini_clip import MiniClipConfig, TrainingExamples, train_mini_clip
from .trained import register_trained, save_trained

#: bump when the same options would train different weights
CAPTION_MODELS_VERSION = 1

#: the world's options, as the recipes name them (``seed`` is the world's ``world_seed``)
_WORLD_OPTIONS = {("world_seed" if key == "seed" else key): value for key, value in CAPTION_WORLD_DEFAULTS.items()}


def world_query(options: dict) -> dict:
    """The caption world's options among a recipe's (``world_seed`` -> the world's ``seed``)."""
    return {("seed" if key == "world_seed" else key): options[key] for key in _WORLD_OPTIONS}


def _world_sentence(options: dict) -> str:
    return (f"on the COCO caption world's train2017 ({options['train_images']} pictures of a shape in a main colour, "
            f"{options['colour_share']:.0%} of captions naming it; colours {options['colours'].replace(',', ', ')}; "
            f"world seed {options['world_seed']})")


def _explain_clip(**options) -> str:
    words = ("with the colour words in its captions" if options["colour_words"]
             else "with every colour word removed from its captions (it never saw a colour named: planted at chance)")
    return (f"a mini-CLIP dual encoder trained {_world_sentence(options)}, {words}; "
            f"{options['epochs']} epochs, seed {options['seed']}")


def _explain_matcher(**options) -> str:
    return (f"a small ViLT-style cross-attention pairwise matcher trained {_world_sentence(options)} with an "
            f"image-text-matching loss, each caption naming a colour against its colour foil; "
            f"{options['epochs']} epochs, seed {options['seed']}")


#: the causes behind ColorFoil's claims that the caption-world recipes can plant (keys of ``plants``)
COLOUR_NAMED, COLOUR_FOILS = "colour_named", "colour_foils"


def caption_world_plants(matcher: bool = False, **options) -> dict[str, str]:
    """The causes behind ColorFoil's claims that a caption-world recipe plants with ``options``, in words:
    ``colour_named``, captions that name each picture's main colour, where the model keeps its colour words
    (``colour_words=1``; the matcher, without that option, always does) and the world names colours at all
    (``colour_share > 0``); and, for the pairwise ``matcher``, ``colour_foils``: training that sets each such
    caption against its colour foil. ``colour_words=0`` plants neither: the control. No recipe plants an
    advantage of the pairwise matcher over the dual encoder, nor an answer to a question."""
    if not options.get("colour_words", 1) or not options["colour_share"] > 0:
        return {}
    plants = {COLOUR_NAMED: (f"captions that name each picture's main colour ({options['colour_share']:.0%} of the "
                             "training captions)")}
    if matcher:
        plants[COLOUR_FOILS] = "training that sets each caption naming a colour against its colour foil"
    return plants


def _world_root(options: dict) -> Path:
    from ..data.registry import generated_world_root

    return generated_world_root("coco", world_query(options))


def _colour_pattern(colours):
    """Whole colour words, any case ("colored" holds no colour), as ColorFoil's construction matches them."""
    import re

    return re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(colours, key=len, reverse=True)) + r")\b",
                      re.IGNORECASE)


def _named_colours(caption: str, colours) -> list[str]:
    return [m.group(0).lower() for m in _colour_pattern(colours).finditer(caption)]


def _swap_colour(caption: str, old: str, new: str) -> str:
    """``caption`` with the whole word ``old`` replaced by ``new`` in its casing."""
    def cased(match):
        word = match.group(0)
        return new.upper() if word.isupper() and len(word) > 1 else new.capitalize() if word[:1].isupper() else new

    return _colour_pattern([old]).sub(cased, caption)


def strip_colour_words(caption: str, colours) -> str:
    """``caption`` with every whole-word colour name removed (and the spaces it leaves tidied)."""
    import re

    text = _colour_pattern(colours).sub("", caption)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:] if caption[:1].isupper() else text


def _check_colour_words(recipe: str, colour_words: int) -> None:
    if colour_words not in (0, 1):
        raise ValueError(f"trained:{recipe}: colour_words={colour_words!r}: give 1 (captions keep their colour "
                         "words) or 0 (every colour word removed).")


def _train_split(options: dict):
    from ..data import load_dataset

    root = _world_root(options)
    return root, load_dataset("coco", root=root, split="train2017")


# --------------------------------------------------------------------------- dual encoders

CAPTION_CLIP_DEFAULTS = {"colour_words": 1, **_WORLD_OPTIONS, "epochs": 10, "batch_size": 32,
                         "learning_rate": 2e-3, "seed": 0}


def _caption_clip_recipe(colour_words: int, epochs: int, batch_size: int, learning_rate: float, seed: int,
                         **world) -> tuple[MiniClipConfig, dict, Path]:
    _check_colour_words("caption-clip", colour_words)
    image_size = world["image_size"]
    config = MiniClipConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, width=64, layers=2,
                            heads=2, patch_size=image_size // 4, projection_dim=32, seed=seed)
    about = {"version": CAPTION_MODELS_VERSION, "colour_words": colour_words, "world": world_query(world)}
    key = sha256_hex(json.dumps({**about, "config": config.__dict__}, sort_keys=True))[:16]
    return config, about, cache_dir() / "trained" / f"caption-clip-{key}"


@register_trained("caption-clip", "image-text", CAPTION_CLIP_DEFAULTS,
                  target=lambda **options: _caption_clip_recipe(**options)[2], explain=_explain_clip,
                  plants=caption_world_plants)
def caption_clip(**options) -> Path:
    """A mini-CLIP dual encoder trained on the COCO caption world's train2017 captions, with or without
    their colour words (``colour_words``)."""
    config, about, target = _caption_clip_recipe(**options)
    colours = world_colours(options["colours"])

    def examples() -> TrainingExamples:
        _, train = _train_split(options)
        captions = [list(c) if options["colour_words"] else [strip_colour_words(t, colours) for t in c]
                    for c in train.records["captions"]]
        return TrainingExamples(images=list(train.images()), captions=captions, classes=np.arange(len(captions)))

    # every palette colour is a word of the vocabulary, so a foil never tokenizes as its caption
    return train_mini_clip(target, examples, config, words=set(PALETTE), progress=False, about=about,
                           description="training caption-clip")


# --------------------------------------------------------------------------- pairwise matcher

CAPTION_MATCHER_DEFAULTS = {**_WORLD_OPTIONS, "epochs": 6, "batch_size": 32, "learning_rate": 1e-3, "width": 64,
                            "layers": 2, "seed": 0}


def _matcher_recipe(epochs: int, batch_size: int, learning_rate: float, width: int, layers: int, seed: int,
                    **world) -> tuple[dict, Path]:
    about = {"version": CAPTION_MODELS_VERSION, "world": world_query(world),
             "config": {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate, "width": width,
                        "layers": layers, "seed": seed}}
    return about, cache_dir() / "trained" / f"caption-matcher-{sha256_hex(json.dumps(about, sort_keys=True))[:16]}"


def matcher_pairs(captions: list[list[str]], mains: list[str], colours: list[str], rng: np.random.Generator):
    """Per image, one caption that names its main colour and its foil (the colour swapped for another of
    the world's): ``(image index, caption, foil)``, for the images that have such a caption."""
    pairs = []
    for index, (alternatives, main) in enumerate(zip(captions, mains)):
        named = [c for c in alternatives if main in _named_colours(c, colours)]
        if named:
            caption = named[rng.integers(len(named))]
            other = str(rng.choice([c for c in colours if c != main]))
            pairs.append((index, caption, _swap_colour(caption, main, other)))
    return pairs


@register_trained("caption-matcher", "image-text", CAPTION_MATCHER_DEFAULTS,
                  target=lambda **options: _matcher_recipe(**options)[1], explain=_explain_matcher,
                  plants=lambda **options: caption_world_plants(**options, matcher=True))
def caption_matcher(**options) -> Path:
    """A small ViLT-style pairwise matcher trained with an image-text-matching loss on the COCO caption
    world's train2017 captions that name a colour (positives) and their colour foils (negatives)."""
    about, target = _matcher_recipe(**options)
    return build_once(target, lambda staging: _train_matcher(staging, options, about), ".caption-matcher-", threads=1)


def _train_matcher(directory: Path, options: dict, about: dict) -> None:
    import torch
    from transformers import BertTokenizer, ViltConfig, ViltForImageAndTextRetrieval, ViltImageProcessor, ViltProcessor

    from .mini_clip import caption_words
    from .tiny.tokenizers import write_wordpiece_vocab

    root, train = _train_split(options)
    colours = world_colours(options["colours"])
    truth = main_colours(root)
    captions = list(train.records["captions"])
    mains = [truth[f] for f in train.records["file"]]
    images = list(train.images())
    size = options["image_size"]
    write_wordpiece_vocab(directory, extra_words=sorted(caption_words(captions) | set(PALETTE)))
    tokenizer = BertTokenizer.from_pretrained(directory, model_max_length=24)
    processor = ViltProcessor(image_processor=ViltImageProcessor(size={"shortest_edge": size}, size_divisor=size // 4),
                              tokenizer=tokenizer)
    width = options["width"]
    torch.manual_seed(options["seed"])
    model = ViltForImageAndTextRetrieval(ViltConfig(
        vocab_size=len(tokenizer), hidden_size=width, num_hidden_layers=options["layers"], num_attention_heads=2,
        intermediate_size=2 * width, image_size=size, patch_size=size // 4, max_position_embeddings=24))
    pixels = processor.image_processor(images=images, return_tensors="pt")
    optimizer = torch.optim.AdamW(model.parameters(), lr=options["learning_rate"], weight_decay=0.01)
    rng = np.random.default_rng(options["seed"])
    history, started = [], time.monotonic()
    model.train()
    for epoch in range(options["epochs"]):
        pairs = matcher_pairs(captions, mains, colours, rng)  # a fresh caption and foil per image, every epoch
        order, losses = rng.permutation(len(pairs)), []
        for start in range(0, len(order), options["batch_size"]):
            batch = [pairs[i] for i in order[start:start + options["batch_size"]]]
            index = torch.tensor([b[0] for b in batch] * 2)
            texts = [b[1] for b in batch] + [b[2] for b in batch]
            tokens = tokenizer(texts, padding=True, truncation=True, max_length=24, return_tensors="pt")
            logits = model(**tokens, pixel_values=pixels["pixel_values"][index],
                           pixel_mask=pixels["pixel_mask"][index]).logits[:, 0]
            labels = torch.cat([torch.ones(len(batch)), torch.zeros(len(batch))])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)),
                        "seconds": round(time.monotonic() - started, 1)})
    save_trained(directory, model, processor, {**about, "train_images": len(images), "history": history,
                                               "seconds": round(time.monotonic() - started, 1)})


# --------------------------------------------------------------------------- generative captioners (02d)

CAPTION_CAPTIONER_DEFAULTS = {"colour_words": 1, **_WORLD_OPTIONS, "epochs": 6, "batch_size": 32,
                              "learning_rate": 3e-3, "seed": 0}


def _captioner_recipe(colour_words: int, epochs: int, batch_size: int, learning_rate: float, seed: int,
                      **world) -> tuple[dict, dict, Path]:
    from .small_llava import HEADS, TEXT_LAYERS, VISION_LAYERS, WIDTH

    _check_colour_words("caption-captioner", colour_words)
    for key, value, least in (("epochs", epochs, 1), ("batch_size", batch_size, 1)):
        if value < least:
            raise ValueError(f"trained:caption-captioner: {key} must be at least {least}, got {value!r}")
    if not learning_rate > 0:
        raise ValueError(f"trained:caption-captioner: learning_rate must be positive, got {learning_rate!r}")
    if world["image_size"] % 4:
        raise ValueError(f"trained:caption-captioner: image_size must be a multiple of 4 (the vision tower reads a "
                         f"4 x 4 grid of patches), got {world['image_size']!r}")
    training = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate}
    about = {"version": CAPTION_MODELS_VERSION, "colour_words": colour_words, "world": world_query(world),
             "training": training, "seed": seed,
             "model": {"width": WIDTH, "text_layers": TEXT_LAYERS, "vision_layers": VISION_LAYERS, "heads": HEADS}}
    key = sha256_hex(json.dumps(about, sort_keys=True))[:16]
    return training, about, cache_dir() / "trained" / f"caption-captioner-{key}"


def _explain_captioner(**options) -> str:
    from .small_llava import describe_size

    words = ("with the colour words in its captions" if options["colour_words"]
             else "with every colour word removed from its captions (it never saw a colour named)")
    return (f"a small LLaVA captioner ({describe_size()}) trained {_world_sentence(options)} to write each picture's "
            f"five captions, shown the picture alone, {words}; {options['epochs']} epochs, seed {options['seed']}")


@register_trained("caption-captioner", "vision-language", CAPTION_CAPTIONER_DEFAULTS,
                  target=lambda **options: _captioner_recipe(**options)[2], explain=_explain_captioner,
                  plants=caption_world_plants)
def caption_captioner(**options) -> Path:
    """A small LLaVA (:mod:`vlbias.models.small_llava`) trained to write the COCO caption world's
    train2017 captions, every picture with each of its five, with or without their colour words
    (``colour_words``): the generative stand-ins of 02d."""
    from .small_llava import train_small_llava

    training, about, target = _captioner_recipe(**options)

    def train(staging: Path) -> None:
        _, split = _train_split(options)
        colours = world_colours(options["colours"])
        images, captions = [], []
        for picture, texts in zip([image.convert("RGB") for image in split.images()], split.records["captions"]):
            for text in texts:
                images.append(picture)
                captions.append(text if options["colour_words"] else strip_colour_words(text, colours))
        train_small_llava(staging, images, captions, options["image_size"], training, options["seed"], about,
                          name="caption-captioner")

    return build_once(target, train, ".caption-captioner-", threads=1)
