"""Generative vision-language models: LLaVA (1.5, NeXT, OneVision), Qwen2-VL and Qwen2.5-VL,
Idefics3 and SmolVLM, PaliGemma, BLIP-2, behind :class:`~vlbias.models.base.VisionLanguageModel`.

One spec string names a model (a hub id, a local directory, a ``tiny:`` fixture); its ``config.json``
``model_type`` picks the family (:data:`VISION_LANGUAGE_BACKENDS`), and a family without a backend is
refused with the families that have one. Every family runs through its own ``*ForConditionalGeneration``
class and its own processor (``AutoProcessor``), as the checkpoint's model card calls them.

Conventions (the numbers depend on them, so they are spelled out):

* **The question.** Families with a chat template (LLaVA, Qwen-VL, Idefics3/SmolVLM) lay out one user
  turn, the image then the prompt (``[{"type": "image"}, {"type": "text", "text": prompt}]``; the image
  alone when the prompt is ``None``), and the template's generation prompt, exactly as
  ``processor.apply_chat_template(..., add_generation_prompt=True, tokenize=True)`` does (BOS added by the
  tokenizer unless the rendered prompt opens with it). A checkpoint of such a family without a chat
  template is refused at load: the layout would be a guess. PaliGemma has no chat template: its
  question is its prefix, ``<image>...<bos>prompt\\n`` as its processor writes it, and the answer is its
  suffix (token type 1, read causally; the prefix is read bidirectionally), as in big_vision's training
  and in the processor's ``suffix=`` argument. BLIP-2 has none either: the query tokens, BOS, the prompt
  as given (``"Question: ... Answer:"`` is the paper's VQA format; ``None`` for captions), then the text
  after one space (none after an empty prompt).
* **The answer's tokens** are those the tokenizer gives the rendered question followed by the answer
  beyond those of the question alone: the answer is written as the template writes an assistant's turn
  (LLaVA-1.5 and SmolVLM put a space after ``ASSISTANT:``/``Assistant:``, Qwen's and LLaVA-OneVision's
  answers start on the generation prompt's new line). Should the answer's first characters merge with
  the question's last token the text is refused, never scored under a different split. PaliGemma's
  suffix is tokenised on its own, as its processor does.
* **Scores** sum the answer tokens' log-probabilities (float32 log-softmax), not the end-of-turn token
  after them (:class:`~vlbias.models.base.VisionLanguageModel`). Batches are right-padded (real tokens keep
  their positions) and pixel inputs zero-padded where images differ in tiles, which each family drops,
  so batched scores equal one-at-a-time scores up to float rounding (tested).
* **Several texts about one image** (the same image object given again, as 01d, 02d and 04b's annotators
  ask): where the family reads the answer causally after the image and question
  (:data:`SHARED_PREFIX_FAMILIES`), those run once; each text's first token is read at that pass's last
  position and the rest continue a copy of its key-value cache, at the positions the whole sequence gives
  them (Qwen-VL's after its M-RoPE offset). The scores equal the pairs scored alone up to float rounding,
  at the checkpoints' full widths (tests/conformance); the vision tower runs once per image, not per text.
* **Length**: a question and answer longer than the model reads (its text model's position table, or
  its tokenizer's cap) raise ``ValueError`` naming the text; nothing is cut. Generation raises where the
  question plus ``max_new_tokens`` would not fit.
* **Images** must be RGB PIL images; another mode raises ``ValueError`` naming the image: how to flatten
  transparency or a palette is the caller's choice, and the families' processors would make it
  differently (some convert, some do not).
* **Generation** is greedy (``generate(do_sample=False)``), left-padded in batches, stopping at the
  checkpoint's end-of-turn token (its generation config), decoded without special tokens and stripped.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image

from ..device import resolve_device, resolve_dtype
from ..errors import ModelUnavailableError, first_line
from ._batching import batches
from .base import VisionLanguageModel
from .identity import identify
from .image_text import _as_texts, _hub_config, _image_processor_id, _text_limit
from .spec import ModelSpec, locate, parse_spec, refuse_options


@dataclass(frozen=True)
class Family:
    """How one family is loaded and asked: its model class, whether it needs a chat template, and,
    for families without one, how its question is written (``layout``)."""

    model_class: str
    chat: bool = True
    #: ``"paligemma"`` (prefix and suffix) or ``"blip-2"`` (prompt, space, text) where ``chat`` is False
    layout: str | None = None
    #: architectures of this model_type that are not generative (BLIP-2's image-text matcher)
    not_generative: tuple[str, ...] = ()


#: config.json ``model_type`` -> family. SmolVLM's first checkpoints are ``idefics3``, SmolVLM2's ``smolvlm``.
VISION_LANGUAGE_BACKENDS: dict[str, Family] = {
    "llava": Family("LlavaForConditionalGeneration"),
    "llava_next": Family("LlavaNextForConditionalGeneration"),
    "llava_onevision": Family("LlavaOnevisionForConditionalGeneration"),
    "qwen2_vl": Family("Qwen2VLForConditionalGeneration"),
    "qwen2_5_vl": Family("Qwen2_5_VLForConditionalGeneration"),
    "idefics3": Family("Idefics3ForConditionalGeneration"),
    "smolvlm": Family("SmolVLMForConditionalGeneration"),
    "paligemma": Family("PaliGemmaForConditionalGeneration", chat=False, layout="paligemma"),
    "blip-2": Family("Blip2ForConditionalGeneration", chat=False, layout="blip-2",
                     not_generative=("Blip2ForImageTextRetrieval",)),
}

#: language models of BLIP-2 checkpoints this backend refuses: encoder-decoders, whose answer is the decoder's
#: and whose question the encoder reads (FlanT5, DALL-Eval's blip2-flan-t5-xxl)
ENCODER_DECODER = ("t5", "mt5", "umt5")

#: per-token inputs besides the ids: the value an answer token gets, by key (PaliGemma's suffix is type 1)
_ANSWER_FILL = {"attention_mask": 1}
#: families whose answer the language model reads causally after the image and question, so one pass over
#: an image and its question serves every text scored against that image (its key-value cache, copied per
#: batch of texts); PaliGemma reads its prefix bidirectionally and BLIP-2 needs its pixels on every call
SHARED_PREFIX_FAMILIES = frozenset({"llava", "llava_next", "llava_onevision", "qwen2_vl", "qwen2_5_vl", "idefics3",
                                    "smolvlm"})
#: families whose text positions after an image are offset by M-RoPE (the model's ``rope_deltas``)
_MROPE_FAMILIES = frozenset({"qwen2_vl", "qwen2_5_vl"})
_MARKER = "\uE000answer\uE001"  # a private-use marker no template writes


def is_vision_language_config(config: dict) -> bool:
    """Whether a ``config.json`` is a generative checkpoint of a family this module loads."""
    family = VISION_LANGUAGE_BACKENDS.get(config.get("model_type"))
    architectures = config.get("architectures") or []
    return family is not None and not any(name in family.not_generative for name in architectures)


def check_image(image, index: int) -> Image.Image:
    """``images[index]`` as a vision-language model reads it: a PIL image in RGB, or one clear error
    (the conversion of a palette or transparency is the caller's choice, never made silently)."""
    if not isinstance(image, Image.Image):
        raise TypeError(f"images[{index}] is a {type(image).__name__}; give PIL images (PIL.Image.open(path)).")
    if image.mode != "RGB":
        raise ValueError(f"images[{index}] is a {image.mode!r} image; vision-language models read RGB images. "
                         "Convert it first (image.convert('RGB'), or paste an RGBA image on the background "
                         "you mean), so that how its transparency or palette is flattened is your choice.")
    return image


def _check_images(images: Sequence[Image.Image]) -> list[Image.Image]:
    if isinstance(images, Image.Image):
        raise TypeError("Expected a sequence of images, got a single image; wrap it in a list.")
    return [check_image(image, index) for index, image in enumerate(images)]


def _pad_and_stack(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Concatenate along the first dimension, zero-padding the others to the largest (image tiles)."""
    shape = [max(tensor.shape[d] for tensor in tensors) for d in range(1, tensors[0].dim())]
    padded = []
    for tensor in tensors:
        pad = []
        for d in reversed(range(1, tensor.dim())):
            pad += [0, shape[d - 1] - tensor.shape[d]]
        padded.append(torch.nn.functional.pad(tensor, pad) if any(pad) else tensor)
    return torch.cat(padded, dim=0)


class HFVisionLanguageModel(VisionLanguageModel):
    """A transformers ``*ForConditionalGeneration`` model and its processor (see the module docstring)."""

    def __init__(self, spec: str, family: str, model, processor):
        self.spec = spec
        self.family = family
        self.backend = VISION_LANGUAGE_BACKENDS[family]
        self.model = model
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.device = next(model.parameters()).device
        self.pad_id = next((i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id) if i is not None), 0)
        text_config = model.config.get_text_config()
        self.max_length = _text_limit(self.tokenizer, getattr(text_config, "max_position_embeddings", None))
        self.keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
        template = getattr(processor, "chat_template", None)
        layout = ("template=sha256:" + hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
                  if self.backend.chat else f"layout={self.backend.layout}")
        self.preprocess_id = _image_processor_id(processor.image_processor) + "|" + layout

    def __repr__(self) -> str:
        return f"HFVisionLanguageModel({self.spec!r}, family={self.family!r}, dtype={self.dtype})"

    # ---- the question and the answer, as text and tokens

    def question(self, prompt: str | None) -> tuple[str, str]:
        """(the question as the processor reads it, with one image placeholder; what the template writes
        between the generation prompt and an answer)."""
        if prompt is not None and not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string or None, got {type(prompt).__name__}.")
        if self.backend.layout == "paligemma":
            return self.processor.image_token + (prompt or ""), ""
        if self.backend.layout == "blip-2":
            return prompt or "", " " if prompt else ""
        content = [{"type": "image"}] + ([{"type": "text", "text": prompt}] if prompt else [])
        user = [{"role": "user", "content": content}]
        rendered = self.processor.apply_chat_template(user, add_generation_prompt=True)
        answered = self.processor.apply_chat_template(
            user + [{"role": "assistant", "content": [{"type": "text", "text": _MARKER}]}])
        # LLaVA-OneVision's template writes an answer's turn other than its generation prompt; the answer
        # then follows the generation prompt, as generate() continues it
        between = ""
        if answered.startswith(rendered) and _MARKER in answered[len(rendered):]:
            between = answered[len(rendered):answered.index(_MARKER, len(rendered))]
        return rendered, between

    def _tokens(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def answer_ids(self, texts: Sequence[str], prompt: str | None = None) -> list[list[int]]:
        """The token ids scored for each text after ``prompt`` (see the module docstring)."""
        texts = _as_texts(texts)
        rendered, between = self.question(prompt)
        if self.backend.layout == "paligemma":  # the suffix is tokenised as a sequence of its own
            return [self._tokens(text) for text in texts]
        question = self._tokens(rendered)
        answers = []
        for index, text in enumerate(texts):
            ids = self._tokens(rendered + between + text)
            if ids[:len(question)] != question:
                raise ValueError(f"texts[{index}] ({text[:40]!r}) merges with the end of the prompt under {self.spec!r}'s "
                                 "tokenizer, so its tokens are not the answer's alone; start it with a word.")
            answers.append(ids[len(question):])
        return answers

    def answer_token_counts(self, texts, prompt=None):
        return np.array([len(ids) for ids in self.answer_ids(texts, prompt)], dtype=np.int64)

    def _context(self, image: Image.Image, rendered: str):
        """The processor's inputs for one image and the rendered question (images placed, ids expanded)."""
        bos = self.tokenizer.bos_token
        kwargs = {"add_special_tokens": False} if self.backend.chat and bos and rendered.startswith(bos) else {}
        # numpy arrays, then tensors: PaliGemma's processor copies torch tensors with np.array, which numpy 2 warns about
        inputs = self.processor(images=[image], text=[rendered], return_tensors="np", **kwargs)
        inputs.pop("labels", None)  # PaliGemma's, of a suffix not given
        return {key: torch.from_numpy(np.asarray(value)) for key, value in inputs.items()}

    def _check_length(self, length: int, what: str, fix: str) -> None:
        if self.max_length is not None and length > self.max_length:
            raise ValueError(f"{what} is {length} tokens with the image's, but {self.spec!r} reads at most "
                             f"{self.max_length}: {fix}. Nothing is cut.")

    def _collate(self, contexts: list, answers: list[list[int]], left: bool) -> dict:
        """One batch of inputs: per-token tensors (ids, mask, token types) with each answer appended and
        padded at the end (``left=False``) or the start; pixel tensors concatenated, tiles zero-padded."""
        length = max(ctx["input_ids"].shape[1] + len(answer) for ctx, answer in zip(contexts, answers))
        batch = {}
        for key in contexts[0].keys():
            values = [ctx[key] for ctx in contexts]
            if not all(torch.is_tensor(value) for value in values):
                raise TypeError(f"{self.spec!r}: the processor gave a non-tensor {key!r}")
            if key == "input_ids" or values[0].shape == contexts[0]["input_ids"].shape:
                fill = {"input_ids": None, "token_type_ids": int(self.backend.layout == "paligemma")}.get(
                    key, _ANSWER_FILL.get(key, 0))
                rows = []
                for value, answer in zip(values, answers):
                    added = answer if fill is None else [fill] * len(answer)
                    row = value[0].tolist() + added
                    pad = [self.pad_id if key == "input_ids" else 0] * (length - len(row))
                    rows.append(pad + row if left else row + pad)
                batch[key] = torch.tensor(rows, dtype=values[0].dtype)
            else:
                batch[key] = _pad_and_stack(values)
        return {key: value.to(self.device) for key, value in batch.items()}

    # ---- the interface

    @torch.no_grad()
    def log_likelihood(self, images, texts, prompt=None, batch_size=8, progress=True):
        images, texts = _check_images(images), _as_texts(texts)
        if len(images) != len(texts):
            raise ValueError(f"Got {len(images)} images and {len(texts)} texts: log_likelihood scores text i given "
                             "image i; repeat an image to score several texts against it.")
        rendered, _ = self.question(prompt)
        answers = self.answer_ids(texts, prompt)
        totals = np.zeros(len(texts), dtype=np.float64)
        by_image: dict[int, list[int]] = {}
        for index, image in enumerate(images):  # the same image object, given again for another text
            by_image.setdefault(id(image), []).append(index)
        shared = ([group for group in by_image.values() if len(group) > 1]
                  if self.family in SHARED_PREFIX_FAMILIES else [])
        for [group] in batches(shared, 1, progress, "log-likelihood (texts per image)"):
            totals[group] = self._after_one_pass(images[group[0]], rendered, [answers[i] for i in group], group,
                                                 batch_size)
        in_groups = {index for group in shared for index in group}
        alone = [index for index in range(len(texts)) if index not in in_groups]
        totals[alone] = self._pairs(images, answers, alone, rendered, batch_size, progress)
        return totals

    def _pairs(self, images, answers, indices: list[int], rendered: str, batch_size: int, progress: bool) -> list[float]:
        """The scores of the pairs ``indices``, each pair a forward pass of its own, several to a batch."""
        totals = []
        for batch in batches(indices, batch_size, progress, "log-likelihood"):
            contexts = [self._context(images[index], rendered) for index in batch]
            batch_answers = [answers[index] for index in batch]
            starts = [ctx["input_ids"].shape[1] for ctx in contexts]
            for start, answer, index in zip(starts, batch_answers, batch):
                self._check_length(start + len(answer), f"texts[{index}] after the prompt",
                                   "shorten the text or the prompt")
            inputs = self._collate(contexts, batch_answers, left=False)
            # the token at position t is predicted at t - 1; only those positions' logits are needed
            wanted = sorted({p for start, answer in zip(starts, batch_answers)
                             for p in range(start - 1, start + len(answer) - 1)})
            if not wanted:
                totals.extend(0.0 for _ in batch)
                continue
            column = {position: c for c, position in enumerate(wanted)}
            if self.keeps_logits:
                inputs["logits_to_keep"] = torch.tensor(wanted, device=self.device)
            logits = self.model(**inputs).logits
            if not self.keeps_logits:
                logits = logits[:, wanted]
            if logits.shape[1] != len(wanted):
                raise RuntimeError(f"{self.spec!r} returned logits for {logits.shape[1]} positions, not the "
                                   f"{len(wanted)} asked for; its outputs do not line up with its inputs")
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for row, (start, answer) in enumerate(zip(starts, batch_answers)):
                columns = [column[p] for p in range(start - 1, start + len(answer) - 1)]
                targets = torch.tensor(answer, dtype=torch.long, device=logprobs.device)
                totals.append(logprobs[row, columns, targets].sum().item() if answer else 0.0)
        return totals

    def _after_one_pass(self, image, rendered: str, answers: list[list[int]], indices: list[int],
                        batch_size: int) -> list[float]:
        """The scores of several answers about one image from one pass over the image and question (its
        vision tower and question run once): each answer's first token is read at that pass's last
        position, the rest from the answers fed after a copy of its key-value cache, right-padded as the
        pairs are, at the positions the whole sequence gives them (after M-RoPE's offset for Qwen-VL)."""
        context = self._context(image, rendered)
        start = context["input_ids"].shape[1]
        for answer, index in zip(answers, indices):
            self._check_length(start + len(answer), f"texts[{index}] after the prompt", "shorten the text or the prompt")
        inputs = {key: value.to(self.device) for key, value in context.items()}
        if self.keeps_logits:
            inputs["logits_to_keep"] = 1
        prefix = self.model(**inputs, use_cache=True)
        first = torch.log_softmax(prefix.logits[0, -1].float(), dim=-1)
        offset = start + (int(self.model.model.rope_deltas.reshape(-1)[0]) if self.family in _MROPE_FAMILIES else 0)
        totals = []
        for chunk in batches(answers, batch_size, False, ""):
            scores = [first[answer[0]].item() if answer else 0.0 for answer in chunk]
            fed = [answer[:-1] for answer in chunk]  # the last token is predicted, never read
            width = max(len(tokens) for tokens in fed)
            if width:
                rows = len(chunk)
                cache = copy.deepcopy(prefix.past_key_values)
                cache.batch_repeat_interleave(rows)
                ids = torch.tensor([tokens + [self.pad_id] * (width - len(tokens)) for tokens in fed],
                                   device=self.device)
                mask = torch.tensor([[1] * (start + len(tokens)) + [0] * (width - len(tokens)) for tokens in fed],
                                    device=self.device)
                positions = torch.arange(offset, offset + width, device=self.device).expand(rows, -1)
                if self.family in _MROPE_FAMILIES:
                    positions = positions.expand(3, rows, -1)
                logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                                    use_cache=True).logits
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                for row, answer in enumerate(chunk):
                    if len(answer) > 1:
                        targets = torch.tensor(answer[1:], dtype=torch.long, device=logprobs.device)
                        scores[row] += logprobs[row, torch.arange(len(answer) - 1), targets].sum().item()
            totals += scores
        return totals

    @torch.no_grad()
    def generate(self, images, prompt=None, max_new_tokens=40, batch_size=8, progress=True):
        images = _check_images(images)
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}.")
        rendered, _ = self.question(prompt)
        answers = []
        for batch in batches(list(enumerate(images)), batch_size, progress, "generate"):
            contexts = [self._context(image, rendered) for _, image in batch]
            for (index, _), ctx in zip(batch, contexts):
                self._check_length(ctx["input_ids"].shape[1] + max_new_tokens,
                                   f"the question about images[{index}] plus max_new_tokens",
                                   "lower max_new_tokens or shorten the prompt")
            inputs = self._collate(contexts, [[] for _ in batch], left=True)
            output = self.model.generate(**inputs, do_sample=False, max_new_tokens=max_new_tokens,
                                         pad_token_id=self.pad_id)
            new = output[:, inputs["input_ids"].shape[1]:]
            answers.extend(text.strip() for text in self.tokenizer.batch_decode(new, skip_special_tokens=True))
        return answers


