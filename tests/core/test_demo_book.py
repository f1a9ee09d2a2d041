"""The book build is the test: run the whole demo profile in a copy of the repository, with every
non-loopback connection refused and recorded, and check the HTML book it leaves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vlbias import book

REPO = Path(__file__).resolve().parents[2]
GUARD = Path(__file__).resolve().parents[1] / "network_guard"


def guarded_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "VLBIAS_NETWORK_LOG": str(tmp_path / "network.log"), "VLBIAS_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(GUARD), os.environ.get("PYTHONPATH")]))}
    return env


def copy_repository(target: Path) -> Path:
    """Tracked and untracked-but-not-ignored files: what a fresh clone (plus local edits) holds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_network_guard_refuses_and_records(tmp_path):
    env = guarded_env(tmp_path)
    code = ("import socket\n"
            "try:\n    socket.create_connection(('93.184.216.34', 80), timeout=2)\n"
            "except OSError as e:\n    print('refused', e)\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "socket.create_connection(s.getsockname(), timeout=2); print('loopback ok')")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert "refused network access blocked" in out.stdout and "loopback ok" in out.stdout, out.stderr
    assert "93.184.216.34" in (tmp_path / "network.log").read_text()


@pytest.fixture(scope="module")
def demo_build(tmp_path_factory):
    """The whole demo profile run once in a copy of the repository: (tmp folder, project, process result)."""
    tmp_path = tmp_path_factory.mktemp("demo-book")
    project = copy_repository(tmp_path / "repo")
    env = guarded_env(tmp_path)
    result = subprocess.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--timeout", "600"],
                            cwd=project, env=env, capture_output=True, text=True, timeout=1500)
    return tmp_path, project, result


@pytest.fixture(scope="module")
def demo_book_html(demo_build):
    """The built demo book's HTML folder (the build must have succeeded)."""
    _, project, result = demo_build
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return project / "_build" / "html"


@pytest.mark.slow
def test_demo_book_builds_offline(demo_build):
    tmp_path, project, result = demo_build
    log = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, log
    warnings = [line for line in (result.stdout + result.stderr).splitlines() if "WARNING:" in line]
    assert not warnings, "book build warnings:\n" + "\n".join(warnings[:20])
    network = tmp_path / "network.log"
    assert not network.exists() or not network.read_text().strip(), network.read_text()

    html = project / "_build" / "html"
    assert (html / "book" / "intro.html").exists() or (html / "index.html").exists(), log
    notebooks = sorted(p.stem for p in (project / "notebooks").glob("*.ipynb"))
    assert notebooks, "no notebooks"
    for name in notebooks:
        page = html / "book" / "generated" / f"{name}.html"
        assert page.exists(), f"{name}: no page\n{log}"
        text = page.read_text(encoding="utf-8")
        assert "Demo output: not real results" in text or "Demo output: small models and samples" in text, name
        assert "Traceback" not in text and "Error" not in text.split("</h1>")[0], name
        assert "<img" in text, f"{name}: no figure"
        assert not book.code_style_headers(text), f"{name}: headers in code style {book.code_style_headers(text)}"
        assert not book.measure_names_in_cells(text), f"{name}: {book.measure_names_in_cells(text)} in code style"
    assert list((html / "_images").glob("*.png")), "no figure images in the book"


@pytest.mark.slow
def test_demo_book_reads_right_in_a_browser(demo_book_html, browser_check):
    problems, counts = browser_check(demo_book_html, solutions=False)
    assert not problems, "\n".join(problems)
    assert counts["images"] > counts["notebook pages"] * 2, counts  # the figures, beyond the launch icons
