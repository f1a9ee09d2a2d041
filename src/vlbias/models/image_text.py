"""Image-text models: dual encoders (CLIP and relatives, SigLIP, Chinese-CLIP) and pairwise matchers (ViLT,
BridgeTower, BLIP's image-text matching head).

One spec string names a model; :func:`load_image_text_model` reads where it lives (open_clip
registry, Hugging Face hub id, local directory, ``tiny:`` fixture) and which family it is
(``open_clip_config.json``, or ``config.json``'s ``model_type``), then wraps it in one class
per family. Batching, progress bars and normalisation live in the two shared bases,
:class:`DualEncoder` and :class:`PairwiseMatcher`; a family only says how to run one batch.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from PIL import Image

from ..device import resolve_device, resolve_dtype
from ..errors import ModelUnavailableError, first_line, is_unavailable
from ._batching import batches
from .base import ImageTextModel
from .identity import identify
from .spec import ModelSpec, locate, parse_spec


# --------------------------------------------------------------------------- shared helpers


def _as_rgb(images: Sequence[Image.Image]) -> list[Image.Image]:
    return [image if image.mode == "RGB" else image.convert("RGB") for image in images]


def _as_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a lone string would otherwise be scored character by character
        raise TypeError("Expected a sequence of texts, got a single string; wrap it in a list.")
    return [str(text) for text in texts]


def _check_candidates(images: Sequence, candidates: Sequence[Sequence[str]]) -> list[list[str]]:
    candidates = [_as_texts(row) for row in candidates]
    if len(candidates) != len(images):
        raise ValueError(f"Got {len(images)} images but {len(candidates)} candidate lists.")
    widths = {len(row) for row in candidates}
    if len(widths) > 1:
        raise ValueError(f"Every image needs the same number of candidates, got {sorted(widths)}.")
    return candidates


def _features(output) -> torch.Tensor:
    """The embedding tensor from a ``get_*_features`` call.

    transformers 5 returns a ``BaseModelOutputWithPooling`` whose ``pooler_output`` holds the
    projected embedding; older versions returned the tensor itself.
    """
    if isinstance(output, torch.Tensor):
        return output
    pooled = getattr(output, "pooler_output", None)
    if pooled is None:
        raise TypeError(f"Cannot find embeddings in a {type(output).__name__}.")
    return pooled


def _describe(mapping: dict) -> str:
    return ",".join(f"{key}={mapping[key]}" for key in sorted(mapping) if mapping[key] is not None)


# --------------------------------------------------------------------------- shared bases


class _ImageTextBase(ImageTextModel):
    """Spec, device and dtype bookkeeping common to every backend."""

    def __init__(self, spec: str, device: torch.device, dtype: torch.dtype, preprocess: str):
        self.spec = spec
        self.device = device
        self.torch_dtype = dtype
        # the preprocessing alone: which weights read the pixels is the identity's weights part
        self.preprocess_id = preprocess

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(spec={self.spec!r}, kind={self.kind!r}, device={self.device.type}, "
                f"dtype={self.dtype})")


class DualEncoder(_ImageTextBase):
    """Embeds images and texts separately; scores are cosines of L2-normalised embeddings."""

    kind = "dual"

    def _embed_images(self, images: list[Image.Image]) -> torch.Tensor:
        """Unnormalised embeddings of one batch of RGB images."""
        raise NotImplementedError

    def _embed_texts(self, texts: list[str]) -> torch.Tensor:
        """Unnormalised embeddings of one batch of texts."""
        raise NotImplementedError

    def _encode(self, items: list, embed: Callable[[list], torch.Tensor], batch_size: int,
                progress: bool, desc: str) -> np.ndarray:
        chunks = []
        with torch.inference_mode():
            for batch in batches(items, batch_size, progress, desc):
                # normalise in float32: fp16 norms lose digits the cosines need
                embeddings = embed(batch).float()
                embeddings = embeddings / embeddings.norm(dim=-1, keepdim=True)
                chunks.append(embeddings.cpu().numpy())
        if not chunks:
            return np.zeros((0, self.embedding_dim or 0), dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32, copy=False)

    def encode_images(self, images, batch_size=32, progress=True):
        return self._encode(_as_rgb(images), self._embed_images, batch_size, progress, "images")

    def encode_texts(self, texts, batch_size=256, progress=True):
        return self._encode(_as_texts(texts), self._embed_texts, batch_size, progress, "texts")

    def score(self, images, texts, batch_size=32, progress=True):
        image_embeddings = self.encode_images(images, batch_size=batch_size, progress=progress)
        text_embeddings = self.encode_texts(texts, batch_size=max(batch_size, 256), progress=progress)
        return image_embeddings @ text_embeddings.T  # raw cosine, no logit scale

    def score_candidates(self, images, candidates, batch_size=32, progress=True):
        candidates = _check_candidates(images, candidates)
        distinct = list(dict.fromkeys(text for row in candidates for text in row))
        position = {text: index for index, text in enumerate(distinct)}
        image_embeddings = self.encode_images(images, batch_size=batch_size, progress=progress)
        text_embeddings = self.encode_texts(distinct, batch_size=max(batch_size, 256), progress=progress)
        width = len(candidates[0]) if candidates else 0
        indices = np.array([[position[text] for text in row] for row in candidates], dtype=np.int64)
        indices = indices.reshape(len(candidates), width)
        chosen = text_embeddings[indices]  # (n_images, k, dim)
        return np.einsum("nd,nkd->nk", image_embeddings, chosen).astype(np.float32)


class SigmoidScores:
    """SigLIP's own reading of a cosine: ``sigmoid(cosine * exp(logit_scale) + logit_bias)``, the probability that
    an image and a text match, each pair on its own (SigLIP is trained with a sigmoid loss, not CLIP's softmax
    over a batch).

    :meth:`DualEncoder.score` returns the cosine for SigLIP as for every dual encoder: the book's measures rank
    candidates by score, and the logit and the probability are increasing functions of the cosine, so every
    ranking, argmax and caption-versus-foil decision is the same. A page that reports SigLIP's probabilities
    turns cosines into them here, with the checkpoint's learned scale and bias.
    """

    logit_scale: float  # exp of the learned log scale
    logit_bias: float | None  # None: a model trained with CLIP's softmax, which has no sigmoid reading

    def logits(self, cosines) -> np.ndarray:
        """The model's match logits, ``cosine * exp(logit_scale) + logit_bias`` (``logits_per_image``)."""
        if self.logit_bias is None:
            raise TypeError(f"{self!r} was trained with CLIP's softmax over a batch, not SigLIP's sigmoid: its cosines "
                            "have no per-pair probability. Use the scores (cosines) themselves.")
        return (np.asarray(cosines, dtype=np.float64) * self.logit_scale + self.logit_bias).astype(np.float32)

    def probabilities(self, cosines) -> np.ndarray:
        """The probability that each image matches each text: the sigmoid of :meth:`logits`."""
        return (1.0 / (1.0 + np.exp(-self.logits(cosines).astype(np.float64)))).astype(np.float32)


