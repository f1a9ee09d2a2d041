"""The tree shows the architecture: core layers never import a part, a part never imports another part
(what two parts share lives in the core); ``vlbias.metrics`` indexes the parts."""

import ast
import importlib
from pathlib import Path

import vlbias.metrics as metrics
from vlbias.t2i.cads import cads_gamma

PACKAGE = Path(importlib.import_module("vlbias").__file__).parent
ROOT = Path(__file__).resolve().parents[2]
PARTS = ("markedness", "colorfoil", "harms", "t2i")
# the public index, the command line, precompute (which runs the parts' cached calls) and the rehearsal
# (the whole profile: its models and data files) may see every part
# rehearsal: the whole profile, its data files too; audit: every part's measures; audit_stages: Part V's
# declarations, whose text-to-image cards draw with Part IV's stage functions (vlbias.t2i.stages.card_units)
ABOVE_THE_PARTS = {"metrics.py", "__main__.py", "precompute.py", "rehearsal.py", "audit.py", "audit_stages.py"}
# core modules that hold measures two parts share
SHARED_MEASURES = {"vlbias.stats", "vlbias.weat"}


def imported_modules(path: Path, source: str | None = None) -> set[str]:
    """Absolute dotted names of everything ``path`` imports (relative imports resolved); ``source``
    stands in for the file's text (a probe that is not in the package)."""
    package = ".".join(("vlbias", *path.relative_to(PACKAGE).parent.parts))
    names = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, [base, node.module or ""]))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_core_layers_never_import_a_part():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in PARTS or str(relative) in ABOVE_THE_PARTS:
            continue
        for name in imported_modules(path):
            if any(name == f"vlbias.{part}" or name.startswith(f"vlbias.{part}.") for part in PARTS):
                offenders.append(f"{relative} imports {name}")
    assert not offenders, offenders


def test_the_trained_recipe_modules_register_recipes_and_live_in_core_or_their_part():
    from vlbias.models import trained

    before = set(trained.TRAINED_RECIPES)
    trained._load_recipes()
    assert set(trained.TRAINED_RECIPES) >= before and trained.TRAINED_RECIPES
    for module in trained.RECIPE_MODULES:
        parts = module.split(".")
        assert parts[0] == "vlbias" and (parts[1] == "models" or parts[1] in PARTS), module
        source = Path(importlib.import_module(module).__file__).read_text()
        assert "@register_trained(" in source, f"{module} registers no trained: recipe"


def other_parts_imported(path: Path, source: str | None = None) -> list[str]:
    """The modules of other parts that a part's file ``path`` imports."""
    own = path.relative_to(PACKAGE).parts[0]
    return sorted(name for name in imported_modules(path, source) for part in PARTS
                  if part != own and (name == f"vlbias.{part}" or name.startswith(f"vlbias.{part}.")))


def test_parts_never_import_each_other():
    offenders = [f"{path.relative_to(PACKAGE)} imports {name}"
                 for part in PARTS for path in (PACKAGE / part).rglob("*.py") for name in other_parts_imported(path)]
    assert not offenders, offenders


def test_the_part_check_sees_another_part_however_it_is_imported():
    # the check above must be able to fail: each of these lines in a Part I file is reported
    probe = PACKAGE / "markedness" / "probe.py"
    for line in ("from ..harms.weat import caliskan_tests", "from ..harms import weat",
                 "import vlbias.colorfoil.controls", "from vlbias.t2i import bias",
                 "def f():\n    from ..harms.measures import torch_threads"):
        assert other_parts_imported(probe, line), line
    # its own modules and the core are allowed
    for line in ("from .prompts import prompt_set", "from ..weat import caliskan_tests", "from .. import stats"):
        assert not other_parts_imported(probe, line), line


def test_the_layout_check_sees_relative_imports_of_a_part(tmp_path):
    # the check above must be able to fail: a core-level file importing a part is reported
    probe = PACKAGE / "cache.py"
    assert "vlbias.paths" in imported_modules(probe)
    names = imported_modules(PACKAGE / "markedness" / "compare.py")
    assert "vlbias.embeddings" in names and "vlbias.markedness.unmarked" in names


def test_every_measure_in_metrics_is_defined_in_a_part_or_in_the_core_shared_measures():
    for name in metrics.__all__:
        function = getattr(metrics, name)
        home = function.__module__
        assert home in SHARED_MEASURES or home.split(".")[1] in PARTS, (name, home)
        assert getattr(importlib.import_module(home), name) is function


def test_issue_named_helpers_exist():
    from vlbias.metrics import self_similarity, vrbs, weat_effect_size, weat_p_value  # noqa: F401

    assert cads_gamma(0.0, 0.6, 0.9) == 1.0 and cads_gamma(1.0, 0.6, 0.9) == 0.0


def test_source_notebooks_are_committed_without_outputs_and_every_cell_has_an_id():
    """The guide's rule (source notebooks without outputs), and nbformat 4.5's cell ids: a cell without
    one is warned about on every read (MissingIDFieldWarning), and will be an error in later nbformat."""
    import json

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5), path.name
        ids = [cell.get("id") for cell in notebook["cells"]]
        assert all(ids) and len(set(ids)) == len(ids), f"{path.name}: cells without an id or with the same one"
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"{path.name}: {cell['id']} has outputs"