# --------------------------------------------------------------------------- loading


def _unavailable(spec: ModelSpec, error: BaseException) -> ModelUnavailableError:
    reason = first_line(error)
    return ModelUnavailableError(
        f"Cannot load vision-language model {spec.raw!r} ({reason}). If it is a hub id, download it once while "
        "online (`hf download <id>`) or pass the path of a local checkpoint directory; tests use tiny: specs "
        "(tiny:llava, tiny:qwen2-vl, ...).")


def load_vision_language_model(spec: str | ModelSpec, device=None, half: bool | None = None) -> HFVisionLanguageModel:
    """Load a generative vision-language model by spec (hub id, local directory, ``tiny:`` fixture).

    float32 unless ``half=True``, as for every model kind. The family comes from ``config.json``'s
    ``model_type``; one without a backend, a BLIP-2 matcher, or a chat family's checkpoint without a chat
    template raises ``ValueError`` saying so. ``model.identity`` says what was loaded and keys every cache.
    """
    import transformers

    parsed = parse_spec(spec)
    refuse_options(parsed, "generative vision-language models")
    device = resolve_device(device)
    dtype = resolve_dtype(device, bool(half))
    location = None
    if parsed.source == "hf":
        config = _hub_config(parsed)
        source = locate(parsed)
    else:
        location = Path(locate(parsed))
        if not (location / "config.json").is_file():
            raise FileNotFoundError(f"{parsed.raw!r}: {location} has no config.json; give the directory that "
                                    "save_pretrained wrote.")
        config = json.loads((location / "config.json").read_text(encoding="utf-8"))
        source = str(location)
    model_type = config.get("model_type")
    if not is_vision_language_config(config):
        architectures = ", ".join(config.get("architectures") or []) or "no architectures"
        raise ValueError(f"{parsed.raw!r} is a {model_type!r} checkpoint ({architectures}), not a generative "
                         f"vision-language model of a family with a backend; backends exist for "
                         f"{', '.join(sorted(VISION_LANGUAGE_BACKENDS))}.")
    family = VISION_LANGUAGE_BACKENDS[model_type]
    text_config = config.get("text_config") or {}
    if family.layout == "blip-2" and (text_config.get("is_encoder_decoder") or text_config.get("model_type") in ENCODER_DECODER):
        raise ValueError(f"{parsed.raw!r} is a BLIP-2 checkpoint whose language model is an encoder-decoder "
                         f"({text_config.get('model_type')!r}, e.g. FlanT5): this backend scores and continues BLIP-2's "
                         "decoder-only language models (OPT) and would lay out its question wrongly. Use a BLIP-2 OPT "
                         "checkpoint (Salesforce/blip2-opt-2.7b) or another family.")
    try:
        processor = transformers.AutoProcessor.from_pretrained(source)
    except OSError as error:  # config cached but the processor's files missing
        raise _unavailable(parsed, error) from None
    if family.chat and not getattr(processor, "chat_template", None):
        raise ValueError(f"{parsed.raw!r} is a {model_type} checkpoint without a chat template (no chat_template.jinja "
                         "or chat_template.json beside its processor files): its questions would be laid out by "
                         "guesswork. Add the template its publisher gives for it (processor.chat_template = ...; "
                         "processor.save_pretrained(directory)) and load the directory.")
    try:
        model = getattr(transformers, family.model_class).from_pretrained(source, dtype=dtype)
    except OSError as error:
        raise _unavailable(parsed, error) from None
    model.to(device).eval()
    wrapper = HFVisionLanguageModel(parsed.display, model_type, model, processor)
    wrapper.identity = identify(parsed, wrapper, location)
    return wrapper