class PairwiseMatcher(_ImageTextBase):
    """Reads an image and a text together; scores are image-text match logits, one per pair."""

    kind = "pairwise"

    def _match(self, images: list[Image.Image], texts: list[str]) -> torch.Tensor:
        """Match logits of one batch of (image, text) pairs, shape (batch,)."""
        raise NotImplementedError

    def encode_images(self, images, batch_size=32, progress=True):
        raise TypeError(f"{self!r} is a pairwise matcher: it has no separate image embeddings. "
                        "Use score() or score_candidates() instead.")

    def encode_texts(self, texts, batch_size=256, progress=True):
        raise TypeError(f"{self!r} is a pairwise matcher: it has no separate text embeddings. "
                        "Use score() or score_candidates() instead.")

    def _score_pairs(self, images: list[Image.Image], pairs: list[tuple[int, str]], batch_size: int,
                     progress: bool) -> np.ndarray:
        logits = []
        with torch.inference_mode():
            for batch in batches(pairs, batch_size, progress, "pairs"):
                batch_logits = self._match([images[i] for i, _ in batch], [text for _, text in batch])
                logits.append(batch_logits.float().reshape(-1).cpu().numpy())
        return np.concatenate(logits).astype(np.float32) if logits else np.zeros(0, np.float32)

    def score(self, images, texts, batch_size=32, progress=True):
        images, texts = _as_rgb(images), _as_texts(texts)
        pairs = [(i, text) for i in range(len(images)) for text in texts]
        return self._score_pairs(images, pairs, batch_size, progress).reshape(len(images), len(texts))

    def score_candidates(self, images, candidates, batch_size=32, progress=True):
        images = _as_rgb(images)
        candidates = _check_candidates(images, candidates)
        width = len(candidates[0]) if candidates else 0
        pairs = [(i, text) for i, row in enumerate(candidates) for text in row]
        return self._score_pairs(images, pairs, batch_size, progress).reshape(len(images), width)


# --------------------------------------------------------------------------- open_clip


