"""Model spec strings: one string names a model, whatever its backend.

Accepted forms::

    tiny:clip                     randomly initialised fixture, built once into the cache
    trained:world-clip?red_named=0.1   a model trained in the book, built once into the cache
    open_clip:ViT-B-32/openai     open_clip model name and pretrained tag (prefix optional
    ViT-B-32/openai               when the name is an open_clip architecture)
    hf:openai/clip-vit-base-patch32   Hugging Face hub id (prefix optional)
    /path/to/checkpoint           a local directory saved by save_pretrained or open_clip
    asset:smollm2-135m            a model a pip package carries (see :data:`vlbias.assets.NAMED_ASSETS`)

:func:`parse_spec` owns this grammar and :func:`locate` turns a parsed spec into the place a
``from_pretrained`` loader reads; the loaders switch on nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec string.

    ``source`` is one of ``"tiny"``, ``"trained"``, ``"open_clip"``, ``"hf"`` (hub id), ``"local"`` or ``"asset"``.
    ``name`` is the tiny name, the trained recipe with its options, the open_clip architecture, the hub id, the directory
    or the asset name.
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
    if raw.startswith("asset:"):
        from ..assets import NAMED_ASSETS

        name = raw[len("asset:"):]
        if name not in NAMED_ASSETS:
            raise ValueError(f"Unknown asset {name!r} in model spec {raw!r}; known: "
                             f"{', '.join('asset:' + known for known in sorted(NAMED_ASSETS))}.")
        return ModelSpec(raw, "asset", name)
    path = Path(raw).expanduser()
    if path.exists():
        return ModelSpec(raw, "local", str(path.resolve()))
    if raw.startswith(("/", "./", "../", "~")):
        raise FileNotFoundError(f"Model directory {raw!r} does not exist.")
    name, _, tag = raw.partition("/")
    if tag and name in _open_clip_architectures():
        return ModelSpec(raw, "open_clip", name, tag)
    return ModelSpec(raw, "hf", raw)


def locate(spec: str | ModelSpec) -> str:
    """Where a ``from_pretrained`` loader reads ``spec``: a hub id, a directory or a file.

    ``tiny:`` fixtures are built into the cache on first use and ``asset:`` models are found inside
    their pip package (converted once where needed); both come back as local paths. open_clip
    specs have no such place: :func:`vlbias.models.load_image_text_model` loads them.
    """
    parsed = parse_spec(spec)
    if parsed.source == "tiny":
        from .tiny import tiny_checkpoint

        return str(tiny_checkpoint(parsed.name))
    if parsed.source == "asset":
        from ..assets import locate_asset

        return str(locate_asset(parsed.name))
    if parsed.source == "open_clip":
        raise ValueError(f"{parsed.raw!r} is an open_clip spec: only load_image_text_model loads it. This loader "
                         "needs a Hugging Face checkpoint (hub id, local directory, tiny: or asset: spec).")
    return parsed.name  # a hub id or a resolved local path
