import importlib.util
import os
import json
from pathlib import Path

import nbformat
import pytest

from vlbias import profiles, runner

REPO = Path(__file__).resolve().parents[2]


def _load_hook(name: str):
    """A Sphinx hook of ``book/_ext``, loaded from its file as Jupyter Book's ``local_extensions`` load it."""
    spec = importlib.util.spec_from_file_location(name, REPO / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


last_good_run = _load_hook("last_good_run")


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
        "d_seeded": ["seed = 0\nsize = 2", "import numpy as np\nassert size > 0, 'size must be positive'",
                     "print(np.random.default_rng(seed).integers(10, size=size))"],
    }, PROFILE)


def test_plan_merges_defaults_profile_and_overrides(project):
    plan = profiles.plan_run(project, "demo", only=["a_ok"], assignments=["seed=7", "a_ok.size=[1, 2]"])
    assert plan.parameters == {"a_ok": {"seed": 7, "size": [1, 2], "profile": "demo"}}
    assert plan.env == {"VLBIAS_TEST_MARK": "from-profile"}


def test_notebook_parameters_are_the_parameters_cell_overridden_by_the_profile(project):
    # d_seeded's cell: seed = 0, size = 2; the profile gives seed (its defaults) and nothing for size
    plan = profiles.plan_run(project, "demo", only=["a_ok", "d_seeded"], assignments=["seed=7"])
    assert plan.parameters["d_seeded"] == {"seed": 7}
    assert profiles.notebook_parameters(project, "d_seeded", plan) == {"seed": 7, "size": 2}
    # a_ok's cell: profile = 'full', seed = 0, size = 1; the profile sets size 3 and the profile's name
    assert profiles.notebook_parameters(project, "a_ok", plan) == {"profile": "demo", "seed": 7, "size": 3}
    with pytest.raises(profiles.RunnerError, match="'b_fails' is not in this run"):
        profiles.notebook_parameters(project, "b_fails", plan)


def test_plan_rejects_unknowns(project):
    with pytest.raises(profiles.RunnerError, match="Unknown notebook"):
        profiles.plan_run(project, "demo", only=["nope"])
    with pytest.raises(profiles.RunnerError, match="no selected notebook declares"):
        profiles.plan_run(project, "demo", only=["a_ok"], assignments=["typo=1"])
    with pytest.raises(profiles.RunnerError, match="No parameter file"):
        profiles.plan_run(project, "gpu")
    with pytest.raises(profiles.RunnerError, match="key=value"):
        profiles.parse_assignment("seed")


def test_parse_assignment_yaml_values():
    assert profiles.parse_assignment("seed=1") == ("seed", 1)
    assert profiles.parse_assignment("models=[tiny:clip, ViT-B-32/openai]") == ("models",
                                                                              ["tiny:clip", "ViT-B-32/openai"])
    assert profiles.parse_assignment("data_root=null") == ("data_root", None)
    assert profiles.parse_assignment("prompt=a photo of a person") == ("prompt", "a photo of a person")


def test_failing_notebook_is_named_with_its_cell_and_others_still_run(project, capsys):
    code = runner.run("demo", only=["b_fails", "a_ok"], project_dir=project, build=False, timeout=120)
    assert code == 1
    out = capsys.readouterr().out
    assert "b_fails: failed" in out and "cell 3 of the source notebook" in out and "ValueError: planted failure" in out
    assert "a_ok: ok" in out
    written = json.loads((project / "notebooks" / "a_ok.json").read_text())
    assert written == {"seed": 0, "size": 3, "profile": "demo", "mark": "from-profile"}
    assert (project / "book" / "generated" / "b_fails.failed.ipynb").exists()
    assert not (project / "book" / "generated" / "b_fails.ipynb").exists()
    assert "there is no good run of b_fails yet" in out


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
        assert "profile" in profiles.declared_parameters(path), path.name


def test_profiles_cover_every_notebook():
    for profile in ("demo", "full"):
        plan = profiles.plan_run(REPO, profile)
        assert set(plan.parameters) == set(profiles.list_notebooks(REPO))


