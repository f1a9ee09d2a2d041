"""``trained:face-captioner``: a small LLaVA trained in the book to caption the face world, from
captions with a planted reporting bias.

The generative counterpart of ``trained:face-clip`` (:mod:`vlbias.models.face_clip`): the same pictures
(the face world's training split, set by the same ``world_*`` options) and the same captions, drawn by
the same code with the same reporting options (:data:`~vlbias.models.face_clip.REPORTING_DEFAULTS`,
:func:`~vlbias.data.face_world.face_captions`). The defaults plant the paper's hypothesis as a cause:
captions name White 10% of the time and every other race 90%, Male 15% and Female 85%, the ages 20-59
15% and the others 85%. A captioner trained so should, writing its own captions, leave White, Male and
middle-aged pictures unnamed; one trained with ``uniform_named`` (the control) should not.

The model is a real transformers LLaVA checkpoint, ``LlavaForConditionalGeneration`` with the pieces
of the ``tiny:llava`` fixture (:mod:`vlbias.models.tiny.vision_language`: the byte-level tokenizer,
LLaVA-1.5's chat template, ``LlavaProcessor``), a CLIP vision tower at the face world's picture size
(a 4 x 4 grid of patches) and a Llama text model, both small. It is trained from random weights by
teacher forcing on (picture, caption) pairs, the loss on the caption's tokens and the end-of-turn
token only, laid out exactly as :class:`~vlbias.models.vision_language.HFVisionLanguageModel` lays out
a question and its answer (its own methods build the batches), so ``generate(images, prompt)`` writes
captions like the world's and ``log_likelihood`` scores them under the prompt it was trained with
(``prompt``: none by default, the image alone, as for captioning).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.base import sha256_hex
from ..data.face_world import FACE_WORLD_DEFAULTS, FACE_WORLD_VERSION, face_captions, reporting_probabilities
from ..data.fairface import GENDERS
from ..device import torch_threads
from ..models.face_clip import _RATES, REPORTING_DEFAULTS, reporting_options
from ..models.trained import register_trained, save_trained
from ..paths import cache_dir, one_builder, staged_directory

#: bump when the same options would train different weights
FACE_CAPTIONER_VERSION = 1
#: the model's size: hidden width of both towers, layers of each, attention heads
WIDTH, TEXT_LAYERS, VISION_LAYERS, HEADS = 64, 2, 1, 4
TRAINING_DEFAULTS = {"epochs": 6, "batch_size": 32, "learning_rate": 3e-3}
#: the options of ``trained:face-captioner``: the face world's (prefixed ``world_``), the reporting (as
#: ``trained:face-clip``'s), the prompt it is trained under ("" for none: the image alone) and the training
FACE_CAPTIONER_DEFAULTS = {**{f"world_{key}": value for key, value in FACE_WORLD_DEFAULTS.items()},
                           **REPORTING_DEFAULTS, "prompt": "", **TRAINING_DEFAULTS}


def face_captioner_spec(**options) -> str:
    """The ``trained:face-captioner`` spec of ``options`` (only those that differ from the defaults are written)."""
    from urllib.parse import urlencode

    unknown = sorted(set(options) - set(FACE_CAPTIONER_DEFAULTS))
    if unknown:
        raise ValueError(f"face_captioner_spec: unknown options {unknown}; options are {list(FACE_CAPTIONER_DEFAULTS)}")
    given = {key: value for key, value in options.items() if value != FACE_CAPTIONER_DEFAULTS[key]}
    return "trained:face-captioner" + ("?" + urlencode(given) if given else "")


def _recipe(**options) -> tuple[dict, dict, dict, dict, Path]:
    """(world options, reporting rates, training options, what the weights depend on, target directory),
    each option checked: one ``ValueError`` naming the first out of range, before anything is trained."""
    from ..data.registry import world_options

    world = {key.removeprefix("world_"): options[key] for key in options if key.startswith("world_")}
    world_options("fairface", world)
    reporting = reporting_options(options, "face-captioner")
    reporting_probabilities(pd.DataFrame({"race": [], "gender": [], "age": []}), **reporting)  # a bad rate fails here
    training = {key: options[key] for key in TRAINING_DEFAULTS}
    for key, least in (("epochs", 1), ("batch_size", 1)):
        if training[key] < least:
            raise ValueError(f"trained:face-captioner: {key} must be at least {least}, got {training[key]!r}")
    if not training["learning_rate"] > 0:
        raise ValueError(f"trained:face-captioner: learning_rate must be positive, got {training['learning_rate']!r}")
    if world["image_size"] % 4:
        raise ValueError(f"trained:face-captioner: world_image_size must be a multiple of 4 (the vision tower reads "
                         f"a 4 x 4 grid of patches), got {world['image_size']!r}")
    about = {"version": FACE_CAPTIONER_VERSION, "world_version": FACE_WORLD_VERSION, "world": world,
             "reporting": reporting, "prompt": options["prompt"] or None, "training": training,
             "model": {"width": WIDTH, "text_layers": TEXT_LAYERS, "vision_layers": VISION_LAYERS, "heads": HEADS}}
    key = sha256_hex(json.dumps(about, sort_keys=True))[:16]
    return world, reporting, training, about, cache_dir() / "trained" / f"face-captioner-{key}"


def explain_face_captioner(**options) -> str:
    """What ``trained:face-captioner`` with ``options`` is, and the causes its captions plant."""
    world, reporting, training, about, _ = _recipe(**options)
    pictures = world["train_per_cell"] * 126
    if len({reporting[rate] for rate in _RATES}) == 1:
        rates = f"captions name every label {reporting['race_named']:.0%} of the time (the uniform control)"
    else:
        others = " and ".join(g for g in GENDERS if g != reporting["default_gender"])
        rates = (f"captions name {reporting['default_race']} {reporting['default_race_named']:.0%} of the time and "
                 f"every other race {reporting['race_named']:.0%}; {reporting['default_gender']} "
                 f"{reporting['default_gender_named']:.0%} and {others} {reporting['gender_named']:.0%}; the ages "
                 f"{reporting['default_ages'].replace(',', ', ')} {reporting['default_age_named']:.0%} and the others "
                 f"{reporting['age_named']:.0%}")
    prompt = f"asked {about['prompt']!r}" if about["prompt"] else "shown the picture alone"
    return (f"a small LLaVA captioner ({TEXT_LAYERS}-layer Llama text model, {WIDTH} wide) trained here for "
            f"{training['epochs']} epochs, {prompt}, to write the captions of the face world's {pictures:,} training "
            f"pictures, where {rates}")


# ------------------------------------------------------------------------------------------- the model

def _new_captioner(image_size: int, seed: int):
    """A randomly initialised LLaVA (drawn under ``seed``) and its processor: the ``tiny:llava``
    fixture's tokenizer, chat template and processor, at the face world's picture size."""
    import torch
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    from ..models.tiny.vision_language import _ids, byte_level_tokenizer, chat_template

    patch = image_size // 4
    tokenizer = byte_level_tokenizer("llama")
    image_processor = CLIPImageProcessor(size={"shortest_edge": image_size},
                                         crop_size={"height": image_size, "width": image_size})
    processor = LlavaProcessor(image_processor, tokenizer, patch_size=patch, vision_feature_select_strategy="default",
                               num_additional_image_tokens=1, chat_template=chat_template("llava"))
    ids = _ids(tokenizer, "llama")
    vision = CLIPVisionConfig(hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=VISION_LAYERS,
                              num_attention_heads=HEADS, image_size=image_size, patch_size=patch, projection_dim=WIDTH)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                       num_hidden_layers=TEXT_LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                       max_position_embeddings=256, bos_token_id=ids["bos"], eos_token_id=ids["eos"],
                       pad_token_id=ids["pad"])
    # the vision tower's last layer feeds the projector (LLaVA-1.5 reads the one before; here there is one)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=processor.image_token_id,
                         vision_feature_layer=-1, vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids["eos"]
    model.generation_config.pad_token_id = ids["pad"]
    model.generation_config.bos_token_id = None
    return model, processor


@register_trained("face-captioner", "vision-language", FACE_CAPTIONER_DEFAULTS,
                  target=lambda **options: _recipe(**options)[4], explain=explain_face_captioner)
def face_captioner(**options) -> Path:
    """A small LLaVA trained by teacher forcing to write the face world's planted captions."""
    world, reporting, training, about, target = _recipe(**options)
    if (target / "training.json").exists():
        return target
    with one_builder(target):
        if (target / "training.json").exists():  # trained by another process while this one waited
            return target
        with staged_directory(target, ".face-captioner-", complete=lambda d: (d / "training.json").exists()) as staging, \
                torch_threads(1):
            _train(staging, world, reporting, training, about)
    return target


