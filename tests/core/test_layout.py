"""The tree shows the architecture: core layers never import a part; ``vlbias.metrics`` indexes the parts."""

import ast
import importlib
from pathlib import Path

import vlbias.metrics as metrics
from vlbias.t2i.cads import cads_gamma

PACKAGE = Path(importlib.import_module("vlbias").__file__).parent
PARTS = ("markedness", "colorfoil", "harms", "t2i")
# the public index, the command line and precompute (which runs the parts' cached calls) may see every part
ABOVE_THE_PARTS = {"metrics.py", "__main__.py", "precompute.py"}


def imported_modules(path: Path) -> set[str]:
    """Absolute dotted names of everything ``path`` imports (relative imports resolved)."""
    package = ".".join(("vlbias", *path.relative_to(PACKAGE).parent.parts))
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
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


def test_the_layout_check_sees_relative_imports_of_a_part(tmp_path):
    # the check above must be able to fail: a core-level file importing a part is reported
    probe = PACKAGE / "cache.py"
    assert "vlbias.paths" in imported_modules(probe)
    names = imported_modules(PACKAGE / "markedness" / "compare.py")
    assert "vlbias.embeddings" in names and "vlbias.markedness.unmarked" in names


def test_every_measure_in_metrics_is_defined_in_a_part_or_in_stats():
    for name in metrics.__all__:
        function = getattr(metrics, name)
        home = function.__module__
        assert home == "vlbias.stats" or home.split(".")[1] in PARTS, (name, home)
        assert getattr(importlib.import_module(home), name) is function


def test_issue_named_helpers_exist():
    from vlbias.metrics import self_similarity, vrbs, weat_effect_size, weat_p_value  # noqa: F401

    assert cads_gamma(0.0, 0.6, 0.9) == 1.0 and cads_gamma(1.0, 0.6, 0.9) == 0.0
