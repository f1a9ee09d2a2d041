"""Vocabulary files for the tiny fixtures' tokenizers (and the book's trained models').

The fixtures need real tokenizer files so that ``AutoTokenizer.from_pretrained(directory)``
runs as it does for a hub checkpoint. Byte-level BPE vocabularies hold the 256 byte symbols
and no merges (every word becomes its characters: valid, if long); WordPiece vocabularies
hold the words the book's prompts use, so that pronouns and labels are single tokens.
"""

from __future__ import annotations

import json
import string
from functools import lru_cache
from pathlib import Path
from typing import Iterable

#: words the book's prompts use; whole-word tokens in WordPiece fixtures
DEMO_WORDS: tuple[str, ...] = tuple(
    """a an the of photo person people man woman men women boy girl male female he she they him her
    his hers them their is was are were who and or in on with to at by for from as that this it
    between years old more than age young adult child baby
    white black asian east south southeast indian middle eastern latino hispanic
    red blue green yellow orange pink purple brown grey gray
    nurse doctor teacher engineer pilot surgeon ceo programmer librarian receptionist
    worker social secretary lawyer chief cook driver cleaner
    good bad pleasant unpleasant""".split()
)


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable unicode symbols, the alphabet that every
    byte-level BPE here is written in (GPT-2, RoBERTa, CLIP; also :mod:`vlbias.models.conversion`)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in codes)))


def write_byte_level_bpe(directory: Path, style: str = "gpt2",
                         special_tokens: Iterable[str] = ()) -> int:
    """Write ``vocab.json`` and ``merges.txt``; return the vocabulary size.

    ``style="gpt2"`` (GPT-2, RoBERTa, BridgeTower's text side) or ``"clip"``, whose
    vocabulary also has every symbol with the end-of-word marker ``</w>``.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    symbols = list(bytes_to_unicode().values())
    if style == "clip":
        symbols = symbols + [s + "</w>" for s in symbols]
    elif style != "gpt2":
        raise ValueError(f"style must be 'gpt2' or 'clip', got {style!r}")
    tokens = list(dict.fromkeys(list(special_tokens) + symbols))
    vocab = {token: index for index, token in enumerate(tokens)}
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return len(vocab)


def write_wordpiece_vocab(directory: Path, extra_words: Iterable[str] = ()) -> int:
    """Write a BERT-style ``vocab.txt``; return the vocabulary size."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    tokens = specials + chars + ["##" + c for c in string.ascii_lowercase + string.digits] + list(DEMO_WORDS)
    tokens += [w.lower() for w in extra_words]
    tokens = list(dict.fromkeys(tokens))
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return len(tokens)
