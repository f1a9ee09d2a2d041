"""Small helpers for book pages: the profile banner, published-number tables, headers in words,
figure captions."""

from __future__ import annotations

import copy
import html
import re
from importlib import resources
from pathlib import Path

import pandas as pd
from pandas.io.formats.style import Styler

_DEMO_RANDOM = (
    "This page was executed in the <b>demo profile</b>. Its numbers come from "
    "<b>randomly initialised tiny models</b> and <b>generated fixture data</b> "
    "({details}); they demonstrate the method and say nothing about the real models or data "
    "sets. Rerun the notebook in the full profile on a GPU for real results "
    "(see the introduction)."
)
_DEMO_REAL = (
    "This page was executed in the <b>demo profile</b>: <b>small real models</b> that pip packages "
    "carry or that were trained here, on <b>small samples</b> ({details}). Its numbers are real "
    "measurements of these small models, not of the models and data sets the paper studies, and "
    "small samples give wide intervals. Rerun the notebook in the full profile for those "
    "(see the introduction)."
)

_DEMO_WORLD = (
    "This page was executed in the <b>demo profile</b>. Its models were <b>trained here, on a generated "
    "world with planted causes</b> ({details}):{models} What a reader may conclude: whether the method "
    "recovers a cause that is known, not what the paper's models do. Those run in the full profile "
    "(see the introduction)."
)

_DEMO_WORLD_DATA = (
    "This page was executed in the <b>demo profile</b>. Its data are <b>a generated world with planted "
    "causes</b>, written in the real data set's format ({details}). What a reader may conclude: whether the "
    "method behaves as it should on data whose answer is known, not what the paper's data hold. Those are "
    "the full profile's (see the introduction)."
)


def banner_kind(specs) -> str:
    """What a page's model specs are, for :func:`profile_banner`: ``"random"`` when any is a random
    ``tiny:`` model, ``"world"`` when every one was trained here (``trained:``), else ``"real"``."""
    specs = [spec for spec in specs if spec]
    if any(str(spec).startswith("tiny:") for spec in specs):
        return "random"
    if specs and all(str(spec).startswith("trained:") for spec in specs):
        return "world"
    return "real"


def profile_banner(profile: str, details: str = "", models: str | None = None, specs=(), power=()) -> object:
    """An admonition stating where this page's numbers come from; display it near the top.

    ``models`` says what the demo profile ran: ``"random"`` (tiny random models, fixtures),
    ``"real"`` (small real models, e.g. from pip packages) or ``"world"`` (models trained here on a
    generated world with planted causes: the banner then says, per spec of ``specs``, what it is
    and which causes it plants). Without ``models`` it follows from ``specs`` (:func:`banner_kind`),
    and is ``"random"`` when no specs are given either.
    ``power`` (:func:`page_power`: the page's declared :class:`vlbias.stages.Power` lines) adds what the
    page can detect: each planted contrast's effect, sample size and power, and, before anything else
    on it, where a contrast falls short of the power required, the sample size it would need.
    Rendered as HTML with Sphinx's admonition classes, so it looks the same in Jupyter and in the
    built book.
    """
    from IPython.display import HTML

    models = models or (banner_kind(specs) if len(specs) else "random")
    if models not in ("random", "real", "world"):
        raise ValueError(f"models must be 'random', 'real' or 'world', got {models!r}")
    use_book_style()  # every page calls this first: its tables and figures then take the book's style
    details = html.escape(details or "see the parameters cell")
    if profile == "demo" and models == "random":
        kind, title, body = "warning", "Demo output: not real results", _DEMO_RANDOM.format(details=details)
    elif profile == "demo" and models == "world":
        from .models.trained import describe_trained

        trained = list(dict.fromkeys(str(spec) for spec in specs if str(spec).startswith("trained:")))
        listed = "".join(f"<li><code>{html.escape(spec)}</code>: {html.escape(describe_trained(spec.partition(':')[2]))}"
                         "</li>" for spec in trained)
        if listed:
            kind, title = "warning", "Demo output: models trained on a planted world"
            body = _DEMO_WORLD.format(details=details, models=f"</p><ul>{listed}</ul><p>")
        else:  # a page of data only: no model runs on it
            kind, title = "warning", "Demo output: a generated world with planted causes"
            body = _DEMO_WORLD_DATA.format(details=details)
    elif profile == "demo":
        kind, title, body = "warning", "Demo output: small models and samples", _DEMO_REAL.format(details=details)
    elif profile == "rehearsal":
        kind, title = "warning", "Rehearsal: random weights, small data"
        body = ("This page ran the <b>full profile's</b> code paths, its models named by their own hub ids and "
                "open_clip tags, on <b>checkpoints with random weights</b> (a local hub mirror, <code>python -m "
                "vlbias rehearsal build</code>; a few at reduced depth, full width, each listed with why by <code>python -m "
                "vlbias rehearsal list</code>) and <b>small generated copies</b> of the data sets, with sizes "
                f"from <code>params/rehearsal.yml</code>: {details}. Its numbers mean nothing; that it ran shows "
                "every model loading and every step running.")
    else:
        kind, title = "note", f"Profile: {html.escape(profile)}"
        body = f"Numbers on this page were computed in this run with: {details}."
    return HTML(f'<div class="admonition {kind}"><p class="admonition-title">{title}</p><p>{body}</p>'
                f'{power_html(power)}</div>')


