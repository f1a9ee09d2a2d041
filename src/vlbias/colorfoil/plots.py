"""Figures of the ColorFoil pages: examples as in the paper's Figure 1, accuracies, confusion matrices."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd


def plot_examples(dataset, benchmark: pd.DataFrame, n: int = 6, seed: int = 0, foils: int = 2, columns: int = 2):
    """A grid of benchmark images, each with its caption (green) and first ``foils`` foils (red)."""
    import matplotlib.pyplot as plt

    n = min(n, len(benchmark))
    rows = np.sort(np.random.default_rng(seed).choice(len(benchmark), size=n, replace=False)) if n else []
    columns = max(1, min(columns, n))
    lines = (foils + 1) * 2
    fig, axes = plt.subplots(-(-n // columns) or 1, columns, figsize=(3.75 * columns, (3.2 + 0.32 * lines) * (-(-n // columns) or 1)),
                             squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, row in zip(axes.ravel(), rows):
        ax.imshow(dataset.image(int(benchmark["image_index"].iat[row])))
        wrap = lambda text: "\n".join(textwrap.wrap(text, 40))  # noqa: E731
        ax.set_title(wrap("caption: " + benchmark["caption"].iat[row]), fontsize=9, color="#1a7f37", loc="left")
        text = "\n".join(wrap(f"foil {j + 1}: {foil}") for j, foil in enumerate(benchmark["foils"].iat[row][:foils]))
        ax.text(0, -0.03, text, transform=ax.transAxes, va="top", fontsize=9, color="#b42318")
    fig.tight_layout()
    return fig


def plot_accuracy(table: pd.DataFrame, published_table: pd.DataFrame | None = None, chance: bool = True):
    """Accuracy with its 95% interval per model and number of foils, one panel per data set;
    published accuracies (matched on ``paper model``) as hollow diamonds. Models are named by the
    table's ``label`` column where it has one (words for a reader), else by their spec."""
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(table["dataset"]))
    models = list(dict.fromkeys(table["model"]))
    foil_counts = sorted(table["foils"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.75 * len(datasets), 0.7 * len(models) + 2.6),
                             squeeze=False, sharey=True)
    colours = plt.get_cmap("viridis")(np.linspace(0.1, 0.8, len(foil_counts)))
    for ax, dataset in zip(axes[0], datasets):
        part = table[table["dataset"] == dataset]
        for j, k in enumerate(foil_counts):
            rows = part[part["foils"] == k].set_index("model").reindex(models)
            y = np.arange(len(models)) + (j - (len(foil_counts) - 1) / 2) * 0.25
            ax.errorbar(rows["accuracy_%"], y, xerr=[rows["accuracy_%"] - rows["ci_low_%"], rows["ci_high_%"] - rows["accuracy_%"]],
                        fmt="o", color=colours[j], capsize=2, label=f"{k} foil{'s' if k > 1 else ''} (ours)")
            if published_table is not None and "paper model" in rows:
                paper = published_table[(published_table["measure"] == "accuracy_%") & (published_table["dataset"] == dataset)
                                        & (published_table["foils"] == k)].set_index("model")["value"]
                values = rows["paper model"].map(paper)
                ax.scatter(values, y, marker="D", facecolors="none", edgecolors=colours[j],
                           label=f"{k} foil{'s' if k > 1 else ''} (published)")
            if chance:
                ax.axvline(100 / (k + 1), color=colours[j], linestyle=":", linewidth=1)
        names = (table.drop_duplicates("model").set_index("model")["label"].reindex(models)
                 if "label" in table else pd.Series(models, index=models))
        ax.set_yticks(np.arange(len(models)), [textwrap.fill(str(name), 22) for name in names])
        ax.set(xlim=(0, 100), title=dataset)
    axes[0][0].invert_yaxis()
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)  # below, at the full width
    legend_rows = -(-len(labels) // 3)
    bottom = (0.35 + 0.2 * legend_rows) / fig.get_figheight()
    fig.supxlabel("accuracy (%), 95% Wilson interval; dotted lines: chance, 1/(k+1)", fontsize=9, y=bottom)
    fig.tight_layout(rect=(0, bottom + 0.02, 1, 1))
    return fig


def plot_confusions(matrices: dict[str, pd.DataFrame], columns: int = 2, vmax: float = 1.0):
    """Heat maps of colour error rates (original colour x foil colour), one per model."""
    import matplotlib.pyplot as plt

    n = len(matrices)
    columns = max(1, min(columns, n))
    rows = -(-n // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.75 * columns, 3.5 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    image = None
    for index, (ax, (name, rates)) in enumerate(zip(axes.ravel(), matrices.items())):
        ax.axis("on")
        ax.grid(False)
        image = ax.imshow(rates.to_numpy(dtype=float), vmin=0, vmax=vmax, cmap="magma_r")
        ax.set_xticks(range(rates.shape[1]), rates.columns, rotation=60, fontsize=8)
        ax.set_yticks(range(rates.shape[0]), rates.index, fontsize=8)
        ax.set(xlabel="foil colour", title=name)
        if index % columns == 0:
            ax.set_ylabel("colour in the caption")
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="foil scored ≥ caption (error rate)")
    return fig


def plot_per_colour(per_colour: pd.DataFrame, model_column: str = "model"):
    """Per-colour accuracy with 95% intervals, one marker colour per model."""
    import matplotlib.pyplot as plt

    colours_in_order = list(dict.fromkeys(per_colour.sort_values("n", ascending=False)["colour"]))
    models = list(dict.fromkeys(per_colour[model_column]))
    fig, ax = plt.subplots(figsize=(min(7.5, max(6, 0.5 * len(colours_in_order) + 2)), 3.6))
    palette = plt.get_cmap("tab10")
    for j, model in enumerate(models):
        part = per_colour[per_colour[model_column] == model].set_index("colour").reindex(colours_in_order)
        x = np.arange(len(colours_in_order)) + (j - (len(models) - 1) / 2) * 0.8 / max(1, len(models))
        ax.errorbar(x, part["accuracy_%"], yerr=[part["accuracy_%"] - part["ci_low_%"], part["ci_high_%"] - part["accuracy_%"]],
                    fmt="o", capsize=2, color=palette(j % 10), label=model)
    ax.set_xticks(np.arange(len(colours_in_order)), colours_in_order, rotation=45)
    ax.set(ylim=(0, 100), ylabel="accuracy (%)", title="accuracy by the colour named in the caption")
    # below the axes, so that the figure keeps the content width
    ax.legend(fontsize=8, bbox_to_anchor=(0.5, 0), loc="upper center", borderaxespad=4.5, ncol=min(4, len(models)))
    fig.tight_layout()
    return fig


def plot_two_choice(table: pd.DataFrame, labels: dict | None = None):
    """The two-choice readings (:func:`~vlbias.colorfoil.generative.two_choice_table`) as bars with their
    95% intervals, one panel per data set, one group of bars per model: right with the caption first,
    with the foil first, averaged over the orders (chance 50%, dotted), right in both orders (chance
    25%, dotted) and the position-bias rate (hatched: a rate of answering by position, not an accuracy)."""
    import matplotlib.pyplot as plt

    from .generative import READINGS

    labels = labels or {}
    datasets = list(dict.fromkeys(table["dataset"]))
    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.75 * len(datasets), 3.4), squeeze=False, sharey=True)
    colours = plt.get_cmap("tab10")(np.arange(len(READINGS)))
    width = 0.8 / len(READINGS)
    for ax, dataset in zip(axes[0], datasets):
        part = table[table["dataset"] == dataset]
        for j, reading in enumerate(READINGS):
            rows = part[part["reading"] == reading].set_index("model").reindex(models)
            x = np.arange(len(models)) + (j - (len(READINGS) - 1) / 2) * width
            whiskers = np.clip([rows["accuracy_%"] - rows["ci_low_%"], rows["ci_high_%"] - rows["accuracy_%"]], 0, None)
            ax.bar(x, rows["accuracy_%"], width, yerr=whiskers, capsize=2, color=colours[j], label=reading,
                   hatch="//" if j == len(READINGS) - 1 else None, edgecolor="white" if j < len(READINGS) - 1 else "black")
        for chance in (50, 25):
            ax.axhline(chance, color="grey", linestyle=":", linewidth=1)
        ax.set_xticks(np.arange(len(models)), [textwrap.fill(str(labels.get(m, m)), 18) for m in models])
        ax.set(ylim=(0, 100), title=dataset)
    axes[0][0].set_ylabel("% of pairs, 95% interval")
    handles, names = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig
