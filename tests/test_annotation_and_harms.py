import numpy as np
import pytest

from vlbias.annotation import zero_shot_labels
from vlbias.harms import pronoun_shares
from vlbias.models.base import ImageTextModel, LanguageModel


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


class TableLM(LanguageModel):
    """Log-probabilities from a table keyed by (context, candidate)."""

    spec, kind = "fake:lm", "masked"

    def __init__(self, table):
        self.table = table

    def fill_logprobs(self, contexts, candidates, batch_size=16, progress=True):
        return np.log([[self.table[(c, w)] for w in candidates] for c in contexts])

    sequence_logprob = generate = None


def test_pronoun_shares_renormalise_then_average_templates():
    templates = ["The {occupation} said {slot} left.", "{slot} is a {occupation}."]
    table = {("The nurse said {slot} left.", "she"): 0.6, ("The nurse said {slot} left.", "he"): 0.2,
             ("{slot} is a nurse.", "she"): 0.1, ("{slot} is a nurse.", "he"): 0.3}
    shares = pronoun_shares(TableLM(table), ["nurse"], templates, ["she", "he"])
    # template 1: 0.75 / 0.25; template 2: 0.25 / 0.75 -> mean 0.5 / 0.5
    assert shares.loc[0, "P(she)"] == pytest.approx(0.5) and shares.loc[0, "P(he)"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="template needs"):
        pronoun_shares(TableLM(table), ["nurse"], ["no slot here {occupation}"], ["she"])
