"""`python -m vlbias open`: the prepared copy carries the profile's parameters and nothing else changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from vlbias.__main__ import main
from vlbias.open_notebook import lab_command

REPO = Path(__file__).resolve().parents[2]


def small_project(target: Path) -> Path:
    (target / "notebooks").mkdir(parents=True)
    shutil.copy2(REPO / "_toc.yml", target)
    shutil.copytree(REPO / "params", target / "params")
    for notebook in (REPO / "notebooks").glob("*.ipynb"):
        shutil.copy2(notebook, target / "notebooks")
    return target


def test_open_no_launch_writes_the_notebook_with_demo_parameters_injected(tmp_path, capsys):
    project = small_project(tmp_path / "repo")
    code = main(["open", "01b_markedness", "--profile", "demo", "--no-launch", "--set", "seed=3",
                 "--project-dir", str(project)])
    assert code == 0
    prepared = project / "work" / "01b_markedness.demo.ipynb"
    assert str(prepared) in capsys.readouterr().out
    cells = json.loads(prepared.read_text())["cells"]
    source = json.loads((project / "notebooks" / "01b_markedness.ipynb").read_text())["cells"]
    injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1
    text = "".join(injected[0]["source"])
    assert 'model_spec = "trained:face-clip"' in text and "seed = 3" in text and 'profile = "demo"' in text
    assert 'data_root = "world?val_per_cell=60"' in text
    # injected right after the parameters cell, every source cell kept, nothing executed
    position = cells.index(injected[0])
    assert "parameters" in cells[position - 1]["metadata"].get("tags", [])
    assert [c["source"] for c in cells if c is not injected[0]] == [c["source"] for c in source]
    assert not any(c.get("outputs") for c in cells if c["cell_type"] == "code")


def test_open_names_an_unknown_notebook_and_writes_nothing(tmp_path, capsys):
    project = small_project(tmp_path / "repo")
    assert main(["open", "01z_nothing", "--no-launch", "--project-dir", str(project)]) == 2
    assert "01z_nothing" in capsys.readouterr().err
    assert not (project / "work").exists()


def test_lab_serves_the_project_root_and_opens_the_prepared_copy(tmp_path):
    command = lab_command(tmp_path / "work" / "01b_markedness.demo.ipynb", tmp_path)
    assert command[1:3] == ["-m", "jupyterlab"] and command[-1] == "work/01b_markedness.demo.ipynb"
    assert f"--ServerApp.root_dir={tmp_path}" in command
