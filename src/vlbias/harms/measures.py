"""Representation-harm measurements on language models."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from ..models.base import LanguageModel
from ..stats import finite_vector

#: part of the cache keys of the scores and stories below; bump when what they compute changes
CACHE_VERSION = 1


def pronoun_shares(model: LanguageModel, occupations: Sequence[str], templates: Sequence[str],
                   pronouns: Sequence[str] = ("she", "he", "they"), batch_size: int = 16,
                   progress: bool = True, cache: bool = False) -> pd.DataFrame:
    """P(pronoun | template with occupation), renormalised over ``pronouns`` and averaged over templates.

    Each template holds ``{occupation}`` and the slot ``{slot}`` where the pronoun goes. Returns one
    row per occupation with a ``P(<pronoun>)`` column per pronoun. ``cache=True`` keeps the
    log-probabilities in chunks under ``$VLBIAS_CACHE_DIR`` (keyed by the model's weights, dtype and
    the texts).
    """
    for template in templates:
        if "{occupation}" not in template or model.SLOT not in template:
            raise ValueError(f"template needs {{occupation}} and {model.SLOT}: {template!r}")
    contexts = [t.replace("{occupation}", o) for o in occupations for t in templates]
    logprobs = cached_scores(model, "fill_logprobs", contexts, list(pronouns), batch_size, progress, cache)
    shares = np.exp(logprobs - np.logaddexp.reduce(logprobs, axis=1, keepdims=True))
    shares = shares.reshape(len(occupations), len(templates), len(pronouns)).mean(axis=1)
    return pd.DataFrame({"occupation": list(occupations),
                         **{f"P({p})": shares[:, i] for i, p in enumerate(pronouns)}})


def cached_scores(model: LanguageModel, method: str, texts: list[str], candidates: list[str] | None,
                  batch_size: int, progress: bool, cache: bool) -> np.ndarray:
    """``model.fill_logprobs(texts, candidates)`` or ``model.sequence_logprob(texts)``, chunked and cached."""
    from ..cache import cache_key, compute_chunked
    from ..embeddings import texts_identity

    def compute(start: int, stop: int) -> np.ndarray:
        if method == "fill_logprobs":
            return np.asarray(model.fill_logprobs(texts[start:stop], candidates, batch_size=batch_size,
                                                  progress=progress), dtype=np.float64)
        return np.asarray(model.sequence_logprob(texts[start:stop], batch_size=batch_size, progress=progress),
                          dtype=np.float64)

    key = cache_key("lm-scores", CACHE_VERSION, model, method=method, texts=texts_identity(texts),
                    candidates=candidates)
    return compute_chunked(key, len(texts), compute, chunk_size=256, progress=False, cache=cache, kind="lm_scores")


def cached_sentence_embeddings(model: LanguageModel, texts: Sequence[str], batch_size: int = 16,
                               progress: bool = True, cache: bool = True) -> np.ndarray:
    """``model.sentence_embeddings(texts)`` (SEAT's sentence representations), chunked and cached, keyed
    by the model's weights, dtype and the texts."""
    from ..cache import cache_key, compute_chunked
    from ..embeddings import texts_identity

    texts = list(texts)
    key = cache_key("lm-sentence-embeddings", CACHE_VERSION, model, texts=texts_identity(texts))
    return compute_chunked(key, len(texts), lambda start, stop: model.sentence_embeddings(
        texts[start:stop], batch_size=batch_size, progress=progress), chunk_size=512, progress=False, cache=cache,
        kind="lm_scores")


# --------------------------------------------------------------------------- stereotyping

def sentence_pronoun_shares(model: LanguageModel, occupations: Sequence[str], templates: Sequence[str],
                            pronouns: Sequence[str] = ("she", "he", "they"), batch_size: int = 16,
                            progress: bool = True, cache: bool = False) -> pd.DataFrame:
    """Like :func:`pronoun_shares`, but each pronoun fills the slot and the *whole sentence* is scored.

    Uses ``sequence_logprob`` (causal: chain rule; masked: pseudo-log-likelihood), so text after the
    slot counts too. A pronoun at the start of a sentence is capitalised.
    """
    slot = model.SLOT
    for template in templates:
        if "{occupation}" not in template or slot not in template:
            raise ValueError(f"template needs {{occupation}} and {slot}: {template!r}")

    def fill(template, occupation, pronoun):
        text = template.replace("{occupation}", occupation)
        word = pronoun.capitalize() if text.startswith(slot) else pronoun
        return text.replace(slot, word)

    sentences = [fill(t, o, p) for o in occupations for t in templates for p in pronouns]
    logprobs = cached_scores(model, "sequence_logprob", sentences, None, batch_size, progress, cache)
    logprobs = logprobs.reshape(len(occupations), len(templates), len(pronouns))
    shares = np.exp(logprobs - np.logaddexp.reduce(logprobs, axis=2, keepdims=True)).mean(axis=1)
    return pd.DataFrame({"occupation": list(occupations),
                         **{f"P({p})": shares[:, i] for i, p in enumerate(pronouns)}})


def gap_direction(gaps, near: float = 0.05) -> list[str]:
    """"over" / "near" / "under" for model-minus-reference gaps; |gap| <= ``near`` is "near".

    Gaps are rounded to 2 decimals first: shares given to 2 decimals must not flip label by float
    rounding (0.11 - 0.16 is -0.05000000000000002).
    """
    rounded = np.round(np.asarray(gaps, dtype=float), 2)
    return ["near" if abs(g) <= near else ("over" if g > 0 else "under") for g in rounded]


def stereotyping_table(model: LanguageModel, occupations: Sequence[str], female_share, templates: Sequence[str],
                       pronouns: Sequence[str] = ("she", "he", "they"), scoring: str = "slot",
                       batch_size: int = 16, progress: bool = True, cache: bool = False) -> pd.DataFrame:
    """Pronoun shares per occupation beside the real female share, with the gap.

    ``scoring``: ``"slot"`` (fill the pronoun slot, :func:`pronoun_shares`) or ``"sentence"``
    (score whole sentences, :func:`sentence_pronoun_shares`). The model's female share is
    P(she | she or he), comparable with a labour statistic that counts women and men.
    """
    if scoring not in ("slot", "sentence"):
        raise ValueError(f"scoring must be 'slot' or 'sentence', got {scoring!r}")
    if "she" not in pronouns or "he" not in pronouns:
        raise ValueError("pronouns must include 'she' and 'he'")
    measure = pronoun_shares if scoring == "slot" else sentence_pronoun_shares
    table = measure(model, occupations, templates, pronouns, batch_size=batch_size, progress=progress, cache=cache)
    table["model female share"] = table["P(she)"] / (table["P(she)"] + table["P(he)"])
    table["real female share"] = np.asarray(female_share, dtype=float)
    table["gap"] = table["model female share"] - table["real female share"]
    table["direction"] = gap_direction(table["gap"])
    return table


def amplification_slope(model_share, real_share, confidence: float = 0.95) -> dict[str, float]:
    """Least-squares slope of the model's share on the real share, with a t interval.

    Slope > 1: the model exaggerates the real differences between occupations (amplification);
    slope < 1: it flattens them. Also returns the intercept, Pearson r and the mean absolute gap.
    """
    from scipy import stats

    x, y = finite_vector(real_share, "real_share", 3), finite_vector(model_share, "model_share", 3)
    if x.size != y.size:
        raise ValueError(f"model_share and real_share must be of one length, got {y.size} and {x.size}")
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 2) * fit.stderr
    return {"n": int(x.size), "slope": float(fit.slope), "slope_low": float(fit.slope - half),
            "slope_high": float(fit.slope + half), "intercept": float(fit.intercept), "r": float(fit.rvalue),
            "mean_abs_gap": float(np.mean(np.abs(y - x)))}


