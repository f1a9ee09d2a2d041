"""Wall time of each demo notebook from an empty cache (cold) and again with that cache (warm).

    python benchmarks/notebook_times.py [--only NAME ...] [--cells N] [--one-cache]

Each run is ``python -m vlbias run --profile demo --only NAME --no-build`` in a fresh process, with
``VLBIAS_CACHE_DIR`` (and ``output_dir``, where a notebook has one) pointing at a new temporary folder
for the cold run and the same folder for the warm run, so the times include kernel start and imports,
as a reader's run does. Prints a table:
per notebook the cold and warm wall times and, of the warm run, the seconds spent in the cells
(papermill's per-cell durations) and the rest (process and kernel start, papermill's own work).
``--cells N`` also prints each run's N slowest cells: where the time goes.
``--one-cache`` times the book as a reader runs it: every notebook in order from ONE empty cache (later
notebooks reuse what earlier ones cached, as in ``make book``), then all again warm. Without it each
notebook gets its own empty cache, so the cold column is each notebook alone (an upper bound).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(name: str, cache: str) -> tuple[float, list[tuple[float, str]]]:
    """Wall seconds of one run, and (seconds, first line) of each of its cells.

    A notebook with an ``output_dir`` parameter (Part IV's images) writes under ``cache`` too, so
    that the cold run finds none of an earlier run's images."""
    sys.path.insert(0, str(ROOT / "src"))
    from vlbias.profiles import declared_parameters

    environment = {**os.environ, "VLBIAS_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "src")}
    outputs = (["--set", f"output_dir={Path(cache) / 'outputs'}"]
               if "output_dir" in declared_parameters(ROOT / "notebooks" / f"{name}.ipynb") else [])
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--only", name, "--no-build", *outputs],
                   cwd=ROOT, env=environment, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    cells = json.loads((ROOT / "book" / "generated" / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
    durations = [(float(cell.get("metadata", {}).get("papermill", {}).get("duration") or 0.0),
                  ("".join(cell.get("source", "")).strip().splitlines() or [""])[0][:60])
                 for cell in cells if cell["cell_type"] == "code"]
    return wall, durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="notebook names (default: every notebook)")
    parser.add_argument("--cells", type=int, default=0, help="also print each run's N slowest cells")
    parser.add_argument("--one-cache", action="store_true",
                        help="one cache for the whole book, in order (cold pass, then warm pass)")
    arguments = parser.parse_args()
    names = arguments.only or sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':34s} {'cold s':>8s} {'warm s':>8s} {'warm cells s':>13s} {'warm rest s':>12s}")
    totals = [0.0, 0.0, 0.0]
    if arguments.one_cache:
        with tempfile.TemporaryDirectory(prefix="vlbias-bench-") as cache:
            cold_runs = [timed_run(name, cache) for name in names]
            warm_runs = [timed_run(name, cache) for name in names]
    for index, name in enumerate(names):
        if arguments.one_cache:
            (cold, cold_cells), (warm, warm_cells) = cold_runs[index], warm_runs[index]
        else:
            with tempfile.TemporaryDirectory(prefix="vlbias-bench-") as cache:
                (cold, cold_cells), (warm, warm_cells) = timed_run(name, cache), timed_run(name, cache)
        in_cells = sum(seconds for seconds, _ in warm_cells)
        totals = [totals[0] + cold, totals[1] + warm, totals[2] + in_cells]
        print(f"{name:34s} {cold:8.1f} {warm:8.1f} {in_cells:13.1f} {warm - in_cells:12.1f}", flush=True)
        for label, cells in (("cold", cold_cells), ("warm", warm_cells)):
            for seconds, first_line in sorted(cells, reverse=True)[:arguments.cells]:
                print(f"    {label} {seconds:6.1f} s  {first_line}")
    print(f"{'total':34s} {totals[0]:8.1f} {totals[1]:8.1f} {totals[2]:13.1f} {totals[1] - totals[2]:12.1f}")


if __name__ == "__main__":
    main()