@pytest.mark.parametrize("bad_override", ["seed=abc", "size=0"])
def test_a_failed_rerun_keeps_the_last_good_notebook_byte_identical_and_the_failed_one_beside(
        project, capsys, bad_override):
    generated = project / "book" / "generated"
    assert runner.run("demo", only=["d_seeded"], project_dir=project, build=False, timeout=120) == 0
    good = (generated / "d_seeded.ipynb").read_bytes()
    capsys.readouterr()
    assert runner.run("demo", only=["d_seeded"], assignments=[bad_override], project_dir=project, build=False,
                      timeout=120) == 1
    out = capsys.readouterr().out
    assert (generated / "d_seeded.ipynb").read_bytes() == good
    failed = nbformat.read(generated / "d_seeded.failed.ipynb", as_version=4)
    assert failed.metadata["papermill"]["parameters"][bad_override.split("=")[0]] in ("abc", 0)
    assert any(o.get("output_type") == "error" for c in failed.cells for o in c.get("outputs", []))
    assert f"{generated / 'd_seeded.ipynb'} still holds the last good run" in out
    assert "d_seeded.failed.ipynb" in out and not list(generated.glob("*.running.ipynb"))
    # the page of the last good run says so, in the built book only
    note = last_good_run.last_good_run_note(generated / "d_seeded.ipynb")
    assert note and "last good run of `d_seeded`" in note and "book/generated/d_seeded.failed.ipynb" in note
    # a good run again replaces the page and retires the failed notebook and the note
    assert runner.run("demo", only=["d_seeded"], project_dir=project, build=False, timeout=120) == 0
    assert not (generated / "d_seeded.failed.ipynb").exists()
    assert last_good_run.last_good_run_note(generated / "d_seeded.ipynb") is None


def test_the_book_build_notes_pages_showing_the_last_good_run(tmp_path):
    """The Sphinx hooks, on a stand-in app: the note goes into the page's source in memory only."""
    page = tmp_path / "book" / "generated" / "x.ipynb"
    page.parent.mkdir(parents=True)
    page.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "1", "metadata": {}, "outputs": []}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    on_disk = page.read_bytes()

    class Env:
        found_docs = {"book/generated/x"}

        @staticmethod
        def doc2path(docname):
            return tmp_path / f"{docname}.ipynb"

    app = type("App", (), {"env": Env()})()
    source = [page.read_text()]
    last_good_run._add_last_good_run_note(app, "book/generated/x", source)
    assert json.loads(source[0])["cells"][0]["cell_type"] == "code"  # no failed run: untouched
    assert last_good_run._pages_whose_note_changed(app, app.env, set(), set(), set()) == []
    (page.parent / "x.failed.ipynb").write_text("{}")
    assert last_good_run._pages_whose_note_changed(app, app.env, set(), set(), set()) == ["book/generated/x"]
    last_good_run._add_last_good_run_note(app, "book/generated/x", source)
    first = json.loads(source[0])["cells"][0]
    assert first["cell_type"] == "markdown" and "{warning}" in first["source"] and "last good run" in first["source"]
    assert page.read_bytes() == on_disk
    assert last_good_run._pages_whose_note_changed(app, app.env, set(), set(), set()) == []


