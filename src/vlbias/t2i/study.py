"""One VRBS and one Spearman's ρ per model and setting: the study's images labelled once, on disk.

04b measures a model's occupational bias on the study's images (04a draws them); 04c compares the
same model with others and with CADS; the model card (:mod:`vlbias.audit`) reports it again. Each
reads :func:`study_run`, which draws the study's jobs into a folder named by the jobs and the sampler
(:func:`vlbias.t2i.runs.study_folder`: resumable, shared by every page that asks for the same
images), labels them with the setting's annotator and computes VRBS and ρ with their bootstrap
intervals, once: the labels and the scores are cached under ``<cache>/t2i-studies/<key>/``, the key
made of everything that produced them (the model's spec and checkpoint, the jobs, the sampler and its
settings, the annotator, its precision and prompts, the reference shares and the bootstrap). A page,
another page and the card asking for the same setting read the same numbers.

The intervals: images resampled within each profession (:func:`vlbias.stats.stratified_weights`,
:data:`SCORE_DRAWS` draws under the setting's seed); ρ's is the percentile interval, VRBS's the
standard interval (:func:`vlbias.t2i.bias.vrbs_interval` says why). The same weights resample a
control drawn on the same jobs (:func:`rho_contrast`), so the model's ρ in a contrast is the ρ this
module caches, to the last digit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .bias import NO_PERSON

#: bump when the same setting would label or score differently
STUDY_VERSION = 1
#: bootstrap draws behind every cached VRBS and ρ (fixed, so that every page reads the same interval)
SCORE_DRAWS = 1000
#: the measures a study caches
MEASURES = ("VRBS", "spearman_rho")


# --------------------------------------------------------------------------- the setting


def _prompts(prompts: Mapping) -> tuple:
    if not prompts:
        raise ValueError("gender_prompts must name at least one label with its prompts")
    return tuple((str(label), tuple([value] if isinstance(value, str) else [str(v) for v in value]))
                 for label, value in prompts.items())


@dataclass(frozen=True)
class StudySetting:
    """Everything besides the model that makes a study's labelled images: the jobs (template, images
    per profession, the source text's named cases or not, article rule, seed), the sampler's settings and
    the annotator (spec, precision, prompts). Built from a notebook's parameters by
    :meth:`from_parameters`."""

    prompt_template: str
    images_per_profession: int
    include_source_cases: bool
    seed: int
    num_inference_steps: int
    guidance_scale: float
    height: int | None
    width: int | None
    annotator_spec: str
    annotator_half: bool | None
    gender_prompts: tuple
    articles: str = "follow"

    #: the parameters a setting reads (04b's names), and the defaults of those a page may lack
    OPTIONAL = {"include_source_cases": True, "annotator_half": None, "prompt_articles": "follow"}

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], **changes) -> StudySetting:
        """The setting of a notebook's ``parameters`` (04b's names: ``prompt_template``,
        ``images_per_profession``, ``include_source_cases``, ``seed``, ``num_inference_steps``,
        ``guidance_scale``, ``height``, ``width``, ``annotator_spec``, ``annotator_half``,
        ``gender_prompts``, ``prompt_articles``), with ``changes`` (same names) applied. A missing
        parameter is one error naming it."""
        values = {**cls.OPTIONAL, **{k: v for k, v in parameters.items() if k in _PARAMETERS}, **changes}
        missing = [name for name in _PARAMETERS if name not in values]
        if missing:
            raise ValueError(f"the study setting needs the parameters {missing}; give them as 04b names them")
        per = int(values["images_per_profession"])
        if per < 1:
            raise ValueError(f"images_per_profession must be at least 1, got {values['images_per_profession']!r}")
        size = lambda v: None if v is None else int(v)  # noqa: E731
        return cls(str(values["prompt_template"]), per, bool(values["include_source_cases"]), int(values["seed"]),
                   int(values["num_inference_steps"]), float(values["guidance_scale"]), size(values["height"]),
                   size(values["width"]), str(values["annotator_spec"]),
                   None if values["annotator_half"] is None else bool(values["annotator_half"]),
                   _prompts(values["gender_prompts"]), str(values["prompt_articles"]))

    def jobs(self) -> pd.DataFrame:
        """The study's jobs (:func:`vlbias.t2i.runs.study_jobs`)."""
        from . import runs

        return runs.study_jobs(self.prompt_template, self.images_per_profession, seed=self.seed,
                               include_source_cases=self.include_source_cases, articles=self.articles)

    def generation(self) -> dict[str, Any]:
        """The pipeline settings ``generate_to_disk`` records (:func:`generation_settings`)."""
        return generation_settings(asdict(self))

    def prompts(self) -> dict[str, list[str]]:
        return {label: list(texts) for label, texts in self.gender_prompts}


