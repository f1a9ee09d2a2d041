"""Shared test set-up: offline hubs, and a fresh cache so tiny checkpoints are really built."""

from __future__ import annotations

import os

# Set before transformers/huggingface_hub are imported: offline, hub calls fail fast
# instead of retrying for minutes (and CLIPTokenizer would silently come back empty).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# The conformance tests write full-size random checkpoints (SD 1.4's, 4.3 GB, the largest); measured
# on 2026-12-01, the temporary folder of a whole `make test` peaked at 4.6 GB.
CONFORMANCE_DISK_GB = 6.0


def disk_shortfall(folder: str, needed_gb: float) -> str | None:
    """Why ``folder`` cannot hold ``needed_gb`` more gigabytes, or None when it can."""
    import shutil

    free_gb = shutil.disk_usage(folder).free / 1e9
    if free_gb >= needed_gb:
        return None
    return (f"the conformance tests need about {needed_gb:.0f} GB free in the temporary folder {folder}; "
            f"it has {free_gb:.1f} GB. Free some disk, point TMPDIR at a larger disk, or leave them out "
            f"with: pytest -m \"not conformance\"")


def pytest_collection_finish(session):
    """One clear stop before a full disk fails a hundred tests one by one (after ``-m`` has deselected)."""
    import tempfile

    if any(item.get_closest_marker("conformance") for item in session.items):
        shortfall = disk_shortfall(tempfile.gettempdir(), CONFORMANCE_DISK_GB)
        if shortfall:
            pytest.exit(shortfall, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test session builds its tiny checkpoints and caches from scratch."""
    previous = os.environ.get("VLBIAS_CACHE_DIR")
    path = tmp_path_factory.mktemp("vlbias-cache")
    os.environ["VLBIAS_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("VLBIAS_CACHE_DIR", None)
    else:
        os.environ["VLBIAS_CACHE_DIR"] = previous


@pytest.fixture
def run_notebook(tmp_path):
    """Execute ``notebooks/<name>.ipynb`` under papermill; return (html, text, n_images) of its outputs."""
    import json
    from pathlib import Path

    from vlbias import book

    notebooks = Path(__file__).resolve().parents[1] / "notebooks"

    def run(name: str, **parameters):
        import papermill

        output = tmp_path / f"{name}.ipynb"
        papermill.execute_notebook(str(notebooks / f"{name}.ipynb"), str(output), parameters=parameters,
                                   cwd=str(notebooks), kernel_name="python3", progress_bar=False)
        cells = json.loads(output.read_text())["cells"]
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
        html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs)
        text = "".join("".join(o.get("text", "")) for o in outputs)
        coded = book.code_style_headers(html)
        assert not coded, f"{name}: table headers in code style, not words: {coded}"
        measures = book.measure_names_in_cells(html)
        assert not measures, f"{name}: measure names in code style in a table, not words: {measures}"
        return html, text, sum("image/png" in o.get("data", {}) for o in outputs)

    return run
