"""The model layer: one interface per kind of model, the backend chosen by a spec string.

>>> model = load_image_text_model("tiny:clip")        # doctest: +SKIP
>>> model.score(images, ["a photo of a person"])     # doctest: +SKIP

See :mod:`vlbias.models.spec` for the spec forms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ModelUnavailableError
from .base import ImageTextModel, LanguageModel, TextToImageModel, VisionLanguageModel
from .spec import ModelSpec, locate, parse_spec
from .tiny import TINY_BUILDERS, load_tiny_builders, register_tiny, tiny_builder, tiny_checkpoint

if TYPE_CHECKING:
    from .sentence_encoder import SentenceEncoder
    from .text_classifier import TextClassifier

__all__ = [
    "ImageTextModel", "LanguageModel", "TextToImageModel", "VisionLanguageModel", "ModelSpec", "parse_spec", "locate",
    "ModelUnavailableError",
    "TINY_BUILDERS", "register_tiny", "tiny_builder", "tiny_checkpoint", "load_tiny_builders",
    "load_image_text_model", "load_language_model", "load_text_to_image", "load_vision_language_model",
    "load_text_classifier",
    "load_sentence_encoder", "for_each_model",
]


def load_image_text_model(spec: str, device=None, half: bool | None = None, head: str | None = None) -> ImageTextModel:
    """Load a dual encoder or a pairwise matcher by spec; a spec's options (``?head=contrastive`` for BLIP,
    ``?max_num_patches=N`` for SigLIP 2 NaFlex) choose what its family offers, ``head`` as a keyword too."""
    from .image_text import load_image_text_model as load

    return load(spec, device=device, half=half, head=head)


def load_language_model(spec: str, device=None, half: bool | None = None, kind: str | None = None) -> LanguageModel:
    """Load a masked or causal language model by spec (``kind`` forces one when ambiguous)."""
    from .language import load_language_model as load

    return load(spec, device=device, half=half, kind=kind)


def load_text_to_image(spec: str, device=None, half: bool | None = None) -> TextToImageModel:
    """Load a diffusers text-to-image pipeline by spec."""
    from .text_to_image import load_text_to_image as load

    return load(spec, device=device, half=half)


def load_vision_language_model(spec: str, device=None, half: bool | None = None) -> VisionLanguageModel:
    """Load a generative vision-language model (LLaVA, Qwen2-VL, Idefics3/SmolVLM, PaliGemma, BLIP-2, ...) by
    spec; see :mod:`vlbias.models.vision_language`."""
    from .vision_language import load_vision_language_model as load

    return load(spec, device=device, half=half)


def load_text_classifier(spec: str, device="cpu", batch_size: int = 32) -> "TextClassifier":
    """Load a text classifier by spec (hub id, local directory, ``asset:profanity-check``); see
    :mod:`vlbias.models.text_classifier`."""
    from .text_classifier import load_text_classifier as load

    return load(spec, device=device, batch_size=batch_size)


def load_sentence_encoder(spec: str, device="cpu") -> "SentenceEncoder":
    """Load a mean-pooling sentence encoder by spec (``asset:minilm-l6``, hub id, local directory,
    ``tiny:mlm``); see :mod:`vlbias.models.sentence_encoder`."""
    from .sentence_encoder import load_sentence_encoder as load

    return load(spec, device=device)


def for_each_model(specs, work, load=None, **load_kwargs):
    """``work(spec, model)`` for every spec; one model that fails to load or run does not stop the rest.

    Returns ``(results, failures)``: ``results`` maps each spec that ran to what ``work`` returned;
    ``failures`` is a DataFrame with one row per spec that did not (``model``, ``stage``: load or
    run, ``error``: the exception's type and first line). ``load`` defaults to
    :func:`load_image_text_model`; ``load_kwargs`` go to it. Each model is released before the next
    loads (GPU memory). Models trained in the book (``trained:`` specs) not yet built train first, side
    by side on the cores this process is given (:func:`~vlbias.models.trained.build_trained`).
    """
    import pandas as pd

    load = load or load_image_text_model
    _train_side_by_side(specs)
    results, failures = {}, []
    for spec in specs:
        stage = "load"
        try:
            model = load(spec, **load_kwargs)
            stage = "run"
            results[spec] = work(spec, model)
        except Exception as error:  # noqa: BLE001 -- reported as a row, never swallowed silently
            first_line = (str(error).strip().splitlines() or [""])[0]
            failures.append({"model": spec, "stage": stage, "error": f"{type(error).__name__}: {first_line}"})
        finally:
            model = None
    return results, pd.DataFrame(failures, columns=["model", "stage", "error"])


def _train_side_by_side(specs) -> None:
    """Train the ``trained:`` models among ``specs`` side by side before :func:`for_each_model` loads them
    one by one. A spec that does not parse, or whose training fails, is left to its load in the loop,
    which trains it again and reports the error as that model's failure row: one bad model never stops
    the others."""
    from .spec import parse_spec
    from .trained import build_trained, trained_options

    trainable = []
    for spec in specs:
        try:
            parsed = parse_spec(spec)
            if parsed.source == "trained":
                trained_options(parsed.name)
                trainable.append(spec)
        except (KeyError, ValueError, FileNotFoundError):
            continue  # reported by its load
    if len(trainable) > 1:
        try:
            build_trained(trainable)
        except Exception:  # noqa: BLE001 -- each model's load below raises it again and reports it as a row
            pass

