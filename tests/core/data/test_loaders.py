"""The data layer: fixtures written in the real formats, read back field by field.

Expected values come from reading the raw files independently (csv, json, pyarrow), never from
the parsers under test.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from vlbias.data import DatasetNotFoundError, LazyImages, list_datasets, load_dataset, write_fixture

# Hub ClassLabel orders, written out here rather than imported from the code under test.
HUB_AGES = ["0-2", "3-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60-69", "more than 70"]
HUB_GENDERS = ["Male", "Female"]
HUB_RACES = ["East Asian", "Indian", "Black", "White", "Middle Eastern", "Latino_Hispanic", "Southeast Asian"]


@pytest.fixture(scope="session")
def fixture_roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("data-fixtures")
    roots = {}
    for key, name, options in [("fairface_csv", "fairface", {"layout": "csv"}),
                               ("fairface_parquet", "fairface", {"layout": "parquet"}),
                               ("coco", "coco", {}), ("flickr30k", "flickr30k", {})]:
        start = time.perf_counter()
        roots[key] = write_fixture(name, base / key, seed=0, **options)
        roots[key + "_seconds"] = time.perf_counter() - start
    return roots


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image)


def test_registry_lists_the_three_data_sets():
    assert {"fairface", "coco", "flickr30k"} <= set(list_datasets())
    with pytest.raises(KeyError, match="Known"):
        load_dataset("no-such-data-set")


def test_fixtures_are_fast_and_deterministic(fixture_roots, tmp_path):
    for key in ["fairface_csv", "fairface_parquet", "coco", "flickr30k"]:
        assert fixture_roots[key + "_seconds"] < 2.0, key
    again = write_fixture("coco", tmp_path / "coco-again", seed=0)
    assert _tree_digest(again) == _tree_digest(fixture_roots["coco"])
    other = write_fixture("coco", tmp_path / "coco-seed1", seed=1)
    assert _tree_digest(other) != _tree_digest(fixture_roots["coco"])


# ----------------------------------------------------------------------------------------- FairFace


def test_fairface_csv_layout_reads_every_field(fixture_roots):
    root = fixture_roots["fairface_csv"]
    for split, label_split in [("train", "train"), ("val", "val"), ("validation", "val")]:
        dataset = load_dataset("fairface", root=root, split=split)
        with open(root / f"fairface_label_{label_split}.csv", newline="") as handle:
            raw = list(csv.DictReader(handle))
        assert list(dataset.records.columns) == ["file", "age", "gender", "race", "service_test"]
        assert len(dataset) == len(raw) > 0
        for row, expected in zip(dataset.records.itertuples(index=False), raw):
            assert row.file == expected["file"]
            assert row.age == expected["age"] and row.gender == expected["gender"] and row.race == expected["race"]
            assert bool(row.service_test) == (expected["service_test"] == "True")
        assert dataset.split == ("train" if split == "train" else "validation")


def test_fairface_every_group_present_and_images_rgb(fixture_roots):
    dataset = load_dataset("fairface", root=fixture_roots["fairface_csv"], split="train")
    counts = dataset.records.groupby(["race", "gender", "age"]).size()
    assert len(counts) == 7 * 2 * 9 == 126
    assert set(counts) == {2}
    assert len(load_dataset("fairface", root=fixture_roots["fairface_csv"], split="val")) == 126
    modes = []
    for position in range(len(dataset)):
        with Image.open(dataset.root / dataset.records["file"].iat[position]) as raw:
            modes.append(raw.mode)
        image = dataset.image(position)
        assert image.mode == "RGB" and image.size == (64, 64)
    assert "L" in modes, "the fixture must contain a grayscale file"
    gray = dataset.image(modes.index("L"))
    pixels = _pixels(gray)
    assert np.array_equal(pixels[..., 0], pixels[..., 1]) and np.array_equal(pixels[..., 1], pixels[..., 2])


def test_fairface_parquet_layout_reads_every_field(fixture_roots):
    root = fixture_roots["fairface_parquet"]
    for split, hub_split in [("train", "train"), ("validation", "validation"), ("val", "validation")]:
        dataset = load_dataset("fairface", root=root, split=split, padding="1.25")
        shards = sorted((root / "1.25").glob(f"{hub_split}-*.parquet"))
        assert shards
        raw = [row for shard in shards for row in pq.read_table(shard).to_pylist()]
        assert len(dataset) == len(raw)
        for position, (row, expected) in enumerate(zip(dataset.records.itertuples(index=False), raw)):
            assert row.age == HUB_AGES[expected["age"]]
            assert row.gender == HUB_GENDERS[expected["gender"]]
            assert row.race == HUB_RACES[expected["race"]]
            assert row.service_test == expected["service_test"]
            assert row.file == expected["image"]["path"]
            if position % 25 == 0:  # image bytes decoded lazily from the right row
                with Image.open(io.BytesIO(expected["image"]["bytes"])) as original:
                    assert np.array_equal(_pixels(dataset.image(position)), _pixels(original.convert("RGB")))


def test_fairface_both_layouts_agree(fixture_roots):
    for split in ["train", "validation"]:
        from_csv = load_dataset("fairface", root=fixture_roots["fairface_csv"], split=split)
        from_parquet = load_dataset("fairface", root=fixture_roots["fairface_parquet"], split=split)
        assert from_csv.records.equals(from_parquet.records)
        assert from_csv.records.dtypes.equals(from_parquet.records.dtypes)
        for a, b in zip(from_csv.images(), from_parquet.images()):
            assert np.array_equal(_pixels(a), _pixels(b))


def test_fairface_parquet_without_paths_and_row_group_reads(tmp_path, fixture_roots):
    root = write_fixture("fairface", tmp_path / "nopaths", layout="parquet", keep_paths=False, row_group_size=7)
    dataset = load_dataset("fairface", root=root)
    reference = load_dataset("fairface", root=fixture_roots["fairface_csv"])
    assert dataset.records["file"].str.contains(r"1\.25/train-0000\d-of-00002\.parquet#\d+").all()
    assert dataset.records["file"].is_unique
    assert dataset.records.drop(columns="file").equals(reference.records.drop(columns="file"))
    # Random order crosses row groups and shards; the row-group cache must never mix them up.
    order = np.random.default_rng(0).permutation(len(dataset))[:40]
    for position in order:
        assert np.array_equal(_pixels(dataset.image(int(position))), _pixels(reference.image(int(position))))


def test_fairface_root_fixture_uses_parquet_layout_in_cache():
    from vlbias.paths import cache_dir

    dataset = load_dataset("fairface", root="fixture")
    assert dataset.root == cache_dir() / "fixtures" / "fairface"
    assert list((dataset.root / "1.25").glob("train-*.parquet"))
    assert len(dataset) == 252 and dataset.split == "train"
    assert load_dataset("fairface", root="fixture").identity == dataset.identity
    with pytest.raises(DatasetNotFoundError, match="0.25"):
        load_dataset("fairface", root="fixture", padding="0.25")
    with pytest.raises(ValueError):
        load_dataset("fairface", root="fixture", split="test")


# ----------------------------------------------------------------------------------------- COCO


def test_coco_reads_every_field_and_keeps_caption_order(fixture_roots):
    root = fixture_roots["coco"]
    dataset = load_dataset("coco", root=root)
    content = json.loads((root / "annotations" / "captions_val2017.json").read_text())
    by_image = defaultdict(list)
    for annotation in content["annotations"]:
        by_image[annotation["image_id"]].append((annotation["id"], annotation["caption"]))
    assert list(dataset.records.columns) == ["image_id", "file", "height", "width", "captions"]
    assert len(dataset) == len(content["images"]) == 40
    for position, (row, image) in enumerate(zip(dataset.records.itertuples(index=False), content["images"])):
        assert row.image_id == image["id"]
        assert row.file == f"val2017/{image['file_name']}"
        assert (row.height, row.width) == (image["height"], image["width"])
        assert row.captions == [caption for _, caption in by_image[image["id"]]]
        loaded = dataset.image(position)
        assert loaded.mode == "RGB" and loaded.size == (image["width"], image["height"])
    frame = dataset.captions_frame()
    assert len(frame) == len(content["annotations"])
    assert list(frame.columns) == ["image_index", "image_id", "caption_id", "caption"]
    for image_id, group in frame.groupby("image_id", sort=False):
        assert list(zip(group["caption_id"], group["caption"])) == by_image[image_id]
    assert (frame["image_id"].to_numpy() == dataset.records["image_id"].to_numpy()[frame["image_index"]]).all()
    # The fixture exercises what ColorFoil's parser must get right.
    captions = " ".join(frame["caption"])
    assert "colored" in captions and "covered" in captions and any(c.endswith(".") for c in frame["caption"])
    assert dataset.records["captions"].map(len).max() > 5  # some real COCO images have six or seven
    modes = [Image.open(root / f).mode for f in dataset.records["file"]]
    assert "L" in modes and "RGB" in modes


# ----------------------------------------------------------------------------------------- Flickr30k


def test_flickr30k_split_filtering_and_fields(fixture_roots):
    root = fixture_roots["flickr30k"]
    content = json.loads((root / "dataset_flickr30k.json").read_text())
    for split, wanted in [(None, {"val", "test"}), (["val", "test"], {"val", "test"}), ("test", {"test"}),
                          ("train", {"train"})]:
        dataset = load_dataset("flickr30k", root=root, split=split)
        expected = [image for image in content["images"] if image["split"] in wanted]
        assert len(dataset) == len(expected) > 0
        for row, image in zip(dataset.records.itertuples(index=False), expected):
            assert row.image_id == image["filename"].rsplit(".", 1)[0]
            assert row.imgid == image["imgid"] and row.split == image["split"]
            assert row.file == f"flickr30k-images/{image['filename']}"
            assert row.captions == [sentence["raw"] for sentence in image["sentences"]]
        frame = dataset.captions_frame()
        assert frame["caption_id"].tolist() == [s["sentid"] for image in expected for s in image["sentences"]]
    assert load_dataset("flickr30k", root=root).split == "val+test"
    counts = {s: sum(image["split"] == s for image in content["images"]) for s in ["train", "val", "test"]}
    assert counts == {"train": 18, "val": 6, "test": 6}
    every = load_dataset("flickr30k", root=root, split=["train", "val", "test"])
    assert all(image.mode == "RGB" for image in every.images())
    with pytest.raises(ValueError):
        load_dataset("flickr30k", root=root, split="restval")


# ----------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name, expected", [
    ("fairface", ["fairface_label_train.csv", "1.25/train-*.parquet", "HuggingFaceM4/FairFace", "joojs/fairface"]),
    ("coco", ["annotations/captions_val2017.json", "val2017", "images.cocodataset.org"]),
    ("flickr30k", ["dataset_flickr30k.json", "flickr30k-images", "caption_datasets.zip"]),
])
def test_missing_data_says_what_and_where(tmp_path, monkeypatch, name, expected):
    empty = tmp_path / "nothing-here"
    with pytest.raises(DatasetNotFoundError) as caught:
        load_dataset(name, root=empty)
    message = str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    for text in expected + [str(empty), 'root="fixture"', name]:
        assert text in message, (text, message)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # one short message
    # No root: data_dir()/<name>, movable with VLBIAS_DATA_DIR.
    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path / "data" / name)):
        load_dataset(name)


def test_missing_images_are_reported(tmp_path):
    root = write_fixture("coco", tmp_path / "coco", seed=0)
    victim = sorted((root / "val2017").iterdir())[3]
    victim.unlink()
    with pytest.raises(DatasetNotFoundError, match=victim.name):
        load_dataset("coco", root=root)


# ----------------------------------------------------------------------------------------- identity


def test_identity_is_stable_and_tracks_content(tmp_path):
    root = write_fixture("fairface", tmp_path / "ff", layout="csv", per_cell=1, val_per_cell=1)
    first, second = load_dataset("fairface", root=root), load_dataset("fairface", root=root)
    assert first.identity == second.identity
    assert first.identity.startswith("fairface/1.25/train@")
    assert load_dataset("fairface", root=root, split="val").identity != first.identity
    assert load_dataset("fairface", root=root, padding="0.25").identity != first.identity

    labels = root / "fairface_label_train.csv"
    text = labels.read_text()
    row = text.splitlines()[1]
    changed = row.replace(",Male,", ",Female,") if ",Male," in row else row.replace(",Female,", ",Male,")
    labels.write_text(text.replace(row, changed, 1))
    relabelled = load_dataset("fairface", root=root)
    assert relabelled.identity != first.identity
    assert relabelled.records["gender"].iat[0] != first.records["gender"].iat[0]

    image = root / relabelled.records["file"].iat[5]
    image.write_bytes(image.read_bytes() + b"\x00")  # a replaced image shows in its size
    assert load_dataset("fairface", root=root).identity != relabelled.identity


def test_parquet_identity_tracks_labels(tmp_path):
    import pyarrow as pa

    root = write_fixture("fairface", tmp_path / "ffp", layout="parquet", per_cell=1, val_per_cell=1)
    before = load_dataset("fairface", root=root)
    assert load_dataset("fairface", root=root).identity == before.identity
    shard = sorted((root / "1.25").glob("train-*.parquet"))[0]
    table = pq.read_table(shard)
    ages = table.column("age").to_pylist()
    ages[0] = (ages[0] + 1) % 9
    pq.write_table(table.set_column(table.schema.get_field_index("age"), "age", pa.array(ages, pa.int64())), shard)
    after = load_dataset("fairface", root=root)
    assert after.identity != before.identity
    assert after.records["age"].iat[0] == HUB_AGES[ages[0]]


# ----------------------------------------------------------------------------------------- lazy images


def test_images_are_lazy_sequences(fixture_roots):
    dataset = load_dataset("fairface", root=fixture_roots["fairface_parquet"])
    everything = dataset.images()
    assert isinstance(everything, LazyImages) and len(everything) == len(dataset)
    assert everything.identity == dataset.identity
    part = everything[10:20]
    assert isinstance(part, LazyImages) and len(part) == 10 and part.identity != dataset.identity
    assert np.array_equal(_pixels(part[0]), _pixels(dataset.image(10)))
    assert np.array_equal(_pixels(everything[-1]), _pixels(dataset.image(len(dataset) - 1)))
    women = dataset.images(dataset.records["gender"] == "Female")
    assert len(women) == (dataset.records["gender"] == "Female").sum()
    positions = np.flatnonzero(dataset.records["gender"] == "Female")
    assert np.array_equal(_pixels(women[3]), _pixels(dataset.image(int(positions[3]))))
    assert dataset.images([5, 7]).identity == dataset.images(np.array([5, 7])).identity
    assert dataset.images([5, 7]).identity != dataset.images([7, 5]).identity
    with pytest.raises(IndexError):
        dataset.image(len(dataset))