def page_power(name: str, namespace) -> list:
    """The :class:`vlbias.stages.Power` lines notebook ``name`` declares, at the parameters it runs with
    (``namespace``: its variables, ``globals()`` in the notebook); ``[]`` for a page that declares none."""
    from .plan import declaration

    found = declaration(name).power
    return [] if found is None else found(namespace)


def power_html(power) -> str:
    """The banner's power section (HTML): a short paragraph per contrast, the shortfalls first."""
    from .stages import REQUIRED_POWER

    power = list(power)
    if not power:
        return ""
    short = [line for line in power if not line.enough]
    text = ""
    if short:
        text += "".join(
            f"<p><b>This page cannot reach power {REQUIRED_POWER:g} for: {html.escape(line.claim)}.</b> At "
            f"{html.escape(line.n_text)} its power to detect {html.escape(line.effect_text)} is {line.power:.2f}; it "
            f"would need {line.needed:,} where it has {line.n:,}" + (f" ({html.escape(line.why)})" if line.why else "")
            + ". A verdict of no effect there is weak evidence.</p>" for line in short)
    items = "".join(
        f"<li>{html.escape(line.claim)}: {html.escape(line.effect_text)}, at {html.escape(line.n_text)}: power "
        f"<b>{line.power:.2f}</b> ({html.escape(line.method)})</li>" for line in power)
    return (text + "<p><b>Power</b>: the chance, at α = 0.05, that a claim's interval lies beyond 0 when the effect "
            "is as stated (on a planted page the interval of planted minus control):</p>"
            f"<ul>{items}</ul>")


def world_note(dataset) -> object:
    """A note saying that ``dataset`` is a generated world and what plays what in it (its world's
    ``about(options)``: HTML), rendered as an admonition; an empty output for any other data (the
    real data sets need no such note)."""
    from IPython.display import HTML

    from .data.registry import WORLDS, world_of

    found = world_of(dataset.root)
    if found is None or WORLDS.get(found[0]) is None or WORLDS[found[0]].about is None:
        return HTML("")
    name, options = found
    picture = ""
    if WORLDS[name].examples is not None:
        import base64
        import io

        from PIL import Image

        grid, alt = WORLDS[name].examples(Path(dataset.root))
        buffer = io.BytesIO()
        image = Image.fromarray(grid)
        image.resize((image.width * 3, image.height * 3), Image.Resampling.NEAREST).save(buffer, format="PNG")
        picture = (f'<p><img src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}" '
                   f'alt="{html.escape(alt)}" style="max-width:100%;image-rendering:pixelated"></p>'
                   f'<p><em>{html.escape(alt)}</em></p>')
    return HTML(f'<div class="admonition note"><p class="admonition-title">The data: a generated world in the '
                f'layout of {html.escape(name)}, not the real data set</p>{WORLDS[name].about(options)}{picture}</div>')


