import numpy as np
import pytest

from vlbias.harms import pronoun_shares
from vlbias.models.base import LanguageModel


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
