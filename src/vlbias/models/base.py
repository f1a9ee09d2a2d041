"""The three model interfaces. Backends subclass these; notebooks only ever see these calls."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Sequence

import numpy as np
from PIL import Image

if TYPE_CHECKING:
    from .identity import ModelIdentity


def dtype_name(dtype) -> str:
    """``torch.float16`` -> ``"float16"``: how a model's precision is named in cache keys and tables."""
    return str(dtype).removeprefix("torch.")


def describe_model(model) -> dict:
    """The cache-key identity of a stand-in that no loader identified (a test double, a wrapper):
    the weights (``weights_id``, else the spec), dtype, kind and image preprocessing, each where the
    model has it. Loaded models are keyed by their :class:`~vlbias.models.identity.ModelIdentity`."""
    dtype = getattr(model, "dtype", None)
    weights = getattr(model, "weights_id", None) or str(getattr(model, "spec", type(model).__name__))
    return {"weights": weights, "dtype": None if dtype is None else str(dtype).removeprefix("torch."),
            "kind": getattr(model, "kind", None), "preprocess": getattr(model, "preprocess_id", None)}


class CacheIdentity:
    """``identity``, ``weights_id`` and ``cache_identity()``, shared by the three interfaces.

    The loaders set ``identity`` (:func:`vlbias.models.identity.identify`): the one place that says
    what the weights are. A model no loader built (a wrapper, a test double) has none and is keyed
    by its spec, dtype, kind and preprocessing (:func:`describe_model`).
    """

    #: what decides this model's outputs; set once by the loader
    identity: "ModelIdentity | None" = None

    @property
    def architecture_id(self) -> str | None:
        """What was built, for the identity: the class of the wrapped network or pipeline."""
        inner = getattr(self, "model", None) or getattr(self, "pipeline", None)
        return None if inner is None else type(inner).__name__

    @property
    def weights_id(self) -> str:
        """A short readable name of the identity (:attr:`ModelIdentity.label`): canonical spec, the
        fingerprint's or revision's first digits, architecture and dtype; without an identity, the
        spec and dtype."""
        if self.identity is not None:
            return self.identity.label
        dtype = getattr(self, "dtype", None)
        return str(self.spec) if dtype is None else f"{self.spec}|{dtype}"

    def cache_identity(self) -> dict:
        """This model's part of every cache key its results go under (:meth:`ModelIdentity.key`)."""
        if self.identity is not None:
            return self.identity.key()
        return describe_model(self)


