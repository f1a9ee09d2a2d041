"""Word foils: replace whole words in a caption, keeping its casing and punctuation."""

from __future__ import annotations

import re
from typing import Iterable, Mapping

import numpy as np

#: spellings of one colour: a foil must change the colour, not its spelling
COLOUR_ALIASES = {"gray": "grey"}


def _pattern(vocabulary: Iterable[str]) -> re.Pattern:
    # Longest first, so that "light blue" wins over "blue"; \b keeps "colored" and "covered" safe.
    words = sorted({w.lower() for w in vocabulary}, key=len, reverse=True)
    if not words:
        raise ValueError("empty vocabulary")
    return re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)


def find_words(text: str, vocabulary: Iterable[str]) -> list[str]:
    """The vocabulary words found in ``text`` (lower-cased, in order of appearance)."""
    return [m.group(0).lower() for m in _pattern(vocabulary).finditer(text)]


def _match_case(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def replace_words(text: str, replacements: Mapping[str, str]) -> str:
    """Replace each whole-word occurrence of a key (case-insensitive) by its value, in the
    casing of the word it replaces."""
    lowered = {k.lower(): v for k, v in replacements.items()}
    return _pattern(lowered).sub(lambda m: _match_case(m.group(0), lowered[m.group(0).lower()]), text)


# --------------------------------------------------------------------------- k distinct foils


def _same_word(a: str, b: str, aliases: Mapping[str, str]) -> bool:
    canonical = {k.lower(): v.lower() for k, v in aliases.items()}
    return canonical.get(a.lower(), a.lower()) == canonical.get(b.lower(), b.lower())


def distinct_foils(text: str, alternatives: Mapping[str, list[str]], k: int, rng: np.random.Generator,
                   vocabulary: Iterable[str] | None = None) -> list[tuple[str, dict[str, str]]]:
    """Up to ``k`` foils of ``text``, distinct from each other and from ``text``.

    Every distinct vocabulary word found in ``text`` is replaced (all occurrences, keeping their
    casing) by one of its ``alternatives[word]``. The foils are ``k`` different combinations drawn
    without replacement, uniformly, from all combinations, so there are fewer than ``k`` only when
    fewer combinations exist (a man<->woman swap has one). Returns ``[(foil, mapping), ...]``;
    empty when ``text`` holds no vocabulary word.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    lowered = {word.lower(): list(choices) for word, choices in alternatives.items()}
    found = list(dict.fromkeys(find_words(text, vocabulary if vocabulary is not None else lowered)))
    found = [word for word in found if lowered.get(word)]
    if not found:
        return []
    radices = [len(lowered[word]) for word in found]
    total = int(np.prod(radices, dtype=object))
    # draw combination numbers without replacement and decode them in mixed radix: uniform, exact,
    # and never materialises the (possibly large) product
    picks = rng.choice(total, size=min(k, total), replace=False) if total < 2**62 else \
        _distinct_large(rng, total, k)
    foils, seen = [], {text.lower()}
    for number in picks:
        number, mapping = int(number), {}
        for word, radix in zip(found, radices):
            number, digit = divmod(number, radix)
            mapping[word] = lowered[word][digit]
        foil = replace_words(text, mapping)
        if foil.lower() not in seen:  # alternatives equal to the word itself would repeat the text
            seen.add(foil.lower())
            foils.append((foil, mapping))
    return foils


def _distinct_large(rng: np.random.Generator, total: int, k: int) -> list[int]:
    # uniform on [0, total) from total.bit_length() random bits, rejecting values past the end
    # (fewer than half); a 62-bit draw modulo total would never reach the high-order words' digits
    chosen: list[int] = []
    bits = total.bit_length()
    while len(chosen) < k:
        candidate = int.from_bytes(rng.bytes((bits + 7) // 8), "little") >> (-bits % 8)
        if candidate < total and candidate not in chosen:
            chosen.append(candidate)
    return chosen


def alternatives_from_targets(vocabulary: Iterable[str], targets: Iterable[str],
                              aliases: Mapping[str, str] = COLOUR_ALIASES) -> dict[str, list[str]]:
    """``{word: [every target naming something else]}``: ColorFoil's rule that a colour is never
    replaced by itself (nor by another spelling of itself, gray -> grey)."""
    targets = [t.lower() for t in targets]
    return {word.lower(): [t for t in targets if not _same_word(t, word, aliases)] for word in vocabulary}


def swap_alternatives(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``{a: [b], b: [a]}`` for symmetric swaps such as man <-> woman (several partners allowed)."""
    table: dict[str, list[str]] = {}
    for a, b in pairs:
        table.setdefault(a.lower(), []).append(b.lower())
        table.setdefault(b.lower(), []).append(a.lower())
    return {word: list(dict.fromkeys(choices)) for word, choices in table.items()}
