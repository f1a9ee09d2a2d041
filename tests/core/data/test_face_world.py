"""The face world (Part I's demo data): FairFace's official layout read by the real loader, its planted
variety and captions checked against values computed here, and its bad input."""

import numpy as np
import pandas as pd
import pytest

from vlbias.data import generated_world_root, load_dataset, world_options
from vlbias.data.face_world import PALETTES, cell_variety, face_captions, reporting_probabilities
from vlbias.data.fairface import AGES, GENDERS, RACES
from vlbias.markedness.prompts import PERSON_PROMPT, label_prompts

SMALL = "world?train_per_cell=2&val_per_cell=3&image_size=24"


def test_written_in_fairface_official_layout_and_read_by_the_real_loader(isolated_cache):
    train = load_dataset("fairface", root=SMALL, split="train")
    val = load_dataset("fairface", root=SMALL, split="val")
    root = generated_world_root("fairface", SMALL.partition("?")[2])
    assert train.root == root and val.root == root
    for name in ("fairface_label_train.csv", "fairface_label_val.csv", "train/1.jpg", "val/1.jpg"):
        assert (root / name).is_file()
    labels = pd.read_csv(root / "fairface_label_val.csv")
    assert list(labels.columns) == ["file", "age", "gender", "race", "service_test"]
    # every race x gender x age cell, exactly as often as asked
    for dataset, per_cell in ((train, 2), (val, 3)):
        counts = dataset.records.groupby(["race", "gender", "age"]).size()
        assert len(counts) == len(RACES) * len(GENDERS) * len(AGES) and (counts == per_cell).all()
    assert train.image(0).size == (24, 24)


def test_same_parameters_reuse_the_world_and_a_changed_one_writes_another(isolated_cache):
    first = generated_world_root("fairface", "train_per_cell=1&val_per_cell=1")
    stamp = (first / "fairface_label_train.csv").stat().st_mtime_ns
    assert generated_world_root("fairface", {"train_per_cell": 1, "val_per_cell": 1}) == first
    assert (first / "fairface_label_train.csv").stat().st_mtime_ns == stamp  # not written again
    other = generated_world_root("fairface", "train_per_cell=1&val_per_cell=1&variety=0.5")
    assert other != first
    same_labels = pd.read_csv(first / "fairface_label_train.csv").equals(pd.read_csv(other / "fairface_label_train.csv"))
    assert same_labels  # the labels follow the seed; only the pictures' variety changed
    assert (first / "train/1.jpg").read_bytes() != (other / "train/1.jpg").read_bytes()


def _mean_pairwise_distance(pictures: np.ndarray) -> float:
    flat = pictures.reshape(len(pictures), -1).astype(float)
    squared = (flat ** 2).sum(1)
    distances = squared[:, None] + squared[None, :] - 2 * flat @ flat.T
    n = len(flat)
    return float(np.sqrt(np.clip(distances, 0, None)).sum() / (n * (n - 1)))


def test_the_varied_group_varies_most_in_pixels_and_the_control_world_does_not(isolated_cache):
    def spread(query):
        data = load_dataset("fairface", root=query, split="val")
        pictures = np.stack([np.asarray(data.image(i)) for i in range(len(data))])
        return {race: _mean_pairwise_distance(pictures[(data.records.race == race).to_numpy()]) for race in RACES}

    planted = spread("world?train_per_cell=1&val_per_cell=4&variety=0.1&varied_race_variety=0.9")
    assert min(planted, key=planted.get) != "White" and max(planted, key=planted.get) == "White"
    assert planted["White"] > 1.2 * max(v for race, v in planted.items() if race != "White")
    control = spread("world?train_per_cell=1&val_per_cell=4&variety=0.5&varied_race_variety=0.5")
    others = [v for race, v in control.items() if race != "White"]
    assert min(others) * 0.8 < control["White"] < max(others) * 1.2


def test_cell_variety_adds_the_gender_extra_and_stops_at_one():
    options = world_options("fairface", {"variety": 0.3, "varied_race_variety": 0.95, "gender_extra_variety": 0.1})
    assert cell_variety("Black", "Female", options) == pytest.approx(0.3)
    assert cell_variety("Black", "Male", options) == pytest.approx(0.4)
    assert cell_variety("White", "Male", options) == 1.0