def open_clip_architecture(model_name: str, pretrained: str | None) -> tuple[str, bool]:
    """(architecture to build, force QuickGELU) for an open_clip name and pretrained tag.

    A tag trained with QuickGELU (OpenAI's ``openai`` weights, the LAION-400M and MetaCLIP ViT
    tags, ...; open_clip's registry marks them ``quick_gelu``) gets the QuickGELU architecture
    whatever spelling the spec used: ``ViT-B-32/openai`` builds ``ViT-B-32-quickgelu``. open_clip
    itself builds plain GELU for ``ViT-B-32/openai`` and only warns. A ``-quickgelu`` name with a
    tag trained with GELU is a mismatch and raises.
    """
    import open_clip
    from open_clip.pretrained import get_pretrained_cfg

    if not pretrained or model_name.startswith(("hf-hub:", "local-dir:")):
        return model_name, False
    # open_clip registers QuickGELU tags under both names, GELU tags under the plain name only
    tag_config = (get_pretrained_cfg(model_name, pretrained)
                  or get_pretrained_cfg(model_name.removesuffix("-quickgelu"), pretrained))
    if not tag_config:  # a checkpoint file: open_clip cannot say how it was trained
        return model_name, False
    trained_quick = bool(tag_config.get("quick_gelu", False))
    named_quick = model_name.endswith("-quickgelu")
    if named_quick and not trained_quick:
        raise ValueError(f"{model_name}/{pretrained}: the {pretrained!r} weights were trained with GELU, "
                         f"but {model_name!r} builds QuickGELU. Use {model_name.removesuffix('-quickgelu')}/{pretrained}.")
    if trained_quick and not named_quick:
        if f"{model_name}-quickgelu" in open_clip.list_models():
            return f"{model_name}-quickgelu", False
        return model_name, True  # no -quickgelu config shipped: force the activation instead
    return model_name, False


class OpenClipModel(SigmoidScores, DualEncoder):
    """An open_clip model: a built-in architecture with a pretrained tag, or a saved directory.

    ``architecture`` is what was built (``ViT-B-32-quickgelu`` for ``ViT-B-32/openai``, see
    :func:`open_clip_architecture`); ``quick_gelu`` whether its activation is QuickGELU. open_clip's SigLIP
    tags (``ViT-B-16-SigLIP/webli``, ...) carry a learned ``logit_bias``: their cosines turn into SigLIP's
    probabilities with :meth:`probabilities`; open_clip's own tokenizer and transform for them already pad to
    the context length and resize without cropping (``resize_mode`` in ``preprocess_id``).
    """

    def __init__(self, spec: str, model_name: str, pretrained: str | None, device, dtype):
        import warnings

        import open_clip

        architecture, force_quick_gelu = open_clip_architecture(model_name, pretrained)
        precision = "fp16" if dtype == torch.float16 else "bf16" if dtype == torch.bfloat16 else "fp32"
        with warnings.catch_warnings():
            # open_clip only warns when the activation differs from the one the weights were
            # trained with; here that can only be a bug, so it stops the load
            warnings.filterwarnings("error", message=".*QuickGELU mismatch.*")
            model, _, preprocess = open_clip.create_model_and_transforms(
                architecture, pretrained=pretrained, device=device, precision=precision,
                force_quick_gelu=force_quick_gelu)
        self.model = model.eval()
        self.architecture = architecture + ("+force_quick_gelu" if force_quick_gelu else "")
        self.quick_gelu = _uses_quick_gelu(model)
        self.transform = preprocess
        self.tokenizer = open_clip.get_tokenizer(architecture)
        config = dict(open_clip.get_model_preprocess_cfg(model))
        self.embedding_dim = getattr(model.visual, "output_dim", None)
        self.logit_scale = model.logit_scale.detach().float().exp().item()
        bias = getattr(model, "logit_bias", None)
        self.logit_bias = None if bias is None else bias.detach().float().item()
        super().__init__(spec, device, dtype, "open_clip:" + _describe(
            {key: tuple(value) if isinstance(value, list) else value for key, value in config.items()}))

    @property
    def architecture_id(self) -> str:
        """The architecture built and its activation: GELU results are never reused for QuickGELU. A
        saved directory is named by its model class (its config is part of the weights' fingerprint),
        not by its path, so that a copy elsewhere shares cached results."""
        built = type(self.model).__name__ if self.architecture.startswith("local-dir:") else self.architecture
        return f"{built}|quick_gelu={self.quick_gelu}"

    def _embed_images(self, images):
        pixels = torch.stack([self.transform(image) for image in images]).to(self.device, self.torch_dtype)
        return self.model.encode_image(pixels)

    def _embed_texts(self, texts):
        tokens = self.tokenizer(texts).to(self.device)  # truncates to the context length
        return self.model.encode_text(tokens)

    def text_token_ids(self, texts):
        return [tuple(row) for row in self.tokenizer(_as_texts(texts)).tolist()]


def _uses_quick_gelu(model: torch.nn.Module) -> bool:
    """Whether any activation module of an open_clip model is QuickGELU."""
    return any(type(module).__name__ == "QuickGELU" for module in model.modules())


# --------------------------------------------------------------------------- Hugging Face


def _image_processor_id(image_processor) -> str:
    """Everything in an image processor's config that changes the pixels it produces."""
    config = image_processor.to_dict()
    keys = ("size", "crop_size", "do_resize", "do_center_crop", "do_rescale", "rescale_factor",
            "rescale_offset", "do_normalize", "image_mean", "image_std", "resample", "size_divisor", "do_pad",
            "do_convert_rgb")
    picked = {}
    for key in keys:
        value = config.get(key)
        if isinstance(value, dict):
            value = tuple(sorted(value.items()))
        elif isinstance(value, list):
            value = tuple(round(v, 6) if isinstance(v, float) else v for v in value)
        picked[key] = value
    for key in ("patch_size", "max_num_patches"):  # SigLIP 2 NaFlex: how many patches an image is resized to
        if config.get(key) is not None:
            picked[key] = config[key]
    return type(image_processor).__name__ + ":" + _describe(picked)


def _text_limit(tokenizer, max_positions: int | None, offset: int = 0) -> int | None:
    """The longest token sequence the text tower accepts: its position table, less any offset
    (RoBERTa-style towers number positions from padding_idx + 1), and the tokenizer's own cap."""
    limits = []
    if max_positions:
        limits.append(int(max_positions) - offset)
    model_max = getattr(tokenizer, "model_max_length", None)
    if model_max and model_max < 10**6:  # unset caps are a huge sentinel
        limits.append(int(model_max))
    return min(limits) if limits else None


def _truncated_ids(tokenizer, texts: list[str], max_length: int | None) -> list[tuple[int, ...]]:
    ids = tokenizer(texts, truncation=max_length is not None, max_length=max_length)["input_ids"]
    return [tuple(row) for row in ids]


class HFDualEncoder(DualEncoder):
    """CLIP, ALIGN, AltCLIP, CLIPSeg, GroupViT and Chinese-CLIP through ``get_image_features``/``get_text_features``."""

    def __init__(self, spec: str, source: str, model_class, device, dtype, position_offset: int = 0):
        from transformers import AutoImageProcessor, AutoTokenizer

        self.model = model_class.from_pretrained(source, dtype=dtype).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(source)
        self.image_processor = AutoImageProcessor.from_pretrained(source)
        text_config = self.model.config.text_config
        self.max_length = _text_limit(self.tokenizer, getattr(text_config, "max_position_embeddings", None),
                                      position_offset)
        self.embedding_dim = getattr(self.model.config, "projection_dim", None)
        super().__init__(spec, device, dtype, _image_processor_id(self.image_processor))

    def _embed_images(self, images):
        pixels = self.image_processor(images=images, return_tensors="pt")["pixel_values"]
        return _features(self.model.get_image_features(pixel_values=pixels.to(self.device, self.torch_dtype)))

    def _embed_texts(self, texts):
        tokens = self.tokenizer(texts, padding=True, truncation=self.max_length is not None,
                                max_length=self.max_length, return_tensors="pt").to(self.device)
        return _features(self.model.get_text_features(**tokens))

    def text_token_ids(self, texts):
        return _truncated_ids(self.tokenizer, _as_texts(texts), self.max_length)


class HFPairwiseMatcher(PairwiseMatcher):
    """ViLT, BridgeTower and BLIP (:class:`BlipMatcher`) retrieval models: a processor prepares each (image, text) pair."""

    def __init__(self, spec: str, source: str, model_class, device, dtype, max_positions: int | None,
                 position_offset: int, logit_column: int | None):
        from transformers import AutoProcessor

        self.model = model_class.from_pretrained(source, dtype=dtype).to(device).eval()
        self.processor = AutoProcessor.from_pretrained(source)
        self.max_length = _text_limit(self.processor.tokenizer, max_positions, position_offset)
        self.logit_column = logit_column
        super().__init__(spec, device, dtype, _image_processor_id(self.processor.image_processor))

    def text_token_ids(self, texts):
        return _truncated_ids(self.processor.tokenizer, _as_texts(texts), self.max_length)

    def _inputs(self, images, texts):
        """One padded batch of (image, text) pairs as the processor prepares them."""
        inputs = self.processor(images=images, text=texts, padding=True, truncation=self.max_length is not None,
                                max_length=self.max_length, return_tensors="pt").to(self.device)
        inputs["pixel_values"] = inputs["pixel_values"].to(self.torch_dtype)
        return inputs

    def _match(self, images, texts):
        inputs = self._inputs(images, texts)
        # ViLT draws image patches with torch.multinomial (a shuffle, or a subsample when the
        # config caps max_image_length): a fixed seed on a forked RNG makes scores repeatable
        # without touching the caller's random state
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            logits = self.model(**inputs).logits
        # ViLT's retrieval head has one output; BridgeTower's ITM head two (no match, match)
        return logits[:, self.logit_column] if self.logit_column is not None else logits[:, 0]


