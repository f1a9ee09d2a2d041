"""Notebooks opened from the launch buttons run the demo profile: its values replace the parameters cell's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vlbias import launch, runner

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


def test_parameters_cell_values_are_replaced_by_the_profiles_once(shell, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    expected = runner.plan_run(REPO, "demo", ["01b_markedness"]).parameters["01b_markedness"]
    parameters = launch.run_with_profile("01b_markedness", "demo", shell=shell, root=REPO)
    assert parameters == expected and parameters["model_spec"] == "tiny:clip"
    shell.run_cell("x = 1")  # a cell before the parameters cell changes nothing
    assert "model_spec" not in shell.user_ns
    shell.run_cell('profile = "full"\nmodel_spec = "ViT-B-32/openai"\nseed = 0')
    assert shell.user_ns["profile"] == "demo" and shell.user_ns["model_spec"] == "tiny:clip"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    shell.run_cell('model_spec = "mine"')  # later cells are the reader's
    assert shell.user_ns["model_spec"] == "mine"


def test_an_unknown_notebook_is_named(shell):
    with pytest.raises(runner.RunnerError, match="01z_nothing"):
        launch.run_with_profile("01z_nothing", shell=shell, root=REPO)


def pins(path: Path) -> dict[str, str]:
    import re

    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {re.sub(r"[-_.]+", "-", name.lower()): version
            for name, _, version in (line.partition("==") for line in lines if "==" in line)}


def test_colab_requirements_are_the_locked_versions():
    colab, lock = pins(REPO / "requirements-colab.txt"), pins(REPO / "requirements-lock.txt")
    assert colab and "torch" not in colab  # Colab's own torch stays
    assert {name: lock.get(name) for name in colab} == colab


def test_binder_builds_a_cpu_environment_from_the_pinned_stack_and_prepares_the_demo():
    binder = REPO / "binder"
    requirements = (binder / "requirements.txt").read_text()
    assert "-r ../requirements.txt" in requirements and "-c ../requirements-lock.txt" in requirements
    assert "whl/cpu" in requirements
    post_build = binder / "postBuild"
    assert os.access(post_build, os.X_OK)
    assert "vlbias open" in post_build.read_text() and "--profile demo" in post_build.read_text()
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"


def first_cells() -> dict[str, dict]:
    import json

    return {path.stem: json.loads(path.read_text(encoding="utf-8"))["cells"][0]
            for path in sorted((REPO / "notebooks").glob("*.ipynb"))}


def test_each_notebook_opens_with_a_colab_cell_for_the_configured_repository():
    import yaml

    repository = yaml.safe_load((REPO / "_config.yml").read_text())["repository"]
    for name, cell in first_cells().items():
        source = "".join(cell["source"])
        assert cell["cell_type"] == "code" and source.startswith("# Colab only:"), name
        assert f'"{repository["url"]}", "{repository.get("branch", "main")}"' in source, (
            f"{name}: the Colab cell must clone _config.yml's repository.url and branch")
        assert f'run_with_profile("{name}", "demo")' in source and "requirements-colab.txt" in source, name
        assert "remove-cell" in cell["metadata"].get("tags", []), name


def test_the_colab_cell_does_nothing_outside_colab():
    import sys

    assert "google.colab" not in sys.modules
    for name, cell in first_cells().items():
        namespace: dict = {}
        exec(compile("".join(cell["source"]), name, "exec"), namespace)
        assert set(namespace) - {"__builtins__"} == {"sys"}, name
