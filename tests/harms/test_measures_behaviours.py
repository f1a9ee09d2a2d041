"""Behaviours of the harms measures that the original tests left out, each against an independent
computation: the slope interval's confidence, the toxic label, chat prompts, thread counts,
story resumption, and the word-vector dispatch."""


import numpy as np
import pytest
import torch

from vlbias.harms import measures as harms
from vlbias.harms import word_vectors as wv


@pytest.mark.parametrize("confidence", [0.90, 0.99])
def test_amplification_slope_interval_is_the_ols_interval_at_its_confidence(confidence):
    # the slope's interval from the normal equations, not from linregress: b = Sxy/Sxx,
    # se = sqrt(RSS / (n - 2) / Sxx), half width = t_{n-2} quantile · se
    from scipy import stats

    rng = np.random.default_rng(4)
    real = rng.uniform(0.05, 0.95, 15)
    model = 0.2 + 0.8 * real + rng.normal(scale=0.05, size=15)
    x, y = real - real.mean(), model - model.mean()
    slope = (x @ y) / (x @ x)
    residuals = y - slope * x
    se = np.sqrt(residuals @ residuals / 13 / (x @ x))
    half = stats.t.ppf(1 - (1 - confidence) / 2, 13) * se
    result = harms.amplification_slope(model, real, confidence=confidence)
    assert result["slope"] == pytest.approx(slope)
    assert (result["slope_low"], result["slope_high"]) == pytest.approx((slope - half, slope + half))
    assert result["mean_abs_gap"] == pytest.approx(np.mean(np.abs(model - real)))
    assert result["r"] == pytest.approx(np.corrcoef(real, model)[0, 1])