class _CLIPSegTowers:
    """CLIPSeg's CLIP towers. The hub checkpoint is ``CLIPSegForImageSegmentation``: its towers sit under
    ``clip.`` beside a segmentation decoder that ColorFoil does not use. Loaded as that class, its ``clip``
    part is the dual encoder with the same weights; loaded as ``CLIPSegModel`` instead, transformers drops
    the decoder's weights and prints a load report onto the page (seen in the full profile's rehearsal)."""

    @staticmethod
    def from_pretrained(source, **kwargs):
        import transformers

        config = transformers.AutoConfig.from_pretrained(source)
        if "CLIPSegForImageSegmentation" in (getattr(config, "architectures", None) or []):
            return transformers.CLIPSegForImageSegmentation.from_pretrained(source, **kwargs).clip
        return transformers.CLIPSegModel.from_pretrained(source, **kwargs)


class HFSiglipEncoder(SigmoidScores, HFDualEncoder):
    """SigLIP and SigLIP 2's fixed-resolution checkpoints (``SiglipModel``), run as they were trained and as
    transformers' zero-shot pipeline runs them.

    - Texts are padded to ``max_length`` (the text tower's position table, 64 tokens), never to the longest
      text of a batch: the text embedding is the state at the *last* position, which for a short text is a
      padding token's, so padded otherwise a text's embedding would change with its batch.
    - No attention mask unless the tokenizer returns one: the hub tokenizers return ``input_ids`` only
      (``model_input_names``), because big_vision trained the towers attending to their padding.
    - Images are resized to the square input without cropping (``SiglipImageProcessor`` has a height and
      width, no crop size), as ``preprocess_id`` records.

    - SigLIP 2's texts are lowercased before they are tokenized (``lowercase``): SigLIP 2 was trained on
      lowercased text (transformers' SigLIP 2 documentation says to preprocess labels the same way, and the
      conversion wrote ``do_lower_case`` into the tokenizer's config), but transformers 5 loads the
      fixed-resolution checkpoints' tokenizer as ``GemmaTokenizer``, which keeps the case. (It loads the NaFlex
      checkpoints' as ``Siglip2Tokenizer``, which lowercases; lowercasing again changes nothing.) SigLIP's own
      ``SiglipTokenizer`` lowercases by itself.

    Scores are cosines, as for every dual encoder; :class:`SigmoidScores` turns them into SigLIP's logits and
    match probabilities with the checkpoint's learned ``logit_scale`` and ``logit_bias``.
    """

    model_class_name = "SiglipModel"

    def __init__(self, spec: str, source: str, device, dtype):
        import transformers

        super().__init__(spec, source, getattr(transformers, self.model_class_name), device, dtype)
        self.logit_scale = self.model.logit_scale.detach().float().exp().item()
        self.logit_bias = self.model.logit_bias.detach().float().item()
        # both heads end at the vision width (the text head projects to it)
        self.embedding_dim = self.model.config.vision_config.hidden_size
        # SigLIP 2's Gemma vocabulary: trained on lowercased text (see the class docstring)
        self.lowercase = type(self.tokenizer).__name__.startswith(SIGLIP2_TOKENIZERS)

    @property
    def architecture_id(self) -> str:
        """The model class, and ``lowercase`` where texts are lowercased before tokenizing: embeddings of texts
        cached before SigLIP 2 was read lowercased are never reused."""
        return self.model_class_name + ("|lowercase" if self.lowercase else "")

    def _texts(self, texts: list[str]) -> list[str]:
        return [text.lower() for text in texts] if self.lowercase else texts

    def _embed_texts(self, texts):
        tokens = self.tokenizer(self._texts(texts), padding="max_length", truncation=True, max_length=self.max_length,
                                return_tensors="pt").to(self.device)
        return _features(self.model.get_text_features(**tokens))

    def text_token_ids(self, texts):
        return _truncated_ids(self.tokenizer, self._texts(_as_texts(texts)), self.max_length)


#: tokenizer classes of SigLIP 2's Gemma vocabulary, which was trained on lowercased text
SIGLIP2_TOKENIZERS = ("GemmaTokenizer", "Siglip2Tokenizer")


