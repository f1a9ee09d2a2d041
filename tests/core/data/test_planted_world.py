"""The planted world: its tables hold in the data, reporting changes captions only, the loader reads
back exactly what was written (checked against the raw csv and npy files)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from vlbias.data import DatasetNotFoundError, list_datasets, load_dataset
from vlbias.data.planted_world import spread_shares, world_parameters, world_root, write_world

SHARES = {"circle": 0.1, "star": 0.5, "heart": 0.9}


@pytest.fixture(scope="module")
def skewed_and_fair(tmp_path_factory):
    base = tmp_path_factory.mktemp("worlds")
    common = dict(shares=SHARES, train_per_kind=200, test_per_kind=20, image_size=24, seed=3)
    return (write_world(base / "skewed", named={"red": 0.1, "blue": 0.9}, **common),
            write_world(base / "fair", named={"red": 0.9, "blue": 0.9}, **common))


def test_the_share_table_holds_per_kind_to_the_image(skewed_and_fair):
    train = load_dataset("planted-world", root=skewed_and_fair[0], split="train")
    counts = train.records.groupby("kind")["colour"].apply(lambda c: (c == "red").sum())
    assert counts.to_dict() == {"circle": 20, "star": 100, "heart": 180}
    summary = train.summary().set_index("kind")
    assert summary["red_share_planted"].to_dict() == SHARES
    assert summary["red_share"].to_dict() == {"circle": 0.1, "star": 0.5, "heart": 0.9}
    assert summary["n"].tolist() == [200] * 3


def test_captions_name_the_colour_at_the_planted_rate(skewed_and_fair):
    records = load_dataset("planted-world", root=skewed_and_fair[0], split="train").records
    assert all(row.caption == f"a photo of a {row.colour + ' ' if row.named else ''}{row.kind}"
               for row in records.itertuples())
    for colour, probability in (("red", 0.1), ("blue", 0.9)):
        named = records.loc[records["colour"] == colour, "named"]
        sd = np.sqrt(probability * (1 - probability) / len(named))
        assert abs(named.mean() - probability) < 4 * sd, (colour, named.mean())


def test_reporting_changes_captions_but_not_pictures(skewed_and_fair):
    skewed, fair = (load_dataset("planted-world", root=root, split="train") for root in skewed_and_fair)
    assert np.array_equal(skewed.pixels, fair.pixels)
    assert skewed.records["colour"].tolist() == fair.records["colour"].tolist()
    assert (skewed.records["caption"] != fair.records["caption"]).sum() > 100
    tests = [load_dataset("planted-world", root=root, split="test") for root in skewed_and_fair]
    assert tests[0].identity == tests[1].identity  # held-out pictures share their cached embeddings
    assert skewed.identity != fair.identity


def test_the_loader_reads_back_the_raw_files(skewed_and_fair):
    root = skewed_and_fair[0]
    with open(root / "test" / "records.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    test = load_dataset("planted-world", root=root, split="test")
    assert len(test) == len(rows) == 60
    assert test.records["caption"].tolist() == [row["caption"] for row in rows]
    assert test.records["named"].tolist() == [row["named"] == "True" for row in rows]
    raw = np.load(root / "test" / "images.npy")
    assert raw.shape == (60, 24, 24, 3) and np.array_equal(np.asarray(test.image(7)), raw[7])
    assert json.loads((root / "world.json").read_text())["named"] == {"red": 0.1, "blue": 0.9}


def test_pictures_show_their_colour(skewed_and_fair):
    test = load_dataset("planted-world", root=skewed_and_fair[0], split="test")
    pixels = test.pixels.reshape(len(test), -1, 3).astype(int)
    reddish = ((pixels[..., 0] - pixels[..., 2]) > 100).mean(axis=1)
    bluish = ((pixels[..., 2] - pixels[..., 0]) > 100).mean(axis=1)
    is_red = (test.records["colour"] == "red").to_numpy()
    assert (reddish[is_red] > 0.05).all() and (bluish[is_red] < 0.01).all()
    assert (bluish[~is_red] > 0.05).all() and (reddish[~is_red] < 0.01).all()


def test_world_root_is_deterministic_and_cached():
    first = world_root(train_per_kind=5, test_per_kind=2, seed=1)
    stamp = (first / "world.json").stat().st_mtime_ns
    assert world_root(train_per_kind=5, test_per_kind=2, seed=1) == first
    assert (first / "world.json").stat().st_mtime_ns == stamp
    other = world_root(train_per_kind=5, test_per_kind=2, seed=2)
    assert other != first
    assert not np.array_equal(np.load(first / "train" / "images.npy"), np.load(other / "train" / "images.npy"))


def test_registered_with_a_fixture():
    assert "planted-world" in list_datasets()
    world = load_dataset("planted-world", root="fixture", split="test")
    assert len(world) == 12 * 10 and world.records["kind"].nunique() == 12


def test_bad_input_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="named must be probabilities"):
        world_parameters(named={"red": 1.5})
    with pytest.raises(ValueError, match="unknown kinds or colours"):
        world_parameters(shares={"octopus": 0.5, "circle": 0.5})
    with pytest.raises(ValueError, match="split must be one of"):
        load_dataset("planted-world", root=tmp_path, split="validation")
    with pytest.raises(DatasetNotFoundError, match="write_world"):
        load_dataset("planted-world", root=tmp_path / "empty", split="train")


def test_share_spread_runs_evenly_around_one_half():
    assert list(spread_shares(0.8).values()) == pytest.approx(np.linspace(0.1, 0.9, 12), abs=5e-4)
    assert set(spread_shares(0.0).values()) == {0.5}
    with pytest.raises(ValueError, match="spread must be in"):
        spread_shares(1.5)


def test_a_world_with_attributes_names_tint_and_shade_and_draws_them(tmp_path):
    """``attributes=True`` (the world of 04d's annotator): every caption names the picture's shade, its
    colour (at the reporting rate) and its background tint, and the pixels show them: the background's
    mean is the tint's within the jitter, the object's fill is lighter or darker as its shade says."""
    from vlbias.data.planted_world import BACKDROPS, SHADES

    root = write_world(tmp_path / "attributes", shares=SHARES, named={"red": 1.0, "blue": 0.0}, train_per_kind=60,
                       test_per_kind=4, seed=5, attributes=True)
    world = load_dataset("planted-world", root=root, split="train")
    records = world.records
    assert set(records["backdrop"]) == set(BACKDROPS) and set(records["shade"]) == set(SHADES)
    expected = [f"a photo of a {shade} {'red ' if colour == 'red' else ''}object on a {tint} background"
                for shade, colour, tint in zip(records["shade"], records["colour"], records["backdrop"])]
    assert records["caption"].tolist() == expected
    corners = world.pixels[:, :3, :3].reshape(len(records), -1, 3).mean(axis=1)  # the object never reaches a corner
    tints = np.array([BACKDROPS[tint] for tint in records["backdrop"]])
    assert np.abs(corners - tints).max() < 4 + 3 * 6 / 3  # jitter of 4 levels, pixel noise of sd 6 over 9 pixels
    red = records["colour"].to_numpy() == "red"
    centre = world.pixels[:, 14:18, 14:18].reshape(len(records), -1, 3).mean(axis=1)  # inside every shape but a ring's hole
    filled = red & (records["kind"] != "ring").to_numpy()
    green = {shade: centre[filled & (records["shade"] == shade).to_numpy(), 1].mean() for shade in SHADES}
    assert green["light"] > green["medium"] + 60 and green["dark"] < green["medium"]  # 0.6 towards white, 0.55 towards black


def test_without_attributes_a_world_is_as_before():
    """The option off leaves the world's parameters (its cache key) and its pictures as they were: the
    drawing with the default background and no shade consumes the same random draws."""
    from vlbias.data.planted_world import draw_object

    import hashlib

    from vlbias.data.planted_world import KINDS

    assert "attributes" not in world_parameters() and "attributes" in world_parameters(attributes=True)
    pictures = np.stack([draw_object(kind, colour, 32, np.random.default_rng(i)) for i, kind in enumerate(KINDS)
                         for colour in ("red", "blue")])
    # the digest of these 24 pictures as drawn before worlds could plant tints and shades (WORLD_VERSION 2)
    assert hashlib.sha256(pictures.tobytes()).hexdigest() == (
        "60935ec7426fb39cccf50261be1399a80d05ee480c486e8892bec163fdfe515c")
    with pytest.raises(ValueError, match="attributes must be 0 or 1"):
        world_parameters(attributes=2)
