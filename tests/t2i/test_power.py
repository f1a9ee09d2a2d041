"""The power of Part IV's planted contrasts (``vlbias.t2i.power``), against an independent simulation and
closed forms, and the power each demo page declares (``vlbias.t2i.stages``)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vlbias import profiles
from vlbias.stages import REQUIRED_POWER
from vlbias.stats import needed_size, normal_power
from vlbias.t2i import bias as t2i_bias
from vlbias.t2i import power
from vlbias.t2i.study import StudyRun, rho_contrast

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = t2i_bias.reference_shares()


def independent_power(reference: pd.Series, images: int, fidelity: float, studies: int, seed: int = 1) -> float:
    """The ranking contrast's power by another route: labelled images drawn one by one, the page's own
    contrast (:func:`vlbias.t2i.study.rho_contrast`: stratified bootstrap weights, 1,000 draws) per study."""
    rng = np.random.default_rng(seed)
    planted = 0.5 + fidelity * (reference - 0.5)
    professions = np.repeat(reference.index.to_numpy(), images)
    seeds = np.tile(np.arange(images), len(reference))
    found = 0
    for study in range(studies):
        runs = []
        for shares in (np.repeat(planted.to_numpy(), images), np.full(professions.size, 0.5)):
            perceived = np.where(rng.random(professions.size) < shares, "female", "male")
            labels = pd.DataFrame({"profession": professions, "seed": seeds, "perceived": perceived})
            runs.append(StudyRun("x", "plain", None, None, labels, {}, "", seed=study))
        found += rho_contrast(*runs, reference=reference)[2].low > 0
    return found / studies


def test_the_ranking_power_agrees_with_an_independent_simulation_of_the_pages_contrast():
    reference = REFERENCE.iloc[::2]  # 20 professions: a quicker independent route
    simulated = power.ranking_power(reference.to_numpy(), 10, 0.4, studies=400)
    independent = independent_power(reference, 10, 0.4, studies=150)
    assert 0.3 < simulated < 0.9  # a regime where the two can disagree
    assert abs(simulated - independent) < power.binomial_tolerance(simulated, 150, sigmas=3)


def test_the_ranking_power_is_the_false_alarm_rate_without_a_planted_cause_and_grows_with_the_images():
    planted = REFERENCE.to_numpy()
    assert power.ranking_recoveries(planted, 24, 0.0, studies=400).mean() <= 0.05
    powers = [power.ranking_power(planted, n, 0.3, studies=200) for n in (4, 16, 48)]
    assert powers == sorted(powers) and powers[-1] > 0.95
    with pytest.raises(ValueError, match="fidelity must lie in"):
        power.labelled_shares(planted, 1.5)
    with pytest.raises(ValueError, match="at least three professions"):
        power.ranking_recoveries([0.2, 0.8], 10, 0.5)


def test_the_light_shade_closed_form_agrees_with_a_simulation_and_the_age_tint_with_its_limits():
    effect = power.light_shade_effect(0.9, 0.3)
    assert effect == pytest.approx(0.3 * (0.9 - 1 / 3))
    for chosen, others in ((160, 320), (256, 512)):
        closed = normal_power(effect, power.light_shade_se(effect + 1 / 3, chosen, others))
        assert power.simulated_light_power(0.9, chosen, others, 0.3) == pytest.approx(closed, abs=0.03)
    assert power.age_tint_recoveries(0.85, 480, 0.0, studies=300).mean() <= 0.05
    assert power.age_tint_recoveries(0.85, 480, 0.3, studies=100).mean() == 1.0


def test_needed_images_finds_the_closed_forms_size():
    effect, spread = 0.1, 0.5
    at = lambda n: normal_power(effect, spread / np.sqrt(n))  # noqa: E731
    exact = needed_size(effect, spread / np.sqrt(20), 20, REQUIRED_POWER)
    found = power.needed_images(at, 20)
    assert at(found) >= REQUIRED_POWER and exact <= found <= exact * 1.06
    assert power.needed_images(lambda n: 0.0, 10, most=100) is None


def demo(name: str) -> dict:
    return dict(profiles.notebook_parameters(ROOT, name, profiles.plan_run(ROOT, "demo", [name])))


@pytest.mark.parametrize("name", ["04a_generation", "04b_annotation_and_metrics", "04c_cads", "04d_extensions",
                                  "04e_controlled_generation"])
def test_each_demo_page_declares_the_power_of_its_planted_contrasts_and_reaches_it(name):
    from vlbias.plan import declaration

    lines = declaration(name).power(demo(name))
    assert lines and all(line.enough and line.needed is None for line in lines), lines
    assert all(line.method and line.n_text and line.effect_text for line in lines)


def test_a_page_without_a_control_or_a_planted_cause_declares_no_power():
    from vlbias.t2i.stages import controlled_power, extension_power, ranking_power

    page = demo("04b_annotation_and_metrics")
    assert ranking_power({**page, "control_spec": None}) == []
    assert ranking_power({**page, "control_spec": page["t2i_spec"]}) == []
    assert ranking_power({**page, "t2i_spec": page["control_spec"]}) == []  # share_scale=0 plants nothing
    assert ranking_power({**page, "t2i_spec": "CompVis/stable-diffusion-v1-4"}) == []
    assert extension_power({**demo("04d_extensions"), "control_spec": None}) == []
    assert controlled_power({**demo("04e_controlled_generation"), "control_spec": None}) == []
    short = ranking_power({**page, "images_per_profession": 4})[0]
    assert not short.enough and short.needed > 4 and short.why
