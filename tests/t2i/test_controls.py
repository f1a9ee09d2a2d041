"""Part IV controls on planted label sets: paired VRBS changes, CLIPScore against the embeddings,
annotator agreement, and the negative-prompt and prompt-intervention baselines on the tiny pipeline."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from vlbias.t2i.annotation import cohen_kappa
from vlbias.t2i.bias import bootstrap_bias_scores, diversity_by_group, vrbs
from vlbias.t2i.controls import (REGARDLESS_OF_GENDER, annotator_robustness, clip_score, clip_score_from_embeddings,
                                 intervened_jobs, paired_bias_comparison, plot_bias_vs_alignment, setting_summary, shares_by_setting)
from vlbias.t2i.generation import prompt_jobs

REFERENCE = pd.Series({"nurse": 0.9, "pilot": 0.1, "baker": 0.6, "judge": 0.4, "clerk": 0.7})
N = 40


def manifest_with(female_counts, no_person=None):
    """N images per profession with seeds 0..N-1; the first k of each are female, the next
    ``no_person[p]`` show no one, the rest male."""
    rows = []
    for profession, k in female_counts.items():
        empty = (no_person or {}).get(profession, 0)
        for i in range(N):
            label = "female" if i < k else "no person" if i < k + empty else "male"
            rows.append({"profession": profession, "seed": i, "perceived": label})
    return pd.DataFrame(rows)


BIASED = {"nurse": 40, "pilot": 0, "baker": 36, "judge": 4, "clerk": 40}       # exaggerated
MATCHED = {"nurse": 36, "pilot": 4, "baker": 24, "judge": 16, "clerk": 28}     # the reference shares


def test_intervention_keeps_the_seeds_and_appends_the_suffix():
    jobs = prompt_jobs(["nurse", "pilot"], "A photo of a {profession}", 3)
    intervened = intervened_jobs(jobs)
    assert (intervened["seed"] == jobs["seed"]).all()
    assert intervened["prompt"].iloc[0] == "A photo of a nurse" + REGARDLESS_OF_GENDER
    with pytest.raises(ValueError, match="suffix"):
        intervened_jobs(jobs, "")


def test_paired_comparison_of_identical_runs_changes_nothing():
    plain = manifest_with(BIASED)
    summary, per_profession = paired_bias_comparison(plain, plain.copy(), REFERENCE, n_boot=200)
    assert summary["VRBS change"] == 0 and summary["change low"] == 0 and summary["change high"] == 0
    assert (per_profession["p_mcnemar"] == 1).all()


def test_paired_comparison_finds_a_planted_improvement():
    plain, other = manifest_with(BIASED), manifest_with(MATCHED)
    summary, per_profession = paired_bias_comparison(plain, other, REFERENCE, n_boot=500)
    shares_plain = np.array([BIASED[p] for p in REFERENCE.index]) / N
    assert summary["VRBS plain"] == pytest.approx(vrbs(shares_plain, REFERENCE.to_numpy()))
    assert summary["VRBS other"] == pytest.approx(1.0)
    # the standard interval holds a change towards VRBS 1 (every replicate of the matched run lies below 1,
    # so quantiles of the replicates would end below the change)
    assert 0 < summary["change low"] < summary["VRBS change"] < summary["change high"]
    assert summary["other low"] < summary["VRBS other"] == summary["other high"] == 1.0
    # baker: images 24..35 female in plain only; McNemar on 12 discordant pairs, all one way
    assert per_profession.loc["baker", "p_mcnemar"] == pytest.approx(stats.binomtest(0, 12, 0.5).pvalue)
    assert per_profession.loc["baker", "change"] == pytest.approx(-12 / N)


def test_paired_comparison_leaves_images_without_a_person_out_of_the_shares():
    other = manifest_with(MATCHED, no_person={"judge": 8})
    _, per_profession = paired_bias_comparison(manifest_with(BIASED), other, REFERENCE, n_boot=50)
    assert per_profession.loc["judge", "share_other"] == pytest.approx(16 / 32)
    assert per_profession.loc["judge", "pairs_with_person_in_both"] == 32


def test_paired_comparison_refuses_runs_without_common_seeds():
    other = manifest_with(MATCHED).assign(seed=lambda t: t["seed"] + 1000)
    with pytest.raises(ValueError, match="same seeds"):
        paired_bias_comparison(manifest_with(BIASED), other, REFERENCE)


def test_clip_score_is_the_clipped_cosine_of_the_embeddings():
    from PIL import Image

    from vlbias.models import load_image_text_model

    model = load_image_text_model("tiny:clip")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(4)]
    texts = ["a photo of a nurse", "a photo of a pilot", "a red car", "a cat"]
    cosines = np.sum(model.encode_images(images, progress=False) * model.encode_texts(texts, progress=False), axis=1)
    np.testing.assert_allclose(clip_score(model, images, texts), 2.5 * np.maximum(cosines, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clip_score(model, images, texts, weight=100), 100 * np.maximum(cosines, 0),
                               rtol=1e-5, atol=1e-4)
    from_embeddings = clip_score_from_embeddings(3 * model.encode_images(images, progress=False),
                                                 model.encode_texts(texts, progress=False))
    np.testing.assert_allclose(from_embeddings, clip_score(model, images, texts), rtol=1e-5, atol=1e-6)


def test_clip_score_clips_negative_cosines_and_refuses_a_matcher():
    class Fixed:
        spec, kind = "fixed", "dual"

        def score_candidates(self, images, candidates, batch_size=32, progress=True):
            return np.array([[-0.3], [0.4]])

    np.testing.assert_allclose(clip_score(Fixed(), [0, 1], ["a", "b"]), [0.0, 1.0])
    Fixed.kind = "pairwise"
    with pytest.raises(TypeError, match="dual encoder"):
        clip_score(Fixed(), [0, 1], ["a", "b"])


def test_setting_summary_and_its_figure():
    rng = np.random.default_rng(0)
    runs = {}
    for name, counts in (("plain", BIASED), ("intervention", MATCHED)):
        manifest = manifest_with(counts)
        runs[name] = {"manifest": manifest, "clip_score": rng.uniform(0.5, 0.8, len(manifest)),
                      "embeddings": rng.normal(size=(len(manifest), 8))}
    summary = setting_summary(runs, REFERENCE, n_boot=200)
    for name, run in runs.items():
        boot = bootstrap_bias_scores(run["manifest"], REFERENCE, n_boot=200)
        assert summary.loc[name, "VRBS"] == pytest.approx(boot.loc["VRBS", "estimate"])
        assert summary.loc[name, "CLIPScore"] == pytest.approx(run["clip_score"].mean())
        assert summary.loc[name, "diversity"] == pytest.approx(
            diversity_by_group(run["embeddings"], run["manifest"]["profession"]).mean())
    assert summary.loc["intervention", "VRBS"] > summary.loc["plain", "VRBS"]
    assert plot_bias_vs_alignment(summary) is not None
    shares = shares_by_setting({n: r["manifest"] for n, r in runs.items()}, REFERENCE)
    assert shares.loc["baker", "plain"] == pytest.approx(0.9) and shares.loc["baker", "reference share"] == 0.6


def test_annotator_robustness_on_planted_disagreement():
    manifest = manifest_with(BIASED).drop(columns="perceived")
    first = manifest_with(BIASED)["perceived"].to_numpy(object)
    second = first.copy()
    second[::4] = np.where(second[::4] == "female", "male", "female")     # every fourth image relabelled
    second[1::10] = None                                                  # no face found
    per_annotator, comparison = annotator_robustness(manifest, {"zero-shot": first, "faces": second}, REFERENCE,
                                                     n_boot=200)
    both = pd.notna(second)
    assert comparison["both labelled"] == int(both.sum())
    assert comparison["cohen_kappa"] == pytest.approx(cohen_kappa(first[both], second[both]))
    assert comparison["agreement"] == pytest.approx((first[both] == second[both]).mean())
    assert per_annotator.loc["faces", "labelled"] == int(both.sum())
    assert per_annotator.loc["zero-shot", "labelled"] == len(first)
    assert (per_annotator["labelled by both"] == int(both.sum())).all()
    shares = manifest.assign(perceived=second)[both].groupby("profession")["perceived"].apply(
        lambda s: (s == "female").mean())
    assert per_annotator.loc["faces", "VRBS"] == pytest.approx(vrbs(shares[REFERENCE.index], REFERENCE))
    # relabelling pulls every share towards one half, so the second annotator's VRBS is higher
    assert comparison["VRBS change"] > 0
    same, agree = annotator_robustness(manifest, {"a": first, "b": first}, REFERENCE, n_boot=50)
    assert agree["cohen_kappa"] == 1 and agree["VRBS change"] == 0
    with pytest.raises(ValueError, match="two annotators"):
        annotator_robustness(manifest, {"a": first}, REFERENCE)


def test_every_measure_of_04c_is_undefined_not_an_error_when_every_image_shows_no_person():
    """The full profile's rehearsal (random annotator weights) labels every image 'no person': 04c's
    paired changes, the annotator comparison and their sentences say 'undefined' instead of raising."""
    from vlbias.t2i.bias import interval_phrase, kappa_phrase

    manifest = manifest_with({p: 0 for p in REFERENCE.index}, no_person={p: N for p in REFERENCE.index})
    assert (manifest.perceived == "no person").all()
    change, _ = paired_bias_comparison(manifest, manifest, REFERENCE, n_boot=50)
    assert np.isnan([change["VRBS plain"], change["VRBS change"], change["change low"], change["change high"]]).all()
    labels = manifest.perceived.to_numpy(object)
    per_annotator, comparison = annotator_robustness(manifest.drop(columns="perceived"), {"a": labels, "b": labels},
                                                     REFERENCE, n_boot=50)
    assert per_annotator["VRBS"].isna().all() and (per_annotator["labelled by both"] == len(manifest)).all()
    assert comparison["agreement"] == 1 and np.isnan(comparison["cohen_kappa"])
    assert interval_phrase(comparison["VRBS change"], comparison["change low"], comparison["change high"]).startswith("undefined")
    assert kappa_phrase(comparison["cohen_kappa"]).startswith("κ undefined")



def test_an_annotator_that_labels_no_image_leaves_the_comparison_undefined_and_the_page_says_so():
    """Found by the full profile's rehearsal (04b, random-weight VLM annotators): a generative annotator whose free
    answers name no label labels no image, and 04b's comparison raised "no image pairs". Now every value is NaN,
    both labelled is 0, and the sentence says nothing can be compared."""
    from vlbias.t2i.vlm_annotation import comparison_sentences

    manifest = manifest_with(BIASED)
    first = manifest["perceived"].to_numpy(object)
    per_annotator, comparison = annotator_robustness(manifest.drop(columns="perceived"),
                                                     {"zero-shot": first, "vlm": [None] * len(first)}, REFERENCE,
                                                     n_boot=50)
    assert per_annotator.loc["zero-shot", "labelled"] == len(first) and per_annotator.loc["vlm", "labelled"] == 0
    assert (per_annotator["labelled by both"] == 0).all() and per_annotator["VRBS"].isna().all()
    assert comparison["both labelled"] == 0
    assert np.isnan([comparison[k] for k in ("agreement", "cohen_kappa", "VRBS change", "change low",
                                             "change high")]).all()
    table = pd.DataFrame([{"model": "m", "reading": "free answer", "labelled": 0,
                           "both labelled": comparison["both labelled"], "agreement": comparison["agreement"],
                           "cohen_kappa": comparison["cohen_kappa"], "VRBS change": comparison["VRBS change"],
                           "ci_low": comparison["change low"], "ci_high": comparison["change high"]}]
                         ).set_index(["model", "reading"])
    assert "m labelled none of the 200 images zero-shot labelled, so nothing can be compared" in comparison_sentences(
        table, "zero-shot", len(first))

@pytest.fixture(scope="module")
def tiny_sd():
    from vlbias.models import load_text_to_image

    return load_text_to_image("tiny:sd")


def test_an_empty_negative_prompt_is_plain_sampling_and_another_changes_the_images(tiny_sd):
    prompts, seeds = ["a photo of a nurse", "a photo of a judge"], [1, 2]
    settings = dict(num_inference_steps=2, height=32, width=32, progress=False)
    plain = tiny_sd.generate(prompts, seeds, **settings)
    empty = tiny_sd.generate(prompts, seeds, negative_prompt="", **settings)
    negative = tiny_sd.generate(prompts, seeds, negative_prompt="a man", **settings)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(plain, empty))
    assert not any(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(plain, negative))
    with pytest.raises(TypeError, match="negative_prompt"):
        tiny_sd.generate(prompts, seeds, negative_prompt=["a man", "a man"], **settings)


def test_negative_prompt_reaches_cads_and_the_manifest(tiny_sd, tmp_path):
    from PIL import Image

    from vlbias.t2i.cads import with_cads
    from vlbias.t2i.generation import generate_to_disk

    jobs = prompt_jobs(["nurse"], "a photo of a {profession}", 2)
    cads = with_cads(tiny_sd, noise_scale=0.25)
    settings = dict(num_inference_steps=2, height=32, width=32, progress=False)
    manifest = generate_to_disk(cads, jobs, tmp_path, batch_size=2, negative_prompt="a man", **settings)
    assert (manifest["negative_prompt"] == "a man").all() and manifest["seed"].tolist() == jobs["seed"].tolist()
    # the files are CADS's images under that negative prompt, generated directly; without it they differ
    direct = cads.generate(jobs["prompt"].tolist(), jobs["seed"].tolist(), negative_prompt="a man", **settings)
    without = cads.generate(jobs["prompt"].tolist(), jobs["seed"].tolist(), **settings)
    on_disk = [np.asarray(Image.open(tmp_path / name)) for name in manifest["file"]]
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(on_disk, direct))
    assert not any(np.array_equal(a, np.asarray(b)) for a, b in zip(on_disk, without))


def test_model_ranking_orders_runs_by_vrbs_and_shows_the_published_value():
    from vlbias.t2i.controls import model_ranking, plot_model_ranking

    half = dict(zip(REFERENCE.index, [20, 21, 19, 20, 22]))     # near parity everywhere
    runs = {"sd-a": manifest_with(BIASED), "sd-b": manifest_with(MATCHED), "sd-c": manifest_with(half)}
    table = model_ranking(runs, REFERENCE, published_as={"sd-a": ("SD 1.4", "plain")}, n_boot=100)
    expected = {name: vrbs(np.array([c[p] for p in REFERENCE.index]) / N, REFERENCE.to_numpy())
                for name, c in (("sd-a", BIASED), ("sd-b", MATCHED), ("sd-c", half))}
    assert list(table.index) == sorted(expected, key=expected.get, reverse=True)
    assert table["VRBS"].to_dict() == pytest.approx(expected)
    assert table.loc["sd-a", "published VRBS (source)"] == 0.68
    assert table["published VRBS (source)"].isna().sum() == 2
    assert plot_model_ranking(table) is not None
