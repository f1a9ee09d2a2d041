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


def write_sentencepiece_model(path: Path, extra_words: Iterable[str] = (), vocab_size: int = 400) -> Path:
    """Train a SentencePiece unigram model in T5's (and SigLIP's) special-token layout, ``<pad>`` 0, ``</s>`` 1,
    ``<unk>`` 2 and no ``<s>``, and write it to ``path`` (``spiece.model``); return ``path``.

    SigLIP's own vocabulary (32,000 pieces) is not available offline. This one is trained on the book's prompt
    words and ``extra_words`` with every letter, digit and punctuation mark as a piece, so any ASCII text
    tokenizes, in one thread (the same files on every build); its ids index any table of at least
    ``vocab_size`` rows.
    """
    import io

    import sentencepiece as spm

    words = list(DEMO_WORDS) + [w.lower() for w in extra_words]
    sentences = [" ".join(words[i:i + 8]) for i in range(0, len(words), 8)] + list(words)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences * 4), model_writer=model, vocab_size=vocab_size, model_type="unigram",
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
        user_defined_symbols=list(string.punctuation), required_chars=string.ascii_letters + string.digits,
        hard_vocab_limit=False, num_threads=1, minloglevel=2)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.getvalue())
    return path


def gemma_stand_in_vocabulary(extra_words: Iterable[str] = ()) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """``(vocab, merges)`` of a stand-in for Gemma's BPE (SigLIP 2's tokenizer), in Gemma's layout: ``<pad>`` 0,
    ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, ``<mask>`` 4, the 256 byte-fallback pieces ``<0x00>``..``<0xFF>`` (any
    text tokenizes), ``▁`` and every printable ASCII character, then merges that build each of the book's words
    and ``extra_words`` after a ``▁`` (a space), one character at a time. Gemma's own 256,000-piece vocabulary is
    not available offline; these ids index its embedding table."""
    vocab = {token: index for index, token in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"])}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for character in ["▁"] + [c for c in string.printable if c.strip()]:
        vocab.setdefault(character, len(vocab))
    merges = []
    for word in dict.fromkeys(list(DEMO_WORDS) + [w.lower() for w in extra_words]):
        symbol = "▁"
        for character in word:
            if symbol + character not in vocab:
                merges.append((symbol, character))
                vocab[symbol + character] = len(vocab)
            symbol += character
    return vocab, merges


#: BERT's Chinese layout (bert-base-chinese, chinese-roberta-wwm-ext): [PAD] 0, [unused1-99], [UNK] 100, [CLS] 101,
#: [SEP] 102, [MASK] 103
BERT_CHINESE_SPECIALS = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_cjk_wordpiece_vocab(directory: Path, size: int | None = None) -> int:
    """Write a stand-in ``vocab.txt`` for a Chinese BERT (Chinese-CLIP's text tower) and return its size:
    BERT's Chinese special tokens at their ids, printable ASCII characters and their ``##`` forms, the book's
    prompt words, then CJK Unified Ideographs from U+4E00 on (BERT's Chinese tokenizer splits every ideograph
    into a token of its own). ``size`` fills it to exactly that many tokens (the model's table: 21,128 for
    Chinese-CLIP), else the first 500 ideographs. Chinese-CLIP's own vocabulary is not available offline."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ascii_characters = [c for c in string.printable if c.strip()]
    tokens = BERT_CHINESE_SPECIALS + ascii_characters + ["##" + c for c in string.ascii_lowercase + string.digits]
    tokens = list(dict.fromkeys(tokens + list(DEMO_WORDS)))
    count = (size - len(tokens)) if size is not None else 500
    if count < 0 or count > 0x9FFF - 0x4E00 + 1:
        raise ValueError(f"size={size}: a CJK stand-in vocabulary holds {len(tokens)} to "
                         f"{len(tokens) + 0x9FFF - 0x4E00 + 1} tokens.")
    tokens += [chr(0x4E00 + i) for i in range(count)]
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return len(tokens)