def test_a_malformed_profile_gives_one_line_with_file_line_and_column_and_exit_code_2(project, capsys):
    from vlbias.__main__ import main

    (project / "params" / "demo.yml").write_text("defaults:\n  seed: 0\n notebooks: [\n")
    code = main(["run", "--profile", "demo", "--only", "a_ok", "--no-build", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {project / 'params' / 'demo.yml'}:3:2: not valid YAML")


def test_profile_is_a_name_from_params_or_an_explicit_path(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "gpu.yml"
    outside.write_text("defaults: {seed: 5}\n")
    plan = profiles.plan_run(project, str(outside), only=["a_ok"])
    assert plan.profile == "gpu" and plan.parameters["a_ok"]["seed"] == 5
    (project / "x.yml").write_text("defaults: {seed: 9}\n")
    for in_between in ["../x", "demo/../../x", "sub/demo", ".hidden"]:
        with pytest.raises(profiles.RunnerError, match="no such file|No parameter file"):
            profiles.plan_run(project, in_between, only=["a_ok"])
    with pytest.raises(profiles.RunnerError, match=r"notebooks: a_ok must be a mapping"):
        (project / "params" / "demo.yml").write_text("notebooks:\n  a_ok: [1, 2]\n")
        profiles.plan_run(project, "demo", only=["a_ok"])
def test_profile_timeouts_and_parts(tmp_path):
    """Item 6 of issue 9: per-notebook timeouts come from the profile; one part runs at a time."""
    root = make_project(tmp_path, {
        "01a_x": ["seed = 0"], "01b_y": ["seed = 0"], "02a_z": ["seed = 0"],
    }, "timeouts: {default: 60, 02a_z: 36000}\nnotebooks: {}\n")
    plan = profiles.plan_run(root, "demo")
    assert plan.timeout("01a_x") == 60 and plan.timeout("02a_z") == 36000
    assert list(profiles.plan_run(root, "demo", part=1).parameters) == ["01a_x", "01b_y"]
    assert list(profiles.plan_run(root, "demo", part=2).parameters) == ["02a_z"]
    with pytest.raises(profiles.RunnerError, match="part 5"):
        profiles.plan_run(root, "demo", part=5)


def test_full_profile_gives_generation_hours():
    full = profiles.plan_run(profiles.find_project_root(Path(__file__).parent), "full", only=["04a_generation"])
    assert full.timeout("04a_generation") >= 4 * 3600


def test_papermill_command_is_papermills_command_line():
    import subprocess
    import sys

    from vlbias.runner import PAPERMILL_MAIN

    shown = subprocess.run([sys.executable, "-c", PAPERMILL_MAIN, "--help"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "Usage: papermill" in shown.stdout


def test_declared_parameters_are_papermills_and_survive_an_equals_sign_in_a_string(tmp_path):
    import json
    from pathlib import Path

    import papermill

    from vlbias.profiles import declared_parameters

    notebooks = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("01*.ipynb"))
    for notebook in notebooks:
        assert declared_parameters(notebook) == set(papermill.inspect_notebook(str(notebook))), notebook.name
    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [], "execution_count": None,
            "source": ['spec = "trained:world-clip?seed=1&epochs=2"  # a comment\n', "n: int = 3\n",
                       "sizes = [1,\n         2]\n", "if n:\n    hidden = 1\n"]}
    path = tmp_path / "p.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert declared_parameters(path) == {"spec", "n", "sizes"}


def test_parameter_defaults_read_literals_papermill_cannot_and_leave_out_expressions(tmp_path):
    import json

    from vlbias.profiles import parameter_defaults

    cell = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [], "execution_count": None,
            "source": ['spec = "trained:world-clip?seed=1&epochs=2"  # papermill skips this line\n', "n: int = 3\n",
                       "width: int\n", "sizes = [1,\n         2]\n", "folder = str(n) + 'x'\n",
                       "scale = 2.0\n", "scale = scale * 2\n"]}
    path = tmp_path / "p.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert parameter_defaults(path) == {"spec": "trained:world-clip?seed=1&epochs=2", "n": 3, "sizes": [1, 2]}


# ----------------------------------------------------------------------------- notebooks side by side

TIMED = ("import json, os, time\nstarted = time.time()\ntime.sleep(pause)\n"
         "json.dump({'start': started, 'end': time.time(), 'cpus': os.environ.get('VLBIAS_CPUS'), "
         "'omp': os.environ.get('OMP_NUM_THREADS')}, open(f'{name}.times.json', 'w'))")


@pytest.fixture
def timed_project(tmp_path):
    """Three notebooks that sleep and record when they ran, and a fourth that fails."""
    cell = "seed = 0\npause = 3.0\nname = '{}'"
    return make_project(tmp_path, {
        "p_first": [cell.format("p_first"), TIMED],
        "q_second": [cell.format("q_second"), TIMED],
        "r_reads_first": [cell.format("r_reads_first"), TIMED],
        "s_fails": [cell.format("s_fails"), TIMED, "raise ValueError('planted failure')"],
        "t_reads_failed": [cell.format("t_reads_failed"), TIMED],
    }, "notebooks: {}\n")


def _times(project, name):
    return json.loads((project / "notebooks" / f"{name}.times.json").read_text())


def test_jobs_run_notebooks_side_by_side_and_a_reader_after_what_it_reads(timed_project, monkeypatch, capsys):
    depends = {"r_reads_first": {"p_first"}, "t_reads_failed": {"s_fails"}}
    monkeypatch.setattr(runner, "notebook_dependencies",
                        lambda names: {name: depends.get(name, set()) & set(names) for name in names})
    code = runner.run("demo", project_dir=timed_project, build=False, timeout=300, jobs=2)
    out = capsys.readouterr().out
    assert code == 1, out
    times = {n: _times(timed_project, n) for n in ("p_first", "q_second", "r_reads_first", "s_fails")}
    first, reader = times["p_first"], times["r_reads_first"]
    # two at once, never three: at each notebook's start, count those running then
    at_once = [sum(t["start"] <= u["start"] < t["end"] for t in times.values()) for u in times.values()]
    assert max(at_once) == 2, times
    assert reader["start"] >= first["end"]  # r_reads_first starts after what it reads ended
    # each given half of the machine's cores (at least one), its threads capped to match
    share = str(max(1, runner.usable_cores() // 2))
    assert first["cpus"] == share and first["omp"] == (os.environ.get("OMP_NUM_THREADS") or share)
    # the failure stops its dependant only, which is reported and never started
    assert "t_reads_failed: not run\n    needs s_fails, which failed" in out
    assert not (timed_project / "notebooks" / "t_reads_failed.times.json").exists()
    assert "s_fails: failed" in out and "r_reads_first: ok" in out
    for name in ("p_first", "q_second", "r_reads_first", "s_fails"):
        assert f"[vlbias] started {name}" in out
    assert "started t_reads_failed" not in out
    assert "longest: " in out and "with 2 at once" in out
    # the run record keeps each good notebook's seconds and peak memory for the next run's order
    record = json.loads((timed_project / "book" / "generated" / runner.RUN_RECORD).read_text())["demo"]
    assert set(record) == {"p_first", "q_second", "r_reads_first"}
    assert all(3 <= entry["seconds"] < 300 and entry["peak_gb"] > 0.01 for entry in record.values()), record


def test_one_job_runs_one_after_another(timed_project, monkeypatch, capsys):
    monkeypatch.setattr(runner, "notebook_dependencies", lambda names: {name: set() for name in names})
    assert runner.run("demo", only=["p_first", "q_second"], project_dir=timed_project, build=False, timeout=300,
                      jobs=1) == 0
    first, second = (_times(timed_project, n) for n in ("p_first", "q_second"))
    assert first["end"] <= second["start"] or second["end"] <= first["start"]
    assert first["cpus"] == str(runner.usable_cores())  # all the cores; torch's own thread default


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", ""])
def test_bad_jobs_is_one_line_naming_jobs_with_exit_2(text, capsys):
    from vlbias.__main__ import main

    assert main(["run", "--jobs", text, "--no-build", "--project-dir", str(REPO)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --jobs takes a whole number") and repr(text) in err[0], err


def test_default_jobs_is_the_cores_capped_by_memory_and_notebooks():
    assert runner.default_jobs(16, [1.5, 2.0], cores=2, free_gb=20) == 2
    assert runner.default_jobs(16, [1.5, 4.0], cores=16, free_gb=20) == 5  # 20 GB // 4 GB
    assert runner.default_jobs(3, [1.0], cores=16, free_gb=100) == 3
    assert runner.default_jobs(16, [8.0], cores=4, free_gb=5) == 1  # never fewer than one


def test_schedule_priority_is_the_longest_chain_of_dependants():
    # c reads b, b reads a: a's chain is a + b + c; d alone; e untimed
    depends = {"a": set(), "b": {"a"}, "c": {"b"}, "d": set(), "e": set()}
    priority = runner.schedule_priority(list(depends), depends, {"a": 10, "b": 20, "c": 5, "d": 30})
    assert priority == {"a": 35, "b": 25, "c": 5, "d": 30, "e": runner.UNTIMED_SECONDS}
    with pytest.raises(profiles.RunnerError, match="cycle"):
        runner.schedule_priority(["x", "y"], {"x": {"y"}, "y": {"x"}}, {})


def test_declared_reads_are_the_runners_dependencies():
    names = list(profiles.list_notebooks(REPO))
    depends = runner.notebook_dependencies(names)
    assert depends["03e_summary"] == {"03a_stereotyping", "03c_erasure"}
    assert depends["04b_annotation_and_metrics"] == {"04a_generation"}
    assert runner.notebook_dependencies(["03e_summary", "03c_erasure"])["03e_summary"] == {"03c_erasure"}
    # the model cards after the pages whose caches their measures read, the leaderboard after the cards
    assert depends["05a_model_card"] == {"01a_self_similarity", "01b_markedness", "01d_generative_markedness",
                                         "02b_colorfoil_evaluation", "02d_colorfoil_generative", "03a_stereotyping",
                                         "03b_weat", "03c_erasure", "04b_annotation_and_metrics", "04c_cads"}
    assert depends["05b_leaderboard"] == {"05a_model_card"}
    assert sum(map(len, depends.values())) == 14


def test_without_jobs_gpu_notebooks_take_the_gpu_one_at_a_time(timed_project, monkeypatch, capsys):
    """Two notebooks whose device is not "cpu" on a machine with one GPU: one after another unless
    --jobs says otherwise; a notebook on the CPU runs beside them."""
    monkeypatch.setattr(runner, "notebook_dependencies", lambda names: {name: set() for name in names})
    monkeypatch.setattr(runner, "gpu_count", lambda: 1)
    monkeypatch.setattr(runner, "usable_cores", lambda: 3)
    (timed_project / "params" / "demo.yml").write_text(
        "notebooks:\n  p_first: {device: cpu}\n")
    for name in ("p_first", "q_second", "r_reads_first"):
        path = timed_project / "notebooks" / f"{name}.ipynb"
        notebook = json.loads(path.read_text())
        notebook["cells"][0]["source"] = f"seed = 0\npause = 3.0\nname = '{name}'\ndevice = 'auto'"
        path.write_text(json.dumps(notebook))
    only = ["p_first", "q_second", "r_reads_first"]
    assert runner.run("demo", only=only, project_dir=timed_project, build=False, timeout=300) == 0
    assert "at most 1 on the GPU at a time" in capsys.readouterr().out
    times = {n: _times(timed_project, n) for n in only}
    gpu = sorted((times["q_second"], times["r_reads_first"]), key=lambda t: t["start"])
    assert gpu[0]["end"] <= gpu[1]["start"]  # the two GPU notebooks did not overlap
    cpu = times["p_first"]
    assert any(cpu["start"] < t["end"] and t["start"] < cpu["end"] for t in gpu)  # the CPU one ran beside


def test_a_per_model_notebook_runs_once_per_spec_each_a_titled_page_and_one_failure_spares_the_others(
        tmp_path, monkeypatch, capsys):
    from vlbias import plan as plan_module
    from vlbias.paths import instance_page
    from vlbias.stages import NotebookDeclaration

    project = make_project(tmp_path, {"m_card": [
        "profile = 'full'\nmodel_spec = 'x'\nmodel_specs = ['x']",
        "assert model_spec != 'trained:bad?seed=1', 'planted failure'\n"
        "open(''.join(c if c.isalnum() else '_' for c in model_spec) + '.ran', 'w').write(model_spec)"]},
        "notebooks:\n  m_card:\n    model_specs: ['tiny:clip', 'trained:bad?seed=1', 'ViT-B-32/openai', 'tiny:clip']\n")
    source = project / "notebooks" / "m_card.ipynb"
    notebook = nbformat.read(source, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_markdown_cell("# Model card\n\nOne model."))
    notebook.cells[-1].metadata["mystnb"] = {"figure": {"caption": "A figure.", "name": "fig-m-card"}}
    nbformat.write(notebook, source)
    declared = NotebookDeclaration("m_card", model_parameters=("model_specs", "model_spec"),
                                   per_spec=("model_specs", "model_spec"))
    monkeypatch.setattr(plan_module, "declarations", lambda: {"m_card": declared})

    code = runner.run("demo", project_dir=project, build=False, timeout=120)
    out = capsys.readouterr().out
    assert code == 1, out
    # each spec once (tiny:clip was listed twice), in the list's order, each with its own parameter
    ran = sorted(p.read_text() for p in (project / "notebooks").glob("*.ran"))
    assert ran == ["ViT-B-32/openai", "tiny:clip"]
    assert "once for each of 3 model(s): tiny:clip, trained:bad?seed=1, ViT-B-32/openai" in out
    for spec in ("tiny:clip", "ViT-B-32/openai"):
        page = nbformat.read(project / instance_page("m_card", spec), as_version=4)
        assert page.cells[0].source.startswith(f"# Model card: {spec}\n")  # the page's title names its model
        assert page.cells[-1].metadata["mystnb"]["figure"]["name"] == {  # figure names unique in the book
            "tiny:clip": "fig-m-card-tiny-clip", "ViT-B-32/openai": "fig-m-card-vit-b-32-openai"}[spec]
    assert instance_page("m_card", "ViT-B-32/openai").name == "ViT-B-32_openai.ipynb"
    bad = project / instance_page("m_card", "trained:bad?seed=1")
    assert not bad.exists() and bad.with_name("trained_bad_seed_1.failed.ipynb").exists()
    assert "m_card: failed" in out and "model trained:bad?seed=1: cell 3 of the source notebook" in out
    assert "AssertionError: planted failure" in out and "model tiny:clip" not in out

    # an empty list says which parameter to fill, before anything runs
    (project / "params" / "demo.yml").write_text("notebooks:\n  m_card:\n    model_specs: []\n")
    with pytest.raises(profiles.RunnerError, match=r"parameter .model_specs., which is empty .*--set m_card.model_specs"):
        runner.run("demo", project_dir=project, build=False)


def test_a_per_model_declaration_names_two_of_its_model_parameters():
    from vlbias.stages import NotebookDeclaration

    with pytest.raises(ValueError, match=r"per_spec takes \(LIST, ONE\), two of its model_parameters"):
        NotebookDeclaration("m", model_parameters=("model_spec",), per_spec=("model_specs", "model_spec"))


def test_launch_buttons_of_a_per_model_page_open_its_one_source_notebook():
    hook = _load_hook("vlbias_book")
    colab = "https://colab.research.google.com/github/o/r/blob/main/book/generated/05a_model_card/trained_face-clip.ipynb"
    binder = "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/generated/05a_model_card/ViT-B-32_openai.ipynb"
    assert hook.source_notebook_url(colab).endswith("/blob/main/notebooks/05a_model_card.ipynb")
    assert hook.source_notebook_url(binder).endswith("lab/tree/notebooks/05a_model_card.ipynb")
    assert hook.source_notebook_url(colab.replace("05a_model_card/trained_face-clip", "01a_self_similarity")).endswith(
        "/blob/main/notebooks/01a_self_similarity.ipynb")


def test_a_notebooks_memory_figure_is_at_least_its_largest_models_weights_in_float32(tmp_path, monkeypatch):
    from vlbias import plan as plan_module
    from vlbias.models import tiny_checkpoint
    from vlbias.models.footprint import directory_weights_gb
    from vlbias.stages import NotebookDeclaration

    checkpoint = str(tiny_checkpoint("sd"))
    project = make_project(tmp_path, {
        "m_local": [f"model_spec = {checkpoint!r}\nhalf = True\nother_specs = ['tiny:clip']", "pass"],
        "n_tiny": ["model_spec = 'tiny:clip'", "pass"]}, "notebooks: {}\n")
    declared = {name: NotebookDeclaration(name, model_parameters=("model_spec", "other_specs"))
                for name in ("m_local", "n_tiny")}
    monkeypatch.setattr(plan_module, "declarations", lambda: declared)
    plan = profiles.plan_run(project, "demo")
    # float32 although the notebook's `half` is true: a notebook may load some models in half, others not
    assert runner.model_memory_gb(project, plan) == {
        "m_local": pytest.approx(directory_weights_gb(checkpoint, half=False) + runner.NOTEBOOK_OVERHEAD_GB)}


def test_two_notebooks_whose_models_do_not_fit_side_by_side_run_one_after_the_other(timed_project, monkeypatch,
                                                                                    capsys):
    monkeypatch.setattr(runner, "notebook_dependencies", lambda names: {name: set() for name in names})
    monkeypatch.setattr(runner, "available_memory_gb", lambda: 4.0)
    monkeypatch.setattr(runner, "model_memory_gb", lambda root, plan: {"p_first": 2.5, "q_second": 2.5})
    only = ["p_first", "q_second"]
    assert runner.run("demo", only=only, project_dir=timed_project, build=False, timeout=300, jobs=2) == 0
    first, second = sorted((_times(timed_project, name) for name in only), key=lambda t: t["start"])
    assert first["end"] <= second["start"]
