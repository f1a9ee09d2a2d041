import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vlbias import book


def test_profile_banner_says_what_ran():
    random_page = book.profile_banner("demo", "tiny:clip on fixtures").data
    assert "Demo output: not real results" in random_page and "tiny:clip on fixtures" in random_page
    real_page = book.profile_banner("demo", "SmolLM2-135M", models="real").data
    assert "small real models" in real_page and "randomly initialised" not in real_page
    full_page = book.profile_banner("full", "ViT-B-32/openai").data
    assert "Demo" not in full_page and "ViT-B-32/openai" in full_page
    assert "&lt;b&gt;" in book.profile_banner("demo", "<b>").data  # details are escaped
    with pytest.raises(ValueError):
        book.profile_banner("demo", models="tiny")


def test_the_banner_follows_the_specs_and_lists_what_each_trained_model_plants():
    assert book.banner_kind(["tiny:clip", "trained:face-clip"]) == "random"
    assert book.banner_kind(["trained:face-clip", "trained:face-clip?uniform_named=0.5"]) == "world"
    assert book.banner_kind(["trained:face-clip", "asset:smollm2-135m"]) == "real"
    assert book.banner_kind([]) == "real"
    page = book.profile_banner("demo", "face world", specs=["trained:face-clip", "trained:face-clip",
                                                            "trained:face-clip?uniform_named=0.5"]).data
    assert "Demo output: models trained on a planted world" in page and "not what the paper's models do" in page
    assert page.count("<li>") == 2  # one entry per distinct spec
    assert "captions name White 10% of the time" in page and "every label 50% of the time (the uniform control)" in page
    assert "Demo output: not real results" in book.profile_banner("demo", "x").data  # no specs: as before
    assert "Profile: full" in book.profile_banner("full", "x", specs=["trained:face-clip"]).data
    data_only = book.profile_banner("demo", "caption world", models="world").data
    assert "Demo output: a generated world with planted causes" in data_only and "models were trained" not in data_only


def test_the_world_note_appears_for_a_generated_world_only(tmp_path):
    from vlbias.data import load_dataset

    world = load_dataset("fairface", root="world?train_per_cell=1&val_per_cell=1&image_size=16", split="val")
    note = book.world_note(world).data
    assert "a generated world in the layout of fairface, not the real data set" in note
    assert "abstract drawing, not a person" in note and "16 × 16 pixels" in note
    assert '<img src="data:image/png;base64,' in note and 'alt="Example pictures of the face world' in note
    fixture = load_dataset("fairface", root="fixture", split="val")
    assert book.world_note(fixture).data == ""


def test_beside_published_joins_and_keeps_both_stated_values():
    ours = pd.DataFrame({"race": ["White", "Black"], "rate": [40.0, 10.0]})
    published = pd.DataFrame({"measure": ["unmarked_rate"] * 3, "group": ["White", "White", "Indian"],
                              "value": [47.9, 48.0, 1.2]})
    shown = book.beside_published(ours, published, "unmarked_rate", on={"race": "group"})
    assert shown["published (paper)"].tolist() == ["47.9 / 48", ""]


@pytest.mark.parametrize("path", sorted((Path(book.__file__).parent / "resources" / "published").glob("*.csv")),
                         ids=lambda path: path.stem)
def test_published_tables_read_every_row_with_numbers_and_carry_their_source(path):
    # parsed here with the csv module: the comment lines are the source, the first other line the header
    lines = path.read_text(encoding="utf-8").splitlines()
    comments = [line[1:].strip() for line in lines if line.startswith("#")]
    header, *rows = csv.reader(line for line in lines if not line.startswith("#"))
    table = book.published(path.stem)
    assert list(table.columns) == header and len(table) == len(rows) > 0
    assert table.attrs["source"] == " ".join(comments) and comments
    for column in ("value", "published", "count"):
        if column in header:  # numbers, not strings, row for row
            expected = [float(row[header.index(column)]) if row[header.index(column)] else np.nan for row in rows]
            np.testing.assert_array_equal(table[column].to_numpy(dtype=float), expected)


def test_published_markedness_numbers_are_the_papers():
    table = book.published("markedness_wolfe2022")
    assert table.attrs["source"].startswith("Published numbers from Wolfe & Caliskan (2022)")
    rate = table[(table.measure == "unmarked_rate") & (table.family == "race") & (table.group == "White")]
    assert rate["value"].tolist() == [47.9]  # the paper's introduction: 47.9% for White images


def test_readable_puts_headers_in_words_and_joins_each_interval():
    table = pd.DataFrame({"race": ["White", "Black"], "n": [10, 4], "unmarked_%": [40.0, 25.0],
                          "ci_low_%": [16.82, 4.56], "ci_high_%": [68.73, 69.94], "detection_auroc": [0.5, 0.7]})
    shown = book.readable(table)
    assert list(shown.columns) == ["race", "n", "unmarked (%)", "95% CI (%)", "detection AUROC"]
    assert shown["95% CI (%)"].tolist() == ["[16.8, 68.7]", "[4.6, 69.9]"]
    assert shown["unmarked (%)"].tolist() == [40.0, 25.0]  # values other than intervals unchanged
    assert list(table.columns)[3] == "ci_low_%"  # the caller's table is left as it was
    assert book.column_in_words("published accuracy_% (paper)") == "published accuracy (%) (paper)"
    fractions = pd.DataFrame({"ci_low": [0.1, float("nan")], "ci_high": [0.3, 0.2]})
    assert book.readable(fractions, decimals=2, confidence=0.9).to_dict("list") == {"90% CI": ["[0.10, 0.30]", ""]}


