"""Part IV as a controlled experiment: a diffusion model trained on a planted world (``04e_controlled_generation``).

The model (``trained:world-diffusion``) learns pictures whose share of red per kind is planted,
from captions "a photo of a {kind}" that never name the colour. Part IV's pipeline then runs
unchanged: jobs and the generation manifest (:mod:`.generation`), zero-shot labels from an
image-text model (:mod:`.annotation`; here the mini-CLIP trained on the same world), generated
share per kind against the planted share, VRBS and Spearman's rho with bootstrap intervals
(:mod:`.bias`), CADS through its hook (:mod:`.cads`) and paired changes on shared seeds. Added
here: the amplification slope (least-squares slope of generated on planted share) with the same
bootstrap over images within each kind, and the grid over samplers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.planted_world import CAPTION_TEMPLATE, COLOURS, KINDS, spread_shares
from ..embeddings import embed_images
from ..models.base import ImageTextModel, TextToImageModel
from . import annotation
from . import bias as t2i_bias
from .cads import CADSConfig, with_cads
from .generation import ImageFiles, generate_to_disk, prompt_jobs, run_directory

#: the attribute Part IV counts, and its label prompts: each colour with every kind (a prompt ensemble)
TARGET = "red"
COLOUR_PROMPTS: dict[str, list[str]] = {colour: [CAPTION_TEMPLATE.format(f"{colour} {kind}") for kind in KINDS]
                                        for colour in COLOURS}
GROUP = "kind"


def planted_reference(model_spec: str) -> pd.Series:
    """The share of red per kind planted in the world that ``trained:world-diffusion?...`` learned
    (the world's "labour statistics"), as Part IV's reference Series."""
    from ..models.spec import parse_spec
    from ..models.trained import trained_options

    parsed = parse_spec(model_spec)
    if parsed.source != "trained":
        raise ValueError(f"model_spec must be the trained: spec of a model trained on a planted world, "
                         f"got {model_spec!r}")
    _, options = trained_options(parsed.name)
    if "share_spread" not in options:
        raise ValueError(f"{model_spec!r} was not trained on a planted world (it has no share_spread option)")
    return pd.Series(spread_shares(options["share_spread"]), name="reference share").rename_axis(GROUP)


def kind_jobs(per_kind: int, kinds: Sequence[str] = KINDS, seed: int = 0) -> pd.DataFrame:
    """``per_kind`` generation jobs per kind, prompt "a photo of a {kind}" (the training captions' words)."""
    return prompt_jobs(list(kinds), CAPTION_TEMPLATE.format("{kind}"), per_kind, seed=seed, field=GROUP,
                       articles="literal")


def labelled_pictures(annotator: ImageTextModel, pictures: np.ndarray, records: pd.DataFrame,
                      prompts: Mapping[str, Sequence[str]] = COLOUR_PROMPTS, batch_size: int = 64) -> pd.DataFrame:
    """``records`` (kind, colour) of real pictures (uint8 array) with the annotator's ``perceived`` colour
    and whether it is ``correct``: how far the annotation can be trusted, on pictures whose colour is known."""
    from PIL import Image

    images = [Image.fromarray(p) for p in pictures]
    perceived = annotation.zero_shot_labels(annotator, images, prompts, batch_size=batch_size, progress=False)
    return records[[GROUP, "colour"]].assign(perceived=perceived, correct=perceived == records["colour"].to_numpy())


def amplification_slope(shares, reference) -> float:
    """Least-squares slope of generated on reference share: 1 copies the spread, > 1 amplifies it, < 1 flattens it."""
    generated, planted = t2i_bias.checked_shares(shares, reference, min_size=2)
    if np.ptp(planted) == 0:
        raise ValueError("reference: every share is the same, so no slope can be fitted; plant a spread of shares")
    centred = planted - planted.mean()
    return float(centred @ (generated - generated.mean()) / (centred @ centred))


def bootstrap_slope(labels: pd.DataFrame, reference: pd.Series, target: str = TARGET, group: str = GROUP,
                    label: str = "perceived", n_boot: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict:
    """:func:`amplification_slope` with a percentile interval, resampling images within each group
    (binomial draws of the target count: the same resampling as :func:`.bias.bootstrap_bias_scores`).
    Against a reference whose shares are all the same (a world that plants no spread) no slope exists:
    every value is NaN, with ``note`` saying why, and the page goes on."""
    table = t2i_bias.compare_with_reference(t2i_bias.generated_shares(labels, target, group, label, excluded=()),
                                            reference)
    if len(table) < 2 or np.ptp(table["reference share"]) == 0:
        return {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_boot": 0,
                "note": "every group's reference share is the same: no slope against it"}
    rng = np.random.default_rng(seed)
    n = table["n_person"].to_numpy()
    draws = rng.binomial(n, table["generated share"].to_numpy(), size=(n_boot, len(n))) / n
    slopes = [amplification_slope(replicate, table["reference share"]) for replicate in draws]
    return {"estimate": amplification_slope(table["generated share"], table["reference share"]),
            **t2i_bias.percentile_interval(slopes, confidence)}


def bias_row(manifest: pd.DataFrame, reference: pd.Series, n_boot: int = 1000, seed: int = 0) -> dict:
    """VRBS, Spearman's rho and the amplification slope of one run, each with its 95% bootstrap interval
    (images resampled within each kind; rho's interval the one :mod:`vlbias.t2i.findings` judges the run by,
    :func:`vlbias.t2i.study.study_scores`)."""
    from .study import study_scores

    scores = study_scores(manifest, reference, n_boot, seed, target=TARGET, group=GROUP, excluded=())
    slope = bootstrap_slope(manifest, reference, n_boot=n_boot, seed=seed)
    row = {}
    for name, values in (("VRBS", scores["VRBS"]), ("rho", scores["spearman_rho"])):
        row.update({name: values.value, f"{name} low": values.low, f"{name} high": values.high})
    row.update({"slope": slope["estimate"], "slope low": slope["ci_low"], "slope high": slope["ci_high"]})
    return row


def sampler_grid(runs: Mapping[str, tuple[TextToImageModel, Mapping]], annotator: ImageTextModel, jobs: pd.DataFrame,
                 output_dir: str | Path, reference: pd.Series, batch_size: int = 64, n_boot: int = 1000,
                 seed: int = 0) -> tuple[pd.DataFrame, dict[str, dict]]:
    """Part IV's measures for each named run ``{name: (sampler, generation settings)}`` on the same jobs.

    For each run, in order: 1. generate ``jobs`` into its own folder (resumable; named by the
    sampler's weights and settings); 2. label the colour zero-shot with ``annotator`` and
    :data:`COLOUR_PROMPTS`; 3. embed the images with ``annotator`` (cached) for the diversity within a
    kind; 4. generated share per kind beside ``reference``, with VRBS, rho and slope bootstrapped.

    Returns the grid (one row per run: the measures with their bounds, mean diversity) and per run
    the ``manifest`` (with ``perceived``), ``run_dir``, ``table`` and ``diversity`` (per kind).
    Defined for ``04e_controlled_generation``.
    """
    results, rows = {}, []
    for name, (sampler, settings) in runs.items():
        weights = getattr(sampler, "model", sampler).weights_id  # CADS wraps the model it samples from
        label = ",".join(f"{key}={value}" for key, value in sorted(settings.items()))
        run_dir = run_directory(output_dir, weights, f"{sampler.spec.partition('+')[2] or 'plain'}_{label}")
        manifest = generate_to_disk(sampler, jobs, run_dir, batch_size=batch_size, progress=False, **settings)
        manifest["perceived"] = annotation.label_image_files(annotator, [run_dir / f for f in manifest.file],
                                                              COLOUR_PROMPTS, batch_size=batch_size, progress=False)
        files = ImageFiles(manifest, run_dir)
        files.identity += f"@{weights}"  # the manifest names the spec; retrained weights draw other images
        embeddings = embed_images(annotator, files, batch_size=batch_size, progress=False)
        diversity = t2i_bias.diversity_by_group(embeddings, manifest[GROUP])
        table = t2i_bias.compare_with_reference(
            t2i_bias.generated_shares(manifest, TARGET, GROUP, excluded=()), reference)
        results[name] = dict(manifest=manifest, run_dir=run_dir, table=table, diversity=diversity)
        cads = getattr(sampler, "config", None)  # a CADS sampler's settings; plain sampling is s = 0
        rows.append({"run": name, **settings, "noise_scale": cads.noise_scale if cads else 0.0,
                     **bias_row(manifest, reference, n_boot, seed),
                     "diversity": diversity.mean()})
    return pd.DataFrame(rows).set_index("run"), results


def paired_changes(results: Mapping[str, dict], baseline: str, reference: pd.Series, n_boot: int = 1000,
                   seed: int = 0) -> pd.DataFrame:
    """For every run other than ``baseline``: the change of VRBS and rho from the baseline (paired
    bootstrap over shared seeds, :func:`.bias.paired_bootstrap_change`) and of the mean diversity
    within a kind (mean over kinds of the per-kind differences, its interval a bootstrap over the kinds)."""
    rows = []
    base = results[baseline]
    for name, run in results.items():
        if name == baseline:
            continue
        change = t2i_bias.paired_bootstrap_change(base["manifest"], run["manifest"], reference, target=TARGET,
                                                  group=GROUP, excluded=(), n_boot=n_boot, seed=seed)
        for measure, values in change.iterrows():
            rows.append({"run": name, "measure": measure, **values.to_dict()})
        difference = (run["diversity"] - base["diversity"]).dropna().to_numpy()
        # the kinds resampled: the interval of the mean change over kinds (percentile)
        means = difference[np.random.default_rng(seed).integers(0, difference.size, (n_boot, difference.size))].mean(
            axis=1) if difference.size else np.array([np.nan])
        rows.append({"run": name, "measure": "diversity", "a": base["diversity"].mean(), "b": run["diversity"].mean(),
                     "change": difference.mean() if difference.size else np.nan,
                     **t2i_bias.percentile_interval(means, 0.95), "kinds higher": int((difference > 0).sum()),
                     "kinds": int(difference.size)})
    return pd.DataFrame(rows)


def guidance_runs(model: TextToImageModel, guidance_scales: Sequence[float], **generation) -> dict:
    """:func:`sampler_grid` runs of plain sampling at each classifier-free guidance scale (1: no guidance)."""
    return {f"guidance {g:g}": (model, {**generation, "guidance_scale": float(g)}) for g in guidance_scales}


def cads_runs(model: TextToImageModel, noise_scales: Sequence[float], cads: Mapping | None = None,
              **generation) -> dict:
    """:func:`sampler_grid` runs at each CADS noise scale s (s = 0 is plain sampling, the same images
    as the plain run with these settings); ``cads`` holds the other :class:`.CADSConfig` fields."""
    runs = {}
    for s in noise_scales:
        config = CADSConfig(noise_scale=float(s), **dict(cads or {}))
        runs[f"CADS s={s:g}"] = (model if config.is_off else with_cads(model, config), dict(generation))
    return runs


def picture_rows(results: Mapping[str, dict], run: str, per_kind: int = 8) -> np.ndarray:
    """The first ``per_kind`` images of every kind of one run of :func:`sampler_grid`, one row per kind (uint8)."""
    from PIL import Image

    manifest, run_dir = results[run]["manifest"], results[run]["run_dir"]
    rows = []
    for _, files in manifest.groupby(GROUP, sort=False)["file"]:
        rows.append(np.concatenate([np.asarray(Image.open(run_dir / name).convert("RGB")) for name in files[:per_kind]],
                                   axis=1))
    return np.concatenate(rows, axis=0)


def plot_generated_vs_planted(results: Mapping[str, dict], runs: Sequence[str], ax=None,
                              title: str = "Generated against planted share of red"):
    """Generated share of red per kind against the planted share, one series per run, with the
    diagonal (the model copies the world) and Wilson intervals. Steeper than the diagonal: amplified."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="generated = planted")
    for offset, run in zip(np.linspace(-0.008, 0.008, len(runs)), runs):
        table = results[run]["table"]
        x, y = table["reference share"] + offset, table["generated share"]
        ax.errorbar(x, y, yerr=[(y - table["ci_low"]).clip(lower=0), (table["ci_high"] - y).clip(lower=0)],
                    fmt="o", ms=4, elinewidth=0.8, capsize=0, label=run)
    ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), aspect="equal", xlabel="planted share of red (training pictures)",
           ylabel="generated share of red (annotated)", title=title)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def plot_grid_measures(grid: pd.DataFrame, x: str, axes=None, measures: Sequence[str] = ("slope", "rho", "diversity")):
    """Each measure of a :func:`sampler_grid` table against the column ``x``, with bootstrap intervals where given."""
    from ..book import axis_label, panels

    if axes is None:
        _, axes = panels(len(measures))
    for ax, measure in zip(np.atleast_1d(axes), measures):
        values = grid[measure]
        if f"{measure} low" in grid:
            errors = [(values - grid[f"{measure} low"]).clip(lower=0), (grid[f"{measure} high"] - values).clip(lower=0)]
            ax.errorbar(grid[x], values, yerr=errors, fmt="o-", capsize=3)
        else:
            ax.plot(grid[x], values, "o-")
        if measure == "slope":
            ax.axhline(1, color="grey", lw=0.8, ls="--")
        ax.set(xlabel=axis_label(x), ylabel=axis_label(measure))
    return axes