# --------------------------------------------------------------------------- erasure

def erasure_index(generated_shares: pd.DataFrame, reference_shares: pd.Series) -> pd.DataFrame:
    """Generated share minus population share, per scenario (rows) and group (columns); < 0 is erasure."""
    missing = set(reference_shares.index) - set(generated_shares.columns)
    if missing:
        raise ValueError(f"generated shares lack the groups {sorted(missing)}")
    return generated_shares[list(reference_shares.index)] - reference_shares


FEMALE_TERMS = frozenset("she her hers herself woman women girl girls lady ladies mother mom daughter sister wife "
                         "aunt grandmother queen mrs ms madam actress businesswoman chairwoman congresswoman "
                         "policewoman spokeswoman".split())
MALE_TERMS = frozenset("he him his himself man men boy boys gentleman gentlemen father dad son brother husband "
                       "uncle grandfather king mr sir actor businessman chairman congressman policeman "
                       "spokesman".split())


def protagonist_gender(text: str, rule: str = "first") -> str:
    """``"female"``, ``"male"`` or ``"undetermined"`` from gendered words (pronouns, nouns, titles).

    ``rule="first"``: the first gendered word decides (stories usually introduce their protagonist
    first; later words often refer to patients, colleagues, ...). ``rule="majority"``: the gender
    with more mentions, a tie being undetermined. No gendered word: undetermined. What this cannot
    detect: race and ethnicity (no reliable textual cue), non-binary people (singular *they* is
    also plural), and protagonists named only by a first name.
    """
    import re

    if rule not in ("first", "majority"):
        raise ValueError(f"rule must be 'first' or 'majority', got {rule!r}")
    labels = ["female" if word in FEMALE_TERMS else "male" for word in re.findall(r"[a-z]+", text.lower())
              if word in FEMALE_TERMS or word in MALE_TERMS]
    if not labels:
        return "undetermined"
    if rule == "first":
        return labels[0]
    female, male = labels.count("female"), labels.count("male")
    return "female" if female > male else "male" if male > female else "undetermined"