class HFSiglip2Encoder(HFSiglipEncoder):
    """SigLIP 2's NaFlex checkpoints (``Siglip2Model``, ``model_type`` ``siglip2``): each image keeps its aspect
    ratio, resized so that its 16 px patches number at most ``max_num_patches`` (the checkpoint's, 256 for the
    hub's; the spec option ``?max_num_patches=N`` sets another, as the model card's 256 to 1,024), and the
    vision tower reads the patches with a mask and their grid (``spatial_shapes``), its position embeddings
    resized to that grid. The texts are read as by :class:`HFSiglipEncoder` (lowercased, padded to 64 tokens).

    The images go through the checkpoint's image processor itself: ``Siglip2Processor``'s own defaults
    (``max_num_patches=256``, ``patch_size=16``) would override a checkpoint's other values. For the hub's
    checkpoints the two agree, which the conformance test shows.
    """

    model_class_name = "Siglip2Model"

    def __init__(self, spec: str, source: str, device, dtype, max_num_patches: str | int | None = None):
        if max_num_patches is not None:
            try:
                max_num_patches = int(max_num_patches)
            except ValueError:
                max_num_patches = 0
            if max_num_patches < 1:
                raise ValueError(f"{spec!r}: max_num_patches must be a positive whole number of patches "
                                 f"(the hub's SigLIP 2 NaFlex checkpoints use 256; the model card shows 256 to 1024).")
        super().__init__(spec, source, device, dtype)
        if max_num_patches is not None:  # before preprocess_id is read: the identity names the patches
            self.image_processor.max_num_patches = max_num_patches
            self.preprocess_id = _image_processor_id(self.image_processor)

    def _embed_images(self, images):
        inputs = self.image_processor(images=images, return_tensors="pt")
        return _features(self.model.get_image_features(
            pixel_values=inputs["pixel_values"].to(self.device, self.torch_dtype),
            pixel_attention_mask=inputs["pixel_attention_mask"].to(self.device),
            spatial_shapes=inputs["spatial_shapes"].to(self.device)))


class BlipContrastiveEncoder(HFDualEncoder):
    """BLIP's contrastive head (``BlipForImageTextRetrieval(..., use_itm_head=False)``) as a dual encoder: the
    image embedding is ``vision_proj`` of the vision tower's first token, the text embedding ``text_proj`` of the
    text encoder's first token read without the image (no cross-attention); their cosine is what BLIP's forward
    returns as its contrastive score."""

    def __init__(self, spec: str, source: str, device, dtype):
        from transformers import BlipForImageTextRetrieval

        super().__init__(spec, source, BlipForImageTextRetrieval, device, dtype)
        self.embedding_dim = self.model.config.image_text_hidden_size

    @property
    def architecture_id(self) -> str:
        """The head that scores: the same weights give the ITM head's scores too (:class:`BlipMatcher`)."""
        return "BlipForImageTextRetrieval|head=contrastive"

    def _embed_images(self, images):
        pixels = self.image_processor(images=images, return_tensors="pt")["pixel_values"]
        hidden = self.model.vision_model(pixel_values=pixels.to(self.device, self.torch_dtype)).last_hidden_state
        return self.model.vision_proj(hidden[:, 0, :])

    def _embed_texts(self, texts):
        tokens = self.tokenizer(texts, padding=True, truncation=self.max_length is not None, max_length=self.max_length,
                                return_tensors="pt").to(self.device)
        hidden = self.model.text_encoder(input_ids=tokens["input_ids"],
                                         attention_mask=tokens["attention_mask"]).last_hidden_state
        return self.model.text_proj(hidden[:, 0, :])


class BlipMatcher(HFPairwiseMatcher):
    """BLIP's image-text matching head (``BlipForImageTextRetrieval(..., use_itm_head=True)``): the text encoder
    reads each text with cross-attention to its image, and a two-way head says "no match" or "match". BLIP reports
    the softmax's match column; the score here is its log-odds, ``logit[match] - logit[no match]``, whose sigmoid is
    exactly that probability, so that rankings agree and the score is a logit like the other matchers'."""

    def __init__(self, spec: str, source: str, device, dtype, max_positions: int | None):
        from transformers import BlipForImageTextRetrieval

        super().__init__(spec, source, BlipForImageTextRetrieval, device, dtype, max_positions=max_positions,
                         position_offset=0, logit_column=1)

    @property
    def architecture_id(self) -> str:
        return "BlipForImageTextRetrieval|head=itm"

    def _match(self, images, texts):
        inputs = self._inputs(images, texts)
        scores = self.model(**inputs, use_itm_head=True).itm_score
        return scores[:, 1] - scores[:, 0]


#: BLIP's heads, the ``head`` option of :func:`load_image_text_model`; the first is the default
BLIP_HEADS = {"itm": "the image-text matching head, a pairwise matcher",
              "contrastive": "the contrastive head, a dual encoder"}


def _hf_dual(model_class_name: str, position_offset: int = 0):
    def build(spec, source, config, device, dtype):
        import transformers

        model_class = _CLIPSegTowers if model_class_name == "CLIPSegModel" else getattr(transformers, model_class_name)
        return HFDualEncoder(spec, source, model_class, device, dtype, position_offset=position_offset)

    return build


def _build_vilt(spec, source, config, device, dtype):
    from transformers import ViltForImageAndTextRetrieval

    return HFPairwiseMatcher(spec, source, ViltForImageAndTextRetrieval, device, dtype,
                             max_positions=config.get("max_position_embeddings"), position_offset=0,
                             logit_column=None)


def _build_bridgetower(spec, source, config, device, dtype):
    from transformers import BridgeTowerForImageAndTextRetrieval

    text_config = config.get("text_config") or {}
    return HFPairwiseMatcher(spec, source, BridgeTowerForImageAndTextRetrieval, device, dtype,
                             max_positions=text_config.get("max_position_embeddings", 514),
                             position_offset=2, logit_column=1)


