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


def test_asset_specs():
    assert assets.resolve_asset_spec("bert-base-uncased") == "bert-base-uncased"
    with pytest.raises(ValueError, match="unknown asset"):
        assets.resolve_asset_spec("asset:nothing")
