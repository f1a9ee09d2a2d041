"""Planted-signal and placebo tests of Part I's paper pages (01a, 01b) on the demo's face world.

The demo's models are mini-CLIPs trained in the book (``trained:face-clip``) on the face world, whose
captions name White, Male and middle-aged pictures least, and whose White pictures vary most; each page
judges them against controls, the same recipe without one planted cause. Each test computes the page's
findings with the page's own functions, on the demo book's models and pictures (its cache: nothing is
trained again), and asserts the contrast, planted minus control, not the planted model's own gap: a gap
the control shares is no recovery. The placebo tests put the control's measurements in the planted
model's place (the page's design unchanged): nothing may come out recovered.
"""

import pytest

from vlbias import book
from vlbias import markedness as mk
from vlbias.data import load_dataset
from vlbias.markedness import controls as mk_controls
from vlbias.markedness import findings as mk_findings
from vlbias.profiles import notebook_parameters, plan_run

PLANTED, CONTROL = "trained:face-clip", "trained:face-clip?uniform_named=0.5"
NO_VARIETY = "trained:face-clip?world_varied_race_variety=0.2"


def _page(demo_book, name):
    """The demo profile's parameters of page ``name``: the pictures and controls the page measured."""
    return notebook_parameters(demo_book.project, name, plan_run(demo_book.project, "demo", only=[name]))


def _unmarked(spec, p):
    person, prompts = mk.prompt_set()
    dataset = load_dataset("fairface", root=mk_controls.control_data_root(p["data_root"], PLANTED, spec), split=p["split"])
    return mk_controls.unmarked_sample(spec, dataset, prompts, person, device="cpu")


def _embedded(spec, p):
    dataset = load_dataset("fairface", root=mk_controls.control_data_root(p["data_root"], PLANTED, spec), split=p["split"])
    return mk_controls.embedding_sample(spec, dataset, device="cpu")


@pytest.mark.slow
def test_01b_recovers_the_planted_reporting_beyond_its_control_and_the_placebo_nothing(demo_book, demo_cache):
    p = _page(demo_book, "01b_markedness")
    assert p["control_specs"] == [CONTROL]
    planted, control = _unmarked(PLANTED, p), _unmarked(CONTROL, p)
    published = mk.published_as_unmarked(book.published("markedness_wolfe2022"))
    found = mk_findings.unmarked_findings(PLANTED, planted, {CONTROL: control}, published, n_boot=1000)
    # every family: the planted default group's gap exceeds the control's on the same pictures, beyond the
    # paired interval (the machine of 2026-12-07: race +19.6 [+14.4, +24.0], gender +21.5 [+19.3, +23.8], age
    # +13.1 [+11.1, +15.2] points), while the control keeps a gender gap of its own the world does not plant
    assert [f.verdict for f in found] == ["recovered"] * 3, [(f.claim, f.contrast) for f in found]
    for row in found:
        assert row.estimates["contrast"].low > 0.05, (row.claim, row.contrast)
    # placebo: the control's flags in the planted model's place, against itself and against the planted model
    for model, against in ((control, control), (control, planted)):
        placebo = mk_findings.unmarked_findings(PLANTED, model, {CONTROL: against}, published, n_boot=1000)
        assert [f.verdict for f in placebo] == ["not recovered"] * 3, [(f.claim, f.contrast) for f in placebo]


@pytest.mark.slow
def test_01a_recovers_the_planted_variety_against_the_control_without_it_and_the_placebo_nothing(demo_book, demo_cache):
    """The variety the world plants (White pictures vary 0.8, the others 0.2) lowers White's self-similarity
    against the lowest other race's, beyond the same recipe trained and measured on a world without it.

    Not asserted: the reporting row (against the uniform control), whose size depends on the trained
    weights, the same bit for bit on one machine but not across CPUs (+0.049 [+0.026, +0.072] on the machine
    of 2026-12-07); the page reports it either way."""
    p = _page(demo_book, "01a_self_similarity")
    assert p["control_specs"] == [CONTROL, NO_VARIETY]
    planted, uniform, even = (_embedded(spec, p) for spec in (PLANTED, CONTROL, NO_VARIETY))
    assert even.identity != planted.identity == uniform.identity  # the variety control is measured on its own world
    names = p["model_names"]
    found = mk_findings.self_similarity_findings(PLANTED, planted, {CONTROL: uniform, NO_VARIETY: even}, names=names,
                                                 n_boot=1000)
    variety = next(f for f in found if f.control_spec == NO_VARIETY)
    assert variety.verdict == "recovered" and variety.estimates["contrast"].low > 0.02, variety.contrast
    assert "independent bootstrap" in variety.estimates["contrast"].how
    assert [f.verdict for f in found if f.key == "female_more"] == ["not planted"]
    # placebo: the control without variety measured in the planted model's place recovers no variety
    placebo = mk_findings.self_similarity_findings(PLANTED, even, {CONTROL: even, NO_VARIETY: even}, names=names,
                                                   n_boot=1000)
    assert {f.verdict for f in placebo if f.key == "white_least"} == {"not recovered"}


@pytest.mark.slow
def test_01d_recovers_the_planted_reporting_in_a_captioners_words_and_the_placebo_nothing(demo_book, demo_cache):
    """01d's captioners (small LLaVAs trained on the face world's captions, planted reporting and the uniform
    control): by likelihood and in their descriptions, the planted one leaves White, Male and the middle-aged
    unnamed beyond the control on the same faces; with the control's readings in its place, nothing is
    recovered. (Summed log-likelihood, 01d's demo score, leaves age unmarked by construction: "cannot test".)"""
    from vlbias.markedness import generative as gen
    from vlbias.markedness.groups import sample_per_group

    p = _page(demo_book, "01d_generative_markedness")
    planted_spec, control_spec = "trained:face-captioner", "trained:face-captioner?uniform_named=0.9"
    assert p["control_specs"] == [control_spec]
    dataset = load_dataset("fairface", root=p["data_root"], split=p["split"])
    positions = sample_per_group(dataset.records, list(mk.FAMILIES), p["images_per_group"], seed=p["seed"])
    person, prompts = mk.prompt_set(p["prompt_prefix"], p["oldest_age_wording"])
    reading = dict(prompts=prompts, person_prompt=person, score=p["score"], likelihood_prompt=p["likelihood_prompt"],
                   describe_prompt=p["describe_prompt"], max_new_tokens=p["max_new_tokens"], batch_size=p["batch_size"],
                   device="cpu")
    identity = mk_controls.faces_identity(dataset, p["images_per_group"], p["seed"])
    images, records = dataset.images(positions), dataset.records.iloc[positions]
    likely, described = mk_controls.generative_samples(planted_spec, images, records, identity, **reading)
    control_likely, control_described = mk_controls.generative_samples(control_spec, images, records, identity, **reading)
    continues = gen.continues_person_prompt(prompts, person)["age"]

    def verdicts(model, against, words):
        if words:
            return [f.verdict for f in mk_findings.description_findings(planted_spec, model, {control_spec: against})]
        return [f.verdict for f in mk_findings.likelihood_findings(planted_spec, model, {control_spec: against},
                                                                   score=p["score"], age_continues_person=continues)]

    summed_age = "cannot test" if p["score"] == "sum" and continues else "recovered"
    assert verdicts(likely, control_likely, False) == ["recovered", "recovered", summed_age]
    assert verdicts(described, control_described, True) == ["recovered"] * 3
    for words, (model, against) in ((False, (control_likely, likely)), (True, (control_described, described)),
                                    (True, (control_described, control_described))):
        assert set(verdicts(model, against, words)) <= {"not recovered", "cannot test"}