#: the pipeline settings a study run records (:func:`generation_settings`); every other change is the jobs'
GENERATION_KEYS = ("num_inference_steps", "guidance_scale", "height", "width")


def generation_settings(parameters: Mapping[str, Any], **changes) -> dict[str, Any]:
    """The pipeline settings of a notebook's ``parameters`` (``num_inference_steps``, ``guidance_scale``,
    ``height``, ``width``; ``changes`` applied), as every page records them: whole steps and sizes, the
    guidance a float, so that two pages asking for the same images name the same folder."""
    values = {**{name: parameters[name] for name in GENERATION_KEYS},
              **changes}
    size = lambda v: None if v is None else int(v)  # noqa: E731
    return {"num_inference_steps": int(values["num_inference_steps"]), "guidance_scale": float(values["guidance_scale"]),
            "height": size(values["height"]), "width": size(values["width"])}


def study_jobs(parameters: Mapping[str, Any], **changes) -> pd.DataFrame:
    """The study's jobs of a notebook's ``parameters`` (``prompt_template``, ``images_per_profession``,
    ``seed``, and ``include_source_cases`` and ``prompt_articles`` where given; ``changes`` applied)."""
    from . import runs

    values = {**StudySetting.OPTIONAL, **parameters, **changes}
    return runs.study_jobs(values["prompt_template"], int(values["images_per_profession"]), seed=int(values["seed"]),
                           include_source_cases=bool(values["include_source_cases"]),
                           articles=str(values["prompt_articles"]))


def study_directory(parameters: Mapping[str, Any], spec: str, cads=None, **changes) -> Path:
    """Where ``spec`` draws the study of ``parameters`` (``output_dir`` and the jobs and settings above),
    plain or with CADS ``cads``: :func:`vlbias.t2i.runs.study_folder` under the model's folder."""
    from .generation import run_directory
    from .runs import study_folder

    generation = generation_settings(parameters, **{k: v for k, v in changes.items() if k in GENERATION_KEYS})
    jobs = study_jobs(parameters, **{k: v for k, v in changes.items() if k not in GENERATION_KEYS})
    config = None if cads is None or cads.is_off else cads
    return run_directory(parameters["output_dir"], spec, study_folder(jobs, generation, config))

_PARAMETERS = ("prompt_template", "images_per_profession", "include_source_cases", "seed", "num_inference_steps",
               "guidance_scale", "height", "width", "annotator_spec", "annotator_half", "gender_prompts",
               "prompt_articles")


# --------------------------------------------------------------------------- weighted shares, VRBS and rho


@dataclass
class ShareDesign:
    """A labelled run's images arranged for weighted statistics: ``professions`` (those with a reference
    share, in the reference's order), one stratum code per image (``strata``: its profession), whether it
    shows the target (``hits``) and a person (``person``), and the reference shares. Rows are the
    images of ``labels`` whose profession has a reference share, in their order."""

    professions: list[str]
    strata: np.ndarray
    hits: np.ndarray
    person: np.ndarray
    reference: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, labels: pd.DataFrame, reference: pd.Series, target: str = "female", group: str = "profession",
           label: str = "perceived", excluded=(NO_PERSON,)) -> ShareDesign:
        inside = labels[group].isin(reference.index).to_numpy()
        kept = labels[inside]
        professions = [name for name in reference.index if name in set(kept[group])]
        codes = pd.Categorical(kept[group], categories=professions).codes
        perceived = kept[label].astype(object).to_numpy()
        person = ~pd.Series(perceived).isin(list(excluded)).to_numpy() & pd.notna(perceived)
        return cls(professions, np.asarray(codes), (perceived == target) & person, person,
                   reference.loc[professions].to_numpy(dtype=float), np.flatnonzero(inside))

    def shares(self, weights: np.ndarray) -> np.ndarray:
        """``(B, professions)``: each profession's weighted share of the target among images with a person
        (NaN where a replicate weighs no image with a person)."""
        weights = np.asarray(weights, dtype=float)
        members = np.zeros((self.strata.size, len(self.professions)))
        members[np.arange(self.strata.size), self.strata] = 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            return (weights @ (members * self.hits[:, None])) / (weights @ (members * self.person[:, None]))

    def rho(self, weights: np.ndarray) -> np.ndarray:
        return spearman_rows(self.shares(weights), self.reference)

    def vrbs(self, weights: np.ndarray) -> np.ndarray:
        return vrbs_rows(self.shares(weights), self.reference)


