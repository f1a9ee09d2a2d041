import json
from pathlib import Path

import nbformat
import pytest

from vlbias import runner

REPO = Path(__file__).resolve().parents[2]


def make_project(tmp_path, notebooks, profile_text):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "params").mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    for name, cells in notebooks.items():
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        for i, source in enumerate(cells):
            cell = nbformat.v4.new_code_cell(source)
            if i == 0:
                cell.metadata["tags"] = ["parameters"]
            nb.cells.append(cell)
        nbformat.write(nb, tmp_path / "notebooks" / f"{name}.ipynb")
    (tmp_path / "params" / "demo.yml").write_text(profile_text)
    return tmp_path


PROFILE = """
env: {VLBIAS_TEST_MARK: "from-profile"}
defaults: {seed: 0, unused_default: 1}
notebooks:
  a_ok: {size: 3}
"""


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path, {
        "a_ok": ["profile = 'full'\nseed = 0\nsize = 1",
                 "import os, json\njson.dump({'seed': seed, 'size': size, 'profile': profile, "
                 "'mark': os.environ.get('VLBIAS_TEST_MARK')}, open('a_ok.json', 'w'))"],
        "b_fails": ["seed = 0", "x = 1", "raise ValueError('planted failure')", "never = True"],
        "c_slow": ["seed = 0", "import time\ntime.sleep(60)"],
    }, PROFILE)


def test_plan_merges_defaults_profile_and_overrides(project):
    plan = runner.plan_run(project, "demo", only=["a_ok"], assignments=["seed=7", "a_ok.size=[1, 2]"])
    assert plan.parameters == {"a_ok": {"seed": 7, "size": [1, 2], "profile": "demo"}}
    assert plan.env == {"VLBIAS_TEST_MARK": "from-profile"}


def test_plan_rejects_unknowns(project):
    with pytest.raises(runner.RunnerError, match="Unknown notebook"):
        runner.plan_run(project, "demo", only=["nope"])
    with pytest.raises(runner.RunnerError, match="no selected notebook declares"):
        runner.plan_run(project, "demo", only=["a_ok"], assignments=["typo=1"])
    with pytest.raises(runner.RunnerError, match="No parameter file"):
        runner.plan_run(project, "gpu")
    with pytest.raises(runner.RunnerError, match="key=value"):
        runner.parse_assignment("seed")


def test_parse_assignment_yaml_values():
    assert runner.parse_assignment("seed=1") == ("seed", 1)
    assert runner.parse_assignment("models=[tiny:clip, ViT-B-32/openai]") == ("models", ["tiny:clip", "ViT-B-32/openai"])
    assert runner.parse_assignment("data_root=null") == ("data_root", None)
    assert runner.parse_assignment("prompt=a photo of a person") == ("prompt", "a photo of a person")


def test_failing_notebook_is_named_with_its_cell_and_others_still_run(project, capsys):
    code = runner.run("demo", only=["b_fails", "a_ok"], project_dir=project, build=False, timeout=120)
    assert code == 1
    out = capsys.readouterr().out
    assert "b_fails: failed" in out and "cell 3 of the source notebook" in out and "ValueError: planted failure" in out
    assert "a_ok: ok" in out
    written = json.loads((project / "notebooks" / "a_ok.json").read_text())
    assert written == {"seed": 0, "size": 3, "profile": "demo", "mark": "from-profile"}
    assert (project / "book" / "generated" / "b_fails.ipynb").exists()


def test_notebook_timeout_is_enforced(project, capsys):
    code = runner.run("demo", only=["c_slow"], project_dir=project, build=False, timeout=10)
    assert code == 1
    out = capsys.readouterr().out
    assert "c_slow: timeout" in out and "cell 2 of the source notebook" in out


def test_repository_notebooks_are_sources_with_parameters():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), path.name
        assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1, path.name
        assert "profile" in runner.declared_parameters(path), path.name


def test_profiles_cover_every_notebook():
    for profile in ("demo", "full"):
        plan = runner.plan_run(REPO, profile)
        assert set(plan.parameters) == set(runner.list_notebooks(REPO))


def test_profile_timeouts_and_parts(tmp_path):
    """Item 6 of issue 9: per-notebook timeouts come from the profile; one part runs at a time."""
    root = make_project(tmp_path, {
        "01a_x": ["seed = 0"], "01b_y": ["seed = 0"], "02a_z": ["seed = 0"],
    }, "timeouts: {default: 60, 02a_z: 36000}\nnotebooks: {}\n")
    plan = runner.plan_run(root, "demo")
    assert plan.timeout("01a_x") == 60 and plan.timeout("02a_z") == 36000
    assert list(runner.plan_run(root, "demo", part=1).parameters) == ["01a_x", "01b_y"]
    assert list(runner.plan_run(root, "demo", part=2).parameters) == ["02a_z"]
    with pytest.raises(runner.RunnerError, match="part 5"):
        runner.plan_run(root, "demo", part=5)


def test_full_profile_gives_generation_hours():
    full = runner.plan_run(runner.find_project_root(Path(__file__).parent), "full", only=["04a_generation"])
    assert full.timeout("04a_generation") >= 4 * 3600
