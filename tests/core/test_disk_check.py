"""The suite's own disk check (tests/conftest.py): one clear stop when the conformance tests' full-size
checkpoints cannot fit in the temporary folder."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shortfall_names_the_folder_the_need_and_the_way_out(tmp_path):
    conftest = load_root_conftest()
    free_gb = shutil.disk_usage(tmp_path).free / 1e9
    assert conftest.disk_shortfall(str(tmp_path), free_gb * 0.5) is None
    message = conftest.disk_shortfall(str(tmp_path), free_gb + 1000)
    assert str(tmp_path) in message and f"{free_gb + 1000:.0f} GB" in message
    assert "TMPDIR" in message and 'pytest -m "not conformance"' in message


def test_a_full_disk_stops_the_run_before_any_conformance_test(tmp_path):
    """A copy of the root conftest asking for more than any disk has: pytest exits with a usage error
    and the message, and runs no test; without the conformance marker it runs as usual."""
    source = (ROOT / "tests" / "conftest.py").read_text()
    assert "CONFORMANCE_DISK_GB = " in source
    (tmp_path / "conftest.py").write_text(source.replace("CONFORMANCE_DISK_GB = ", "CONFORMANCE_DISK_GB = 1e9 or "))
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n\n@pytest.mark.conformance\ndef test_big():\n    pass\n\ndef test_small():\n    pass\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "markers=conformance", str(tmp_path)]
    stopped = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr  # pytest.ExitCode.USAGE_ERROR
    assert "conformance tests need about 1000000000 GB free" in stopped.stdout + stopped.stderr
    assert "passed" not in stopped.stdout
    rest = subprocess.run(command + ["-m", "not conformance"], capture_output=True, text=True, cwd=tmp_path)
    assert rest.returncode == 0 and "1 passed, 1 deselected" in rest.stdout, rest.stdout + rest.stderr
