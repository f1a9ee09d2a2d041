"""Each notebook's work is declared once, by its part (``vlbias.<part>.stages``), and ``plan`` and
``precompute`` read the declarations: every notebook has one, it names the parameters the notebook
declares, and neither ``plan.py`` nor ``precompute.py`` knows a notebook by its name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vlbias import plan, profiles
from vlbias.stages import KINDS, Context, NotebookDeclaration, StageDeclaration, register

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = profiles.list_notebooks(ROOT)


def test_every_notebook_has_one_declaration_and_every_declaration_a_notebook():
    declared = plan.declarations()
    assert sorted(declared) == sorted(NOTEBOOKS)
    assert all(declared[name].name == name for name in declared)


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_declared_parameters_are_the_notebooks_and_every_model_parameter_is_declared(name):
    declared, parameters = plan.declaration(name), profiles.declared_parameters(NOTEBOOKS[name])
    named = set(declared.model_parameters) | set(declared.resource_parameters)
    assert named <= parameters, f"{name} declares no parameter(s) {sorted(named - parameters)}"
    for stage in declared.stages:
        assert set(stage.models) <= parameters, (name, stage.kind, stage.models)
        assert stage.kind in KINDS and stage.writes
        assert stage.units is not None or stage.left  # what precompute leaves to the notebook says why
    # every parameter naming a model or word vectors reaches the plan's model rows
    models = {key for key in parameters if re.search(r"_specs?$", key)}
    assert models <= named, f"{name}: {sorted(models - named)} name models but are not declared"


@pytest.mark.parametrize("profile", ["demo", "full"])
def test_every_stage_estimates_from_the_merged_parameters_alone(profile, tmp_path, monkeypatch):
    """No fallback defaults: the estimates read only what the notebook runs with (its parameters
    cell under the profile's values), and a missing one is a KeyError here."""
    monkeypatch.setenv("VLBIAS_DATA_DIR", str(tmp_path))
    run = profiles.plan_run(ROOT, profile)
    for name in run.parameters:
        parameters = profiles.notebook_parameters(ROOT, name, run)
        declared = plan.declaration(name)
        declared.datasets(parameters)
        for stage in declared.stages:
            for estimate in stage.estimate(parameters, Context(ROOT / "notebooks")):
                assert estimate.hours >= 0 and estimate.line


def test_plan_and_precompute_know_no_notebook_by_name():
    pattern = re.compile(r"""["'](0[1-9][a-z]?)|startswith\(\s*\(?\s*["']0[1-9]""")
    for module in ("plan.py", "precompute.py"):
        source = (ROOT / "src" / "vlbias" / module).read_text(encoding="utf-8")
        names = [name for name in NOTEBOOKS if name in source]
        assert not names and not pattern.search(source), (module, names, pattern.findall(source))


def test_a_notebook_declared_twice_or_an_unknown_kind_is_refused():
    registry: dict = {}
    register(registry, NotebookDeclaration("99_x"))
    with pytest.raises(ValueError, match="'99_x' is declared twice"):
        register(registry, NotebookDeclaration("99_x"))
    with pytest.raises(ValueError, match="kind 'embedding' is not one of"):
        StageDeclaration("embedding", (), lambda p, c: [], writes="nothing")


def test_an_undeclared_notebook_says_where_to_declare_it():
    with pytest.raises(KeyError, match=r"has no declaration: add a NotebookDeclaration .* stages\.py"):
        plan.declaration("99_new_notebook")


def test_dependencies_name_existing_notebooks():
    for name, declared in plan.declarations().items():
        assert set(declared.reads) <= set(NOTEBOOKS), name
        assert name not in declared.reads


def test_04c_folders_come_from_one_place():
    """The folder names of 04c's runs are spelled once, in vlbias.t2i.runs (the notebook's calls and
    the declaration use them)."""
    for path in (ROOT / "src" / "vlbias").rglob("*.py"):
        if path.name == "runs.py":
            continue
        text = path.read_text(encoding="utf-8")
        for spelled in ('"model-comparison_', '"cads-grid_', '"intervention=', '"negative=', '"competent"'):
            assert spelled not in text, (path, spelled)


def test_the_declarations_are_read_without_importing_torch_pandas_or_scipy():
    """``python -m vlbias run``, ``plan`` and ``list`` read every notebook's declarations before anything
    else; importing torch there cost every run about 1.5 s (CADS's module imported it at the top), and
    pandas and scipy about 1 s more (Part I's package imported all its modules, Part IV's stages its runs)."""
    import subprocess
    import sys

    code = ("import sys; from vlbias.plan import declarations; declarations(); "
            "print(sorted(m for m in ('torch', 'transformers', 'diffusers', 'pandas', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
