"""What a loaded model is, for cache keys: :class:`ModelIdentity`, built once by the loader.

The weights are named by what they are, not by where they were found:

* **files here** (a local directory, a ``tiny:`` fixture, a ``trained:`` checkpoint, an ``asset:``
  model inside its pip package, a ``.gguf`` file): ``sha256:<hex>``, a fingerprint of the files
  whose bytes decide the outputs (weights, configs, tokenizer and preprocessor files, a diffusers
  pipeline's ``model_index.json`` and subfolders). Two checkpoints reached by one relative path
  from two folders differ; a checkpoint retrained in place gets a new identity; the same files at
  two paths share cached results.
* **a hub id** (and an open_clip tag whose weights live on the hub): ``revision:<commit>``, the
  snapshot ``refs/main`` points to in the local Hugging Face cache, which is what an offline load
  reads; ``revision-unknown`` when the cache does not know it (the hub id alone then names the
  weights, and says so).

Each file's sha256 is remembered by its resolved path, size, ``mtime_ns`` and inode, in this
process and in ``cache_dir()/fingerprints.json``, so a second load hashes nothing unless a file
changed. That file is a cache of hashes, never of results: deleting it costs one rehash.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .spec import ModelSpec, parse_spec

#: suffixes of the files whose bytes decide what a checkpoint computes: weights (safetensors, PyTorch,
#: GGUF), configs and preprocessor settings (``config.json``, ``open_clip_config.json``,
#: ``model_index.json``, ``preprocessor_config.json``, ``scheduler_config.json``), tokenizer files
#: (``tokenizer.json``, ``vocab.txt``, ``merges.txt``, SentencePiece ``.model``) and remote code
FINGERPRINTED_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".json", ".txt",
                                    ".model", ".tiktoken", ".py",
                                    # transformers 5 saves a chat template beside the tokenizer: it decides what
                                    # a chat model reads, so another template is another model
                                    ".jinja"})
#: records of how a checkpoint was made (losses, seconds): a deterministic retrain writes other
#: numbers there but the same weights, so they are left out
PROVENANCE_FILES = frozenset({"training.json"})
#: where file hashes are remembered between processes, under :func:`vlbias.paths.cache_dir`
FINGERPRINT_FILE = "fingerprints.json"
FINGERPRINT_FORMAT = 1
UNKNOWN_REVISION = "revision-unknown"

_known_hashes: dict[str, list] = {}  # resolved path -> [size, mtime_ns, inode, sha256], this process


@dataclass(frozen=True)
class ModelIdentity:
    """What decides a loaded model's outputs (the STYLE example 2 structure).

    ``spec``: the canonical spec (:attr:`ModelSpec.canonical`). ``weights``: ``sha256:<hex>``,
    ``revision:<commit>`` or ``revision-unknown`` (see the module docstring). ``architecture``: what
    was built (open_clip's architecture and activation, or the wrapped class). ``dtype``, ``kind``
    and ``preprocess`` (the image preprocessing) as the model reports them.
    """

    spec: str
    weights: str
    architecture: str | None = None
    dtype: str | None = None
    kind: str | None = None
    preprocess: str | None = None

    def key(self) -> dict[str, Any]:
        """The model's part of a cache key (:func:`vlbias.cache.cache_key`). A fingerprint names the
        weights alone, so the same files at two paths share entries; a revision or an unknown one is
        read with its hub id."""
        weights = self.weights if self.weights.startswith("sha256:") else f"{self.spec}@{self.weights}"
        return {"weights": weights, "architecture": self.architecture, "dtype": self.dtype, "kind": self.kind,
                "preprocess": self.preprocess}

    @property
    def label(self) -> str:
        """A short readable name of the identity (``weights_id``; folder names of generated runs):
        the canonical spec, the fingerprint's or revision's first hex digits, architecture, dtype."""
        scheme, _, value = self.weights.partition(":")
        short = f"{scheme}:{value[:16]}" if value else self.weights
        return "|".join(part for part in (f"{self.spec}@{short}", self.architecture, self.dtype) if part)


def identify(spec: str | ModelSpec, model, location: str | Path | None = None) -> ModelIdentity:
    """The identity of ``model``, just loaded from ``spec``; every loader calls this once.

    ``location``: the directory or file the loader read, for specs whose files are here (default:
    :func:`vlbias.models.spec.locate`). Architecture, dtype, kind and preprocessing are read from
    the model (``architecture_id``, ``dtype``, ``kind``, ``preprocess_id``).
    """
    parsed = parse_spec(spec)
    return ModelIdentity(spec=parsed.canonical, weights=weights_of(parsed, location),
                         architecture=getattr(model, "architecture_id", None), dtype=getattr(model, "dtype", None),
                         kind=getattr(model, "kind", None), preprocess=getattr(model, "preprocess_id", None))


def weights_of(spec: str | ModelSpec, location: str | Path | None = None) -> str:
    """``sha256:<hex>`` of the files of a spec that names files here, ``revision:<commit>`` of a hub
    snapshot the local cache knows, else ``revision-unknown``."""
    parsed = parse_spec(spec)
    if parsed.source in ("tiny", "trained", "local", "asset"):
        from .spec import locate

        return "sha256:" + fingerprint(Path(location if location is not None else locate(parsed)))
    if parsed.source == "open_clip" or parsed.name.startswith("hf-hub:"):
        return _open_clip_weights(parsed)
    from .spec import hub_location

    revision = hub_revision(hub_location(parsed.name))  # the snapshot a load reads (a moved id's new home)
    return f"revision:{revision}" if revision else UNKNOWN_REVISION


def _open_clip_weights(parsed: ModelSpec) -> str:
    """An open_clip tag's weights: a checkpoint file is fingerprinted; a tag (or ``hf-hub:`` id)
    stored on the hub is named by its snapshot revision; a tag downloaded from a URL has neither."""
    name, tag = parsed.name, parsed.tag
    if name.startswith("hf-hub:"):
        repo = f"{name}/{tag}" if tag else name
        repo_id = repo[len("hf-hub:"):]
    elif tag and Path(tag).expanduser().is_file():
        return "sha256:" + fingerprint(Path(tag).expanduser())
    else:
        repo_id = open_clip_hub_repo(name, tag)
    revision = hub_revision(repo_id) if repo_id else None
    return f"revision:{revision}" if revision else UNKNOWN_REVISION


def open_clip_hub_repo(name: str, tag: str | None) -> str | None:
    """The hub repository an open_clip ``name/tag`` downloads its weights from, or None (no tag, a tag
    open_clip does not know or fetches from a URL, or no open_clip installed)."""
    try:
        from open_clip.pretrained import get_pretrained_cfg
    except ImportError:
        return None
    config = {}
    if tag:  # QuickGELU tags are registered under both names, GELU tags under the plain one
        config = get_pretrained_cfg(name, tag) or get_pretrained_cfg(name.removesuffix("-quickgelu"), tag)
    # open_clip splits "org/repo/filename" with os.path.split; the repo is what precedes the file
    return os.path.split((config or {}).get("hf_hub", ""))[0] or None


# --------------------------------------------------------------------------- hub revisions


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, read at each call as huggingface_hub reads it at import:
    ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else huggingface_hub's default."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def hub_revision(repo_id: str, repo_type: str = "model") -> str | None:
    """The commit ``refs/main`` names for ``repo_id`` in the local hub cache (the snapshot a load
    without a revision reads), or None when the cache holds no such ref."""
    folder = hub_cache_dir() / f"{repo_type}s--{repo_id.strip('/').replace('/', '--')}"
    try:
        revision = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return revision or None


# --------------------------------------------------------------------------- content fingerprints


def fingerprinted_files(path: Path) -> list[Path]:
    """The files of a checkpoint that :func:`fingerprint` reads, sorted: ``path`` itself when it is
    a file; else every file below it with a :data:`FINGERPRINTED_SUFFIXES` suffix, except
    :data:`PROVENANCE_FILES` and hidden files and folders (staging folders, ``.cache/``). Linked
    folders are followed (a pipeline assembled from links), each real folder once."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"Cannot fingerprint {path}: it is neither a checkpoint directory nor a file.")
    found, seen = [], set()
    for folder, subfolders, files in os.walk(path, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a link back up the tree
            subfolders[:] = []
            continue
        seen.add(real)
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        found += [Path(folder) / name for name in files if not name.startswith(".")
                  and Path(name).suffix in FINGERPRINTED_SUFFIXES and name not in PROVENANCE_FILES]
    return sorted(found, key=lambda file: file.relative_to(path).as_posix())


def fingerprint(path: str | Path) -> str:
    """sha256 over the sorted (relative name, sha256 of the bytes) of :func:`fingerprinted_files`.

    Names are relative to ``path``, so a copy elsewhere has the same fingerprint. Each file is
    hashed only when its size, ``mtime_ns`` or inode differ from the remembered ones.
    """
    path = Path(path)
    files = fingerprinted_files(path)
    remembered = _remembered_hashes()
    changed = False
    digest = hashlib.sha256()
    for file in files:
        resolved = str(file.resolve())
        stat = os.stat(resolved)
        state = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
        known = remembered.get(resolved)
        if known is None or known[:3] != state:
            known = state + [_sha256_file(resolved)]
            remembered[resolved] = _known_hashes[resolved] = known
            changed = True
        name = file.name if path.is_file() else file.relative_to(path).as_posix()
        digest.update(f"{name}\0{known[3]}\n".encode("utf-8"))
    if changed:
        _remember(remembered)
    return digest.hexdigest()


def _sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _fingerprint_file() -> Path:
    from ..paths import cache_dir

    return cache_dir() / FINGERPRINT_FILE


def _remembered_hashes() -> dict[str, list]:
    """This process's hashes over those other processes wrote to :data:`FINGERPRINT_FILE`."""
    try:
        stored = json.loads(_fingerprint_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or damaged: the files are hashed again
        stored = {}
    files = stored.get("files", {}) if stored.get("format") == FINGERPRINT_FORMAT else {}
    return {**{k: v for k, v in files.items() if isinstance(v, list) and len(v) == 4}, **_known_hashes}


def _remember(hashes: dict[str, list]) -> None:
    """Write the hashes whole (renamed into place). Two processes writing at once may drop each
    other's new lines: those files are hashed once more, never misread."""
    from ..cache import write_atomically

    target = _fingerprint_file()
    present = {path: state for path, state in hashes.items() if os.path.exists(path)}  # drop deleted files
    payload = json.dumps({"format": FINGERPRINT_FORMAT, "files": present}, sort_keys=True).encode("utf-8")
    try:
        write_atomically(target, payload)
    except OSError:  # a read-only cache: the hashes stay in this process
        pass