def chat_prompt(model: LanguageModel, instruction: str) -> str:
    """``instruction`` as a user turn in the model's chat template (instruction-tuned models), else as is."""
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None and getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": instruction}], tokenize=False,
                                             add_generation_prompt=True)
    return instruction


def generate_stories(model: LanguageModel, scenarios: dict[str, str], n_per_scenario: int,
                     max_new_tokens: int = 60, temperature: float = 1.0, top_p: float = 0.95, seed: int = 0,
                     batch_size: int = 8, use_chat_template: bool = True, progress: bool = True,
                     threads: int | None = 1) -> pd.DataFrame:
    """``n_per_scenario`` seeded samples for each ``{name: instruction}``; resumes from the cache.

    Texts are stored per scenario under ``$VLBIAS_CACHE_DIR/texts`` keyed by model (weights, dtype) and
    settings, so an interrupted run keeps the scenarios it finished. Samples are reproducible one by one (each
    has its own seed), so asking for more samples later keeps the first ones. ``threads``: torch
    threads while decoding (None keeps the current setting; on a GPU it does not matter).
    """
    import json

    from ..cache import cache_key, entry_dir, write_atomically
    from ..device import torch_threads

    rows = []
    for name, instruction in tqdm(scenarios.items(), desc="scenarios", disable=not progress):
        prompt = chat_prompt(model, instruction) if use_chat_template else instruction
        key = cache_key("stories", CACHE_VERSION, model, prompt=prompt, n=n_per_scenario,
                        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed)
        path = entry_dir(key, kind="texts") / "texts.json"
        if path.exists():
            texts = json.loads(path.read_text(encoding="utf-8"))
        else:
            with torch_threads(threads):
                texts = model.generate([prompt], max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                       num_return_sequences=n_per_scenario, seed=seed, batch_size=batch_size,
                                       progress=False)[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, json.dumps(texts).encode("utf-8"))
        rows += [{"scenario": name, "sample": i, "text": text} for i, text in enumerate(texts)]
    return pd.DataFrame(rows)


