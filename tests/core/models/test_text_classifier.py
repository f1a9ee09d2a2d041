"""``vlbias.models.load_text_classifier``: the packaged profanity classifier as an ``asset:`` spec, read
from the wheel's files, scores as the package itself does; a missing package says how to install it."""

from importlib import metadata

import numpy as np
import pytest

from vlbias import assets
from vlbias.errors import ModelUnavailableError
from vlbias.models import load_text_classifier, parse_spec

TEXTS = ["you are an idiot", "have a nice day", "damn it", "the nurse is good"]


def test_profanity_check_is_a_named_asset_of_the_spec_grammar():
    parsed = parse_spec("asset:profanity-check")
    assert (parsed.source, parsed.name) == ("asset", "profanity-check")
    directory = assets.locate_asset("profanity-check")
    assert (directory / "model.joblib").is_file() and (directory / "vectorizer.joblib").is_file()


def test_the_asset_scores_as_the_package_does():
    from profanity_check import predict_prob  # the package's own code path, independent of ours

    classifier = load_text_classifier("asset:profanity-check")
    assert classifier.labels == {0: "not offensive", 1: "offensive"}
    probabilities = classifier.probabilities(TEXTS)
    assert probabilities.shape == (len(TEXTS), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(probabilities[:, 1], predict_prob(TEXTS))


def test_a_missing_package_is_model_unavailable_with_the_pip_command(monkeypatch):
    real = metadata.distribution

    def distribution(name):
        if name == "alt-profanity-check":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(assets.metadata, "distribution", distribution)
    with pytest.raises(ModelUnavailableError, match=r"pip install alt-profanity-check==1\.9\.1"):
        assets.locate_asset("profanity-check")
    with pytest.raises(ModelUnavailableError, match=r"asset:profanity-check"):
        load_text_classifier("asset:profanity-check")
