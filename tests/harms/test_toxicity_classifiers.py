"""Toxicity classifiers: the toxic label is chosen and checked; multi-label heads use a sigmoid."""

import numpy as np
import pytest
import torch

from vlbias.harms.measures import load_toxicity_classifier, toxic_label_index

TEXTS = ["the nurse is good", "a bad man", "they were here"]


def build_classifier(directory, labels, problem_type):
    """A random 2-layer BERT sequence classifier with the demo WordPiece vocabulary, saved to ``directory``."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    from vlbias.models.tiny.tokenizers import write_wordpiece_vocab

    vocab_size = write_wordpiece_vocab(directory)
    tokenizer = BertTokenizer(str(directory / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=len(labels),
                        id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)},
                        problem_type=problem_type)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    with torch.no_grad():
        logits = model(**tokenizer(TEXTS, padding=True, return_tensors="pt")).logits.double()
    return logits


def test_multi_label_classifier_is_scored_with_a_sigmoid(tmp_path):
    labels = ["severe_toxic", "obscene", "toxic", "insult"]  # toxic-bert's kind of head
    logits = build_classifier(tmp_path, labels, "multi_label_classification")
    score = load_toxicity_classifier(str(tmp_path), toxic_label="toxic")
    assert score.activation == "sigmoid" and score.toxic_label == "toxic"
    np.testing.assert_allclose(score(TEXTS), torch.sigmoid(logits[:, 2]).numpy(), rtol=1e-5)
    assert not np.allclose(score(TEXTS), torch.softmax(logits, -1)[:, 2].numpy(), rtol=1e-3)


def test_single_label_classifier_is_scored_with_a_softmax(tmp_path):
    logits = build_classifier(tmp_path, ["neutral", "toxic"], "single_label_classification")
    score = load_toxicity_classifier(str(tmp_path))
    assert score.activation == "softmax" and score.toxic_label == "toxic"
    np.testing.assert_allclose(score(TEXTS), torch.softmax(logits, -1)[:, 1].numpy(), rtol=1e-5)


def test_the_toxic_label_is_checked():
    assert toxic_label_index({0: "neutral", 1: "toxic"}, "s-nlp/roberta_toxicity_classifier") == 1
    assert toxic_label_index({0: "toxicity", 1: "severe_toxicity"}, "unitary/unbiased-toxic-roberta") == 0
    with pytest.raises(ValueError, match="has no label 'toxic'"):  # a known model whose head changed
        toxic_label_index({0: "LABEL_0", 1: "LABEL_1"}, "s-nlp/roberta_toxicity_classifier")
    # several labels name toxicity: no silent first pick, and no fallback to index 1
    with pytest.raises(ValueError, match="pass toxic_label"):
        toxic_label_index({0: "severe_toxic", 1: "toxic"}, "some/local-model")
    with pytest.raises(ValueError, match="pass toxic_label"):
        toxic_label_index({0: "LABEL_0", 1: "LABEL_1"}, "some/local-model")
    assert toxic_label_index({0: "non-toxic", 1: "toxic"}, "some/local-model") == 1


def test_the_profanity_classifier_scores_offensiveness_under_its_old_and_new_spec():
    from profanity_check import predict_prob  # the package's own scores

    texts = ["you are an idiot", "have a nice day", "damn it"]
    for spec in ("asset:profanity-check", "profanity-check"):  # the bare name of older profiles still works
        score = load_toxicity_classifier(spec)
        assert score.toxic_label == "offensive"
        np.testing.assert_array_equal(score(texts), predict_prob(texts))
