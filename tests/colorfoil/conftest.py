"""Fixtures shared by Part II's planted-signal tests of the demo pages (02b, 02d)."""

from __future__ import annotations

import pytest

#: the paper's foil colours, as 02b and 02d's demo parameters give them
TARGETS = ["blue", "black", "red", "pink", "yellow", "grey", "orange", "white", "green", "brown"]


@pytest.fixture(scope="module")
def world_benchmarks():
    """The demo's benchmark, as 02b and 02d build it from the caption world (val2017 and Flickr30k's val
    and test): ``(datasets, benchmarks, max_foils)``, data sets without a foil left out."""
    from vlbias.colorfoil import stages as cfs
    from vlbias.colorfoil.construction import with_foils

    datasets = cfs.evaluation_datasets("world", "val2017", ["val", "test"])
    benchmarks, max_foils = cfs.foil_benchmarks(
        datasets, None, foil_type="colour", construction="ours", coco_caption_choice="first_with_word",
        flickr_caption_choice="first_with_word", colour_selection="css3", foil_targets=TARGETS, seed=0,
        max_pairs=None, foil_counts=[1, 2, 4], confusion_foils=4)
    datasets, _ = with_foils(datasets, benchmarks, "colour")
    return datasets, benchmarks, max_foils
