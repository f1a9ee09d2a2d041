"""The power of Part IV's planted contrasts, simulated from the worlds' parameters.

A page that trains a model on a planted world judges each planted claim as the planted model's statistic
minus its control's (:mod:`vlbias.findings`). How often it would find a planted cause follows from the
world's own parameters (the shares it plants) and the number of images, under a stated assumption
about how much of the planted shares reaches the labels: the **fidelity** ``f``, the share of the planted
departure from uniform that the model draws and the annotator reads back. The labelled share of red in a
profession planted at ``p`` is taken as ``0.5 + f (p − 0.5)``, what the world plants with ``share_scale
= f`` (:func:`vlbias.t2i.profession_world.profession_table`); the tint and the shade likewise
(:func:`~vlbias.t2i.profession_world.age_shares`, :func:`~vlbias.t2i.profession_world.skin_shares` at
``share_scale = f``). ``f = 1``: the model draws the planted shares and the annotator reads every colour
right; the pages print the fidelity their images show beside the one assumed
(:func:`vlbias.t2i.study.share_slope`).

Each simulated study draws every image independently (binomial or multinomial counts per profession),
for the planted model and for its control (uniform shares), bootstraps the difference of the claim's
statistic within each profession as the page does, and counts the studies whose interval lies above 0
(:func:`vlbias.stats.simulated_power`, vectorised here over studies). The pages pair the planted model's
image with the control's from the same seed, which can only narrow the interval when the two go together:
the power is conservative in that respect.
"""

from __future__ import annotations

import math

import numpy as np

#: simulated studies per power, and bootstrap draws per simulated study
STUDIES = 400
DRAWS = 200
#: the smallest fidelity Part IV's profession pages (04a-04c) and 04d are built to detect: the share of
#: the planted departure from uniform that the model draws and the annotator reads back (the demo's images
#: show about 0.4 for the colour; 04b and 04d print theirs)
PROFESSION_FIDELITY = 0.3
#: the same for 04e's world-diffusion model on the twelve kinds (its amplification slope at guidance 3 is
#: about 1; without guidance about 0.4)
WORLD_FIDELITY = 0.5


def _rank_rows(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=-1)


def _rho(values: np.ndarray, reference_ranks: np.ndarray) -> np.ndarray:
    """Spearman's ρ of every row (last axis) with fixed reference ranks; NaN where a row is constant."""
    ranks = _rank_rows(values)
    ranks = ranks - ranks.mean(axis=-1, keepdims=True)
    other = reference_ranks - reference_ranks.mean()
    scale = np.sqrt((ranks ** 2).sum(axis=-1) * (other ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, (ranks @ other) / np.where(scale > 0, scale, 1.0), np.nan)


def labelled_shares(planted, fidelity: float) -> np.ndarray:
    """The labelled shares assumed for planted shares ``planted`` at ``fidelity``: ``0.5 + f (p − 0.5)``."""
    if not 0 <= fidelity <= 1:
        raise ValueError(f"fidelity must lie in [0, 1] (the share of the planted departure the labels keep), "
                         f"got {fidelity!r}")
    return 0.5 + float(fidelity) * (np.asarray(planted, dtype=float) - 0.5)


def ranking_recoveries(planted, images: int, fidelity: float, studies: int = STUDIES, draws: int = DRAWS,
                       seed: int = 0, alpha: float = 0.05) -> np.ndarray:
    """For ``studies`` simulated studies, whether the interval of ρ(planted) − ρ(control) lies above 0:
    ``images`` images per profession (or kind), the planted model's labels red with
    :func:`labelled_shares` ``(planted, fidelity)``, the control's with a half everywhere, each resampled
    within its profession ``draws`` times (the percentile interval at ``1 − alpha``); ρ against the
    planted shares."""
    planted = np.asarray(planted, dtype=float)
    if planted.ndim != 1 or planted.size < 3:
        raise ValueError("planted must give the planted share of at least three professions (a 1-D array)")
    if images < 1:
        raise ValueError(f"images must be at least 1 per profession, got {images!r}")
    rng = np.random.default_rng(seed)
    reference = _rank_rows(planted)
    shares = labelled_shares(planted, fidelity)
    found = np.zeros(studies, dtype=bool)
    for start in range(0, studies, 100):  # 100 studies at a time: bounded memory
        size = min(100, studies - start)
        drawn = {name: rng.binomial(images, np.broadcast_to(p, (size, planted.size))) / images
                 for name, p in (("planted", shares), ("control", np.full(planted.size, 0.5)))}
        contrast = 0.0
        for name in ("planted", "control"):
            resampled = rng.binomial(images, np.broadcast_to(drawn[name][:, None, :], (size, draws, planted.size))) / images
            contrast = contrast + (1 if name == "planted" else -1) * _rho(resampled, reference)
        low = np.nanquantile(contrast, alpha / 2, axis=1)
        found[start:start + size] = low > 0
    return found


def _remembered(what: str, compute, **inputs) -> float:
    """``compute()``, kept on disk under ``<cache>/power/`` by ``what`` and ``inputs`` (a simulation under a
    fixed seed gives the same number every time: a page's banner, the plan and a rerun read it)."""
    import hashlib
    import json

    from ..cache import write_atomically
    from ..paths import cache_dir

    key = hashlib.sha256(json.dumps({"what": what, "version": POWER_VERSION, **inputs}, sort_keys=True,
                                    default=str).encode()).hexdigest()[:20]
    path = cache_dir() / "power" / f"{key}.json"
    try:
        return float(json.loads(path.read_text())["power"])
    except (OSError, ValueError, KeyError):
        pass
    value = float(compute())
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"what": what, **inputs, "power": value}, default=str).encode())
    return value