def test_pages_show_every_dataframe_with_headers_in_words():
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from vlbias import book

    table = pd.DataFrame({"gap_pp": [1.5], "ci_low": [0.2], "unmarked_%": [40.0], "spearman_rho": [0.9]},
                         index=pd.Index(["a"], name="seed_min"))
    worded = book.headers_in_words(table)
    assert list(worded.columns) == ["gap (pp)", "ci low", "unmarked (%)", "Spearman's ρ"]
    assert worded.index.name == "seed min" and list(table.columns)[0] == "gap_pp"  # the data keep their names
    shell = InteractiveShell.instance()
    try:
        book.profile_banner("demo")
        html = shell.display_formatter.format(table)[0]["text/html"]
        assert "gap (pp)" in html and "gap_pp" not in html and "seed min" in html
        styled = table.style.format({"gap_pp": "{:+.2f}"}).hide(axis="columns", subset=["ci_low"])
        styled_html = shell.display_formatter.format(styled)[0]["text/html"]
        assert "gap (pp)" in styled_html and "+1.50" in styled_html  # the format keyed by the data's name holds
        assert "gap_pp" not in styled_html and "seed min" in styled_html and "ci low" not in styled_html
        assert "Spearman's ρ" in styled_html and list(styled.data.columns)[0] == "gap_pp"
        wide = pd.DataFrame([[1.0, 2.0]], columns=pd.MultiIndex.from_tuples([("unmarked_%", "race"), ("ci_low_%", "race")],
                                                                             names=["measure_name", "family_name"]))
        wide_html = shell.display_formatter.format(wide.style.format(precision=1))[0]["text/html"]
        assert "unmarked (%)" in wide_html and "measure name" in wide_html
        assert book.code_style_headers(wide_html) == []
        assert book.code_style_headers(table._repr_html_()) == ["ci_low", "gap_pp", "seed_min", "spearman_rho",
                                                                 "unmarked_%"]
        row_labels = pd.DataFrame({"n": [1]}, index=["software_engineer"])._repr_html_()
        assert "software_engineer" in row_labels and book.code_style_headers(row_labels) == []  # values, not headers
        # row labels that name a measure read in words; data labels, and the data, keep their spelling
        scores = pd.DataFrame({"estimate": [0.25, 0.5], "ci_low": [0.1, 0.2]},
                              index=pd.Index(["spearman_rho", "social_worker"], name="measure"))
        for shown in (scores, scores.style.format(precision=2)):
            shown_html = shell.display_formatter.format(shown)[0]["text/html"]
            assert "Spearman's ρ" in shown_html and "spearman_rho" not in shown_html, shown_html
            assert "social_worker" in shown_html and "0.25" in shown_html
        assert list(scores.index) == ["spearman_rho", "social_worker"]
        assert book.measure_names_in_cells(scores._repr_html_()) == ["spearman_rho"]
        assert book.measure_names_in_cells(scores.reset_index()._repr_html_()) == ["spearman_rho"]  # a value too
        assert book.measure_names_in_cells(shell.display_formatter.format(scores)[0]["text/html"]) == []
        paired = pd.DataFrame({"change": [0.1]}, index=pd.MultiIndex.from_tuples([("cads", "cohen_kappa")]))
        assert "Cohen's κ" in shell.display_formatter.format(paired.style)[0]["text/html"]
        assert "Cohen's κ" in shell.display_formatter.format(paired)[0]["text/html"]
    finally:
        shell.display_formatter.formatters["text/html"].pop(pd.DataFrame, None)
        shell.display_formatter.formatters["text/html"].pop(type(table.style), None)
        InteractiveShell.clear_instance()


def test_every_page_opens_with_objectives_and_ends_with_findings():
    import json
    from pathlib import Path

    notebooks = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 16
    for path in notebooks:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        markdown = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
        # the title first, then what the reader will learn, with the prerequisites
        assert markdown[0].startswith("# "), path.name
        assert markdown[1].startswith("```{admonition} What you will learn") and "**Prerequisites:**" in markdown[1], path.name
        code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
        # and "Findings: paper vs ours" at the end (vlbias.findings), computed by the last code cell
        assert "## Findings: paper vs ours" in markdown[-1] and "findings_box(" in code[-1], path.name


def test_a_figure_with_an_axis_label_in_code_style_warns_on_the_page():
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    from vlbias import book

    shell = InteractiveShell.instance()
    try:
        book.profile_banner("demo")
        coded, worded = plt.subplots()[0], plt.subplots()[0]
        coded.axes[0].set(xlabel="guidance_scale", ylabel="share of red")
        worded.axes[0].set(xlabel=book.axis_label("guidance_scale"), ylabel="Latino-Hispanic share (%)")
        assert book.code_style_axis_labels(coded) == ["guidance_scale"] and book.code_style_axis_labels(worded) == []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            shown = shell.display_formatter.format(coded)[0]["text/plain"]
            shell.display_formatter.format(worded)
        assert shown.startswith("<Figure size") and len(caught) == 1
        assert "written as code, not words: ['guidance_scale']" in str(caught[0].message)
        plt.close("all")
    finally:
        InteractiveShell.clear_instance()
