"""The exercise pages: both builds (students' without solutions, instructors' with), commands that
run, and the worked numbers of their solutions recomputed by the package."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from vlbias import profiles

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "book").glob("part*_exercises.md"))
KINDS = {"predict": "Predict", "derive": "Derive", "extend": "Extend", "critique": "Critique"}


def exercises(page: Path) -> list[tuple[str, str]]:
    """(label, title) of every exercise on a page."""
    return re.findall(r"```\{exercise\} (.+)\n:label: (\S+)", page.read_text(encoding="utf-8"))


def commands(page: Path) -> list[list[str]]:
    """Every `python -m vlbias run ...` on a page, joined over backslash-continued lines."""
    text = page.read_text(encoding="utf-8").replace("\\\n", " ")
    return [shlex.split(match) for match in re.findall(r"python -m vlbias run [^`\n]+", text)]


def test_every_part_has_an_exercise_page_in_the_toc_with_each_kind_of_exercise():
    assert [p.name for p in PAGES] == [f"part{n}_exercises.md" for n in range(1, 6)]
    toc = (REPO / "_toc.yml").read_text()
    for page in PAGES:
        assert f"book/{page.stem}" in toc
        titles = [title for title, _ in exercises(page)]
        assert len(titles) >= 4, page.name
        for kind in KINDS.values():
            assert any(t.startswith(kind) for t in titles), f"{page.name}: no {kind} exercise"
        labels = [label for _, label in exercises(page)]
        solved = re.findall(r"```\{solution\} (\S+)", page.read_text())
        assert sorted(solved) == sorted(labels), f"{page.name}: every exercise needs one solution"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_exercise_commands_name_notebooks_and_parameters_that_exist(page):
    found = commands(page)
    assert found, page.name
    for argv in found:
        assert argv[:4] == ["python", "-m", "vlbias", "run"]
        profile = argv[argv.index("--profile") + 1]
        only = [argv[i + 1] for i, a in enumerate(argv) if a == "--only"]
        assignments = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
        assert only, argv
        plan = profiles.plan_run(REPO, profile, only, assignments)  # raises on unknown names
        for text in assignments:
            key, value = profiles.parse_assignment(text)
            assert any(parameters.get(key) == value for parameters in plan.parameters.values()), text


def test_worked_numbers_in_the_solutions():
    from vlbias.colorfoil.evaluation import f1_from_accuracy
    from vlbias.markedness.self_similarity import released_code_expectation
    from vlbias.t2i.bias import vrbs
    from vlbias.t2i.cads import cads_gamma
    from vlbias.weat import effect_size_from_scores, weat_test_from_scores

    # Part I: the released code's bias (1 - s)/n
    assert released_code_expectation(0.6, 50) - 0.6 == pytest.approx(0.008)
    assert released_code_expectation(0.6, 5000) - 0.6 == pytest.approx(0.00008)
    # Part II: F1 = 2a/(1+a), its largest gap over accuracy at a = sqrt(2) - 1
    assert f1_from_accuracy(0.6) == pytest.approx(0.75)
    grid = np.linspace(0, 1, 100_001)
    gap = f1_from_accuracy(grid) - grid
    assert grid[gap.argmax()] == pytest.approx(np.sqrt(2) - 1, abs=1e-4)
    assert gap.max() == pytest.approx(3 - 2 * np.sqrt(2), abs=1e-8)
    # Part III: WEAT 3 v 3 by hand
    first = weat_test_from_scores(np.array([0.3, 0.2, 0.1]), np.array([0.0, -0.1, -0.2]))
    assert first.exact and first.p_value == pytest.approx(1 / 20)
    assert effect_size_from_scores(np.array([0.3, 0.2, 0.1]), np.array([0.0, -0.1, -0.2])) == pytest.approx(1.604, abs=1e-3)
    second = weat_test_from_scores(np.array([0.3, 0.0, 0.1]), np.array([0.2, -0.1, -0.2]))
    assert second.p_value == pytest.approx(4 / 20)
    # Part IV: VRBS, Spearman and the CADS schedule
    reference = [0.2, 0.5, 0.7]
    assert vrbs([0.1, 0.5, 0.9], reference) == pytest.approx(0.9)
    assert stats.spearmanr([0.1, 0.5, 0.9], reference).statistic == pytest.approx(1.0)
    assert vrbs([0.5, 0.5, 0.5], reference) == pytest.approx(1 - 0.5 / 3)
    assert [cads_gamma(t, 0.6, 0.9) for t in (0.95, 0.75, 0.3)] == pytest.approx([0.0, 0.5, 1.0])
    # Part V: a rank closest to 0, beyond the next interval or not
    from vlbias.cards import Card, Result, leaderboard

    def board(b):
        cards = [Card(model={"spec": spec, "kind": "image-text", "weights": spec},
                      provenance={"vlbias_version": "0", "profile": "demo", "date": "2026-12-03T10:00:00+00:00"},
                      results=[Result("gap", "markedness", *values, order="absolute")])
                 for spec, values in (("A", (0.30, 0.22, 0.40)), ("B", b))]
        return leaderboard(cards).set_index("spec")

    first = board((0.09, 0.02, 0.17))
    assert first.loc["B", "rank"] == 1 and bool(first.loc["B", "separated"])
    second = board((0.12, 0.05, 0.23))
    assert second.loc["B", "rank"] == 1 and not bool(second.loc["B", "separated"])


def test_students_build_hides_solutions_and_instructors_build_shows_them(static_book):
    students, log = static_book(solutions=False)
    instructors, _ = static_book(solutions=True)
    assert "WARNING" not in log, log[-3000:]
    for page in PAGES:
        n = len(exercises(page))
        shown = (students / "book" / f"{page.stem}.html").read_text(encoding="utf-8")
        assert shown.count('class="exercise') == n and 'class="solution' not in shown, page.name
        full = (instructors / "book" / f"{page.stem}.html").read_text(encoding="utf-8")
        assert full.count('class="exercise') == n and full.count('class="solution') == n, page.name


def test_math_is_served_from_the_bundled_mathjax(static_book):
    html, _ = static_book(solutions=False)
    page = (html / "book" / "part1_exercises.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', page, flags=re.I)
    assert scripts and all(not s.startswith(("http:", "https:", "//")) for s in scripts), scripts
    assert (html / "book" / scripts[0]).resolve().is_file()


def test_intro_and_every_part_page_say_what_the_measures_cannot_tell():
    intro = (REPO / "book" / "intro.md").read_text(encoding="utf-8")
    assert "## How this book uses social categories, and why" in intro
    for phrase in ("seven race categories", "binary gender", "perceived", "self-identified",
                   "reproduces the binary it measures", "not people"):
        assert phrase in intro, phrase
    for page in sorted((REPO / "book").glob("part?_*.md")):
        if page.stem.endswith("_exercises"):
            continue
        text = page.read_text(encoding="utf-8")
        assert "## What these measures cannot tell" in text, page.name
        assert re.search(r"[Rr]esults describe (CLIP|models|these models|the model)", text), page.name
