"""Generated texts (captions, descriptions, free answers) of a vision-language model, cached on disk.

:func:`vlbias.cache.compute_chunked` holds arrays; a generative model's answers are texts, so they are
cached here, per chunk of images, as JSON files under ``cache_dir()/generations/<key hash>/``, each
written whole or not at all (:func:`~vlbias.cache.write_atomically`). The key names the model
(:func:`~vlbias.cache.model_identity`: weights, dtype, preprocessing, chat template), the images, the
prompt, ``max_new_tokens`` and the chunk size: greedy decoding makes the text a function of those. A
killed run resumes at the first missing chunk; a damaged or foreign file is generated again, with a
:class:`~vlbias.cache.CacheWarning`; processes sharing a cache take a lock per chunk, so a chunk is
generated once. Used by Part I's free descriptions and Part IV's free-answer annotator.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Callable, Sequence

from PIL import Image
from tqdm import tqdm

from .cache import (CacheWarning, _locked, cache_key, entry_dir, explained_write_errors, key_hash,
                    remove_stale_temporaries, write_atomically)

#: bump when the layout or meaning of the cached generations changes
GENERATIONS_CACHE_VERSION = 1


def chunk_file(directory: Path, index: int) -> Path:
    return directory / f"chunk_{index:06d}.json"


def _read_chunk(path: Path, tag: str, start: int, stop: int) -> list[str] | None:
    """The texts in ``path`` if it holds exactly rows ``start..stop`` of entry ``tag``; None when it is
    missing, and None with a :class:`~vlbias.cache.CacheWarning` when it is damaged or another's."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        problem = f"unreadable ({type(error).__name__}: {error})"
    else:
        texts = stored.get("texts") if isinstance(stored, dict) else None
        if not isinstance(stored, dict) or stored.get("key") != tag:
            problem = "belongs to another entry"
        elif (stored.get("start"), stored.get("stop")) != (start, stop):
            problem = f"holds rows {stored.get('start')}..{stored.get('stop')}, not {start}..{stop}"
        elif not isinstance(texts, list) or len(texts) != stop - start or not all(isinstance(t, str) for t in texts):
            problem = f"does not hold {stop - start} texts"
        else:
            return texts
    warnings.warn(f"{path}: {problem}; generating rows {start}..{stop} again.", CacheWarning, stacklevel=4)
    return None


def generate_cached(model, n_items: int, load: Callable[[int, int], Sequence[Image.Image]], images_identity: str,
                    prompt: str | None, max_new_tokens: int, what: str = "vlm-generations", batch_size: int = 8,
                    chunk_size: int = 256, cache: bool = True, progress: bool = True,
                    desc: str | None = None) -> list[str]:
    """The model's greedy answers to ``prompt`` about images ``0..n_items``, chunk by chunk, cached.

    ``load(start, stop)`` gives the images of one chunk (opened only when that chunk must be generated);
    ``images_identity`` names them in the key, and ``what`` names the use (two uses of the same model,
    images and prompt share nothing else). ``cache=False`` generates everything and writes nothing.
    """
    if int(max_new_tokens) < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens!r}: an answer needs at least 1 new token.")
    if int(chunk_size) < 1:
        raise ValueError(f"chunk_size={chunk_size!r}: give at least 1 image per cached chunk.")
    max_new_tokens, chunk_size = int(max_new_tokens), int(chunk_size)
    key = cache_key(what, GENERATIONS_CACHE_VERSION, model, images=images_identity, n_items=int(n_items),
                    prompt=prompt, max_new_tokens=max_new_tokens, chunk_size=chunk_size)
    tag = key_hash(key)

    def generate(start: int, stop: int) -> list[str]:
        answers = model.generate(list(load(start, stop)), prompt=prompt, max_new_tokens=max_new_tokens,
                                 batch_size=batch_size, progress=False)
        if len(answers) != stop - start:
            raise RuntimeError(f"{model.spec!r}.generate gave {len(answers)} answers for {stop - start} images")
        return [str(answer) for answer in answers]

    directory = entry_dir(key, kind="generations")
    if cache:
        with explained_write_errors(directory):
            directory.mkdir(parents=True, exist_ok=True)
            if not (directory / "meta.json").exists():  # for a reader of the folder; never read back
                write_atomically(directory / "meta.json", json.dumps({"key_parts": key}, indent=1).encode())
    texts: list[str] = []
    starts = range(0, int(n_items), chunk_size)
    for index, start in enumerate(tqdm(starts, desc=desc or f"generations ({model.spec})", unit="chunk",
                                       disable=not progress, leave=False)):
        stop = min(int(n_items), start + chunk_size)
        if not cache:
            texts += generate(start, stop)
            continue
        path = chunk_file(directory, index)
        chunk = _read_chunk(path, tag, start, stop)
        if chunk is None:
            with _locked(path.with_suffix(".lock")):
                chunk = _read_chunk(path, tag, start, stop)  # another process may have written it meanwhile
                if chunk is None:
                    chunk = generate(start, stop)
                    payload = json.dumps({"key": tag, "start": start, "stop": stop, "texts": chunk},
                                         ensure_ascii=False).encode("utf-8")
                    with explained_write_errors(path):
                        remove_stale_temporaries(path)
                        write_atomically(path, payload)
        texts += chunk
    return texts