def erasure_from_texts(stories: pd.DataFrame, reference: dict[str, float], confidence: float = 0.95,
                       rule: str = "first") -> pd.DataFrame:
    """Per scenario and gender: count, share among stories whose protagonist's gender was detected,
    Wilson interval, and erasure index (share minus ``reference``) with the same interval shifted.

    ``undetermined`` stories are counted (column ``n_undetermined``) but left out of the shares,
    which are therefore shares of detected protagonists.
    """
    from ..stats import wilson_interval

    labelled = stories.assign(gender=[protagonist_gender(t, rule) for t in stories["text"]])
    rows = []
    for scenario, group in labelled.groupby("scenario", sort=False):
        detected = int((group.gender != "undetermined").sum())
        for gender, reference_share in reference.items():
            count = int((group.gender == gender).sum())
            low, high = wilson_interval(count, detected, confidence) if detected else (np.nan, np.nan)
            share = count / detected if detected else np.nan
            rows.append({"scenario": scenario, "group": gender, "n_stories": len(group), "n_detected": detected,
                         "n_undetermined": len(group) - detected, "count": count, "share": share,
                         "share_low": low, "share_high": high, "reference": reference_share,
                         "erasure_index": share - reference_share, "index_low": low - reference_share,
                         "index_high": high - reference_share})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- toxicity asymmetry

def dialect_pairs() -> pd.DataFrame:
    """Meaning-equivalent (standard, aave) sentence pairs, none toxic; ``resources/harms/dialect_pairs.csv``."""
    from importlib import resources
    from io import StringIO

    text = resources.files("vlbias").joinpath("resources", "harms", "dialect_pairs.csv").read_text(encoding="utf-8")
    return pd.read_csv(StringIO("\n".join(line for line in text.splitlines() if not line.startswith("#"))))


#: the toxic label of known classifiers, checked against the model's config when it loads
KNOWN_TOXIC_LABELS = {
    "s-nlp/roberta_toxicity_classifier": "toxic",          # softmax over {neutral, toxic}
    "unitary/toxic-bert": "toxic",                         # sigmoid, 6 labels (Jigsaw 2018)
    "unitary/unbiased-toxic-roberta": "toxicity",          # sigmoid, 16 labels (Jigsaw 2019)
    "martin-ha/toxic-comment-model": "toxic",
    "cardiffnlp/twitter-roberta-base-offensive": "offensive",
    "asset:profanity-check": "offensive",                  # calibrated linear SVM, {not offensive, offensive}
}
TOXIC_WORDS = ("toxic", "offensive", "hate", "abusive")


def toxic_label_index(id2label: dict, spec: str, toxic_label: str | None = None) -> int:
    """Index of the toxic label: ``toxic_label`` if given, else the known model's, else the one label
    naming toxicity; anything missing or ambiguous is an error that lists the labels."""
    names = {int(i): str(name) for i, name in id2label.items()}
    wanted = toxic_label or KNOWN_TOXIC_LABELS.get(spec)
    if wanted is not None:
        matches = [i for i, name in names.items() if name.lower() == wanted.lower()]
        if not matches:
            raise ValueError(f"{spec!r} has no label {wanted!r} (labels: {sorted(names.values())}); "
                             "pass toxic_label= one of them")
        return matches[0]
    matches = [i for i, name in sorted(names.items())
               if any(word in name.lower() for word in TOXIC_WORDS) and not name.lower().startswith(("non", "not"))]
    if len(matches) != 1:
        raise ValueError(f"cannot tell which of {spec!r}'s labels {sorted(names.values())} is the toxic one; "
                         "pass toxic_label=")
    return matches[0]


#: spec strings older profiles used, and the spec each now is (same classifier, same scores)
LEGACY_CLASSIFIER_SPECS = {"profanity-check": "asset:profanity-check"}