def published(name: str) -> pd.DataFrame:
    """A published-numbers table shipped with vlbias (``resources/published/<name>.csv``).

    The CSV's leading ``#`` lines give the source; they are kept in ``frame.attrs["source"]``.
    """
    text = resources.files("vlbias").joinpath("resources", "published", f"{name}.csv").read_text(encoding="utf-8")
    comments = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    rows = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    from io import StringIO

    frame = pd.read_csv(StringIO(rows))
    frame.attrs["source"] = " ".join(comments)
    return frame


def beside_published(ours: pd.DataFrame, published_table: pd.DataFrame, measure: str,
                     on: dict[str, str], label: str = "published (paper)") -> pd.DataFrame:
    """``ours`` with a column of the paper's numbers for ``measure``, matched on ``on``
    (our column -> published column). Several published values for one row are joined with " / "
    (papers sometimes state a number twice, differently); rows without one stay empty."""
    rows = published_table[published_table["measure"] == measure]
    text = rows.groupby(list(on.values()))["value"].agg(lambda v: " / ".join(f"{x:g}" for x in v))
    keys = pd.MultiIndex.from_frame(ours[list(on)]) if len(on) > 1 else pd.Index(ours[next(iter(on))])
    result = ours.copy()
    result[label] = text.reindex(keys).fillna("").to_numpy()
    return result


def failures_box(failures: pd.DataFrame, what: str = "models") -> object:
    """A visible warning box listing the models that failed to load or run (``failures`` from
    :func:`vlbias.models.for_each_model`), with their reasons; an empty note when none failed."""
    from IPython.display import HTML

    if failures is None or not len(failures):
        return HTML("")
    items = "".join(f"<li><code>{html.escape(str(row.model))}</code> ({html.escape(str(row.stage))}): "
                    f"{html.escape(str(row.error))}</li>" for row in failures.itertuples())
    return HTML(f'<div class="admonition warning"><p class="admonition-title">{len(failures)} of the {what} '
                f'failed; their rows are missing below</p><ul>{items}</ul></div>')


#: measure names, in words on the page wherever a table carries them as a column or a row label
#: (``scores.loc["spearman_rho"]``); other row labels are data (an occupation's own spelling) and stay
MEASURE_WORDS = {
    "spearman_rho": "Spearman's ρ", "spearman_p": "Spearman's p", "cohen_kappa": "Cohen's κ",
    "mean_abs_gap": "mean absolute gap",
}

#: column names of vlbias tables, in words for a reader (others: underscores become spaces)
COLUMN_WORDS = {"f1": "F1", "detection_auroc": "detection AUROC", "mean_margin": "mean margin", "n": "n",
                **MEASURE_WORDS}

#: (low, high) column pairs shown as one interval column; the label's {level} is the confidence
INTERVAL_PAIRS = {
    ("ci_low_%", "ci_high_%"): "{level} CI (%)",
    ("ci_low", "ci_high"): "{level} CI",
    ("balanced_low_%", "balanced_high_%"): "balanced {level} CI (%)",
}


def column_in_words(name: str) -> str:
    """``unmarked_%`` → ``unmarked (%)``, ``published accuracy_% (paper)`` → ``published accuracy (%)
    (paper)``, ``detection_auroc`` → ``detection AUROC``."""
    if not isinstance(name, str):
        return name
    if name in COLUMN_WORDS:
        return COLUMN_WORDS[name]
    return name.replace("_%", " (%)").replace("_pp", " (pp)").replace("_", " ").strip()