def _build_siglip(spec, source, config, device, dtype):
    return HFSiglipEncoder(spec, source, device, dtype)


def _build_siglip2(spec, source, config, device, dtype, max_num_patches=None):
    return HFSiglip2Encoder(spec, source, device, dtype, max_num_patches=max_num_patches)


def _build_blip(spec, source, config, device, dtype, head=None):
    """A BLIP retrieval checkpoint by its head (:data:`BLIP_HEADS`). BLIP's captioning and question-answering
    checkpoints share its ``model_type`` but have neither head: loaded as a retrieval model, the heads would be
    random weights, so they are refused."""
    head = head or next(iter(BLIP_HEADS))
    if head not in BLIP_HEADS:
        raise ValueError(f"{spec!r}: head={head!r} is not one of BLIP's heads: "
                         + "; ".join(f"{name!r} ({what})" for name, what in BLIP_HEADS.items()) + ".")
    architectures = config.get("architectures") or []
    if architectures and "BlipForImageTextRetrieval" not in architectures:
        raise ValueError(f"{spec!r} is a BLIP {', '.join(architectures)} checkpoint, without the image-text matching "
                         "and contrastive heads; the image-text backend loads BLIP's retrieval checkpoints "
                         "(BlipForImageTextRetrieval, e.g. Salesforce/blip-itm-base-coco).")
    if head == "contrastive":
        return BlipContrastiveEncoder(spec, source, device, dtype)
    text_config = config.get("text_config") or {}
    return BlipMatcher(spec, source, device, dtype, max_positions=text_config.get("max_position_embeddings", 512))


#: config.json ``model_type`` -> builder(spec, source, config_dict, device, dtype); builders of
#: :data:`OPTION_BACKENDS` also take the loader's options as keywords
HF_BACKENDS: dict[str, Callable] = {
    "clip": _hf_dual("CLIPModel"),
    "align": _hf_dual("AlignModel"),
    "altclip": _hf_dual("AltCLIPModel", position_offset=2),  # XLM-R text tower
    "clipseg": _hf_dual("CLIPSegModel"),
    "groupvit": _hf_dual("GroupViTModel"),
    "vilt": _build_vilt,
    "bridgetower": _build_bridgetower,
    # SigLIP 2's fixed-resolution checkpoints are saved as ``siglip`` too (with a Gemma tokenizer)
    "siglip": _build_siglip,
    "siglip2": _build_siglip2,  # SigLIP 2's NaFlex checkpoints (Siglip2Model)
    "chinese_clip": _hf_dual("ChineseCLIPModel"),  # its BERT tokenizer, a Chinese vocabulary
    "blip": _build_blip,
}
#: option -> the ``model_type`` whose builder takes it
OPTION_BACKENDS = {"head": "blip", "max_num_patches": "siglip2"}


# --------------------------------------------------------------------------- loading


def _unavailable(spec: ModelSpec, error: BaseException) -> ModelUnavailableError:
    reason = first_line(error)
    return ModelUnavailableError(
        f"Cannot load image-text model {spec.raw!r}: no local copy was found ({reason}). "
        "Run once with network access so that it is downloaded into the Hugging Face cache, "
        "or pass the path of a local checkpoint directory as the spec.")


def _hub_config(spec: ModelSpec) -> dict:
    """config.json of a hub id, from the local Hugging Face cache or the network."""
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(spec.name)
    except Exception as error:  # offline, unknown repo, gated repo: all mean "not here"
        raise _unavailable(spec, error) from None
    return config


def _load_hf(spec: ModelSpec, source: str, config: dict, device, dtype, options: dict | None = None) -> ImageTextModel:
    model_type = config.get("model_type")
    if model_type not in HF_BACKENDS:
        raise ValueError(f"{spec.raw!r} is a {model_type!r} checkpoint; image-text backends exist for "
                         f"{', '.join(sorted(HF_BACKENDS))}.")
    options = {key: value for key, value in (options or {}).items() if value is not None}
    for key in options:
        if key not in OPTION_BACKENDS:
            raise ValueError(f"{spec.raw!r}: {key}= is no option of an image-text model; the options are "
                             + ", ".join(f"{name}= ({family})" for name, family in OPTION_BACKENDS.items()) + ".")
        if OPTION_BACKENDS[key] != model_type:
            raise ValueError(f"{spec.raw!r}: {key}= applies to {OPTION_BACKENDS[key]!r} checkpoints only, and this "
                             f"is a {model_type!r} checkpoint; leave {key} unset.")
    return HF_BACKENDS[model_type](spec.display, source, config, device, dtype, **options)


def _option_families(options: dict) -> str:
    return " and ".join(sorted({repr(OPTION_BACKENDS.get(key, "no")) for key in options}))


