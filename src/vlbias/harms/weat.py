"""Part III's WEAT (notebooks ``03b_weat``, ``03e_summary``): Caliskan et al.'s ten tests on static
word vectors (:mod:`vlbias.harms.word_vectors`) and, SEAT-style, on sentence encoders
(:func:`vlbias.models.load_sentence_encoder`).

The test itself, its word lists and the battery runner are shared with Part I, so they live in
the core (:mod:`vlbias.weat`); this module names what the chapter's notebooks call.
"""

from __future__ import annotations

from ..weat import abbreviated_missing, caliskan_tests, run_weat_battery, sentence_embedder

__all__ = ["abbreviated_missing", "caliskan_tests", "run_weat_battery", "sentence_embedder"]
