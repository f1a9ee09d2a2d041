"""Word foils: replace whole words in a caption, keeping its casing and punctuation."""

from __future__ import annotations

import re
from typing import Iterable, Mapping

import numpy as np


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


def random_foil(text: str, vocabulary: Iterable[str], targets: Iterable[str],
                rng: np.random.Generator) -> tuple[str, dict[str, str]] | None:
    """Replace every vocabulary word in ``text`` by a random target other than itself.

    Returns (foil, mapping) or None when the text holds no vocabulary word.
    """
    found = list(dict.fromkeys(find_words(text, vocabulary)))
    if not found:
        return None
    targets = list(targets)
    mapping = {}
    for word in found:
        choices = [t for t in targets if t.lower() != word]
        mapping[word] = choices[int(rng.integers(len(choices)))]
    return replace_words(text, mapping), mapping
