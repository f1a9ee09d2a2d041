"""Run every benchmark script in this folder, one after another."""

import runpy
from pathlib import Path

for script in sorted(Path(__file__).parent.glob("*.py")):
    if script.name != "run_all.py":
        print(f"\n== {script.name}")
        runpy.run_path(str(script), run_name="__main__")
