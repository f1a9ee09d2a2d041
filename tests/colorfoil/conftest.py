"""What Part II's planted-signal tests of the demo pages (02b, 02d) share: each page's own demo parameters
and the benchmark it builds from them, on the demo book."""

from __future__ import annotations

import pytest


def _page(project, name: str):
    """The demo profile's parameters of page ``name`` (the world, models and controls it ran with) and the
    benchmark it builds from them (the caption world's val2017 and Flickr30k's val and test): ``(p, datasets,
    benchmarks, max_foils)``, data sets without a foil left out."""
    from vlbias.colorfoil import stages as cfs
    from vlbias.colorfoil.construction import with_foils
    from vlbias.profiles import notebook_parameters, plan_run

    p = notebook_parameters(project, name, plan_run(project, "demo", only=[name]))
    datasets = cfs.evaluation_datasets(p["data_root"], p["coco_split"], p["flickr_splits"])
    benchmarks, max_foils = cfs.foil_benchmarks(
        datasets, None, **{key: p.get(key, max(p["foil_counts"])) for key in cfs.BENCHMARK_PARAMETERS})
    datasets, _ = with_foils(datasets, benchmarks, p["foil_type"])
    return p, datasets, benchmarks, max_foils


@pytest.fixture(scope="module")
def evaluation_page(demo_book):
    """02b's demo parameters and benchmark."""
    return _page(demo_book.project, "02b_colorfoil_evaluation")


@pytest.fixture(scope="module")
def generative_page(demo_book):
    """02d's demo parameters and benchmark."""
    return _page(demo_book.project, "02d_colorfoil_generative")
