"""The book build is the test: the whole demo profile, run once per session as ``make book`` runs it
(``demo_book`` in tests/conftest.py: notebooks side by side, every non-loopback connection refused
and recorded), and the HTML book it leaves; and its pages equal a run one notebook after another."""

from __future__ import annotations

import sys

import pytest

from vlbias import book
from vlbias.pages import compare_folders


def test_network_guard_refuses_and_records(tmp_path, hang_guard, repository_tools):
    env = repository_tools.guarded_env(tmp_path)
    code = ("import socket\n"
            "try:\n    socket.create_connection(('93.184.216.34', 80), timeout=2)\n"
            "except OSError as e:\n    print('refused', e)\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "socket.create_connection(s.getsockname(), timeout=2); print('loopback ok')")
    out = hang_guard.run([sys.executable, "-c", code], 1.0, "the network guard's check", env=env,
                         capture_output=True, text=True)
    assert "refused network access blocked" in out.stdout and "loopback ok" in out.stdout, out.stderr
    assert "93.184.216.34" in (tmp_path / "network.log").read_text()


@pytest.fixture(scope="module")
def demo_book_html(demo_book):
    """The built demo book's HTML folder (the build must have succeeded)."""
    assert demo_book.result.returncode == 0, demo_book.log
    return demo_book.project / "_build" / "html"


#: the pages whose findings box must say what the demo's world planted (their models or data are generated)
PLANTED_PAGES = {"01a_self_similarity", "01b_markedness", "01c_controlled_markedness", "01d_generative_markedness",
                 "02a_colorfoil_construction",
                 "02b_colorfoil_evaluation", "02c_colorfoil_colour_model", "02d_colorfoil_generative", "04a_generation", "04b_annotation_and_metrics",
                 "04c_cads", "04e_controlled_generation"}


#: the pages whose box judges a planted model against its control
CONTROLLED_PAGES = {"01a_self_similarity", "01b_markedness", "01c_controlled_markedness", "01d_generative_markedness",
                    "02b_colorfoil_evaluation", "02c_colorfoil_colour_model", "02d_colorfoil_generative",
                    "04b_annotation_and_metrics", "04c_cads", "04d_extensions", "04e_controlled_generation"}
#: the pages whose banner states their power to detect what they plant (or, for 03c, what the chapter simulates)
POWER_PAGES = CONTROLLED_PAGES | {"03c_erasure", "04a_generation"}


@pytest.mark.slow
def test_demo_book_builds_offline(demo_book):
    project, result, log = demo_book.project, demo_book.result, demo_book.log
    assert result.returncode == 0, log
    warnings = [line for line in (result.stdout + result.stderr).splitlines() if "WARNING:" in line]
    assert not warnings, "book build warnings:\n" + "\n".join(warnings[:20])
    network = demo_book.folder / "network.log"
    assert not network.exists() or not network.read_text().strip(), network.read_text()
    # notebooks ran side by side where the machine has the cores, and the run says so
    assert "at once on" in result.stdout and "[vlbias] started" in result.stdout

    html = project / "_build" / "html"
    assert (html / "book" / "intro.html").exists() or (html / "index.html").exists(), log
    notebooks = sorted(p.stem for p in (project / "notebooks").glob("*.ipynb"))
    assert notebooks, "no notebooks"
    generated = html / "book" / "generated"
    pages = [(name, page) for name in notebooks for page in
             (sorted((generated / name).glob("*.html")) if (generated / name).is_dir()  # one page per model
              else [generated / f"{name}.html"])]
    for name, page in pages:
        assert page.exists(), f"{name}: no page\n{log}"
        text = page.read_text(encoding="utf-8")
        assert any(title in text for title in ("Demo output: not real results", "Demo output: small models and samples",
                                               "Demo output: models trained on a planted world",
                                               "Demo output: a generated world with planted causes")), name
        assert "Traceback" not in text and "Error" not in text.split("</h1>")[0], name
        assert "<img" in text, f"{name}: no figure"
        assert not book.code_style_headers(text), f"{name}: headers in code style {book.code_style_headers(text)}"
        assert not book.measure_names_in_cells(text), f"{name}: {book.measure_names_in_cells(text)} in code style"
        # figures at 150 dpi or more, each numbered once, no caption twice, no table of missing values
        assert "What you will learn" in text, f"{name}: no learning objectives"
        assert "written as code, not words" not in text, f"{name}: a figure's axis labels in code style"
        assert "Findings: paper vs ours</p>" in text, f"{name}: no findings box"
        if name in PLANTED_PAGES:
            assert "The planted truth." in text, f"{name}: the findings box does not say what the world planted"
        box = text[text.index("Findings: paper vs ours</p>"):]
        if name in CONTROLLED_PAGES:  # a planted cause judged against its control: three numbers a row
            assert "<th>planted model</th><th>control</th><th>planted − control</th>" in box, name
            assert "✔ supports" not in box and "✘ contradicts" not in box, f"{name}: a verdict on the paper from a toy"
        if name in POWER_PAGES:  # the banner (the page's first admonition, before any result) states its power
            banner = text.index("Demo output:")
            assert banner < text.find("<b>Power</b>") < text.index("admonition-title", banner + 1), name
        assert not book.page_problems(text, page), f"{name}: {book.page_problems(text, page)}"
    assert list((html / "_images").glob("*.png")), "no figure images in the book"


#: notebooks rerun one after another from an empty cache: two that share their image embeddings
#: (01a and 01b, computed once under the cache's locks when they run side by side) and one more
SEQUENTIAL = ("01a_self_similarity", "01b_markedness", "02a_colorfoil_construction")


@pytest.mark.slow
def test_pages_equal_those_of_a_run_one_after_another(demo_book, tmp_path, hang_guard, repository_tools):
    """The demo book ran its notebooks side by side; these, run with ``--jobs 1`` from another empty
    cache, show the same tables, figures and text (:mod:`vlbias.pages`)."""
    project = repository_tools.copy_repository(tmp_path / "repo")
    only = [f"--only={name}" for name in SEQUENTIAL]
    result = hang_guard.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--jobs", "1", "--no-build",
                             *only], 60.0, "three demo notebooks one after another", cwd=project,
                            env=repository_tools.guarded_env(tmp_path), capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 at once" in result.stdout
    found = compare_folders(demo_book.project / "book" / "generated", project / "book" / "generated")
    assert set(found) >= {f"{name}.ipynb" for name in SEQUENTIAL}
    differing = {name: problems for name, problems in found.items()
                 if name.removesuffix(".ipynb") in SEQUENTIAL and problems}
    assert not differing, differing


@pytest.mark.slow
def test_demo_book_reads_right_in_a_browser(demo_book_html, browser_check):
    problems, counts = browser_check(demo_book_html, solutions=False)
    assert not problems, "\n".join(problems)
    assert counts["images"] > counts["notebook pages"] * 2, counts  # the figures, beyond the launch icons


def test_the_demo_runs_no_random_tiny_model():
    """Every paper page of the demo runs models trained in the book on a planted world, or real small
    models: no ``tiny:`` spec (random weights) is left in the demo profile (the tests keep them)."""
    import yaml

    from vlbias import profiles

    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    assert "tiny:" not in (repo / "params" / "demo.yml").read_text()
    plan = profiles.plan_run(repo, "demo")
    for name, parameters in plan.parameters.items():
        for key, value in parameters.items():
            assert "tiny:" not in yaml.safe_dump(value), (name, key, value)