def spearman_rows(values: np.ndarray, reference) -> np.ndarray:
    """Spearman's ρ of each row of ``values`` with ``reference`` (ties ranked by their average, as
    scipy's), over the columns a row has a value in; NaN where fewer than three remain or either side is
    constant."""
    from scipy.stats import rankdata

    values = np.atleast_2d(np.asarray(values, dtype=float))
    reference = np.asarray(reference, dtype=float)
    out = np.full(values.shape[0], np.nan)
    whole = np.isfinite(values).all(axis=1)

    def correlate(ranks: np.ndarray, other: np.ndarray) -> np.ndarray:
        ranks = ranks - ranks.mean(axis=-1, keepdims=True)
        other = other - other.mean()
        scale = np.sqrt((ranks ** 2).sum(axis=-1) * (other ** 2).sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(scale > 0, ranks @ other / np.where(scale > 0, scale, 1.0), np.nan)

    if whole.any() and values.shape[1] >= 3:
        out[whole] = correlate(rankdata(values[whole], axis=1), rankdata(reference))
    for row in np.flatnonzero(~whole):
        ok = np.isfinite(values[row])
        if ok.sum() >= 3:
            out[row] = correlate(rankdata(values[row, ok])[None, :], rankdata(reference[ok]))[0]
    return out


def vrbs_rows(values: np.ndarray, reference) -> np.ndarray:
    """VRBS (1 − mean |share − reference|) of each row, over the columns it has a value in."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    gaps = np.abs(values - np.asarray(reference, dtype=float)[None, :])
    with np.errstate(invalid="ignore"):
        counts = np.isfinite(gaps).sum(axis=1)
        return np.where(counts > 0, 1.0 - np.nansum(gaps, axis=1) / np.maximum(counts, 1), np.nan)


def study_scores(labels: pd.DataFrame, reference: pd.Series, n_boot: int = SCORE_DRAWS, seed: int = 0,
                 confidence: float = 0.95, target: str = "female", group: str = "profession",
                 excluded=(NO_PERSON,)) -> dict:
    """VRBS and Spearman's ρ of a labelled run against ``reference``, as :class:`vlbias.findings.Estimate` s
    (``{"VRBS": ..., "spearman_rho": ...}``) with ``note`` (why they are undefined, or ""): images
    resampled within each profession, ρ's interval the percentile interval (exactly as
    :func:`vlbias.stats.bootstrap_contrast` gives it on the same weights), VRBS's the standard one."""
    from ..findings import Estimate
    from ..stats import bootstrap_contrast, stratified_weights
    from .bias import bias_scores, compare_with_reference, generated_shares, unscorable_reason, vrbs_interval

    table = compare_with_reference(generated_shares(labels, target, group, excluded=excluded), reference)
    reason = unscorable_reason(table, labels[group].nunique())
    if reason:
        return {"VRBS": Estimate(float("nan"), how=reason), "spearman_rho": Estimate(float("nan"), how=reason),
                "note": reason}
    design = ShareDesign.of(labels, reference, target, group, excluded=excluded)
    how = f"bootstrap over {design.strata.size:,} images within their professions, {n_boot:,} draws, {confidence:.0%}"
    rho, _, _ = bootstrap_contrast(design.rho, None, design.strata, n_boot=n_boot, confidence=confidence, seed=seed,
                                   items="images")
    point = bias_scores(table)
    replicates = design.vrbs(stratified_weights(design.strata, n_boot, seed))
    interval = vrbs_interval(replicates, point["VRBS"], confidence)
    return {"VRBS": Estimate(point["VRBS"], interval["ci_low"], interval["ci_high"],
                             how=how.replace("bootstrap", "standard bootstrap")),
            "spearman_rho": Estimate(rho.value, rho.low, rho.high, how=rho.how.replace(
                "paired bootstrap", "bootstrap")), "note": ""}


