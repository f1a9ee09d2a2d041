import numpy as np

from vlbias.annotation import zero_shot_labels
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
