"""``trained:face-captioner`` (issue #26 item 4): the causal test of the markedness hypothesis on a
generative model. A small LLaVA trained on captions that rarely name White or Male leaves White and
Male pictures unnamed in its own captions of held-out pictures; trained on captions that name every
label equally often (the control), it names them as often as the rest."""

from __future__ import annotations

import pytest

from vlbias.data import load_dataset
from vlbias.data.registry import generated_world_root
from vlbias.markedness.face_captioner import _recipe
from vlbias.models import load_vision_language_model
from vlbias.models.trained import trained_checkpoint, trained_options
from vlbias.stats import wilson_interval

#: how each race is written in the world's captions (FairFace's labels, as its prompts spell them)
WRITTEN = {"Latino_Hispanic": "latino or hispanic", "East Asian": "east asian", "Southeast Asian": "southeast asian",
           "Middle Eastern": "middle eastern"}
N_PICTURES = 210  # held-out pictures captioned: about 30 per race


def naming_rates(spec: str):
    """Per race and per gender: (named, pictures) in the captioner's greedy captions of held-out pictures."""
    model = load_vision_language_model(spec)
    world = _recipe(**trained_options(spec.split(":", 1)[1])[1])[0]
    held_out = load_dataset("fairface", root=generated_world_root("fairface", world), split="validation")
    records = held_out.records.reset_index(drop=True).iloc[:N_PICTURES]
    captions = [text.lower() for text in model.generate([held_out.image(i).convert("RGB") for i in records.index],
                                                        max_new_tokens=72, batch_size=32, progress=False)]
    records = records.assign(race_named=[f" {WRITTEN.get(r, r).lower()} " in f" {c} "
                                         for r, c in zip(records.race, captions)],
                             gender_named=[f" {g.lower()} " in f" {c} " for g, c in zip(records.gender, captions)])
    race = records.groupby("race").race_named.agg(["sum", "count"])
    gender = records.groupby("gender").gender_named.agg(["sum", "count"])
    return model, race, gender


def interval(row):
    return wilson_interval(int(row["sum"]), int(row["count"]))


@pytest.mark.parametrize("spec, planted", [("trained:face-captioner", True),
                                           ("trained:face-captioner?uniform_named=0.9", False)])
def test_01d_the_captioner_leaves_unnamed_what_its_captions_left_unnamed(spec, planted):
    _, race, gender = naming_rates(spec)
    white, others = interval(race.loc["White"]), [interval(row) for name, row in race.iterrows() if name != "White"]
    male, female = interval(gender.loc["Male"]), interval(gender.loc["Female"])
    if planted:  # White named in 10% of its training captions, others 90%: greedy captions drop it altogether
        assert white[1] < min(low for low, _ in others), race
        assert male[1] < female[0], gender
    else:  # the control: White and Male named as often as the rest, within the intervals
        assert white[1] > min(low for low, _ in others) and white[0] > 0.5, race
        assert male[1] > female[0] and male[0] > 0.5, gender


def test_the_captioner_loads_back_as_any_local_checkpoint_and_refuses_bad_options():
    model = load_vision_language_model("trained:face-captioner")
    again = load_vision_language_model(str(trained_checkpoint("face-captioner")))
    pictures = [load_dataset("fairface", root=generated_world_root(
        "fairface", _recipe(**trained_options("face-captioner")[1])[0]), split="validation").image(i).convert("RGB")
        for i in range(3)]
    texts = ["a photo of a person", "a photo of a White person", "a photo of a Black female person"]
    assert again.log_likelihood(pictures, texts, progress=False) == pytest.approx(
        model.log_likelihood(pictures, texts, progress=False), abs=1e-5)
    with pytest.raises(ValueError, match="uniform_named"):
        load_vision_language_model("trained:face-captioner?uniform_named=2")
    with pytest.raises(ValueError, match="epochs must be at least 1"):
        load_vision_language_model("trained:face-captioner?epochs=0")


def test_01d_page_measures_recover_the_planted_default_and_the_control_shows_none():
    """01d's own path (markedness_comparison: likelihood flags and descriptions, read by the lexicon) on the
    demo's two captioners: with the planted reporting, White and Male faces are left unmarked by likelihood
    and unnamed in descriptions beyond every other group's interval; the uniform control leaves no group so."""
    from vlbias.markedness import sample_per_group
    from vlbias.markedness.generative import markedness_comparison

    planted, control = "trained:face-captioner", "trained:face-captioner?uniform_named=0.9"
    world = _recipe(**trained_options("face-captioner")[1])[0]
    held_out = load_dataset("fairface", root=generated_world_root("fairface", world), split="validation")
    positions = sample_per_group(held_out.records, ["race", "gender"], 15)
    table = markedness_comparison([planted, control], held_out.images(positions), held_out.records.iloc[positions],
                                  describe_prompt=None, max_new_tokens=72, batch_size=32, progress=False)
    assert not len(table.attrs["failures"]), table.attrs["failures"]
    for measure in ("likelihood", "description"):
        for family, default in (("race", "White"), ("gender", "Male")):
            rows = table[(table.measure == measure) & (table.family == family)]
            ours = rows[rows.model == planted].set_index("group")
            assert ours.loc[default, "ci_low_%"] > ours.drop(index=default)["ci_high_%"].max(), (measure, ours)
            theirs = rows[rows.model == control].set_index("group")
            assert not (theirs.loc[default, "ci_low_%"] > theirs.drop(index=default)["ci_high_%"].max()), (measure, theirs)