# --------------------------------------------------------------------------- one study run, cached


@dataclass
class StudyRun:
    """A model's study images at one setting and sampler, labelled, with VRBS and ρ (:func:`study_run`).

    ``labels``: the manifest (one row per image, in job order) with the annotator's ``perceived`` label;
    ``scores``: ``{"VRBS": Estimate, "spearman_rho": Estimate}``; ``note``: why they are undefined, or "";
    ``key``: the cache entry's name; ``sampler``: "plain" or the CADS label."""

    spec: str
    sampler: str
    setting: StudySetting | None
    run_dir: Path | None
    labels: pd.DataFrame
    scores: dict
    key: str
    note: str = ""
    cads: dict | None = field(default=None, repr=False)
    #: the seed of the bootstraps behind the scores (the setting's)
    seed: int = 0

    def table(self) -> pd.DataFrame:
        """The scores as :func:`vlbias.t2i.bias.bootstrap_bias_scores` tables them (rows VRBS and
        spearman_rho; estimate, ci_low, ci_high, n_boot, and note where undefined)."""
        rows = [{"measure": name, "estimate": self.scores[name].value, "ci_low": self.scores[name].low,
                 "ci_high": self.scores[name].high, "n_boot": 0 if self.note else SCORE_DRAWS}
                for name in MEASURES]
        table = pd.DataFrame(rows).set_index("measure")
        if self.note:
            table["note"] = self.note
        return table

    @classmethod
    def from_labels(cls, spec: str, labels: pd.DataFrame, reference: pd.Series | None = None, seed: int = 0,
                    sampler: str = "plain") -> StudyRun:
        """A run of labels in hand (``profession``, ``seed``, ``perceived``; one row per image in job order),
        scored as :func:`study_run` scores it, without drawing or caching anything."""
        from .bias import reference_shares

        reference = reference_shares() if reference is None else reference
        scores = study_scores(labels, reference, SCORE_DRAWS, seed)
        note = scores.pop("note")
        return cls(spec, sampler, None, None, labels.reset_index(drop=True), scores, "", note, None, seed)

    def row(self, name: str) -> dict:
        """``{name: value, f"{name} low": ..., f"{name} high": ...}`` of one measure, for a page's table."""
        estimate = self.scores[name]
        return {name: estimate.value, f"{name} low": estimate.low, f"{name} high": estimate.high}


def _identity(manifest: pd.DataFrame) -> str:
    recipe = manifest.drop(columns=["job_id", "file", "perceived", "run_dir"], errors="ignore").to_csv(index=False)
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _reference_identity(reference: pd.Series) -> str:
    return hashlib.sha256(reference.round(6).to_csv().encode()).hexdigest()[:16]


