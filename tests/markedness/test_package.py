"""Part I's package: its names load on first use, each from the module that defines it."""

import importlib
import subprocess
import sys

import pytest

import vlbias.markedness as mk


def test_every_name_of_the_package_is_its_modules_and_listed():
    for module, names in mk._EXPORTS.items():
        defining = importlib.import_module(f"vlbias.markedness.{module}")
        for name in names:
            assert getattr(mk, name) is getattr(defining, name), name
    assert set(mk._MODULE_OF) <= set(dir(mk))
    assert mk.plots is importlib.import_module("vlbias.markedness.plots")  # a module, as when all were imported
    with pytest.raises(AttributeError, match="no attribute 'unmarked_flag'"):
        mk.unmarked_flag  # noqa: B018


def test_importing_the_package_imports_neither_pandas_nor_scipy_until_a_name_is_used():
    code = ("import sys; import vlbias.markedness as mk; before = [m for m in ('pandas', 'scipy') if m in sys.modules]; "
            "mk.unmarked_flags; print(before, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"