def test_caption_phrases_are_the_markedness_prompts_phrases():
    from vlbias.data.face_world import CAPTION_RACE_PHRASES
    from vlbias.markedness.prompts import RACE_PHRASES

    assert CAPTION_RACE_PHRASES == RACE_PHRASES


def test_captions_take_exactly_the_papers_prompt_forms():
    records = pd.DataFrame([(race, gender, age) for race in RACES for gender in GENDERS for age in AGES],
                           columns=["race", "gender", "age"])
    prompts = label_prompts()
    for family in ("race", "gender", "age"):
        only = {name: np.full(len(records), 1.0 if name == family else 0.0) for name in ("race", "gender", "age")}
        captions, named = face_captions(records, only)
        assert captions == [prompts[family][label] for label in records[family]]
        assert named[family].all() and not any(named[other].any() for other in named if other != family)
    nothing = {name: np.zeros(len(records)) for name in ("race", "gender", "age")}
    assert set(face_captions(records, nothing)[0]) == {PERSON_PROMPT}
    everything = {name: np.ones(len(records)) for name in ("race", "gender", "age")}
    assert face_captions(records.head(1), everything)[0] == [
        "a photo of an East Asian male person between 0 and 2 years old"]


def test_reporting_rates_are_planted_per_group():
    n = 20_000
    records = pd.DataFrame({"race": np.where(np.arange(n) % 2, "White", "Black"), "gender": "Male", "age": "30-39"})
    probabilities = reporting_probabilities(records, race_named=0.9, default_race="White", default_race_named=0.1,
                                            gender_named=0.5, default_gender="Male", default_gender_named=0.5,
                                            age_named=0.5, default_ages="30-39", default_age_named=0.5)
    _, named = face_captions(records, probabilities, seed=3)
    white = (records.race == "White").to_numpy()
    # binomial: 4 standard errors of a rate from 10,000 draws is 0.012
    assert named["race"][white].mean() == pytest.approx(0.1, abs=0.012)
    assert named["race"][~white].mean() == pytest.approx(0.9, abs=0.012)


@pytest.mark.parametrize("query, parameter", [
    ("variety=1.5", "variety"), ("varied_race_variety=-0.1", "varied_race_variety"),
    ("varied_race=Green", "varied_race"), ("train_per_cell=0", "train_per_cell"), ("image_size=8", "image_size"),
    ("colour=red", "colour"), ("variety=much", "variety"),
])
def test_a_world_parameter_out_of_range_names_it(query, parameter):
    with pytest.raises(ValueError, match=parameter):
        world_options("fairface", query)


@pytest.mark.parametrize("options, parameter", [
    ("default_race_named=1.5", "default_race_named"), ("race_named=-0.2", "race_named"),
    ("uniform_named=2", "uniform_named"), ("default_ages=20-30", "default_ages"), ("world_variety=3", "variety"),
])
def test_a_face_clip_option_out_of_range_names_it_before_training(isolated_cache, options, parameter):
    from vlbias.models.trained import trained_checkpoint

    before = set(isolated_cache.glob("trained/*face-clip*"))
    with pytest.raises(ValueError, match=parameter):
        trained_checkpoint(f"face-clip?{options}")
    assert set(isolated_cache.glob("trained/*face-clip*")) == before  # nothing trained, nothing half-written


def test_a_world_root_for_a_data_set_without_a_world_says_which_have_one():
    with pytest.raises(ValueError, match="planted-world has no generated world; worlds exist for .*fairface"):
        load_dataset("planted-world", root="world")


def test_the_palettes_are_distinct_and_cover_the_races():
    assert set(PALETTES) == set(RACES)
    faces = np.array([face for face, _ in PALETTES.values()], dtype=float)
    distances = np.sqrt(((faces[:, None] - faces[None]) ** 2).sum(-1))
    assert distances[~np.eye(len(faces), dtype=bool)].min() > 60


def test_the_trained_vocabulary_holds_capitalised_caption_words_whole():
    from vlbias.models.mini_clip import caption_words

    assert caption_words([["a photo of a White person", "an East Asian FEMALE person"]]) == {
        "a", "photo", "of", "white", "person", "an", "east", "asian", "female"}
