"""Figures of Part IV."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd


def plot_profession_grid(runs: Mapping[str, tuple[pd.DataFrame, str | Path]], professions: Sequence[str],
                    per_profession: int = 4, title: str = ""):
    """Generated images, one column per profession and ``per_profession`` rows per run.

    ``runs`` maps a label (the model, "planted reporting", ...) to ``(manifest, run_dir)`` as
    :func:`vlbias.t2i.generation.generate_to_disk` returns and writes them; every run shows the first
    ``per_profession`` images of each profession in its manifest's order (its seeds), so runs on the
    same jobs show the same seeds side by side. Each block of rows is labelled with its run on the left.
    """
    import matplotlib.pyplot as plt
    from PIL import Image

    if not runs:
        raise ValueError("plot_profession_grid needs at least one run: {label: (manifest, run_dir)}")
    if per_profession < 1:
        raise ValueError(f"per_profession must be at least 1, got {per_profession!r}")
    professions = list(professions)
    rows = per_profession * len(runs)
    fig, axes = plt.subplots(rows, len(professions), figsize=(1.5 * len(professions), 1.45 * rows + 0.6),
                             squeeze=False)
    for block, (label, (manifest, run_dir)) in enumerate(runs.items()):
        for column, profession in enumerate(professions):
            shown = manifest[manifest.profession == profession].head(per_profession)
            for offset in range(per_profession):
                ax = axes[block * per_profession + offset, column]
                ax.set_xticks([])
                ax.set_yticks([])
                if offset < len(shown):
                    row = shown.iloc[offset]
                    ax.imshow(Image.open(Path(run_dir) / row.file).convert("RGB"))
                    ax.set_xlabel(f"seed {row.seed}", fontsize=7)
                else:
                    ax.axis("off")
            axes[block * per_profession, column].set_title(profession, fontsize=9)
        if len(runs) > 1:
            axes[block * per_profession, 0].set_ylabel(label, fontsize=9, rotation=0, ha="right", va="center",
                                                       labelpad=12)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def no_person_note(n_images: int, attribute: str) -> str:
    """Why a page shows no ``attribute`` shares: the annotator found no person in any of the ``n_images``
    (every share among images with a person would be 0 of 0)."""
    return (f"No {attribute} shares: the annotator labelled all {n_images} images 'no person', so there is no "
            "image with a person to share out. Look at the images above: an annotator with random weights "
            "(the full profile's rehearsal) labels everything alike; a real one that finds no person "
            "means the prompts drew none.")


def plot_shares(distribution: pd.DataFrame, title: str, n_images: int, attribute: str, colormap: str = "viridis",
                table: pd.DataFrame | pd.Series | None = None) -> None:
    """Show ``table`` (default: ``distribution`` to three places) and a stacked bar of each profession's
    shares (:func:`vlbias.t2i.bias.category_distribution`: among its images with a person), the legend
    to the right of the bars. Where no image has a person, neither: the sentence of :func:`no_person_note` instead
    of a table of 0 of 0 and an empty figure."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    if distribution.empty or not distribution.notna().to_numpy().any():
        print(no_person_note(n_images, attribute))
        return
    display(distribution.round(3) if table is None else table)
    ax = distribution.plot.barh(stacked=True, figsize=(7.5, 0.35 * len(distribution) + 1.6), colormap=colormap,
                                width=0.8)
    ax.set(xlabel="share of images with a person", ylabel="", title=title)
    ax.legend(bbox_to_anchor=(1.01, 1), loc="upper left", fontsize=8)  # right of the bars: clear of the x label
    plt.tight_layout()
    plt.show()


def plot_annotator_confusions(reference: Sequence, reference_name: str, others: Mapping[str, Sequence],
                              labels: Sequence[str] | None = None, title: str = ""):
    """One heatmap per annotator of ``others`` (two per row): how many images each pair of labels (``reference_name``'s
    label in rows, the other's in columns) got, on the images both labelled; a column "none" counts the
    images the other annotator left unlabelled (a free answer that named no label). Cells off the
    diagonal are disagreements."""
    import matplotlib.pyplot as plt
    import numpy as np
    import seaborn as sns

    if not others:
        raise ValueError("plot_annotator_confusions needs at least one other annotator: {name: labels}")
    reference = pd.Series(list(reference), dtype=object)
    order = list(labels) if labels is not None else sorted(set(reference.dropna()), key=str)
    columns_per_row = min(len(others), 2)
    rows = -(-len(others) // columns_per_row)
    fig, axes = plt.subplots(rows, columns_per_row, figsize=(3.8 * columns_per_row + 0.4, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(others):]:
        ax.axis("off")
    for ax, (name, values) in zip(axes.flat, others.items()):
        other = pd.Series(list(values), dtype=object)
        if len(other) != len(reference):
            raise ValueError(f"others[{name!r}] has {len(other)} labels for {len(reference)} images")
        columns = order + (["none"] if other.isna().any() else [])
        table = (pd.crosstab(reference, other.fillna("none")).reindex(index=order, columns=columns, fill_value=0)
                 .astype(np.int64))
        sns.heatmap(table, annot=True, fmt="d", cmap="Blues", cbar=False, ax=ax)
        ax.set(xlabel=name, ylabel=reference_name)
        ax.tick_params(axis="x", rotation=0)
        ax.tick_params(axis="y", rotation=0)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
