"""Part IV's figures (:mod:`vlbias.t2i.plots`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.t2i.plots import profession_grid


def _run(folder, colour, professions, per_profession):
    folder.mkdir()
    rows = []
    for profession in professions:
        for seed in range(per_profession):
            name = f"{profession}-{seed}.png"
            Image.new("RGB", (8, 8), colour).save(folder / name)
            rows.append({"profession": profession, "seed": seed, "file": name})
    return pd.DataFrame(rows), folder


def test_profession_grid_shows_each_run_as_its_own_rows_and_columns_per_profession(tmp_path):
    import matplotlib.pyplot as plt

    professions = ["nurse", "carpenter", "clerk"]
    runs = {"model": _run(tmp_path / "a", (255, 0, 0), professions, 3),
            "control": _run(tmp_path / "b", (0, 0, 255), professions[:2], 1)}  # the control lacks clerks
    fig = profession_grid(runs, professions, per_profession=2)
    axes = np.array(fig.axes).reshape(4, 3)
    assert [ax.get_title() for ax in axes[0]] == professions and axes[0, 0].get_ylabel() == "model"
    assert axes[2, 0].get_ylabel() == "control"
    # the model's pictures are red, the control's blue, in the seeds' order; a missing picture is a blank
    assert tuple(axes[1, 1].images[0].get_array()[0, 0]) == (255, 0, 0) and axes[1, 1].get_xlabel() == "seed 1"
    assert tuple(axes[2, 0].images[0].get_array()[0, 0]) == (0, 0, 255)
    assert not axes[3, 0].images and not axes[2, 2].images and not axes[2, 2].axison
    plt.close(fig)


def test_profession_grid_refuses_no_runs_and_fewer_than_one_picture(tmp_path):
    with pytest.raises(ValueError, match="at least one run"):
        profession_grid({}, ["nurse"])
    with pytest.raises(ValueError, match="per_profession must be at least 1"):
        profession_grid({"model": _run(tmp_path / "a", (0, 0, 0), ["nurse"], 1)}, ["nurse"], per_profession=0)
