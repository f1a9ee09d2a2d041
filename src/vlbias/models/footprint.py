"""How much memory a checkpoint's weights take once loaded, read from its files without loading it.

``python -m vlbias precompute`` runs several Ray actors, each holding one model; on a CPU machine
their weights share its memory. Stable Diffusion 3 in float32 held 14.4 GB in one actor of the dress
rehearsal (issue 24), and two such actors on a 24 GB machine were killed by Ray's memory monitor.
:func:`weights_gb` tells precompute how many actors a model leaves room for.

The count is exact where the weights are safetensors files: their header lists every tensor's
dtype and shape, so the parameters are counted without reading the data, and each floating-point
tensor is counted at the precision the loader gives it (float32, or float16 with ``half``), as
diffusers and transformers cast it. Other weight files (``.bin``, ``.pt``, ``.ckpt``) count at their
size on disk. A model whose files are not on this machine (a hub id not yet downloaded, ``tiny:``,
``trained:`` and ``asset:`` models, which are small) has no figure: ``None``.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from pathlib import Path

#: bytes per element of each safetensors dtype
SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4,
                     "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8}
FLOATING = {"F64", "F32", "F16", "BF16"}
#: weight files counted at their size on disk (their dtype is not readable without unpickling them)
OTHER_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt")
#: ``NAME.VARIANT.safetensors`` (diffusers' ``fp16`` variants): left out where ``NAME.safetensors`` is
#: beside it, since the loaders read the plain file unless asked for a variant
_VARIANT = re.compile(r"^(?P<stem>.+)\.(?P<variant>[A-Za-z0-9_]+)\.safetensors$")


def safetensors_bytes(path: str | Path, half: bool) -> int:
    """The bytes the tensors of one safetensors file take when loaded in float32 (``half``: float16);
    integer and boolean tensors keep their own width."""
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    width = 2 if half else 4
    total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = entry["dtype"]
        if dtype not in SAFETENSORS_BYTES:
            raise ValueError(f"{path}: tensor {name!r} has dtype {dtype!r}, which this count does not know; "
                             f"known: {sorted(SAFETENSORS_BYTES)}")
        total += math.prod(entry["shape"]) * (width if dtype in FLOATING else SAFETENSORS_BYTES[dtype])
    return total


def weight_files(directory: str | Path) -> list[Path]:
    """The weight files a loader reads from a checkpoint directory (links followed, as in the hub
    cache): every safetensors file but a variant beside its plain file; where a folder has no
    safetensors file, its ``.bin``/``.pt``/``.ckpt`` files."""
    found = []
    for folder, subfolders, files in os.walk(directory, followlinks=True):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        names = [name for name in files if not name.startswith(".")]
        tensors = {name for name in names if name.endswith(".safetensors")}
        for name in sorted(tensors):
            variant = _VARIANT.match(name)
            if variant and f"{variant['stem']}.safetensors" in tensors:
                continue
            found.append(Path(folder) / name)
        if not tensors:
            found += [Path(folder) / name for name in sorted(names) if name.endswith(OTHER_WEIGHTS)]
    return found


def directory_weights_gb(directory: str | Path, half: bool) -> float | None:
    """GB the weights of a checkpoint directory take once loaded; None when it holds no weight file."""
    files = weight_files(directory)
    if not files:
        return None
    return sum(safetensors_bytes(file, half) if file.suffix == ".safetensors" else file.stat().st_size
               for file in files) / 1e9


def checkpoint_directory(spec: str) -> Path | None:
    """Where a spec's weights are on this machine: a local directory, or the hub cache's snapshot of a
    hub id or of an open_clip tag's repository; None when they are not here or the spec names no files."""
    from .identity import hub_cache_dir, hub_revision, open_clip_hub_repo
    from .spec import hub_location, parse_spec

    try:
        parsed = parse_spec(spec)
    except (ValueError, FileNotFoundError):
        return None
    if parsed.source == "local":
        return Path(parsed.name) if Path(parsed.name).is_dir() else None
    if parsed.source == "hf":
        repo_id = hub_location(parsed.name)
    elif parsed.source == "open_clip":
        repo_id = open_clip_hub_repo(parsed.name, parsed.tag)
    else:
        return None
    revision = hub_revision(repo_id) if repo_id else None
    if not revision:
        return None
    folder = hub_cache_dir() / f"models--{repo_id.replace('/', '--')}" / "snapshots" / revision
    return folder if folder.is_dir() else None


def weights_gb(spec: str, half: bool = False) -> float | None:
    """GB a model's weights take once loaded in float32 (``half``: float16), counted from its files on
    this machine (:func:`checkpoint_directory`); None where they are not here."""
    directory = checkpoint_directory(spec)
    return None if directory is None else directory_weights_gb(directory, half)
