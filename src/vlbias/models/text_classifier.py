"""Text classifiers: ``probabilities(texts)`` over a classifier's labels, the backend chosen by spec.

Specs (:func:`vlbias.models.spec.parse_spec`):

* a Hugging Face sequence-classification checkpoint: hub id (``s-nlp/roberta_toxicity_classifier``)
  or local directory. Multi-label heads (config ``problem_type`` = ``multi_label_classification``,
  e.g. ``unitary/toxic-bert``) give a sigmoid of each label's logit, as they were trained;
  single-label heads a softmax over the labels.
* ``asset:profanity-check``: the linear offensiveness classifier that the ``alt-profanity-check``
  wheel carries (a scikit-learn vectorizer and calibrated model, read from the wheel's files
  without importing the package; offline). Any directory holding such a pair
  (``vectorizer.joblib``, ``model.joblib``) loads the same way.

Which label counts as, say, toxic is the caller's choice (Part III:
:func:`vlbias.harms.measures.load_toxicity_classifier`); this layer only loads and scores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Sequence

import numpy as np

from .spec import locate, parse_spec, refuse_options

#: the files of a scikit-learn text classifier directory: the text vectorizer, then the model
SKLEARN_FILES = ("vectorizer.joblib", "model.joblib")
#: label names of packaged scikit-learn classifiers whose classes are bare numbers, by asset name
#: (alt-profanity-check: class 1 is offensive, as its ``predict`` documents)
ASSET_LABEL_NAMES = {"profanity-check": {0: "not offensive", 1: "offensive"}}


class TextClassifier(ABC):
    """A text classifier: ``labels`` (index -> name) and ``probabilities(texts)``, one column per label."""

    spec: str
    #: column index -> label name
    labels: dict[int, str]
    #: how a row of scores becomes probabilities: ``"softmax"``, ``"sigmoid"`` or ``"calibrated"``
    activation: str

    @abstractmethod
    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(n_texts, n_labels) probabilities, column j for ``labels[j]``."""


class HFTextClassifier(TextClassifier):
    """A transformers ``AutoModelForSequenceClassification`` with its tokenizer."""

    def __init__(self, spec: str, location: str, device="cpu", batch_size: int = 32):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.spec, self.device, self.batch_size = spec, device, batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(location)
        self.model = AutoModelForSequenceClassification.from_pretrained(location).to(device).eval()
        self.labels = {int(i): str(name) for i, name in self.model.config.id2label.items()}
        multi_label = self.model.config.problem_type == "multi_label_classification"
        self.activation = "sigmoid" if multi_label else "softmax"

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Float32 probabilities, computed in batches of ``batch_size`` (padded, truncated to the model's length)."""
        import torch

        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(list(texts[start:start + self.batch_size]), padding=True, truncation=True,
                                   return_tensors="pt").to(self.device)
            with torch.no_grad():
                logits = self.model(**batch).logits.float()
            probabilities = torch.sigmoid(logits) if self.activation == "sigmoid" else torch.softmax(logits, -1)
            out.append(probabilities.cpu().numpy())
        return np.concatenate(out)


class SklearnTextClassifier(TextClassifier):
    """A scikit-learn vectorizer and classifier saved with joblib (``alt-profanity-check``'s format)."""

    activation = "calibrated"

    def __init__(self, spec: str, directory: Path, label_names: dict[int, str] | None = None):
        import joblib

        self.spec = spec
        vectorizer, model = (directory / name for name in SKLEARN_FILES)
        self.vectorizer, self.model = joblib.load(vectorizer), joblib.load(model)
        names = label_names or {}
        classes = [getattr(value, "item", lambda: value)() for value in self.model.classes_]  # numpy -> Python
        self.labels = {i: names.get(value, str(value)) for i, value in enumerate(classes)}

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Float64 ``predict_proba`` of the vectorised texts (what ``profanity_check.predict_prob`` reads)."""
        return np.asarray(self.model.predict_proba(self.vectorizer.transform(list(texts))), dtype=float)


def load_text_classifier(spec: str, device="cpu", batch_size: int = 32) -> TextClassifier:
    """Load a text classifier by spec (see the module docstring); ``batch_size`` is the
    transformers backend's (the scikit-learn one scores all texts at once)."""
    parsed = parse_spec(spec)
    refuse_options(parsed, "text classifiers")
    location = locate(parsed)  # asset: and local specs give a directory; a hub id stays one
    directory = Path(location)
    if parsed.source in ("asset", "local") and all((directory / name).is_file() for name in SKLEARN_FILES):
        names = ASSET_LABEL_NAMES.get(parsed.name) if parsed.source == "asset" else None
        return SklearnTextClassifier(str(parsed), directory, names)
    return HFTextClassifier(str(parsed), location, device=device, batch_size=batch_size)
