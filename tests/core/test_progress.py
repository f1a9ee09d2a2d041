"""Item 1 of issue 9: warnings reach the pages; progress bars do not."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ("import warnings, vlbias\n"
          "from vlbias.models._batching import batches\n"
          "list(batches(range(10), 2, True, 'bar'))\n"
          "warnings.warn('a finding the reader must see')\n")


def _stderr(extra_env):
    env = {key: value for key, value in os.environ.items() if key != "VLBIAS_PROGRESS_BARS"}
    env.update(PYTHONPATH=str(ROOT / "src"), **extra_env)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          check=True).stderr


def test_profiles_turn_bars_off_and_keep_warnings():
    quiet = _stderr({"VLBIAS_PROGRESS_BARS": "off"})
    assert "a finding the reader must see" in quiet and "bar:" not in quiet and "%|" not in quiet
    loud = _stderr({})
    assert "bar:" in loud and "a finding the reader must see" in loud


def test_book_shows_stderr_and_every_profile_silences_bars():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["nb_output_stderr"] != "remove"
    for profile in ("demo", "full"):
        env = yaml.safe_load((ROOT / "params" / f"{profile}.yml").read_text())["env"]
        assert env["VLBIAS_PROGRESS_BARS"] == "off" and env["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
