"""Part IV's figures (:mod:`vlbias.t2i.plots`)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from vlbias.t2i.plots import plot_profession_grid


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
    fig = plot_profession_grid(runs, professions, per_profession=2)
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
        plot_profession_grid({}, ["nurse"])
    with pytest.raises(ValueError, match="per_profession must be at least 1"):
        plot_profession_grid({"model": _run(tmp_path / "a", (0, 0, 0), ["nurse"], 1)}, ["nurse"], per_profession=0)


def test_plot_shares_draws_each_professions_shares_and_says_why_when_no_image_has_a_person(capsys, monkeypatch):
    """04d's figures: stacked shares among the images with a person; with none anywhere (the full profile's
    rehearsal: a random-weight annotator labels every image "no person"), one sentence and no table of 0 of 0
    (04d failed there with pandas' "no numeric data to plot")."""
    import matplotlib.pyplot as plt

    from vlbias.t2i import plots
    from vlbias.t2i.bias import category_distribution

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda value: shown.append(value))
    manifest = pd.DataFrame({"profession": ["nurse"] * 3 + ["pilot"] * 2,
                             "age": ["25-45", "under 25", "no person", "25-45", "25-45"]})
    distribution = category_distribution(manifest, label="age", order=["under 25", "25-45", "no person"])
    plt.close("all")
    plots.plot_shares(distribution, "Perceived age", len(manifest), "age")
    figure = plt.gcf()
    bars = [patch.get_width() for patch in figure.axes[0].patches]
    assert sorted(bars) == pytest.approx(sorted([0.5, 0.0, 0.5, 1.0]))  # nurse 1 of 2 each; pilot 2 of 2 at 25-45
    assert shown and shown[0].equals(distribution.round(3))
    plt.close("all")
    shown.clear()
    nobody = category_distribution(manifest.assign(age="no person"), label="age", order=["under 25", "25-45", "no person"])
    plots.plot_shares(nobody, "Perceived age", len(manifest), "age")
    assert not plt.get_fignums() and not shown
    assert capsys.readouterr().out.strip() == plots.no_person_note(5, "age")
    assert plots.no_person_note(5, "age").startswith("No age shares: the annotator labelled all 5 images 'no person'")