def _train(directory: Path, world: dict, reporting: dict, training: dict, about: dict) -> None:
    """Train the captioner and save it with its processor and ``training.json`` in ``directory``."""
    import torch
    from tqdm import tqdm

    from ..data import load_dataset
    from ..data.registry import generated_world_root
    from ..models.vision_language import HFVisionLanguageModel

    # 1. The pictures and their planted captions, drawn as trained:face-clip draws them
    train = load_dataset("fairface", root=generated_world_root("fairface", world), split="train")
    captions, _ = face_captions(train.records, reporting_probabilities(train.records, **reporting), seed=world["seed"])
    images = [image.convert("RGB") for image in train.images()]

    # 2. The model, and each example as the book's loader lays it out: the question (the image, the prompt,
    #    the generation prompt) is the same for every picture; the answer is the caption's tokens and the
    #    end-of-turn token that stops generation
    model, processor = _new_captioner(world["image_size"], world["seed"])
    layout = HFVisionLanguageModel("trained:face-captioner", "llava", model, processor)
    prompt = about["prompt"]
    rendered, _ = layout.question(prompt)
    question = layout._context(images[0], rendered)
    eos = model.generation_config.eos_token_id
    answers = [ids + [eos] for ids in layout.answer_ids(captions, prompt)]
    pixels = processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
    start = question["input_ids"].shape[1]

    # 3. Teacher forcing, the loss on the answers' tokens only
    generator = np.random.default_rng(world["seed"])
    torch.manual_seed(world["seed"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=training["learning_rate"], weight_decay=0.01, foreach=True)
    steps_per_epoch = -(-len(images) // training["batch_size"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=training["learning_rate"],
                                                   total_steps=training["epochs"] * steps_per_epoch, pct_start=0.1)
    history, started = [], time.monotonic()
    model.train()
    bar = tqdm(total=training["epochs"] * steps_per_epoch, desc="training face-captioner", leave=False)
    for epoch in range(training["epochs"]):
        order, losses = generator.permutation(len(images)), []
        for first in range(0, len(order), training["batch_size"]):
            batch = order[first:first + training["batch_size"]]
            inputs = layout._collate([question] * len(batch), [answers[i] for i in batch], left=False)
            inputs["pixel_values"] = pixels[batch]
            labels = torch.full_like(inputs["input_ids"], -100)
            for row, i in enumerate(batch):
                labels[row, start:start + len(answers[i])] = torch.tensor(answers[i])
            loss = model(**inputs, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(float(loss.detach()))
            bar.update()
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)),
                        "seconds": round(time.monotonic() - started, 1)})
        bar.set_postfix(loss=f"{history[-1]['loss']:.3f}")
    bar.close()

    # 4. Saved as any checkpoint, read back by load_vision_language_model
    save_trained(directory, model, processor, {**about, "train_images": len(images), "history": history,
                                               "seconds": round(time.monotonic() - started, 1)})