def _load_directory(spec: ModelSpec, directory: Path, device, dtype, options: dict) -> ImageTextModel:
    """A checkpoint saved by open_clip (``open_clip_config.json``) or by ``save_pretrained``."""
    if (directory / "open_clip_config.json").is_file():
        return OpenClipModel(spec.display, f"local-dir:{directory}", None, device, dtype)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{spec.raw!r}: {directory} holds neither open_clip_config.json "
                                "nor a Hugging Face config.json.")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    return _load_hf(spec, str(directory), config, device, dtype, options)


def _check_open_clip_name(spec: ModelSpec, model_name: str, pretrained: str | None) -> None:
    """Fail with the known names before open_clip fails with a bare RuntimeError."""
    import open_clip

    if model_name.startswith("hf-hub:"):
        return
    if model_name not in open_clip.list_models():
        raise ValueError(f"{spec.raw!r}: {model_name!r} is not an open_clip architecture "
                         "(see open_clip.list_models()).")
    tags = open_clip.list_pretrained_tags_by_model(model_name)
    if pretrained and pretrained not in tags and not Path(pretrained).is_file():
        raise ValueError(f"{spec.raw!r}: open_clip knows no pretrained tag {pretrained!r} for "
                         f"{model_name}. Known tags: {', '.join(tags)}.")


def load_image_text_model(spec: str | ModelSpec, device=None, half: bool | None = None,
                          head: str | None = None) -> ImageTextModel:
    """Load a dual encoder or a pairwise matcher by spec (see :mod:`vlbias.models.spec`).

    A spec's options (after ``?``, :data:`OPTION_BACKENDS`) choose what a family offers:
    ``Salesforce/blip-itm-base-coco?head=contrastive`` reads BLIP's contrastive head as a dual encoder
    (:data:`BLIP_HEADS`; ``itm``, image-text matching, is the default), and a SigLIP 2 NaFlex checkpoint's
    ``?max_num_patches=N`` sets how many patches an image is resized to. Any other family refuses them.
    ``head``: the same choice as a keyword (it must agree with the spec's ``head=`` where both are given).
    The options are part of the model's identity (its canonical spec, ``kind`` and ``architecture_id``), so
    two heads never share cached results.

    float32 unless ``half=True`` (``None`` is float32 too, as for every model kind), on every
    device: the released code of both CLIP papers ran fp32, and markedness and ColorFoil decisions
    turn on cosine/logit margins that fp16 rounds into ties. ``model.dtype`` names the precision;
    ``model.identity`` (:func:`vlbias.models.identity.identify`) says what was loaded and keys
    every cache.
    """
    parsed = parse_spec(spec)
    options = dict(parsed.options)
    if head is not None:
        if options.get("head", head) != head:
            raise ValueError(f"{parsed.raw!r} asks for head={options['head']!r} and the call for head={head!r}: "
                             "give the head once, in the spec or as the keyword.")
        options["head"] = head
        # the keyword's head is named in the identity as the spec's would be: one cache for either spelling
        parsed = dataclasses.replace(parsed, options=tuple(sorted(options.items())))
    device = resolve_device(device)
    dtype = resolve_dtype(device, bool(half))
    location = None
    if parsed.source in ("tiny", "trained", "local", "asset"):  # files here: built, trained, saved or packaged
        location = Path(locate(parsed))
        model = _load_directory(parsed, location, device, dtype, options)
    elif parsed.source == "open_clip" or parsed.name.startswith("hf-hub:"):
        if options:
            raise ValueError(f"{parsed.raw!r}: {', '.join(f'{key}=' for key in options)} applies to "
                             f"{_option_families(options)} checkpoints only, and this is an open_clip model; "
                             "leave it unset.")
        model = _load_open_clip(parsed, device, dtype)
    else:
        model = _load_hub(parsed, device, dtype, options)
    model.identity = identify(parsed, model, location)
    return model


def _load_open_clip(parsed: ModelSpec, device, dtype) -> ImageTextModel:
    model_name, pretrained = parsed.name, parsed.tag
    if model_name.startswith("hf-hub:") and pretrained:  # the repo id was split at its slash
        model_name, pretrained = f"{model_name}/{pretrained}", None
    _check_open_clip_name(parsed, model_name, pretrained)
    try:
        return OpenClipModel(parsed.display, model_name, pretrained, device, dtype)
    except (RuntimeError, OSError) as error:
        if is_unavailable(error):
            raise _unavailable(parsed, error) from None
        raise


def _load_hub(parsed: ModelSpec, device, dtype, options: dict) -> ImageTextModel:
    config = _hub_config(parsed)
    try:
        return _load_hf(parsed, parsed.name, config, device, dtype, options)
    except OSError as error:  # config cached but weights or tokenizer files missing
        raise _unavailable(parsed, error) from None