def study_key(spec: str, setting: StudySetting, cads=None, reference: pd.Series | None = None) -> str:
    """The cache key of ``spec``'s study at ``setting`` (with CADS ``cads``, a :class:`CADSConfig`, or plain):
    everything the labels and scores depend on, hashed."""
    from .bias import reference_shares
    from .generation import _trained_key

    reference = reference_shares() if reference is None else reference
    parts = {"version": STUDY_VERSION, "spec": str(spec), "checkpoint": _trained_key(str(spec)),
             "setting": asdict(setting), "annotator_checkpoint": _trained_key(setting.annotator_spec),
             "cads": None if cads is None or cads.is_off else cads.as_dict(), "draws": SCORE_DRAWS,
             "reference": _reference_identity(reference)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _read(entry: Path, manifest: pd.DataFrame) -> tuple[pd.DataFrame, dict, str] | None:
    """The cached labels and scores of ``entry`` when they were made from exactly ``manifest``'s images."""
    from ..findings import Estimate

    try:
        stored = json.loads((entry / "scores.json").read_text())
    except (OSError, ValueError):
        return None
    if stored.get("images") != _identity(manifest):
        return None
    labels = pd.read_csv(entry / "labels.csv", dtype={"perceived": object}, keep_default_na=False,
                         na_values={"perceived": [""]})
    if len(labels) != len(manifest) or list(labels["file"]) != list(manifest["file"]):
        return None
    scores = {name: Estimate.from_record(stored["scores"][name]) for name in MEASURES}
    return manifest.assign(perceived=labels["perceived"].to_numpy()), scores, stored.get("note") or ""


def _resolve(value, load: Callable[[], Any]):
    """A model given, a zero-argument function giving one (called now), or ``load()``."""
    if value is None:
        return load()
    return value() if callable(value) and not hasattr(value, "spec") else value


def study_run(spec: str, parameters: Mapping[str, Any], *, cads=None, model=None, annotator=None,
              progress: bool = False, reference: pd.Series | None = None) -> StudyRun:
    """``spec``'s study at the setting of ``parameters`` (:meth:`StudySetting.from_parameters`; also read:
    ``output_dir``, ``batch_size``, ``annotation_batch_size``, ``device``, ``half``), plain or with CADS
    (``cads``: a :class:`~vlbias.t2i.cads.CADSConfig`; one that is off is plain sampling): the images
    drawn where missing (:func:`~vlbias.t2i.generation.generate_to_disk`, in
    :func:`~vlbias.t2i.runs.study_folder`), labelled by the setting's annotator, VRBS and ρ against
    ``reference`` (default :func:`~vlbias.t2i.bias.reference_shares`, the labour statistics) with their
    intervals. Computed once per setting: a second call, from this page, another page or the model card,
    reads the cache (without loading a model) while the images on disk are the ones it labelled.

    ``model`` and ``annotator``: the loaded models, or zero-argument functions loading them (the card's
    loader), used only when something must be drawn or labelled; by default the spec's loaders."""
    from ..cache import write_atomically
    from ..paths import cache_dir, one_builder
    from .bias import reference_shares
    from .generation import generate_to_disk, read_manifest

    reference = reference_shares() if reference is None else reference
    setting = StudySetting.from_parameters(parameters)
    config = None if cads is None or cads.is_off else cads
    jobs = setting.jobs()
    run_dir = study_directory(parameters, spec, config)
    key = study_key(spec, setting, config, reference)
    entry = cache_dir() / "t2i-studies" / key
    sampler = "plain" if config is None else config.label()

    def on_disk() -> pd.DataFrame:
        if not (run_dir / "manifest.csv").exists():
            return pd.DataFrame()
        manifest = read_manifest(run_dir)
        manifest = manifest[manifest["job_id"].astype(int) < len(jobs)].sort_values("job_id").reset_index(drop=True)
        return manifest if len(manifest) == len(jobs) else pd.DataFrame()

    def run(labels, scores, note) -> StudyRun:
        return StudyRun(spec, sampler, setting, run_dir, labels.assign(run_dir=str(run_dir)), scores, key, note,
                        None if config is None else config.as_dict(), setting.seed)

    manifest = on_disk()
    if len(manifest) and (found := _read(entry, manifest)):
        return run(*found)
    with one_builder(entry):  # another page building the same study waits here, then reads it
        manifest = on_disk()
        if len(manifest) and (found := _read(entry, manifest)):
            return run(*found)
        from ..models import load_image_text_model, load_text_to_image

        if not len(manifest):
            generator = _resolve(model, lambda: load_text_to_image(spec, device=parameters["device"],
                                                                   half=parameters["half"]))
            if config is not None:
                from .cads import with_cads

                generator = with_cads(generator, config)
            manifest = generate_to_disk(generator, jobs, run_dir, batch_size=int(parameters["batch_size"]),
                                        progress=progress, **setting.generation()).reset_index(drop=True)
        from .annotation import label_image_files

        labeller = _resolve(annotator, lambda: load_image_text_model(setting.annotator_spec, device=parameters["device"],
                                                                      half=setting.annotator_half))
        labels = manifest.assign(perceived=label_image_files(
            labeller, [run_dir / name for name in manifest["file"]], setting.prompts(),
            batch_size=int(parameters.get("annotation_batch_size") or 64), progress=progress))
        scores = study_scores(labels, reference, SCORE_DRAWS, setting.seed)
        note = scores.pop("note")
        entry.mkdir(parents=True, exist_ok=True)
        write_atomically(entry / "labels.csv", labels[["job_id", "file", "profession", "seed", "perceived"]]
                         .to_csv(index=False).encode())
        write_atomically(entry / "scores.json", json.dumps(
            {"spec": spec, "sampler": sampler, "images": _identity(manifest), "note": note,
             "scores": {name: scores[name].record() for name in MEASURES}}, indent=1).encode())
        return run(labels, scores, note)


# --------------------------------------------------------------------------- contrasts between two runs


def paired(model: StudyRun, control: StudyRun) -> bool:
    """Whether two runs drew the same jobs (profession and seed, in the same order): their images are
    then resampled together (a paired bootstrap)."""
    keys = ["profession", "seed"]
    return (len(model.labels) == len(control.labels)
            and model.labels[keys].reset_index(drop=True).equals(control.labels[keys].reset_index(drop=True)))


def rho_contrast(model: StudyRun, control: StudyRun | None, reference: pd.Series | None = None,
                 confidence: float = 0.95):
    """ρ of ``model``'s and ``control``'s labels against ``reference`` and their difference (model minus
    control), as :func:`vlbias.stats.bootstrap_contrast` gives them: paired where the two drew the same
    jobs (a replicate weighs an image of the model and the control's image from the same seed alike),
    resampled apart otherwise; :data:`SCORE_DRAWS` draws under the model's setting's seed. ``control``
    None: ``(model's ρ, None, None)``."""
    from ..stats import bootstrap_contrast
    from .bias import reference_shares

    reference = reference_shares() if reference is None else reference
    own = ShareDesign.of(model.labels, reference)
    if control is None:
        return bootstrap_contrast(own.rho, None, own.strata, n_boot=SCORE_DRAWS, confidence=confidence,
                                  seed=model.seed, items="images")
    theirs = ShareDesign.of(control.labels, reference)
    together = paired(model, control) and theirs.professions == own.professions
    return bootstrap_contrast(own.rho, theirs.rho, own.strata, None if together else theirs.strata,
                              n_boot=SCORE_DRAWS, confidence=confidence, seed=model.seed, items="images")


def share_slope(labels: pd.DataFrame, planted: pd.Series) -> float:
    """The least-squares slope of each profession's labelled share of the target on its planted share:
    1 when the model draws and the annotator reads the planted shares, 0 when nothing of them shows
    (the assumption behind the pages' power, :mod:`vlbias.t2i.power`, checked on the page)."""
    from .bias import compare_with_reference, generated_shares

    table = compare_with_reference(generated_shares(labels), planted)
    if len(table) < 2 or np.ptp(table["reference share"]) == 0:
        return float("nan")
    x, y = table["reference share"].to_numpy(), table["generated share"].to_numpy()
    x = x - x.mean()
    return float(x @ (y - y.mean()) / (x @ x))


# --------------------------------------------------------------------------- what the model card reads


def occupational_study(spec: str, parameters: Mapping[str, Any], *, model=None, annotator=None,
                       progress: bool = False):
    """04b's study of ``spec`` and of its control, and the claims 04b's box judges on them:
    ``(run, control_run, findings)``. ``parameters``: 04b's (``control_spec`` among them: the control's
    study is read too, unless it is ``spec`` itself, or None); ``model`` and ``annotator``: loaded models
    or zero-argument functions loading them (the model card's loader), used only where the cache lacks the
    labels. The page computes its rows with the same functions on the same cached labels: a card and the
    page cannot disagree."""
    from .findings import bias_findings

    run = study_run(spec, parameters, model=model, annotator=annotator, progress=progress)
    control_spec = parameters.get("control_spec")
    control = None
    if control_spec and control_spec != spec:
        control = study_run(control_spec, parameters, annotator=annotator, progress=progress)
    elif control_spec:
        control = run
    return run, control, bias_findings(run, control)


def guidance_change(spec: str, parameters: Mapping[str, Any], without: float = 1.0, *, model=None, annotator=None,
                    progress: bool = False) -> dict:
    """Classifier-free guidance's paired change of VRBS on ``spec``'s study at 04b's setting
    (``parameters``): the run at ``guidance_scale`` against the same jobs drawn at ``without`` (1: no
    guidance), images paired by profession and seed (:func:`vlbias.t2i.controls.paired_bias_comparison`,
    ``n_boot`` and ``seed`` of ``parameters``). The model card's guidance change; that function's summary."""
    from .bias import reference_shares
    from .controls import paired_bias_comparison

    guided = study_run(spec, parameters, model=model, annotator=annotator, progress=progress)
    unguided = study_run(spec, {**parameters, "guidance_scale": without}, model=model, annotator=annotator,
                         progress=progress)
    summary, _ = paired_bias_comparison(unguided.labels, guided.labels, reference_shares(),
                                        n_boot=int(parameters["n_boot"]), seed=int(parameters["seed"]))
    return summary
