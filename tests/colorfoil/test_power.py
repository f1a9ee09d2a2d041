"""The power Part II's planted pages declare (:mod:`vlbias.colorfoil.stages`): the closed form against a
simulation of the page's own paired bootstrap, the pairs a caption world gives against the benchmark built
from it, and the page's controls checked before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from vlbias.colorfoil import stages as cfs

TARGETS = ["blue", "black", "red", "pink", "yellow", "grey", "orange", "white", "green", "brown"]
PLANTED, CONTROL = "trained:caption-clip?colour_words=1", "trained:caption-clip?colour_words=0"


def _parameters(data_root: str, **more) -> dict:
    return {"data_root": data_root, "coco_caption_choice": "first_with_word", "flickr_caption_choice": "first_with_word",
            "max_pairs": None, "controls": {PLANTED: CONTROL}, **more}


@pytest.mark.parametrize("n", [40, 99])
def test_the_closed_form_power_matches_a_simulation_of_the_pages_paired_bootstrap(n):
    """Studies drawn from the effect the pages declare (the planted model right on 75% of pairs, the control on
    50%, pair by pair independently), each judged as the box judges it (the paired bootstrap interval of planted
    minus control, vlbias.colorfoil.findings): the share recovered is the closed form's power."""
    from vlbias.colorfoil.findings import _mean_minus
    from vlbias.stats import bootstrap_contrast, simulated_power

    strata = np.zeros(n)

    def study(rng):
        planted = (rng.random(n) < cfs.CONTROL_ACCURACY + cfs.COLOUR_EFFECT).astype(float)
        control = (rng.random(n) < cfs.CONTROL_ACCURACY).astype(float)
        _, _, contrast = bootstrap_contrast(_mean_minus(planted, 0.5), _mean_minus(control, 0.5), strata, n_boot=400,
                                            seed=int(rng.integers(2 ** 31)))
        return contrast.low, contrast.high

    simulated = simulated_power(study, 1000, seed=1)
    line = cfs.accuracy_contrast_power("claim", n, f"{n} pairs")
    # 1,000 studies: a standard error of at most 0.016
    assert line.power == pytest.approx(simulated, abs=0.045), (n, line.power, simulated)
    assert line.enough == (line.power >= 0.9) and (line.needed is None) == line.enough


def test_the_needed_size_reaches_the_required_power_and_one_pair_fewer_does_not():
    short = cfs.accuracy_contrast_power("claim", 40, "40 pairs")
    assert short.needed and not short.enough
    assert cfs.accuracy_contrast_power("claim", short.needed, "").power >= 0.9
    assert cfs.accuracy_contrast_power("claim", short.needed - 1, "").power < 0.9


def test_the_demo_world_gives_the_pages_the_power_they_need():
    from vlbias.profiles import find_project_root, load_profile

    demo = load_profile(find_project_root(), "demo")
    for name in ("02b_colorfoil_evaluation", "02d_colorfoil_generative"):
        parameters = {**demo.get("defaults", {}), **demo["notebooks"][name]}
        power = cfs.NOTEBOOKS[name].power(parameters)
        assert len(power) == 1 and power[0].power >= 0.9 and power[0].n >= 85, (name, power)
    assert cfs.NOTEBOOKS["02c_colorfoil_colour_model"].power({"epochs": 4, "control_epochs": 0})[0].power >= 0.9
    # no control, or the control the model itself, or the papers' data: nothing to power
    assert cfs.evaluation_power(_parameters("world", controls={})) == []
    assert cfs.evaluation_power(_parameters("world", controls={PLANTED: PLANTED})) == []
    assert cfs.evaluation_power(_parameters(None)) == []
    assert cfs.colour_model_power({"epochs": 4, "control_epochs": None}) == []


@pytest.mark.parametrize("choice", ["first_with_word", "first", "all"])
def test_the_pairs_a_world_gives_are_the_benchmarks_when_every_caption_names_the_colour(choice):
    """With every caption naming the main colour the expected count is exact: one caption a picture (five with
    "all"), in COCO's val2017 and in Flickr30k's val and test together."""
    from vlbias.colorfoil.construction import build_benchmark

    root = "world?eval_images=12&train_images=2&colour_share=1.0"
    parameters = _parameters(root, coco_caption_choice=choice, flickr_caption_choice=choice)
    datasets = cfs.evaluation_datasets(root, "val2017", ["val", "test"])
    built = {name: len(build_benchmark(dataset, targets=TARGETS, caption_choice=choice, progress=False))
             for name, dataset in datasets.items()}
    assert cfs.world_pairs(parameters) == built == {"coco": 12 * (5 if choice == "all" else 1),
                                                     "flickr30k": 12 * (5 if choice == "all" else 1)}
    assert cfs.world_pairs({**parameters, "max_pairs": 7}) == {"coco": 7, "flickr30k": 7}


def test_the_expected_pairs_of_a_partly_named_world_are_within_sampling_of_the_benchmarks():
    from vlbias.colorfoil.construction import build_benchmark

    root = "world?eval_images=60&train_images=2&colour_share=0.3"
    datasets = cfs.evaluation_datasets(root, "val2017", ["val", "test"])
    expected = cfs.world_pairs(_parameters(root))
    for name, dataset in datasets.items():
        p = 1 - 0.7 ** 5  # a picture keeps a caption when any of its five names the colour
        built = len(build_benchmark(dataset, targets=TARGETS, progress=False))
        assert abs(built - expected[name]) <= 3 * np.sqrt(60 * p * (1 - p)) + 1, (name, built, expected[name])


def test_more_held_out_pictures_leave_the_training_pictures_as_they_were():
    """The demo's pages read a world with more held-out pictures than the models' recipes name: train2017,
    where they train, is drawn first and does not change."""
    from vlbias.data import load_dataset

    small = load_dataset("coco", root="world?eval_images=4&train_images=6", split="train2017")
    large = load_dataset("coco", root="world?eval_images=9&train_images=6", split="train2017")
    assert small.records["captions"].tolist() == large.records["captions"].tolist()
    assert small.records["file"].tolist() == large.records["file"].tolist()
    assert [np.asarray(a).tobytes() for a in small.images()] == [np.asarray(b).tobytes() for b in large.images()]


def test_controls_are_scored_beside_their_models_and_a_bad_one_is_named():
    assert cfs.with_controls([PLANTED, "x"], {PLANTED: CONTROL}) == [PLANTED, "x", CONTROL]
    assert cfs.with_controls([PLANTED, CONTROL], {PLANTED: CONTROL}) == [PLANTED, CONTROL]
    assert cfs.with_controls([PLANTED], {}) == cfs.with_controls([PLANTED], None) == [PLANTED]
    assert cfs.with_controls([PLANTED], {PLANTED: PLANTED}) == [PLANTED]  # no contrast, said by the box
    with pytest.raises(ValueError, match="controls names \\['y'\\], which model_specs lacks"):
        cfs.with_controls([PLANTED], {"y": CONTROL})
    with pytest.raises(ValueError, match="controls must map"):
        cfs.with_controls([PLANTED], [CONTROL])
    with pytest.raises(ValueError, match="each control is a model spec"):
        cfs.with_controls([PLANTED], {PLANTED: None})