class ImageTextModel(CacheIdentity, ABC):
    """Anything that scores how well a text describes an image.

    ``kind`` is ``"dual"`` for dual encoders (CLIP and relatives), whose scores are cosine
    similarities of L2-normalised embeddings, and ``"pairwise"`` for matchers (ViLT,
    BridgeTower), whose scores are image-text match logits computed per pair.
    """

    spec: str
    kind: str
    #: identifies the image preprocessing (resolution, normalisation); part of cache keys
    preprocess_id: str

    #: the torch dtype the model computes in (set by each backend)
    torch_dtype = None

    @property
    def dtype(self) -> str:
        """The precision the model computes in, as a string (``"float32"``, ``"float16"``): fp16 and
        fp32 scores differ in the digits that decide close caption/foil margins."""
        return None if self.torch_dtype is None else dtype_name(self.torch_dtype)

    @dtype.setter
    def dtype(self, value) -> None:
        self.torch_dtype = value

    @property
    def has_embeddings(self) -> bool:
        return self.kind == "dual"

    def text_token_ids(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """The token ids the text side reads for each text, after the model's own truncation: two
        texts with equal ids are the same input to the model."""
        raise NotImplementedError(f"{type(self).__name__} does not expose its tokenisation")

    @abstractmethod
    def encode_images(self, images: Sequence[Image.Image], batch_size: int = 32,
                      progress: bool = True) -> np.ndarray:
        """(n_images, dim) float32, rows L2-normalised. Pairwise matchers raise TypeError."""

    @abstractmethod
    def encode_texts(self, texts: Sequence[str], batch_size: int = 256,
                     progress: bool = True) -> np.ndarray:
        """(n_texts, dim) float32, rows L2-normalised. Pairwise matchers raise TypeError."""

    @abstractmethod
    def score(self, images: Sequence[Image.Image], texts: Sequence[str], batch_size: int = 32,
              progress: bool = True) -> np.ndarray:
        """(n_images, n_texts) float32: every image against every text."""

    @abstractmethod
    def score_candidates(self, images: Sequence[Image.Image], candidates: Sequence[Sequence[str]],
                         batch_size: int = 32, progress: bool = True) -> np.ndarray:
        """(n_images, k) float32: image i against its own k candidate texts ``candidates[i]``.

        Dual encoders embed each image once and each distinct text once.
        """


class LanguageModel(CacheIdentity, ABC):
    """Masked (``kind == "masked"``) or causal (``kind == "causal"``) language model."""

    spec: str
    kind: str
    #: placeholder marking the slot to fill in :meth:`fill_logprobs` contexts
    SLOT = "{slot}"

    @property
    def dtype(self) -> str:
        """The precision of the model's weights, as a string (``"float32"``)."""
        return dtype_name(self.model.dtype)

    @abstractmethod
    def fill_logprobs(self, contexts: Sequence[str], candidates: Sequence[str],
                      batch_size: int = 16, progress: bool = True) -> np.ndarray:
        """(n_contexts, n_candidates) natural-log probabilities of each candidate in the slot.

        Each context holds one ``{slot}``. Masked LMs read the whole context with a mask in the
        slot; causal LMs score the candidate's tokens after the text before the slot.
        """

    @abstractmethod
    def sequence_logprob(self, texts: Sequence[str], batch_size: int = 16,
                         progress: bool = True) -> np.ndarray:
        """(n_texts,) total log-probability of each text (pseudo-log-likelihood for masked LMs)."""

    @abstractmethod
    def generate(self, prompts: Sequence[str], max_new_tokens: int = 40, temperature: float = 1.0,
                 top_p: float = 1.0, num_return_sequences: int = 1, seed: int = 0,
                 batch_size: int = 8, progress: bool = True) -> list[list[str]]:
        """Sampled continuations (without the prompt), ``num_return_sequences`` per prompt.

        Seeded per prompt, so a prompt's samples do not depend on the batch it ran in.
        Masked LMs raise TypeError.
        """

    def sentence_embeddings(self, texts: Sequence[str], batch_size: int = 16, progress: bool = True) -> np.ndarray:
        """(n_texts, dim) float32 sentence representations, for SEAT-style tests: a backend with
        hidden states gives them (:meth:`HFLanguageModel.sentence_embeddings`); one without raises
        NotImplementedError, which the audit reports as a measure that does not apply."""
        raise NotImplementedError(f"{type(self).__name__} gives no sentence embeddings (no hidden states)")


class VisionLanguageModel(CacheIdentity, ABC):
    """A generative vision-language model: it reads an image and a prompt and writes text (LLaVA,
    Qwen2-VL, Idefics3/SmolVLM, PaliGemma, BLIP-2, ...).

    **What is scored.** :meth:`log_likelihood` is ``log P(text | image, prompt)`` under the model: the
    image and the prompt are laid out as the family lays out a question (its chat template's user turn
    and generation prompt; PaliGemma's prefix; BLIP-2's prompt), the text follows as the answer, and the
    log-probabilities of the *text's tokens only* are summed. The template's tokens, the prompt's and the
    image's are the condition, not the outcome: scoring them would add the same constant to every
    text of one image and prompt where it did not change the ranking, and, where texts are compared
    across images, it would mix how likely the question is into how likely the answer is. Nor is the
    end-of-turn token after the text scored: the score is that of the text as the answer's beginning,
    so a text and its continuation compare as prefixes do (an answer that goes on scores no lower).
    ``answer_token_counts`` gives the number of tokens summed, for per-token means.
    """

    spec: str
    #: ``"generative"``: one kind of model behind this interface (the family is ``family``)
    kind: str = "generative"
    #: the ``config.json`` ``model_type`` of the loaded checkpoint (``"llava"``, ``"qwen2_vl"``, ...)
    family: str
    #: identifies the image preprocessing and the prompt format (chat template); part of cache keys
    preprocess_id: str

    @property
    def dtype(self) -> str:
        """The precision of the model's weights, as a string (``"float32"``)."""
        return dtype_name(self.model.dtype)

    @abstractmethod
    def log_likelihood(self, images: Sequence[Image.Image], texts: Sequence[str], prompt: str | None = None,
                       batch_size: int = 8, progress: bool = True) -> np.ndarray:
        """(n,) float64: ``log P(texts[i] | images[i], prompt)``, summed over the text's tokens (see the
        class docstring). One image per text; repeat an image to score several texts against it."""

    @abstractmethod
    def answer_token_counts(self, texts: Sequence[str], prompt: str | None = None) -> np.ndarray:
        """(n,) int: how many tokens :meth:`log_likelihood` sums for each text after ``prompt``."""

    @abstractmethod
    def generate(self, images: Sequence[Image.Image], prompt: str | None = None, max_new_tokens: int = 40,
                 batch_size: int = 8, progress: bool = True) -> list[str]:
        """One answer per image to ``prompt`` (a caption where the prompt asks for one), by greedy
        decoding: deterministic, and the same alone or in a batch up to float rounding."""


#: how a text's log-likelihood under a vision-language model is read: summed over its tokens (the text's
#: probability; longer texts pay for every token) or their mean (per token; favours long predictable texts)
SCORE_MODES = ("sum", "mean")


def check_score_mode(score: str) -> str:
    """``score``, or one clear error: the measures of every part read log-likelihoods in these modes."""
    if score not in SCORE_MODES:
        raise ValueError(f"score={score!r} is not a score mode: use 'sum' (log P of the whole text) or 'mean' "
                         f"(per answer token), one of {list(SCORE_MODES)}.")
    return score


def answer_lengths(model: VisionLanguageModel, texts: Sequence[str], prompt: str | None = None) -> np.ndarray:
    """(n,) float: each text's answer tokens after ``prompt`` (:meth:`VisionLanguageModel.answer_token_counts`),
    what ``score="mean"`` divides a summed log-likelihood by; a text with none has no mean, and is refused."""
    texts = list(texts)
    counts = np.asarray(model.answer_token_counts(texts, prompt), dtype=np.float64)
    if counts.shape != (len(texts),):
        raise RuntimeError(f"{model.spec!r}.answer_token_counts returned shape {counts.shape} for {len(texts)} texts")
    if (counts < 1).any():
        empty = [text for text, count in zip(texts, counts) if count < 1]
        raise ValueError(f"{empty} have no answer tokens of their own under {model.spec!r}, so they have no mean; "
                         "give texts the model reads as words, or use score='sum'.")
    return counts


class TextToImageModel(CacheIdentity, ABC):
    """A text-to-image pipeline with one recorded seed per image."""

    spec: str

    @property
    def dtype(self) -> str:
        """The precision of the pipeline's weights, as a string (``"float16"``)."""
        return dtype_name(self.pipeline.dtype)

    @abstractmethod
    def generate(self, prompts: Sequence[str], seeds: Sequence[int], num_inference_steps: int = 50,
                 guidance_scale: float = 7.5, height: int | None = None, width: int | None = None,
                 batch_size: int = 4, progress: bool = True, **pipeline_kwargs) -> list[Image.Image]:
        """One image per (prompt, seed); image i depends only on prompts[i] and seeds[i] (up to one
        8-bit level: float kernels may sum in a batch-dependent order)."""
