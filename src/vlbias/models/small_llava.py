"""A small LLaVA captioner trained in the book: the generative counterpart of :mod:`vlbias.models.mini_clip`.

Used by the ``trained:`` recipes that need a generative vision-language model trained on a generated
world: ``trained:face-captioner`` (Part I, :mod:`vlbias.markedness.face_captioner`) and
``trained:caption-captioner`` (Part II, :mod:`vlbias.models.caption_world_models`).

The model is a real transformers LLaVA checkpoint, ``LlavaForConditionalGeneration`` with the pieces
of the ``tiny:llava`` fixture (:mod:`vlbias.models.tiny.vision_language`: the byte-level tokenizer,
LLaVA-1.5's chat template, ``LlavaProcessor``), a CLIP vision tower at the world's picture size (a
4 x 4 grid of patches) and a Llama text model, both small. It is trained from random weights by
teacher forcing on (picture, caption) pairs, the loss on the caption's tokens and the end-of-turn
token only, laid out exactly as :class:`~vlbias.models.vision_language.HFVisionLanguageModel` lays out
a question and its answer (its own methods build the batches), so ``generate(images, prompt)`` writes
captions like the world's and ``log_likelihood`` scores them under the prompt it was trained with.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .trained import save_trained

#: the model's size: hidden width of both towers, layers of each, attention heads
WIDTH, TEXT_LAYERS, VISION_LAYERS, HEADS = 64, 2, 1, 4


def describe_size() -> str:
    """The model's size in words, for a recipe's ``explain``."""
    return f"{TEXT_LAYERS}-layer Llama text model, {WIDTH} wide"


def new_small_llava(image_size: int, seed: int):
    """A randomly initialised LLaVA (drawn under ``seed``) and its processor: the ``tiny:llava``
    fixture's tokenizer, chat template and processor, at ``image_size`` pixels (a multiple of 4)."""
    import torch
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor)

    from .tiny.vision_language import _ids, byte_level_tokenizer, chat_template

    if image_size % 4:
        raise ValueError(f"image_size must be a multiple of 4 (the vision tower reads a 4 x 4 grid of patches), "
                         f"got {image_size!r}")
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


def train_small_llava(directory: Path, images: list, captions: list[str], image_size: int, training: dict,
                      seed: int, record: dict, prompt: str | None = None, name: str = "captioner") -> None:
    """Train a :func:`new_small_llava` to answer ``prompt`` (None: the picture alone) about ``images[i]``
    with ``captions[i]``, and save it with its processor and ``training.json`` (``record`` plus the
    history) in ``directory``. ``training``: ``epochs``, ``batch_size``, ``learning_rate`` (AdamW,
    one-cycle schedule). Deterministic under ``seed`` on one torch thread."""
    import torch
    from tqdm import tqdm

    from .vision_language import HFVisionLanguageModel

    if len(images) != len(captions) or not captions:
        raise ValueError(f"train_small_llava: give one caption per picture, got {len(images)} pictures and "
                         f"{len(captions)} captions.")
    # 1. The model, and each example as the book's loader lays it out: the question (the image, the prompt,
    #    the generation prompt) is the same for every picture; the answer is the caption's tokens and the
    #    end-of-turn token that stops generation
    model, processor = new_small_llava(image_size, seed)
    layout = HFVisionLanguageModel(f"trained:{name}", "llava", model, processor)
    rendered, _ = layout.question(prompt)
    question = layout._context(images[0], rendered)
    eos = model.generation_config.eos_token_id
    answers = [ids + [eos] for ids in layout.answer_ids(captions, prompt)]
    pixels = processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
    start = question["input_ids"].shape[1]

    # 2. Teacher forcing, the loss on the answers' tokens only
    generator = np.random.default_rng(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=training["learning_rate"], weight_decay=0.01, foreach=True)
    steps_per_epoch = -(-len(images) // training["batch_size"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=training["learning_rate"],
                                                   total_steps=training["epochs"] * steps_per_epoch, pct_start=0.1)
    history, started = [], time.monotonic()
    model.train()
    bar = tqdm(total=training["epochs"] * steps_per_epoch, desc=f"training {name}", leave=False)
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

    # 3. Saved as any checkpoint, read back by load_vision_language_model
    save_trained(directory, model, processor, {**record, "train_images": len(images), "history": history,
                                               "seconds": round(time.monotonic() - started, 1)})
