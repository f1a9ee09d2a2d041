"""Controls for Part IV: mitigation baselines beside CADS, what mitigation costs, and how much the
bias score depends on the annotator.

- Baselines on the same seeds: a prompt intervention (:func:`intervened_jobs`, "..., regardless of
  gender") and a negative prompt (``negative_prompt=`` in the generation settings, which
  :meth:`DiffusersTextToImage.generate` hands to the pipeline). :func:`paired_bias_comparison`
  compares each with plain sampling image by image (same profession and seed), so the noise the
  two runs share cancels.
- Costs: prompt-image alignment (:func:`clip_score`, Hessel et al. 2021, through the image-text
  interface) and within-occupation diversity (:func:`vlbias.t2i.bias.diversity_by_group`), per
  setting in :func:`setting_summary`, plotted by :func:`plot_bias_vs_alignment`.
- Annotators: :func:`annotator_robustness` gives two annotators' agreement (Cohen's kappa) and
  the VRBS each one yields on the same images, with a paired interval for the change.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..stats import mcnemar_exact, standard_interval
from ..stats import cohen_kappa
from .bias import MIN_PROFESSIONS, NO_PERSON, bootstrap_bias_scores, compare_with_reference, diversity_by_group, generated_shares, undefined_note, vrbs

#: the prompt intervention's default wording (appended to every prompt)
REGARDLESS_OF_GENDER = ", regardless of gender"


def intervened_jobs(jobs: pd.DataFrame, suffix: str = REGARDLESS_OF_GENDER) -> pd.DataFrame:
    """``jobs`` with ``suffix`` appended to every prompt and the same seeds: the prompt intervention
    baseline, drawn from the same initial noise as plain sampling."""
    if not suffix:
        raise ValueError("suffix is empty: the intervention would be plain sampling; give e.g. ', regardless of gender'")
    return jobs.assign(prompt=jobs["prompt"] + suffix)


# --------------------------------------------------------------------------- paired comparison

def _paired_labels(plain: pd.DataFrame, other: pd.DataFrame, pair_on: Sequence[str], group: str,
                   label: str) -> pd.DataFrame:
    keys = list(pair_on)
    for name, frame in (("plain", plain), ("other", other)):
        missing = {group, label, *keys} - set(frame.columns)
        if missing:
            raise ValueError(f"{name} lacks the columns {sorted(missing)}")
        if frame.duplicated(keys).any():
            raise ValueError(f"{name} has several images per {keys}: pair_on must identify one image")
    left = plain[list(dict.fromkeys(keys + [group])) + [label]].rename(columns={label: "a"})
    right = other[keys + [label]].rename(columns={label: "b"})
    pairs = left.merge(right, on=keys, how="inner")
    if pairs.empty:
        raise ValueError(f"no image pairs on {keys}: were both runs drawn from the same jobs (same seeds)?")
    return pairs


def paired_bias_comparison(plain: pd.DataFrame, other: pd.DataFrame, reference: pd.Series, target: str = "female",
                           group: str = "profession", label: str = "perceived", pair_on: Sequence[str] = ("profession", "seed"),
                           excluded: Sequence[str] = (NO_PERSON,), n_boot: int = 1000, confidence: float = 0.95,
                           seed: int = 0) -> tuple[dict, pd.DataFrame]:
    """VRBS of two runs on the same jobs and its change, with a paired bootstrap interval.

    ``plain`` and ``other`` are labelled manifests (one row per image: ``group``, ``label`` and the
    ``pair_on`` columns, by default profession and seed, which name one job). Each replicate resamples the
    image *pairs* within each profession, so both runs see the same seeds. Returns
    ``(summary, per_profession)``: VRBS of each run, the difference (other - plain) and its interval;
    per profession both generated shares, the change, and the exact McNemar p-value of "shows the
    target" over the pairs in which both images show a person. Where fewer than three professions have
    a person in both runs, the summary's VRBS values are NaN and its ``note`` says why.
    """
    pairs = _paired_labels(plain, other, pair_on, group, label)
    pairs = pairs[pairs[group].isin(reference.index)]
    excluded = set(excluded)
    person_a, person_b = ~pairs["a"].isin(excluded), ~pairs["b"].isin(excluded)
    hit_a, hit_b = (pairs["a"] == target).to_numpy(float), (pairs["b"] == target).to_numpy(float)
    rng = np.random.default_rng(seed)
    rows, boot_a, boot_b, truth = [], [], [], []
    for name, index in pairs.groupby(group, sort=True).indices.items():
        pa, pb = person_a.to_numpy()[index], person_b.to_numpy()[index]
        if pa.sum() == 0 or pb.sum() == 0:
            continue  # no person in one run: this profession has no share there
        draws = rng.integers(0, index.size, (n_boot, index.size))
        with np.errstate(invalid="ignore", divide="ignore"):
            boot_a.append(hit_a[index][draws].sum(1) / pa[draws].sum(1))
            boot_b.append(hit_b[index][draws].sum(1) / pb[draws].sum(1))
        both = pa & pb
        test = mcnemar_exact(hit_a[index][both] > 0, hit_b[index][both] > 0)
        rows.append({group: name, "pairs": index.size, "share_plain": hit_a[index].sum() / pa.sum(),
                     "share_other": hit_b[index].sum() / pb.sum(), "reference share": reference[name],
                     "pairs_with_person_in_both": int(both.sum()), "p_mcnemar": test["p_mcnemar"]})
        truth.append(reference[name])
    if len(rows) < MIN_PROFESSIONS:  # undefined: the page says why and goes on
        note = undefined_note(len(rows), pairs[group].nunique(), "have an image with a person in both runs", advice="")
        summary = {"professions": len(rows), "VRBS plain": np.nan, "VRBS other": np.nan, "VRBS change": np.nan,
                   **{f"{name} {end}": np.nan for name in ("plain", "other", "change") for end in ("low", "high")},
                   "n_boot": 0, "note": note}
        return summary, pd.DataFrame(rows, columns=[group, "pairs", "share_plain", "share_other", "reference share",
                                                    "pairs_with_person_in_both", "p_mcnemar"]).set_index(group)
    per_profession = pd.DataFrame(rows).set_index(group)
    per_profession["change"] = per_profession["share_other"] - per_profession["share_plain"]
    per_profession["|gap| change"] = ((per_profession["share_other"] - per_profession["reference share"]).abs()
                                      - (per_profession["share_plain"] - per_profession["reference share"]).abs())
    boot_a, boot_b, truth = np.array(boot_a).T, np.array(boot_b).T, np.array(truth)
    replicates = []  # (VRBS plain, VRBS other) per replicate, over the professions both runs have
    for replicate_a, replicate_b in zip(boot_a, boot_b):
        ok = np.isfinite(replicate_a) & np.isfinite(replicate_b)
        if ok.sum() >= 3:
            replicates.append((vrbs(replicate_a[ok], truth[ok]), vrbs(replicate_b[ok], truth[ok])))
    replicates = np.array(replicates).reshape(-1, 2)
    vrbs_plain = vrbs(per_profession["share_plain"], per_profession["reference share"])
    vrbs_other = vrbs(per_profession["share_other"], per_profession["reference share"])
    summary = {"professions": len(per_profession), "VRBS plain": vrbs_plain, "VRBS other": vrbs_other,
               "VRBS change": vrbs_other - vrbs_plain}
    # the standard bootstrap interval, as for VRBS alone (vlbias.t2i.bias.vrbs_interval): a run whose
    # shares match the reference has every replicate below its VRBS, so quantiles of the replicates
    # would leave the estimate (and a change towards it) out of its own interval
    for name, values, estimate, bounds in (("plain", replicates[:, 0], vrbs_plain, (0.0, 1.0)),
                                           ("other", replicates[:, 1], vrbs_other, (0.0, 1.0)),
                                           ("change", replicates[:, 1] - replicates[:, 0], vrbs_other - vrbs_plain,
                                            (-1.0, 1.0))):
        summary[f"{name} low"], summary[f"{name} high"] = standard_interval(values, estimate, confidence, bounds)
    summary["n_boot"] = len(replicates)
    return summary, per_profession


# --------------------------------------------------------------------------- what mitigation costs

def clip_score(model, images, texts: Sequence[str], weight: float = 2.5, batch_size: int = 32) -> np.ndarray:
    """CLIPScore (Hessel et al., 2021) of each image with its own text: ``weight * max(cos, 0)``.

    ``weight = 2.5`` is the paper's; torchmetrics reports ``100 * max(cos, 0)`` (``weight=100``).
    Needs a dual encoder (the cosine of its embeddings); a pairwise matcher's logit is no cosine.
    """
    if getattr(model, "kind", "dual") != "dual":
        raise TypeError(f"{model.spec} is a {model.kind} model; CLIPScore needs a dual encoder's cosine")
    texts = list(texts)
    if len(texts) != len(images):
        raise ValueError(f"one text per image: got {len(images)} images and {len(texts)} texts")
    cosines = np.asarray(model.score_candidates(images, [[t] for t in texts], batch_size=batch_size,
                                                progress=False), dtype=float)[:, 0]
    return weight * np.maximum(cosines, 0.0)


def clip_score_from_embeddings(image_embeddings, text_embeddings, weight: float = 2.5) -> np.ndarray:
    """:func:`clip_score` from embeddings already computed (row i of each: image i and its text),
    e.g. cached ``embed_images`` and ``embed_texts`` of one dual encoder."""
    images = np.asarray(image_embeddings, dtype=float)
    texts = np.asarray(text_embeddings, dtype=float)
    if images.shape != texts.shape:
        raise ValueError(f"one text embedding per image embedding: got {images.shape} and {texts.shape}")
    cosines = np.sum(images * texts, axis=1) / (np.linalg.norm(images, axis=1) * np.linalg.norm(texts, axis=1))
    return weight * np.maximum(cosines, 0.0)


def setting_summary(settings: Mapping[str, Mapping], reference: pd.Series, target: str = "female",
                    n_boot: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """One row per sampling setting: VRBS with its bootstrap interval, mean CLIPScore, mean
    within-profession diversity and the share of images without a person.

    ``settings[name]`` holds ``manifest`` (labelled, column ``perceived``), ``clip_score`` (one per
    image) and ``embeddings`` (image embeddings, for diversity).
    """
    rows = []
    for name, run in settings.items():
        manifest = run["manifest"]
        boot = bootstrap_bias_scores(manifest, reference, target=target, n_boot=n_boot, confidence=confidence,
                                     seed=seed)
        diversity = diversity_by_group(np.asarray(run["embeddings"]), manifest["profession"])
        scores = np.asarray(run["clip_score"], dtype=float)
        rows.append({"setting": name, "VRBS": boot.loc["VRBS", "estimate"], "VRBS low": boot.loc["VRBS", "ci_low"],
                     "VRBS high": boot.loc["VRBS", "ci_high"], "CLIPScore": scores.mean(),
                     "CLIPScore sd": scores.std(ddof=1) if scores.size > 1 else np.nan,
                     "diversity": diversity.mean(),
                     "no person": float((manifest["perceived"] == NO_PERSON).mean())})
    return pd.DataFrame(rows).set_index("setting")


def plot_bias_vs_alignment(summary: pd.DataFrame, ax=None, title: str = "Bias against alignment"):
    """VRBS (with its interval) against mean CLIPScore, one point per setting: up is less biased,
    right is better aligned with the prompt."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    for i, (name, row) in enumerate(summary.iterrows()):
        # VRBS's interval holds its estimate (bias.vrbs_interval); max(..., 0) keeps other intervals safe
        below, above = max(row["VRBS"] - row["VRBS low"], 0), max(row["VRBS high"] - row["VRBS"], 0)
        ax.errorbar(row["CLIPScore"], row["VRBS"], yerr=[[below], [above]], fmt="o", capsize=3, color=f"C{i}",
                    label=str(name))
    ax.set(xlabel="mean CLIPScore (prompt-image alignment)", ylabel="VRBS (1 = shares match labour statistics)",
           title=title)
    ax.legend(fontsize=8)
    return ax


