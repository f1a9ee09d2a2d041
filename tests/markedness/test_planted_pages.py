"""Planted-signal tests of Part I's paper pages (01a, 01b) on the demo's face world.

The demo's models are mini-CLIPs trained in the book (``trained:face-clip``) on the face world,
whose captions name White, Male and middle-aged pictures least, and whose White pictures vary
most. Each test computes the page's headline measure on the demo book's own models and pictures
(its cache: nothing is trained again) and checks that it recovers the planted cause beyond its
interval, and that the uniform-reporting control shows none.
"""

import numpy as np
import pytest

from vlbias import markedness as mk
from vlbias.data import load_dataset
from vlbias.embeddings import embed_images, embed_texts
from vlbias.models import load_image_text_model
from vlbias.stats import rate_difference_interval

PLANTED, CONTROL = "trained:face-clip", "trained:face-clip?uniform_named=0.5"


def _flags(spec, dataset):
    model = load_image_text_model(spec, device="cpu")
    embeddings = embed_images(model, dataset, progress=False)
    person, prompts = mk.prompt_set()
    flags = mk.unmarked_flags(embeddings, lambda texts: embed_texts(model, texts, progress=False), prompts, person)
    return embeddings, flags


def _gap(records, flags, family, groups):
    """Unmarked-rate gap (share) of ``groups`` over every other group of ``family``, Newcombe interval."""
    inside = records[family].isin(groups).to_numpy()
    unmarked = flags[family].to_numpy()
    return rate_difference_interval(int(unmarked[inside].sum()), int(inside.sum()), int(unmarked[~inside].sum()),
                                    int((~inside).sum()))


@pytest.mark.slow
def test_01b_unmarked_rates_recover_the_planted_reporting_bias(demo_cache):
    dataset = load_dataset("fairface", root="world", split="val")
    records = dataset.records
    _, planted = _flags(PLANTED, dataset)
    _, control = _flags(CONTROL, dataset)
    # Figure 4: White, named least, is unmarked most often, above every other race's interval
    race = mk.unmarked_by(records, planted, "race", "race").set_index("group")
    others = race.drop(index="White")
    assert race.loc["White", "ci_low_%"] > others["ci_high_%"].max()
    # the control names every race equally often: White is not singled out beyond the other races
    # (its pictures still vary most, and a picture that matches every label less surely is unmarked a
    # little more often: the control's White gap is small, the planted one is large; checked below)
    control_race = mk.unmarked_by(records, control, "race", "race").set_index("group")
    assert control_race.loc["White", "ci_low_%"] <= control_race.drop(index="White")["ci_high_%"].max()
    # every family: the planted default groups are unmarked more often than the rest, beyond the
    # interval (by at least 10 points for race and gender, 5 for the four middle ages against the five
    # others), and by more than under the control (whose drawing alone may favour a group)
    for family, default, margin in (("race", ["White"], 0.1), ("gender", ["Male"], 0.1),
                                    ("age", ["20-29", "30-39", "40-49", "50-59"], 0.05)):
        gap, low, high = _gap(records, planted, family, default)
        assert low > margin, (family, gap, low, high)
        control_gap, control_low, control_high = _gap(records, control, family, default)
        assert low > control_high, (family, (gap, low, high), (control_gap, control_low, control_high))


@pytest.mark.slow
def test_01a_the_group_captions_leave_unnamed_is_the_least_self_similar(demo_cache):
    """The planted-reporting mini-CLIP embeds White, the group its captions leave unnamed, least
    self-similarly of the seven (a smaller effect than the variety's below: no significance is
    claimed for it); the uniform-reporting control, on the same pictures, does not."""
    dataset = load_dataset("fairface", root="world", split="val")

    def by_race(spec):
        embeddings = embed_images(load_image_text_model(spec, device="cpu"), dataset, progress=False)
        return mk.self_similarity_by_group(dataset.records, embeddings, "race").set_index("race")["self_similarity"]

    assert by_race(PLANTED).idxmin() == "White"
    assert by_race(CONTROL).idxmin() != "White"


@pytest.mark.slow
def test_01a_self_similarity_recovers_the_planted_variety_under_uniform_reporting(demo_cache):
    """The control model (every label named equally often) embeds White pictures, which vary most in
    the face world, less self-similarly than the same pictures drawn with the others' variety."""
    model = load_image_text_model(CONTROL, device="cpu")

    def white(query):
        dataset = load_dataset("fairface", root=query, split="val")
        embeddings = embed_images(model, dataset, progress=False)
        race = dataset.records["race"].to_numpy()
        return embeddings[race == "White"]

    varied, alike = white("world"), white("world?varied_race_variety=0.2")
    test = mk.self_similarity_gap_test(varied, alike, permutations=1000, seed=0)
    assert test["gap"] < -0.03 and test["p_value"] < 0.01, test
