import numpy as np

from vlbias.t2i.annotation import zero_shot_labels
from vlbias.models.base import ImageTextModel


class FixedScores(ImageTextModel):
    spec, kind, preprocess_id = "fake:scores", "dual", "fake"

    def __init__(self, scores):
        self.scores = np.asarray(scores, float)

    def score(self, images, texts, batch_size=32, progress=True):
        assert len(texts) == self.scores.shape[1]
        return self.scores[: len(images)]

    encode_images = encode_texts = score_candidates = None


def test_zero_shot_labels_pick_the_best_prompt():
    model = FixedScores([[0.1, 0.3], [0.5, 0.2]])
    labels = zero_shot_labels(model, [None, None], {"female": "a woman", "male": "a man"})
    assert labels.tolist() == ["male", "female"]


# --------------------------------------------------------------------------- zero-shot with prompt lists

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from vlbias.t2i.annotation import (agreement, cohen_kappa, confusion, fleiss_kappa, majority_vote,  # noqa: E402
                               rating_counts, read_annotations, simulated_annotations, zero_shot_scores)


def test_prompt_lists_are_averaged_and_no_person_competes():
    # columns: woman-1, woman-2, man, nobody
    model = FixedScores([[0.9, 0.0, 0.5, 0.1],   # female mean 0.45 < male 0.5
                         [0.6, 0.6, 0.5, 0.1],   # female 0.6
                         [0.2, 0.2, 0.1, 0.7]])  # no person
    prompts = {"female": ["w1", "w2"], "male": "m", "no person": ["nobody"]}
    scores = zero_shot_scores(model, [None] * 3, prompts, progress=False)
    assert scores["female"].tolist() == pytest.approx([0.45, 0.6, 0.2])
    assert zero_shot_labels(model, [None] * 3, prompts, progress=False).tolist() == ["male", "female", "no person"]


def test_fleiss_kappa_matches_fleiss_worked_example():
    # the 10 subjects x 5 categories, 14 raters each, worked example on Wikipedia's "Fleiss' kappa"
    # page: P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
              [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(counts) == pytest.approx(0.20993, abs=5e-5)
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[3, 0], [1, 1]])


def test_cohen_kappa_hand_worked():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def annotation_table():
    rows = [("i1", "a", "female"), ("i1", "b", "female"), ("i1", "c", "male"),      # majority
            ("i2", "a", "male"), ("i2", "b", "female"), ("i2", "senior", "female"),  # tie -> arbiter
            ("i3", "a", "male"), ("i3", "b", "male"), ("i3", "c", "male"),           # unanimous
            ("i4", "a", "female"), ("i4", "b", "no person")]                         # tie, no arbiter label
    return pd.DataFrame(rows, columns=["file", "rater", "perceived"])


def test_majority_vote_with_arbitration(tmp_path):
    path = tmp_path / "labels.csv"
    annotation_table().to_csv(path, index=False)
    annotations = read_annotations(path, image="file", annotator="rater", label="perceived")
    votes = majority_vote(annotations, arbiter="senior")
    assert votes.loc["i1"].tolist() == ["female", 2, 3, "majority"]
    assert votes.loc["i2"].tolist() == ["female", 1, 2, "arbiter"]
    assert votes.loc["i3"].tolist() == ["male", 3, 3, "unanimous"]
    assert pd.isna(votes.loc["i4", "label"]) and votes.loc["i4", "resolved_by"] == "unresolved"
    counts = rating_counts(annotations, arbiter="senior", categories=["female", "male", "no person"])
    assert counts.loc["i2"].tolist() == [1, 1, 0]  # the arbiter does not vote


def test_read_annotations_refuses_missing_columns_and_double_labels():
    with pytest.raises(ValueError, match="lacks columns"):
        read_annotations(annotation_table())
    doubled = pd.DataFrame({"image": ["i1", "i1"], "annotator": ["a", "a"], "label": ["male", "female"]})
    with pytest.raises(ValueError, match="more than once"):
        read_annotations(doubled)


def test_agreement_of_automatic_and_human_labels():
    automatic = pd.Series(["female", "male", "male", "female"], index=["i1", "i2", "i3", "i9"])
    human = pd.Series(["female", "female", "male", float("nan")], index=["i1", "i2", "i3", "i4"])
    result = agreement(automatic, human)
    assert result["n"] == 3 and result["accuracy"] == pytest.approx(2 / 3)
    assert result["cohen_kappa"] == pytest.approx(cohen_kappa(["female", "male", "male"], ["female", "female", "male"]))
    assert confusion(automatic, human).loc["female", "male"] == 1


def test_simulated_annotations_follow_the_error_rate():
    truth = pd.Series(["female", "male"] * 500, index=[f"i{k}" for k in range(1000)])
    annotations = simulated_annotations(truth, error_rate=0.2, seed=1)
    first = annotations[annotations.annotator == "a1"].set_index("image")["label"]
    assert 0.75 < (first == truth).mean() < 0.85
    votes = majority_vote(read_annotations(annotations), arbiter="senior")
    assert (votes["label"].reindex(truth.index) == truth).mean() > 0.85  # three voters out-vote single errors
