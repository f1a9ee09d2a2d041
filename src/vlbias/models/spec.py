"""Model spec strings: one string names a model, whatever its backend.

Accepted forms::

    tiny:clip                     randomly initialised fixture, built once into the cache
    trained:world-clip?red_named=0.1   a model trained in the book, built once into the cache
    open_clip:ViT-B-32/openai     open_clip model name and pretrained tag (prefix optional
    ViT-B-32/openai               when the name is an open_clip architecture)
    hf:openai/clip-vit-base-patch32   Hugging Face hub id (prefix optional)
    /path/to/checkpoint           a local directory saved by save_pretrained or open_clip
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec string.

    ``source`` is one of ``"tiny"``, ``"trained"``, ``"open_clip"``, ``"hf"`` (hub id) or ``"local"``.
    ``name`` is the tiny name, the trained recipe with its options, the open_clip architecture, the hub id or the directory.
    ``tag`` is the open_clip pretrained tag (``None`` elsewhere).
    """

    raw: str
    source: str
    name: str
    tag: str | None = None

    def __str__(self) -> str:  # the canonical form, used in cache keys and tables
        return self.raw


def _open_clip_architectures() -> set[str]:
    try:
        import open_clip
    except ImportError:  # open_clip is optional for language-only use
        return set()
    return set(open_clip.list_models())


def parse_spec(spec: str | ModelSpec) -> ModelSpec:
    """Parse a spec string; see the module docstring for the forms."""
    if isinstance(spec, ModelSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"A model spec must be a non-empty string, got {spec!r}.")
    raw = spec.strip()
    if raw.startswith("tiny:"):
        return ModelSpec(raw, "tiny", raw[len("tiny:"):])
    if raw.startswith("trained:"):
        return ModelSpec(raw, "trained", raw[len("trained:"):])
    if raw.startswith("open_clip:"):
        body = raw[len("open_clip:"):]
        name, _, tag = body.partition("/")
        return ModelSpec(raw, "open_clip", name, tag or None)
    if raw.startswith("hf:"):
        return ModelSpec(raw, "hf", raw[len("hf:"):])
    path = Path(raw).expanduser()
    if path.exists():
        return ModelSpec(raw, "local", str(path.resolve()))
    if raw.startswith(("/", "./", "../", "~")):
        raise FileNotFoundError(f"Model directory {raw!r} does not exist.")
    name, _, tag = raw.partition("/")
    if tag and name in _open_clip_architectures():
        return ModelSpec(raw, "open_clip", name, tag)
    return ModelSpec(raw, "hf", raw)
