"""Zero-shot annotation of images through the image-text model layer."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from PIL import Image

from .models.base import ImageTextModel


def zero_shot_labels(model: ImageTextModel, images: Sequence[Image.Image], prompts: Mapping[str, str],
                     batch_size: int = 32, progress: bool = True) -> np.ndarray:
    """The label whose prompt scores highest for each image (works for dual and pairwise models).

    ``prompts`` maps each label to its prompt, e.g. ``{"female": "a photo of a woman", ...}``.
    """
    if not prompts:
        raise ValueError("prompts must name at least one label")
    labels = np.array(list(prompts))
    scores = model.score(images, list(prompts.values()), batch_size=batch_size, progress=progress)
    return labels[np.asarray(scores).argmax(axis=1)]