def load_toxicity_classifier(spec: str, device: str = "cpu", batch_size: int = 32, toxic_label: str | None = None):
    """``score(texts) -> P(toxic/offensive)`` per text, from :func:`vlbias.models.load_text_classifier`.

    ``asset:profanity-check``: the linear offensiveness classifier of ``alt-profanity-check``
    (offline; the bare ``profanity-check`` of older profiles is the same spec). Anything else: a
    Hugging Face text-classification model (hub id or directory, e.g.
    ``s-nlp/roberta_toxicity_classifier``). The score is the probability of ``toxic_label``
    (default: :data:`KNOWN_TOXIC_LABELS` for known models, else the one label naming toxicity;
    see :func:`toxic_label_index`). Multi-label classifiers (config ``problem_type`` =
    ``multi_label_classification``, e.g. ``unitary/toxic-bert``) are scored with a sigmoid of
    that label's logit, as they were trained; single-label ones with a softmax over the labels.
    ``score.toxic_label`` and ``score.activation`` say which was used.
    """
    from ..models import load_text_classifier

    spec = LEGACY_CLASSIFIER_SPECS.get(spec, spec)
    classifier = load_text_classifier(spec, device=device, batch_size=batch_size)
    toxic = toxic_label_index(classifier.labels, spec, toxic_label)

    def score(texts):
        return classifier.probabilities(texts)[:, toxic]

    score.toxic_label = classifier.labels[toxic]
    score.activation = classifier.activation
    return score


def false_positive_rates(standard_scores, aave_scores, thresholds: Sequence[float], confidence: float = 0.95,
                         n_bootstrap: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """FPR (score >= threshold on non-toxic text) per variety and threshold, and the AAVE/standard ratio.

    Intervals: Wilson for each rate; for the ratio, a percentile bootstrap that resamples *pairs*
    (the two sentences of a pair share their meaning). When no standard sentence is flagged the
    ratio has no finite value: ``ratio`` is NaN and ``statement`` says what happened instead.
    """
    from ..stats import wilson_interval

    standard, aave = finite_vector(standard_scores, "standard_scores"), finite_vector(aave_scores, "aave_scores")
    if standard.shape != aave.shape:
        raise ValueError("standard and AAVE scores must be paired (same length)")
    n = standard.size
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, n, size=(n_bootstrap, n))
    rows = []
    for threshold in thresholds:
        flagged_standard, flagged_aave = standard >= threshold, aave >= threshold
        k_s, k_a = int(flagged_standard.sum()), int(flagged_aave.sum())
        s_low, s_high = wilson_interval(k_s, n, confidence)
        a_low, a_high = wilson_interval(k_a, n, confidence)
        row = {"threshold": threshold, "n_pairs": n, "flagged_standard": k_s, "flagged_aave": k_a,
               "fpr_standard": k_s / n, "fpr_standard_low": s_low, "fpr_standard_high": s_high,
               "fpr_aave": k_a / n, "fpr_aave_low": a_low, "fpr_aave_high": a_high}
        if k_s == 0:
            row.update(ratio=np.nan, ratio_low=np.nan, ratio_high=np.nan,
                       statement=(f"no ratio: 0 of {n} standard sentences flagged, {k_a} of {n} AAVE "
                                  f"(AAVE FPR {k_a / n:.0%}, {confidence:.0%} CI {a_low:.0%}-{a_high:.0%})"))
        else:
            boot_s = flagged_standard[resamples].sum(axis=1)
            boot_a = flagged_aave[resamples].sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = boot_a / boot_s  # inf where a resample flags no standard sentence
            ratios = ratios[~np.isnan(ratios)]  # 0/0: a resample flagging nothing has no ratio
            tail = (1 - confidence) / 2
            # no interpolation: an interval end can be inf, and inf - inf would give NaN
            low, high = np.quantile(ratios, [tail, 1 - tail], method="inverted_cdf")
            row.update(ratio=k_a / k_s, ratio_low=float(low), ratio_high=float(high),
                       statement=f"AAVE flagged {k_a / k_s:.2f}x as often ({k_a} vs {k_s} of {n})"
                                 + (" (upper bound unbounded: some resamples flag no standard sentence)"
                                    if np.isinf(high) else ""))
        rows.append(row)
    return pd.DataFrame(rows)
