"""Wall time of each demo notebook from an empty cache (cold) and again with that cache (warm).

    python benchmarks/notebook_times.py [--only NAME ...]

Each run is ``python -m vlbias run --profile demo --only NAME --no-build`` in a fresh process, with
``VLBIAS_CACHE_DIR`` pointing at a new temporary folder for the cold run and the same folder for the
warm run, so the times include kernel start and imports, as a reader's run does. Prints a table.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(name: str, cache: str) -> float:
    environment = {**os.environ, "VLBIAS_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "src")}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--only", name, "--no-build"],
                   cwd=ROOT, env=environment, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="notebook names (default: every notebook)")
    names = parser.parse_args().only or sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':34s} {'cold s':>8s} {'warm s':>8s}")
    totals = [0.0, 0.0]
    for name in names:
        with tempfile.TemporaryDirectory(prefix="vlbias-bench-") as cache:
            cold, warm = timed_run(name, cache), timed_run(name, cache)
        totals = [totals[0] + cold, totals[1] + warm]
        print(f"{name:34s} {cold:8.1f} {warm:8.1f}", flush=True)
    print(f"{'total':34s} {totals[0]:8.1f} {totals[1]:8.1f}")


if __name__ == "__main__":
    main()