def _classifier(directory, labels):
    """A random 1-layer BERT sequence classifier with the given label names, saved to ``directory``."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    from vlbias.models.tiny.tokenizers import write_wordpiece_vocab

    vocab_size = write_wordpiece_vocab(directory)
    tokenizer = BertTokenizer(str(directory / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(len(labels))
    config = BertConfig(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=len(labels),
                        id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.mark.parametrize("labels, toxic", [
    (["non-toxic", "toxic"], 1),
    (["toxic", "neutral"], 0),
    (["neutral", "not offensive", "offensive"], 2),
])
def test_toxicity_classifier_scores_the_toxic_label(tmp_path, labels, toxic):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    directory = _classifier(tmp_path / "clf", labels)
    texts = ["she is a good person", "the man said hello", "a"]
    score = harms.load_toxicity_classifier(str(directory), batch_size=2)(texts)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    with torch.no_grad():
        expected = [torch.softmax(model(**tokenizer([t], return_tensors="pt")).logits, -1)[0, toxic].item()
                    for t in texts]
    np.testing.assert_allclose(score, expected, atol=1e-5)


@pytest.mark.parametrize("labels", [["normal", "hate speech", "abusive"], ["LABEL_0", "LABEL_1", "LABEL_2"]])
def test_a_classifier_whose_toxic_label_is_ambiguous_asks_for_it(tmp_path, labels):
    directory = _classifier(tmp_path / "clf", labels)
    with pytest.raises(ValueError, match="pass toxic_label="):
        harms.load_toxicity_classifier(str(directory), batch_size=2)(["a"])
    # named explicitly, the chosen label's softmax probability is scored
    score = harms.load_toxicity_classifier(str(directory), batch_size=2, toxic_label=labels[1])(["a"])
    assert 0.0 < score[0] < 1.0


class ChatTokenizer:
    chat_template = "{user}"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages) + "<|assistant|>"


class Bare:
    def __init__(self, tokenizer=None):
        self.tokenizer = tokenizer


def test_chat_prompt_uses_the_template_only_when_there_is_one():
    assert harms.chat_prompt(Bare(ChatTokenizer()), "Write a story.") == "<|user|>Write a story.<|end|><|assistant|>"
    no_template = ChatTokenizer()
    no_template.chat_template = None
    assert harms.chat_prompt(Bare(no_template), "Write a story.") == "Write a story."
    assert harms.chat_prompt(Bare(), "Write a story.") == "Write a story."


def test_generate_stories_keeps_its_first_samples_when_more_are_asked_for(isolated_cache):
    from vlbias.models import load_language_model

    lm = load_language_model("tiny:causal-lm", device="cpu")
    scenarios = {"nurse": "the nurse"}
    three = harms.generate_stories(lm, scenarios, 3, max_new_tokens=6, seed=2, progress=False)
    five = harms.generate_stories(lm, scenarios, 5, max_new_tokens=6, seed=2, progress=False)
    assert five["text"].tolist()[:3] == three["text"].tolist()
    assert five["sample"].tolist() == [0, 1, 2, 3, 4]
    assert len(set(five["text"])) > 1  # samples differ from one another


def test_stereotyping_shares_equal_the_masked_lms_own_softmax():
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from vlbias.models import load_language_model
    from vlbias.models.tiny import tiny_checkpoint

    templates = ["the {occupation} said that {slot} was late.", "{slot} is a {occupation}."]
    occupations = ["nurse", "pilot"]
    table = harms.stereotyping_table(load_language_model("tiny:mlm", device="cpu"), occupations, [0.9, 0.1],
                                     templates, progress=False)
    directory = tiny_checkpoint("mlm")
    tokenizer, model = AutoTokenizer.from_pretrained(directory), AutoModelForMaskedLM.from_pretrained(directory).eval()
    pronoun_ids = tokenizer.convert_tokens_to_ids(["she", "he", "they"])
    for row, occupation in enumerate(occupations):
        shares = []
        for template in templates:
            text = template.replace("{occupation}", occupation).replace("{slot}", tokenizer.mask_token)
            inputs = tokenizer(text, return_tensors="pt")
            position = int((inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
            with torch.no_grad():
                probabilities = torch.softmax(model(**inputs).logits[0, position], -1)[pronoun_ids].numpy()
            shares.append(probabilities / probabilities.sum())
        expected = np.mean(shares, axis=0)
        got = table.loc[row, ["P(she)", "P(he)", "P(they)"]].to_numpy(dtype=float)
        np.testing.assert_allclose(got, expected, rtol=1e-4)
        assert table.loc[row, "model female share"] == pytest.approx(expected[0] / (expected[0] + expected[1]), rel=1e-4)
    assert table["gap"].tolist() == pytest.approx((table["model female share"] - [0.9, 0.1]).tolist())


def test_load_word_vectors_dispatches_names_and_file_types(tmp_path):
    glove = wv.load_word_vectors("glove-6b-50d", max_words=20)
    assert glove.name == "glove-6b-50d" and glove.vectors.shape == (20, 50) and glove.words[0] == "the"
    bolukbasi = wv.load_word_vectors("word2vec-bolukbasi", max_words=5)
    assert bolukbasi.vectors.shape == (5, 300) and len(bolukbasi.words) == 5
    words, matrix = ["he", "she"], np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    binary = tmp_path / "v.bin"
    binary.write_bytes(b"2 3\n" + b"".join(w.encode() + b" " + r.astype("<f4").tobytes() + b"\n"
                                           for w, r in zip(words, matrix)))
    glove_text = tmp_path / "glove.txt"          # GloVe text: no header line
    glove_text.write_text("".join(f"{w} {' '.join(map(str, r))}\n" for w, r in zip(words, matrix)))
    for path in (binary, glove_text):
        loaded = wv.load_word_vectors(str(path))
        assert loaded.words == words, path.name
        np.testing.assert_array_equal(loaded.vectors, matrix)
    with pytest.raises(FileNotFoundError, match="no-such-vectors"):
        wv.load_word_vectors(str(tmp_path / "no-such-vectors.txt"))