#: bump when the same inputs would simulate another power
POWER_VERSION = 1


def ranking_power(planted, images: int, fidelity: float, studies: int = STUDIES, draws: int = DRAWS,
                  seed: int = 0) -> float:
    """The share of simulated studies that recover the ranking (:func:`ranking_recoveries`), kept on disk
    once simulated."""
    planted = [round(float(p), 6) for p in np.asarray(planted, dtype=float)]
    return _remembered("ranking", lambda: ranking_recoveries(planted, images, fidelity, studies, draws, seed).mean(),
                       planted=planted, images=int(images), fidelity=float(fidelity), studies=studies, draws=draws,
                       seed=seed)


def age_tint_power(age_peak: float, images: int, fidelity: float, studies: int = STUDIES, draws: int = DRAWS,
                   seed: int = 0) -> float:
    """The share of simulated studies that recover 04d's age claim (:func:`age_tint_recoveries`), kept on
    disk once simulated."""
    return _remembered("age tint", lambda: age_tint_recoveries(age_peak, images, fidelity, studies, draws, seed).mean(),
                       age_peak=float(age_peak), images=int(images), fidelity=float(fidelity), studies=studies,
                       draws=draws, seed=seed)


def needed_images(power_at, start: int, required: float = 0.9, most: int = 1000) -> int | None:
    """The fewest images per group at which ``power_at(n)`` reaches ``required``, searched from ``start``
    by doubling and then halving the step (power grows with n); ``None`` beyond ``most``."""
    low, high = start, start
    while power_at(high) < required:
        low, high = high, high * 2
        if high > most:
            return None
    while high - low > max(1, low // 20):
        middle = (low + high) // 2
        if power_at(middle) >= required:
            high = middle
        else:
            low = middle
    return high


def age_tint_recoveries(age_peak: float, images: int, fidelity: float, studies: int = STUDIES, draws: int = DRAWS,
                        seed: int = 0, alpha: float = 0.05) -> np.ndarray:
    """04d's age claim in ``studies`` simulated studies: ``images`` pictures with a person, each drawn in an
    age band with :func:`~vlbias.t2i.profession_world.age_shares` at ``share_scale = fidelity`` (the
    planted model) or uniformly (the control); the statistic is the 25-45 share minus the highest other
    band's, and a study recovers the claim where the bootstrap interval of planted minus control lies
    above 0."""
    from .profession_world import age_shares

    probabilities = np.array(list(age_shares(fidelity, age_peak).values()))
    middle = list(age_shares(fidelity, age_peak)).index("25-45")
    rng = np.random.default_rng(seed)

    def statistic(counts: np.ndarray) -> np.ndarray:
        shares = counts / counts.sum(axis=-1, keepdims=True)
        return shares[..., middle] - np.delete(shares, middle, axis=-1).max(axis=-1)

    found = np.zeros(studies, dtype=bool)
    for study in range(studies):
        contrast = 0.0
        for sign, p in ((1, probabilities), (-1, np.full(probabilities.size, 1 / probabilities.size))):
            counts = rng.multinomial(images, p)
            contrast = contrast + sign * statistic(rng.multinomial(images, counts / images, size=draws))
        found[study] = np.quantile(contrast, alpha / 2) > 0
    return found


def light_shade_se(light: float, images_chosen: int, images_other: int) -> float:
    """The standard error of 04d's light-shade contrast: (light share of the chosen professions minus the
    others') planted minus control, four independent proportions (the others and the control drawn at a
    third: :func:`vlbias.stats.rate_contrast_se`)."""
    from ..stats import rate_contrast_se

    third = 1 / 3
    return rate_contrast_se((light, images_chosen), (third, images_other), (third, images_chosen),
                            (third, images_other))


def light_shade_effect(light_share: float, fidelity: float) -> float:
    """04d's planted light-shade contrast at ``fidelity``: the chosen professions' light share at
    ``share_scale = fidelity`` minus a third (the others' and the control's are a third)."""
    from .profession_world import LIGHT_PROFESSIONS, skin_shares

    return skin_shares(LIGHT_PROFESSIONS[0], fidelity, light_share)["light (I-II)"] - 1 / 3


def simulated_light_power(light_share: float, images_chosen: int, images_other: int, fidelity: float,
                          studies: int = 4000, seed: int = 0, alpha: float = 0.05) -> float:
    """An independent check of the closed form (:func:`light_shade_se`): binomial studies of the four
    shares, recovered where the normal interval of the contrast lies above 0."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    light = light_shade_effect(light_share, fidelity) + 1 / 3
    third = 1 / 3
    counts = [(light, images_chosen), (third, images_other), (third, images_chosen), (third, images_other)]
    shares = [rng.binomial(n, p, size=studies) / n for p, n in counts]
    contrast = (shares[0] - shares[1]) - (shares[2] - shares[3])
    se = np.sqrt(sum(s * (1 - s) / n for s, (_, n) in zip(shares, counts)))
    return float(np.mean(contrast - norm.ppf(1 - alpha / 2) * se > 0))


def binomial_tolerance(power: float, studies: int, sigmas: float = 4.0) -> float:
    """How far two simulated powers of ``studies`` studies each may differ by chance (``sigmas`` standard
    errors of their difference)."""
    return sigmas * math.sqrt(2 * max(power * (1 - power), 0.01) / studies)
