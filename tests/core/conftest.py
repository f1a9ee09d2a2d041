"""A small book for the tests of the book's frame: every page of ``_toc.yml``, with the source
notebooks standing in (unexecuted) for the executed copies under ``book/generated/``. It builds in
seconds, so the exercise, launch-button and browser tests need not run the demo profile."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRAME = ["_config.yml", "_toc.yml", "book"]


def build_static_book(target: Path, solutions: bool) -> tuple[Path, str]:
    """Copy the book's frame and notebooks to ``target``, build it; return (html folder, build log)."""
    for name in FRAME:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("generated", "__pycache__"))
        else:
            shutil.copy2(source, target / name)
    shutil.copytree(REPO / "notebooks", target / "notebooks")
    shutil.copytree(REPO / "notebooks", target / "book" / "generated")
    executable = Path(sys.executable).with_name("jupyter-book")
    env = {**os.environ, "VLBIAS_SOLUTIONS": "1" if solutions else "0"}
    result = subprocess.run([str(executable), "build", str(target), "--builder", "html"], cwd=target, env=env,
                            capture_output=True, text=True, timeout=600)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    return target / "_build" / "html", log


@pytest.fixture(scope="session")
def static_book(tmp_path_factory):
    """``static_book(solutions=False)`` → (html folder, build log), built once per setting and session."""
    built: dict[bool, tuple[Path, str]] = {}

    def build(solutions: bool = False) -> tuple[Path, str]:
        if solutions not in built:
            built[solutions] = build_static_book(tmp_path_factory.mktemp("static-book"), solutions)
        return built[solutions]

    return build