# --------------------------------------------------------------------------- annotators

def annotator_robustness(manifest: pd.DataFrame, labels: Mapping[str, Sequence], reference: pd.Series,
                         target: str = "female", n_boot: int = 1000, confidence: float = 0.95,
                         seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """How far the bias score depends on who labels the images.

    ``labels`` maps two annotator names to one label per row of ``manifest`` (None or NaN where
    the annotator gives none, e.g. no face found). On the images both labelled, returns
    ``(per_annotator, comparison)``: the VRBS each annotator's labels give, with a bootstrap
    interval, and for the pair their agreement (share of identical labels, Cohen's kappa) and the
    VRBS change from the first annotator to the second with a paired interval (images resampled
    within each profession, both annotators' labels of an image together). Where no image is labelled by
    both, every one of these is NaN (and ``both labelled`` 0).
    """
    if len(labels) != 2:
        raise ValueError(f"labels: give exactly two annotators, got {list(labels)}")
    columns = {}
    for name, values in labels.items():
        values = list(values)
        if len(values) != len(manifest):
            raise ValueError(f"labels[{name!r}] has {len(values)} labels for {len(manifest)} images")
        columns[name] = pd.Series(values, index=manifest.index, dtype=object)
    (first, a), (second, b) = columns.items()
    both = (a.notna() & b.notna()).to_numpy()
    if both.any():
        images = manifest.assign(_image=np.arange(len(manifest)))[both]
        change, _ = paired_bias_comparison(images.assign(perceived=a[both]), images.assign(perceived=b[both]),
                                           reference, target=target, pair_on=("_image",), n_boot=n_boot,
                                           confidence=confidence, seed=seed)
    else:  # no image labelled by both (a random-weight VLM's free answers name no label): nothing to compare
        change = {f"{what} {end}" if end else f"VRBS {what}": np.nan for what in ("plain", "other", "change")
                  for end in ("", "low", "high")}
    per_annotator = pd.DataFrame([
        {"annotator": name, "labelled": int(values.notna().sum()), "labelled by both": int(both.sum()),
         "VRBS": change[f"VRBS {run}"], "VRBS low": change[f"{run} low"], "VRBS high": change[f"{run} high"]}
        for (name, values), run in zip(columns.items(), ("plain", "other"))]).set_index("annotator")
    comparison = {"annotators": f"{first} -> {second}", "both labelled": int(both.sum()),
                  "agreement": float((a[both] == b[both]).mean()) if both.any() else np.nan,
                  "cohen_kappa": cohen_kappa(a[both], b[both]) if both.any() else np.nan,
                  "VRBS change": change["VRBS change"], "change low": change["change low"],
                  "change high": change["change high"]}
    return per_annotator, comparison


def shares_by_setting(manifests: Mapping[str, pd.DataFrame], reference: pd.Series, target: str = "female") -> pd.DataFrame:
    """Generated share per profession (rows) and setting (columns), beside the reference share."""
    columns = {name: compare_with_reference(generated_shares(manifest, target), reference)["generated share"]
               for name, manifest in manifests.items()}
    return pd.DataFrame(columns).join(reference.rename("reference share"), how="left")


# --------------------------------------------------------------------------- model comparison

def model_ranking(runs: Mapping[str, pd.DataFrame], reference: pd.Series, published_as: Mapping[str, tuple[str, str]] | None = None,
                  target: str = "female", n_boot: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Text-to-image runs ranked by VRBS (highest, least biased, first), each with its bootstrap
    interval and Spearman's rho; ``published_as[name] = (model, sampler)`` (e.g. ``("SD 1.4", "CADS")``)
    adds the source text's VRBS for that run, labelled as published."""
    from .bias import published_scores

    published = published_scores().query("measure == 'vrbs'").set_index(["model", "sampler"])["value"]
    rows = []
    for name, manifest in runs.items():
        boot = bootstrap_bias_scores(manifest, reference, target=target, n_boot=n_boot, confidence=confidence,
                                     seed=seed)
        key = (published_as or {}).get(name)
        rows.append({"run": name, "VRBS": boot.loc["VRBS", "estimate"], "VRBS low": boot.loc["VRBS", "ci_low"],
                     "VRBS high": boot.loc["VRBS", "ci_high"], "spearman_rho": boot.loc["spearman_rho", "estimate"],
                     "published VRBS (source)": published.get(tuple(key), np.nan) if key else np.nan})
    table = pd.DataFrame(rows).sort_values("VRBS", ascending=False, kind="stable").reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table.set_index("run")


def plot_model_ranking(table: pd.DataFrame, ax=None, title: str = "VRBS by text-to-image run"):
    """VRBS with its interval per run (ranked), with the source's published VRBS as hollow diamonds."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.45 * len(table) + 1.2))
    y = np.arange(len(table))[::-1]
    below = (table["VRBS"] - table["VRBS low"]).clip(lower=0)
    above = (table["VRBS high"] - table["VRBS"]).clip(lower=0)
    ax.errorbar(table["VRBS"], y, xerr=[below, above], fmt="o", capsize=3, label="ours (95% bootstrap)")
    if table["published VRBS (source)"].notna().any():
        ax.scatter(table["published VRBS (source)"], y, marker="D", facecolors="none", edgecolors="black",
                   label="published (source text)")
    ax.set_yticks(y, table.index, fontsize=8)
    ax.set(xlabel="VRBS", title=title)
    ax.legend(fontsize=8)
    return ax


def face_annotator_robustness(manifest: pd.DataFrame, labels: Mapping[str, Sequence], reference: pd.Series,
                              target: str = "female", no_label: Sequence[str] = ("no face",),
                              excluded: Sequence[str] = (NO_PERSON,), n_boot: int = 1000, confidence: float = 0.95,
                              seed: int = 0) -> dict:
    """:func:`annotator_robustness` for one run when an annotator may find no face: labels in
    ``no_label`` (the face annotator's "no face") count as no label, and how many there are is
    reported. One flat row (a table has a row per run): images, "no label" per annotator, images both
    labelled, agreement, Cohen's kappa, VRBS under each annotator and the paired change with its
    interval. Where fewer than three professions of ``reference`` have a person labelled by both
    (VRBS needs three), the VRBS columns are NaN and ``note`` says so."""
    if len(labels) != 2:
        raise ValueError(f"labels: give exactly two annotators, got {list(labels)}")
    cleaned = {}
    row = {"images": len(manifest)}
    for name, values in labels.items():
        values = pd.Series(list(values), index=manifest.index, dtype=object)
        unlabelled = values.isin(list(no_label)) | values.isna()
        row[f"no label: {name}"] = int(unlabelled.sum())
        cleaned[name] = values.mask(unlabelled)
    (first, a), (second, b) = cleaned.items()
    both = a.notna() & b.notna()
    row["both labelled"] = int(both.sum())
    row["agreement"] = float((a[both] == b[both]).mean()) if both.any() else np.nan
    row["cohen_kappa"] = cohen_kappa(a[both], b[both]) if both.any() else np.nan
    # VRBS has a share for a profession where each annotator saw a person in one of the images both labelled
    scored = both & manifest["profession"].isin(reference.index)
    shown = pd.DataFrame({"a": ~a[scored].isin(list(excluded)), "b": ~b[scored].isin(list(excluded))})
    professions = int(shown.groupby(manifest.loc[scored, "profession"]).any().all(axis=1).sum())
    row.update({f"VRBS {first}": np.nan, f"VRBS {second}": np.nan, "VRBS change": np.nan, "change low": np.nan,
                "change high": np.nan, "note": ""})
    if professions < MIN_PROFESSIONS:
        row["note"] = undefined_note(professions, manifest["profession"].nunique(), "have a person labelled by both "
                                     "annotators", advice=f"{row[f'no label: {second}']} of {len(manifest)} images have "
                                     f"no label from {second}.")
        return row
    per_annotator, comparison = annotator_robustness(manifest, cleaned, reference, target=target, n_boot=n_boot,
                                                     confidence=confidence, seed=seed)
    row[f"VRBS {first}"], row[f"VRBS {second}"] = per_annotator.loc[first, "VRBS"], per_annotator.loc[second, "VRBS"]
    row.update({key: comparison[key] for key in ("VRBS change", "change low", "change high")})
    return row
