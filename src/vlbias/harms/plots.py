"""Figures of Part III."""

from __future__ import annotations

import numpy as np


def plot_share_scatter(ax, real, model, labels, title: str, fit: dict | None = None):
    """Model female share against the labour statistics' share, one labelled point per occupation,
    the diagonal (model = statistics) dashed, and ``fit`` (:func:`~vlbias.harms.measures.amplification_slope`:
    ``intercept``, ``slope``, ``slope_low``, ``slope_high``) as a line with its interval in the legend.

    Defined for ``03a_stereotyping`` (the chapter's simulated shares and a measured model's).
    """
    ax.scatter(real, model, s=25, alpha=0.8)
    for x, y, label in zip(real, model, labels):
        ax.annotate(label, (x, y), fontsize=7, alpha=0.7, xytext=(2, 2), textcoords="offset points")
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="model = labour statistics")
    if fit is not None:
        grid = np.array([0, 1])
        ax.plot(grid, fit["intercept"] + fit["slope"] * grid, color="C3",
                label=f"fit: slope {fit['slope']:.2f} [{fit['slope_low']:.2f}, {fit['slope_high']:.2f}]")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="BLS female share", ylabel="model female share", title=title)
    ax.legend(loc="upper left", fontsize=8)
    return ax
