"""The caption world (Part II's demo data): written in COCO's and Flickr30k's real layouts and read by
the real loaders; captions name the drawn main colour at the planted rate; bad options fail by name."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from vlbias.colorfoil.foils import find_words
from vlbias.data import generated_world_root, load_dataset, world_options
from vlbias.data.caption_world import PALETTE, main_colours

SMALL = {"train_images": 60, "eval_images": 20, "colour_share": 0.3, "seed": 4}


@pytest.fixture(scope="module")
def coco_root():
    return generated_world_root("coco", SMALL)


def test_coco_world_reads_through_the_real_loader(coco_root):
    train = load_dataset("coco", root=coco_root, split="train2017")
    val = load_dataset("coco", root=coco_root, split="val2017")
    assert len(train.records) == 60 and len(val.records) == 20
    assert all(len(c) == 5 for c in val.records["captions"])
    raw = json.loads((coco_root / "annotations" / "captions_val2017.json").read_text())
    assert len(raw["annotations"]) == 100 and {i["file_name"] for i in raw["images"]} == {
        f.split("/")[1] for f in val.records["file"]}
    # the query spelling reaches the same world
    assert load_dataset("coco", root="world?train_images=60&eval_images=20&colour_share=0.3&seed=4").root == coco_root


def test_flickr_world_has_karpathy_splits():
    root = generated_world_root("flickr30k", SMALL)
    both = load_dataset("flickr30k", root=root)
    assert both.split == "val+test" and len(both.records) == 20
    assert sorted(both.records["split"].value_counts().to_dict().items()) == [("test", 10), ("val", 10)]
    assert len(load_dataset("flickr30k", root=root, split="train").records) == 20  # as large as val + test


def test_captions_name_the_drawn_main_colour_at_the_planted_rate(coco_root):
    truth = main_colours(coco_root)
    records = load_dataset("coco", root=coco_root, split="train2017").records
    named = [find_words(c, PALETTE) for captions in records["captions"] for c in captions]
    mains = [truth[f] for f, captions in zip(records["file"], records["captions"]) for _ in captions]
    # a caption names either nothing or exactly the main colour drawn in its picture
    assert all(words in ([], [main]) for words, main in zip(named, mains))
    hits = sum(bool(words) for words in named)
    assert stats.binomtest(hits, len(named), 0.3).pvalue > 0.001


def test_the_main_colour_is_the_largest_patch_of_its_palette_colour(coco_root):
    dataset = load_dataset("coco", root=coco_root, split="val2017")
    truth = main_colours(coco_root)
    names, palette = list(PALETTE), np.array(list(PALETTE.values()), dtype=float)
    for image, file in zip(dataset.images(), dataset.records["file"]):
        pixels = np.asarray(image, dtype=float).reshape(-1, 3)
        distance = np.linalg.norm(pixels[:, None, :] - palette[None], axis=2)
        near = distance.min(axis=1) < 40  # pixels of a drawn shape, not the pale background
        counts = np.bincount(distance.argmin(axis=1)[near], minlength=len(names))
        assert names[int(counts.argmax())] == truth[file]


@pytest.mark.parametrize("option, value, named", [
    ("colour_share", 1.5, "colour_share"), ("colour_share", -0.1, "colour_share"),
    ("colours", "red", "colours"), ("colours", "red,mauve", "colours"), ("train_images", 1, "train_images"),
])
def test_out_of_range_options_fail_by_name(option, value, named):
    with pytest.raises(ValueError, match=named):
        world_options("coco", {option: value})


def test_a_changed_option_is_a_new_world(coco_root):
    other = generated_world_root("coco", {**SMALL, "colour_share": 0.31})
    assert other != coco_root and main_colours(other) != {}
