"""Figures of Part IV."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd


def profession_grid(runs: Mapping[str, tuple[pd.DataFrame, str | Path]], professions: Sequence[str],
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
        raise ValueError("profession_grid needs at least one run: {label: (manifest, run_dir)}")
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