def headers_in_words(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its column and index names in words (:func:`column_in_words`), and row labels that
    name a measure (:data:`MEASURE_WORDS`); the values are untouched."""
    shown = table.rename(columns=column_in_words, index=MEASURE_WORDS)
    shown.index = shown.index.set_names([column_in_words(name) for name in shown.index.names])
    shown.columns = shown.columns.set_names([column_in_words(name) for name in shown.columns.names])
    return shown


#: the book's figure style (matplotlib rcParams): type sizes that stay readable at the content width of a
#: page (about 7.5 inches at 100 px an inch), where figures are drawn at most that wide. Pages show
#: figures at twice their 100 dpi ("retina": 200 dpi images, shown at their size in inches)
FIGURE_STYLE = {
    "figure.dpi": 100, "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
    "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "figure.titlesize": 11,
    "axes.spines.top": False, "axes.spines.right": False,
}
#: the widest a figure is drawn, in inches: a page's content width
CONTENT_WIDTH_INCHES = 7.5


def panels(count: int, row_height: float = 3.2, width: float = CONTENT_WIDTH_INCHES, **subplots):
    """A figure of ``count`` panels at the book's content width, at most two a row (so each panel's type
    stays readable on the page): ``(fig, axes)``, ``axes`` a flat list of ``count`` axes, row by row.
    ``subplots``: :func:`matplotlib.pyplot.subplots`' options (``sharey=True``, ...)."""
    import matplotlib.pyplot as plt

    if count < 1:
        raise ValueError(f"panels: count is the number of panels, 1 or more; got {count!r}")
    columns = 1 if count == 1 else 2
    rows = -(-count // columns)
    fig, grid = plt.subplots(rows, columns, figsize=(width, row_height * rows), squeeze=False, **subplots)
    axes = list(grid.ravel())
    for ax in axes[count:]:
        ax.remove()
    return fig, axes[:count]


#: names of measures and settings as an axis says them (others: :func:`column_in_words`)
AXIS_WORDS = {"guidance_scale": "guidance scale", "noise_scale": "CADS noise scale s", "rho": "Spearman's ρ",
              "slope": "slope (generated on planted share)", "diversity": "diversity (mean pairwise distance)",
              "VRBS": "VRBS", **MEASURE_WORDS}


def axis_label(name: str) -> str:
    """``name`` (a column of a vlbias table) as an axis label: ``guidance_scale`` -> ``guidance scale``."""
    return AXIS_WORDS.get(name, column_in_words(name))


def use_book_style() -> None:
    """The book's table and figure style for this kernel: every DataFrame and Styler displayed through
    :func:`vlbias.tables.table_html` (headers in words, one number format, long tables folded), and
    matplotlib's :data:`FIGURE_STYLE`. :func:`profile_banner`, the first call of every page, calls it."""
    import matplotlib

    matplotlib.rcParams.update(FIGURE_STYLE)
    show_headers_in_words()
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        from matplotlib.figure import Figure
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")  # 200 dpi images, shown at their size in inches
        shell.display_formatter.formatters["text/plain"].for_type(Figure, _figure_text)


#: an axis label written as code: a word joined to another by an underscore (``guidance_scale``)
CODE_STYLE_LABEL = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b")


def code_style_axis_labels(fig) -> list[str]:
    """The axis labels of ``fig`` written as code (``spearman_rho``), each once; a page's figures say them
    in words (:func:`axis_label`)."""
    labels = [label for ax in fig.axes for label in (ax.get_xlabel(), ax.get_ylabel()) if CODE_STYLE_LABEL.search(label or "")]
    return list(dict.fromkeys(labels))


def _figure_text(fig, printer=None, cycle=False) -> str:
    """A figure's plain-text output (matplotlib's own ``<Figure size ...>``), after warning, on the page,
    of any axis label written as code (the demo-book test fails on the warning)."""
    import warnings

    coded = code_style_axis_labels(fig)
    if coded:
        warnings.warn(f"a figure's axis labels are written as code, not words: {coded}; use vlbias.book.axis_label",
                      UserWarning, stacklevel=2)
    text = repr(fig)
    if printer is not None:
        printer.text(text)
        return None
    return text


def show_headers_in_words() -> None:
    """In a running IPython kernel, show every DataFrame and Styler in the book's table style, headers
    in words (``gap_pp`` -> ``gap (pp)``; :func:`vlbias.tables.table_html`): display only, the DataFrame
    itself keeps its names and values. Outside IPython, nothing."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from .tables import table_html

    html_formatter = shell.display_formatter.formatters["text/html"]
    html_formatter.for_type(pd.DataFrame, table_html)
    html_formatter.for_type(Styler, table_html)


def styler_in_words(styler: Styler) -> Styler:
    """A copy of ``styler`` whose column labels, index names and measure-named row labels read in words,
    long labels breakable (:func:`vlbias.tables.breakable`); its formats, captions and hidden parts are kept (they refer to the data's own names, which do not
    change)."""
    from .tables import LONG_WORD, breakable

    shown = copy.deepcopy(styler)
    # every level of the column labels; a long label (a model spec) may break (vlbias.tables.breakable)
    shown.format_index(lambda label: breakable(column_in_words(label)) if isinstance(label, str) else label,
                       axis="columns")
    labels = {label for entry in styler.data.index for label in _labels(entry)}
    if labels & MEASURE_WORDS.keys() or any(isinstance(label, str) and len(label) > LONG_WORD for label in labels):
        shown.format_index(lambda label: breakable(MEASURE_WORDS.get(label, label)) if isinstance(label, str) else label,
                           axis="index")
    shown.format_index_names(column_in_words, axis="index")
    shown.format_index_names(column_in_words, axis="columns")
    return shown


def _labels(entry) -> list:
    return list(entry) if isinstance(entry, tuple) else [entry]


def code_style_headers(page_html: str) -> list[str]:
    """The column headers of the tables in ``page_html`` still written as code (with an underscore),
    each once; row labels (the values of an index) are not headers and are not looked at."""
    page_html = page_html.replace("<wbr>", "")  # break opportunities in long labels (vlbias.tables) are not text
    heads = re.findall(r"<thead>.*?</thead>", page_html, flags=re.DOTALL)
    found = [text.strip() for head in heads for text in re.findall(r"<th[^>]*>([^<]*_[^<]*)</th>", head)]
    return sorted(set(found))


def measure_names_in_cells(page_html: str) -> list[str]:
    """Measure names of :data:`MEASURE_WORDS` written as code in any cell of the tables in ``page_html``
    (a header, a row label or a value), each once."""
    names = "|".join(map(re.escape, MEASURE_WORDS))
    page_html = page_html.replace("<wbr>", "")  # break opportunities in long labels (vlbias.tables) are not text
    return sorted(set(re.findall(rf"<t[hd][^>]*>\s*({names})\s*</t[hd]>", page_html)))


#: the lowest resolution of a figure image in the built book (dots per inch)
LEAST_FIGURE_DPI = 150
_CAPTION = re.compile(r'<span class="caption-number">\s*(Fig\. \d+)\s*</span>\s*<span class="caption-text">(.*?)</span>',
                      re.S)


def _text(fragment: str) -> str:
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", fragment).split()))


def page_problems(page_html: str, page_path: Path | None = None) -> list[str]:
    """What a built page shows that a reader should not meet, one line each: a figure number doubled
    ("Fig. 8 Figures 4-6: ..."), a caption that repeats another of the page's, a table whose every cell
    is missing, and (given the page's file, to find its images) a figure image under
    :data:`LEAST_FIGURE_DPI` dpi."""
    problems = []
    captions = [(number, _text(text)) for number, text in _CAPTION.findall(page_html)]
    for number, text in captions:
        if re.match(r"(Figures?|Fig\.)\s*\d", text):
            problems.append(f"{number} is numbered twice: {text[:60]!r}")
    seen: dict[str, str] = {}
    for number, text in captions:
        if text in seen:
            problems.append(f"{number} repeats the caption of {seen[text]}: {text[:60]!r}")
        seen.setdefault(text, number)
    for table in re.findall(r"<table.*?</table>", page_html, re.S):
        values = [_text(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]
        if values and all(value.lower() in ("", "nan", "none", "–", "<na>") for value in values):
            problems.append(f"a table of {len(values)} cells, every one missing")
    if page_path is not None:
        from PIL import Image

        for source in dict.fromkeys(re.findall(r'<img[^>]+src="([^"]*_images/[^"]+\.png)"', page_html)):
            image_path = (Path(page_path).parent / source).resolve()
            if not image_path.exists():
                continue
            with Image.open(image_path) as image:
                dpi = image.info.get("dpi", (0, 0))[0]
            if round(dpi) < LEAST_FIGURE_DPI:
                problems.append(f"{source}: {dpi:.0f} dpi, under {LEAST_FIGURE_DPI}")
    return problems


def readable(table: pd.DataFrame, decimals: int = 1, confidence: float = 0.95) -> pd.DataFrame:
    """``table`` for a reader: headers in words and each (low, high) pair as one interval column.

    The interval column, e.g. "95% CI (%)", holds "[low, high]" at ``decimals`` places, where
    the pair's low column was; other values are unchanged (round them before, as the page needs).
    """
    shown = table.copy()
    level = f"{confidence:.0%}" if round(confidence * 100, 6).is_integer() else f"{confidence:.1%}"
    for (low, high), label in INTERVAL_PAIRS.items():
        if low in shown.columns and high in shown.columns:
            merged = [f"[{a:.{decimals}f}, {b:.{decimals}f}]" if pd.notna(a) and pd.notna(b) else ""
                      for a, b in zip(shown[low], shown[high])]
            position = shown.columns.get_loc(low)
            shown = shown.drop(columns=[low, high])
            shown.insert(position, label.format(level=level), merged)
    return headers_in_words(shown)


# --------------------------------------------------------------------------- figure captions
# A cell that draws a figure carries its caption in its metadata, where myst-nb reads it:
# {"mystnb": {"figure": {"caption": "...", "name": "fig-<notebook>-<short>"}}}.

#: what, in a code cell's source, draws a figure: plt.show(), a figure object, a pandas or seaborn
#: plot, a vlbias ``plot_*`` helper, an image shown with imshow
DRAWS_FIGURE = re.compile(r"\bplt\.(show|subplots|figure|imshow)\(|\bfig\b|\bFigure\(|\.plot(\.\w+)?\("
                          r"|\bsns\.(?!set)\w+\(|\bplot_\w+\(|\bimshow\(")


def draws_figure(source: str) -> bool:
    """Whether a code cell with this source draws a figure (and so needs a caption)."""
    return bool(DRAWS_FIGURE.search(source))


def figure_options(cell: dict) -> dict | None:
    """The cell's figure caption and name (``metadata.mystnb.figure``), or None."""
    options = cell.get("metadata", {}).get("mystnb", {}).get("figure")
    return options if isinstance(options, dict) else None


def _is_display(output: dict) -> bool:
    return output.get("output_type") in ("display_data", "execute_result")


def _is_image(output: dict) -> bool:
    return _is_display(output) and any(mime.startswith("image/") for mime in output.get("data", {}))


#: the (hidden) source of a cell that holds the further outputs of the captioned cell above it
CONTINUED_OUTPUTS = "# further outputs of the cell above"


def captions_on_images_only(notebook: dict) -> dict:
    """``notebook`` with each captioned cell's caption on its images only, one figure per image.

    myst-nb wraps *every* display output of a cell with figure metadata in a figure with the
    caption: a table shown in the same cell would get the caption too, and a second image the same
    name (a duplicate label). So a captioned cell's outputs are split into runs, each run after the
    first in a cell of its own whose source is hidden (tag ``remove-input``): runs of non-image outputs
    carry no figure metadata; each image carries the caption (the k-th image the k-th of the cell's
    ``captions``, a list, where it gives one: a cell that draws two figures captions each), the second
    image of the cell the name ``NAME-2``, and so on. Cells that need no split are kept as they are; the notebook file
    itself is never changed (the book's Sphinx hook applies this to the text it reads).
    """
    cells, changed = [], False
    for cell in notebook.get("cells", []):
        options = figure_options(cell) if cell.get("cell_type") == "code" else None
        displays = [output for output in cell.get("outputs", []) if _is_display(output)] if options else []
        captions = (options or {}).get("captions") or []
        if not displays or (len(displays) == 1 and _is_image(displays[0])):  # myst-nb gets it right
            if "captions" in (options or {}):  # ours, not myst-nb's: one image takes the cell's caption
                cell = copy.deepcopy(cell)
                del cell["metadata"]["mystnb"]["figure"]["captions"]
                changed = True
            cells.append(cell)
            continue
        changed = True
        images = 0
        base = {key: value for key, value in options.items() if key != "captions"}
        for index, (image, outputs) in enumerate(_output_runs(cell["outputs"])):
            part = copy.deepcopy({key: value for key, value in cell.items() if key != "outputs"})
            part["outputs"] = outputs
            mystnb = part["metadata"]["mystnb"]
            del mystnb["figure"]
            if image:
                images += 1
                name = options.get("name")
                mystnb["figure"] = {**base, **({"caption": captions[images - 1]} if images <= len(captions) else {}),
                                    **({"name": f"{name}-{images}"} if name and images > 1 else {})}
            if not mystnb:
                del part["metadata"]["mystnb"]
            if index:
                part["source"] = CONTINUED_OUTPUTS  # myst-nb skips a code cell whose source is blank
                part["execution_count"] = None
                tags = [tag for tag in part["metadata"].get("tags", []) if tag not in ("hide-input", "remove-input")]
                part["metadata"]["tags"] = tags + ["remove-input"]
                if "id" in part:
                    part["id"] = f"{part['id']}-{index}"
            cells.append(part)
    return {**notebook, "cells": cells} if changed else notebook


def alt_text_from_captions(notebook: dict) -> dict:
    """``notebook`` with every captioned figure's image given the caption as its alt text
    (``metadata.mystnb.image.alt``, which myst-nb puts on the ``<img>``) where the cell sets none, so a
    screen reader says what the figure shows rather than the image's file name. The notebook file
    itself is never changed (the book's Sphinx hook applies this to the text it reads)."""
    cells, changed = [], False
    for cell in notebook.get("cells", []):
        options = figure_options(cell) if cell.get("cell_type") == "code" else None
        image = cell.get("metadata", {}).get("mystnb", {}).get("image", {})
        if options and options.get("caption") and not image.get("alt"):
            cell = copy.deepcopy(cell)
            mystnb = cell["metadata"]["mystnb"]
            mystnb["image"] = {**mystnb.get("image", {}), "alt": " ".join(str(options["caption"]).split())}
            changed = True
        cells.append(cell)
    return {**notebook, "cells": cells} if changed else notebook


PARAMETERS_STYLE = ("<style>table.vlbias-parameters td, table.vlbias-parameters th {padding: 0.25em 0.7em; "
                    "vertical-align: top; text-align: left; border-bottom: 1px solid #dde1e6; font-size: 0.88em}"
                    "table.vlbias-parameters td code {white-space: pre-wrap; word-break: break-word}</style>")
#: the longest a parameter's value is written in the table of a run's parameters (the rest elided)
LONGEST_VALUE = 100


def assignments(source: str) -> dict[str, tuple[str, str]]:
    """``{name: (value as written, comment)}`` of the top-level assignments in a parameters cell's
    source (:func:`vlbias.profiles.cell_assignments`); a comment is the one on the assignment's lines,
    joined with comment lines that continue it (indented lines holding only a comment, under it)."""
    import ast
    import io
    import tokenize

    from .profiles import cell_assignments

    lines = source.splitlines()
    comments = {token.start[0]: token.string.lstrip("#").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.type == tokenize.COMMENT}
    found = {}
    for name, statement in cell_assignments(source):
        if statement.value is None:  # a bare annotation: no value
            continue
        said = [comments[line] for line in range(statement.lineno, statement.end_lineno + 1) if line in comments]
        line = statement.end_lineno + 1
        while line <= len(lines) and lines[line - 1].startswith((" ", "\t")) and lines[line - 1].strip().startswith("#"):
            said.append(comments.get(line, ""))
            line += 1
        text = ast.get_source_segment(source, statement.value) or ""
        found[name] = (" ".join(text.split()), " ".join(said).strip())
    return found


def parameters_table_html(defaults: dict[str, tuple[str, str]], injected: dict[str, tuple[str, str]],
                          profile: str | None = None) -> str:
    """One table of a run's parameters: each parameter's value in this run, its default where the run
    set another, and what it is (the parameters cell's comment), folded into a dropdown."""
    def value(text: str) -> str:
        shown = text if len(text) <= LONGEST_VALUE else text[:LONGEST_VALUE - 1] + "…"
        return f"<code>{html.escape(shown)}</code>"

    rows = []
    for name, (default, about) in defaults.items():
        used = injected.get(name, (default, ""))[0]
        rows.append(f"<tr><td><code>{html.escape(name)}</code></td><td>{value(used)}</td>"
                    f"<td>{value(default) if used != default else ''}</td><td>{html.escape(about)}</td></tr>")
    for name, (used, _) in injected.items():
        if name not in defaults:
            rows.append(f"<tr><td><code>{html.escape(name)}</code></td><td>{value(used)}</td><td></td><td></td></tr>")
    changed = sum(1 for name in injected if injected[name][0] != defaults.get(name, ("",))[0])
    by = f"the {html.escape(profile)} profile" if profile else "this run"
    return (f'<details class="vlbias-parameters"><summary><b>Parameters of this run</b>: {len(rows)}, of which '
            f'{by} sets {changed} (click to show)</summary>'
            f'{PARAMETERS_STYLE}<table class="vlbias-parameters"><thead><tr><th>parameter</th><th>this run</th>'
            f'<th>default</th><th>what it is</th></tr></thead><tbody>{"".join(rows)}</tbody></table></details>')


def parameters_shown_once(notebook: dict) -> dict:
    """``notebook`` with its parameters shown once, as one table (:func:`parameters_table_html`): the
    parameters cell (the defaults) gives way to the table and papermill's injected cell is removed. A
    notebook without both cells is returned as it is; the notebook file itself is never changed."""
    cells = notebook.get("cells", [])
    tagged = {tag: index for index, cell in enumerate(cells)
              for tag in cell.get("metadata", {}).get("tags", []) if tag in ("parameters", "injected-parameters")}
    if "parameters" not in tagged or "injected-parameters" not in tagged:
        return notebook
    source = lambda index: "".join(cells[index].get("source", ""))  # noqa: E731
    try:
        defaults, injected = assignments(source(tagged["parameters"])), assignments(source(tagged["injected-parameters"]))
    except SyntaxError:
        return notebook
    profile = injected.get("profile", ("", ""))[0].strip("\"'") or None
    table = {"cell_type": "code", "execution_count": None, "id": "parameters-table",
             "metadata": {"tags": ["remove-input"]}, "source": "# the parameters of this run",
             "outputs": [{"output_type": "display_data", "metadata": {},
                          "data": {"text/html": parameters_table_html(defaults, injected, profile),
                                   "text/plain": "<the parameters of this run>"}}]}
    shown = []
    for index, cell in enumerate(cells):
        if index == tagged["parameters"]:
            shown.append(table)
        elif index != tagged["injected-parameters"]:
            shown.append(cell)
    return {**notebook, "cells": shown}


def for_the_book(notebook: dict) -> dict:
    """What the book's Sphinx hook makes of an executed notebook's text: captions on images only,
    alt text from the captions, the parameters shown once."""
    return parameters_shown_once(alt_text_from_captions(captions_on_images_only(notebook)))


def _output_runs(outputs: list[dict]) -> list[tuple[bool, list[dict]]]:
    """Outputs in runs of (is an image, outputs): each image alone, with the streams that follow it;
    other outputs together until the next image."""
    runs: list[tuple[bool, list[dict]]] = []
    for output in outputs:
        if _is_image(output) or not runs or (_is_display(output) and runs[-1][0]):
            runs.append((_is_image(output), [output]))
        else:
            runs[-1][1].append(output)
    return runs
