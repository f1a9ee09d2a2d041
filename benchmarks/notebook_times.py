"""Wall time of each demo notebook from an empty cache (cold) and again with that cache (warm).

    python benchmarks/notebook_times.py [--only NAME ...] [--cells N] [--one-cache]
    python benchmarks/notebook_times.py --against REV [--only NAME ...]
    python benchmarks/notebook_times.py --jobs 1 2 [--only NAME ...]
    python benchmarks/notebook_times.py --against REV --jobs 2

Each run is ``python -m vlbias run --profile demo --only NAME --no-build`` in a fresh process, with
``VLBIAS_CACHE_DIR`` (and ``output_dir``, where a notebook has one) pointing at a new temporary folder
for the cold run and the same folder for the warm run, so the times include kernel start and imports,
as a reader's run does. Prints a table:
per notebook the cold and warm wall times and, of the warm run, the seconds spent in the cells
(papermill's per-cell durations) and the rest (process and kernel start, papermill's own work).
``--cells N`` also prints each run's N slowest cells: where the time goes.
``--against REV`` times the book cold as ``--one-cache`` does, for this checkout and for git revision ``REV``
(a temporary worktree), alternating notebook by notebook so that drift in the machine's speed falls on
both: the before/after of a change, in one run.
``--against REV --jobs J`` times the whole book as ``make book`` runs it, cold and warm, for this checkout and
for ``REV``, in one run (REV cold, this cold, this warm, REV warm): a change's cost in the reader's own terms.
``--one-cache`` times the book as a reader runs it: every notebook in order from ONE empty cache (later
notebooks reuse what earlier ones cached, as in ``make book``), then all again warm. Without it each
notebook gets its own empty cache, so the cold column is each notebook alone (an upper bound).
``--jobs 1 2`` times the whole book as ``make book`` runs it, once per ``--jobs`` value: one
``python -m vlbias run --profile demo --jobs J --no-build`` from an empty cache (cold), then again
(warm), all in this one run so that the ratios share the machine's state. It prints each
notebook's time, the wall time, the ratios to the first value, the peak resident memory of the
run's whole process tree (sampled every 0.5 s) and the load average, and checks that every page of
each cold run shows what the first one's shows (:mod:`vlbias.pages`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_run(name: str, cache: str, root: Path = ROOT) -> tuple[float, list[tuple[float, str]]]:
    """Wall seconds of one run, and (seconds, first line) of each of its cells.

    A notebook with an ``output_dir`` parameter (Part IV's images) writes under ``cache`` too, so
    that the cold run finds none of an earlier run's images. ``root``: the checkout whose code and
    notebook run (``--against`` times another commit's in a worktree of its own)."""
    sys.path.insert(0, str(ROOT / "src"))
    from vlbias.profiles import declared_parameters

    environment = {**os.environ, "VLBIAS_CACHE_DIR": cache, "PYTHONPATH": str(root / "src")}
    outputs = (["--set", f"output_dir={Path(cache) / 'outputs'}"]
               if "output_dir" in declared_parameters(root / "notebooks" / f"{name}.ipynb") else [])
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--only", name, "--no-build", *outputs],
                   cwd=root, env=environment, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    # a notebook run once per model (05a) writes a folder of notebooks, not one: its cells are theirs
    generated = root / "book" / "generated"
    files = [generated / f"{name}.ipynb"] if (generated / f"{name}.ipynb").exists() else sorted(
        (generated / name).glob("*.ipynb"))
    cells = [cell for file in files for cell in json.loads(file.read_text(encoding="utf-8"))["cells"]]
    durations = [(float(cell.get("metadata", {}).get("papermill", {}).get("duration") or 0.0),
                  ("".join(cell.get("source", "")).strip().splitlines() or [""])[0][:60])
                 for cell in cells if cell["cell_type"] == "code"]
    return wall, durations


def book_run(jobs: int, cache: str, names: list[str], root: Path = ROOT) -> dict:
    """One ``python -m vlbias run --jobs J --no-build`` of ``names`` (all: the book) on ``cache``:
    wall seconds, per-notebook seconds, peak memory (GB, the whole process tree) and load. ``root``: the
    checkout whose code and notebooks run (``--against`` runs another commit's in a worktree of its own)."""
    import shutil

    import yaml

    sys.path.insert(0, str(ROOT / "src"))
    from vlbias.runner import RUN_RECORD, tree_memory_gb

    profile = yaml.safe_load((root / "params" / "demo.yml").read_text())["notebooks"]
    # each notebook's image and benchmark folders under the cache too, so that a cold run finds none
    outputs = [f"--set={name}.output_dir={Path(cache) / 'outputs' / Path(values['output_dir']).name}"
               for name, values in profile.items() if "output_dir" in values and (not names or name in names)]
    selection = [f"--only={name}" for name in names]
    environment = {**os.environ, "VLBIAS_CACHE_DIR": cache, "PYTHONPATH": str(root / "src")}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "vlbias", "run", "--profile", "demo", "--jobs", str(jobs),
                                "--no-build", *selection, *outputs], cwd=root, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, tree_memory_gb(process.pid))
        time.sleep(0.5)
    log = process.stdout.read()
    wall = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"--jobs {jobs}: the run failed (exit {process.returncode}):\n{log[-4000:]}")
    record = json.loads((root / "book" / "generated" / RUN_RECORD).read_text())["demo"]
    pages = Path(cache) / f"pages-jobs-{jobs}"
    if not pages.exists():  # the cold run's pages, to compare
        shutil.copytree(root / "book" / "generated", pages)
    return {"wall": wall, "seconds": {name: record[name]["seconds"] for name in record},
            "notebook_peaks": {name: record[name]["peak_gb"] for name in record if "peak_gb" in record[name]},
            "peak_gb": peak,
            "load": (load, os.getloadavg()[0]), "pages": pages}


def book_table(jobs_values: list[int], names: list[str], record: bool = False) -> int:
    """``--jobs``: the whole book cold and warm per value; returns 1 if a page differs."""
    sys.path.insert(0, str(ROOT / "src"))
    from vlbias.pages import compare_folders

    runs = {}
    with tempfile.TemporaryDirectory(prefix="vlbias-bench-") as folder:
        for jobs in jobs_values:
            cache = str(Path(folder) / f"jobs-{jobs}")
            runs[jobs] = {"cold": book_run(jobs, cache, names), "warm": book_run(jobs, cache, names)}
            print(f"--jobs {jobs}: cold {runs[jobs]['cold']['wall']:.1f} s, warm {runs[jobs]['warm']['wall']:.1f} s",
                  flush=True)
        first = jobs_values[0]
        record_peaks = runs[first]["cold"]["notebook_peaks"]
        # each run's own cache and image folders read as <root>; training times differ between any two runs
        caches = tuple(str(Path(folder) / f"jobs-{jobs}") for jobs in jobs_values)
        differing = {jobs: {name: problems for name, problems in compare_folders(
            runs[first]["cold"]["pages"], runs[jobs]["cold"]["pages"], caches).items() if problems}
            for jobs in jobs_values[1:]}
    shown = names or sorted(runs[first]["cold"]["seconds"])
    header = " | ".join(f"--jobs {j} cold s | --jobs {j} warm s" for j in jobs_values)
    print(f"\n| notebook | {header} |\n|---|" + "---:|" * (2 * len(jobs_values)))
    for name in shown:
        cells = " | ".join(f"{runs[j]['cold']['seconds'].get(name, float('nan')):.1f} | "
                           f"{runs[j]['warm']['seconds'].get(name, float('nan')):.1f}" for j in jobs_values)
        print(f"| {name} | {cells} |")
    for label, key in (("sum of notebooks", None), ("**wall time**", "wall")):
        cells = " | ".join(f"{(runs[j][w][key] if key else sum(runs[j][w]['seconds'].values())):.1f}"
                           for j in jobs_values for w in ("cold", "warm"))
        print(f"| {label} | {cells} |")
    print(f"| wall time / --jobs {first}'s | " + " | ".join(
        f"{runs[j][w]['wall'] / runs[first][w]['wall']:.2f}x" for j in jobs_values for w in ("cold", "warm")) + " |")
    print("| peak resident memory, GB | " + " | ".join(
        f"{runs[j][w]['peak_gb']:.2f}" for j in jobs_values for w in ("cold", "warm")) + " |")
    print("| load average, start -> end | " + " | ".join(
        f"{runs[j][w]['load'][0]:.1f} -> {runs[j][w]['load'][1]:.1f}" for j in jobs_values for w in ("cold", "warm"))
        + " |")
    if record:  # the runner's schedule on a fresh clone: longest first, memory caps (vlbias.runner.MEASURED_COSTS)
        from vlbias.runner import MEASURED_COSTS

        cold = runs[first]["cold"]
        MEASURED_COSTS.write_text(json.dumps({
            "measured": f"benchmarks/notebook_times.py --jobs {' '.join(map(str, jobs_values))} --record, "
                        f"{time.strftime('%Y-%m-%d', time.gmtime())}, --jobs {first} cold, {os.cpu_count()} cores, "
                        f"load {cold['load'][0]:.1f} -> {cold['load'][1]:.1f}",
            "notebooks": {name: {"seconds": seconds, **({"peak_gb": record_peaks[name]} if name in record_peaks else {})}
                          for name, seconds in sorted(cold["seconds"].items())}}, indent=1) + "\n")
        print(f"wrote {MEASURED_COSTS}")
    for jobs, problems in differing.items():
        print(f"\npages of --jobs {jobs} against --jobs {first} (cold): "
              + ("all the same" if not problems else f"{len(problems)} differ: {problems}"))
    return 1 if any(differing.values()) else 0


@contextlib.contextmanager
def _beside(revision: str):
    """A temporary folder holding a git worktree of ``revision``: ``(folder, worktree, its label, this
    checkout's label)``, the worktree removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="vlbias-bench-") as folder:
        other = Path(folder) / "other"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), revision], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=other, check=True, capture_output=True,
                                    text=True).stdout.strip()
            here = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                                  text=True).stdout.strip()
            changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout.strip()
            yield (folder, other, commit if revision.startswith(commit) else f"{revision} ({commit})",
                   f"this checkout ({here}{', with uncommitted changes' if changed else ''})")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False,
                           capture_output=True)


def against_book(names: list[str], revision: str, jobs: int) -> None:
    """``--against REV --jobs J``: the whole book as ``make book`` runs it (``--jobs J``), for this checkout
    and for revision ``REV`` (a git worktree), each from an empty cache (cold) and again (warm), in one run
    and in the order REV cold, this cold, this warm, REV warm, so that drift in the machine's speed falls on
    both. Prints each notebook's seconds (the runner's own), the wall times, the ratios and the load."""
    with _beside(revision) as (folder, other, commit, here):
        before, after = commit, here
        roots = {before: other, after: ROOT}
        caches = {side: str(Path(folder) / f"cache-{number}") for number, side in enumerate(roots)}
        runs = {side: {} for side in roots}
        for side, kind in ((before, "cold"), (after, "cold"), (after, "warm"), (before, "warm")):
            runs[side][kind] = book_run(jobs, caches[side], names, roots[side])
            print(f"{side} {kind}: {runs[side][kind]['wall']:.1f} s wall", flush=True)
    shown = names or sorted(set(runs[before]["cold"]["seconds"]) | set(runs[after]["cold"]["seconds"]))
    print(f"\n| notebook | {before} cold s | {after} cold s | {before} warm s | {after} warm s |\n|---|---:|---:|---:|---:|")
    for name in shown:
        print(f"| {name} | " + " | ".join(f"{runs[side][kind]['seconds'].get(name, float('nan')):.1f}"
                                        for kind in ("cold", "warm") for side in (before, after)) + " |")
    for label, key in (("sum of notebooks", None), ("**wall time**", "wall")):
        print(f"| {label} | " + " | ".join(
            f"{(runs[side][kind][key] if key else sum(runs[side][kind]['seconds'].values())):.1f}"
            for kind in ("cold", "warm") for side in (before, after)) + " |")
    print("| wall time / before's | " + " | ".join(
        f"{runs[side][kind]['wall'] / runs[before][kind]['wall']:.2f}x" for kind in ("cold", "warm")
        for side in (before, after)) + " |")
    print("| peak resident memory, GB | " + " | ".join(
        f"{runs[side][kind]['peak_gb']:.2f}" for kind in ("cold", "warm") for side in (before, after)) + " |")
    print("| load average, start -> end | " + " | ".join(
        f"{runs[side][kind]['load'][0]:.1f} -> {runs[side][kind]['load'][1]:.1f}" for kind in ("cold", "warm")
        for side in (before, after)) + " |")


def interleaved(names: list[str], revision: str) -> None:
    """``--against REV``: the book cold as a reader runs it (one cache per checkout, every notebook in
    order), this checkout's and ``REV``'s (a git worktree) alternating notebook by notebook, the first of
    each pair alternating too (REV first, then this one first, ...), so that a machine whose speed drifts
    during the run slows both sides alike. Prints each notebook's cold seconds on both sides, the
    totals, their ratio and the load average."""
    with _beside(revision) as (folder, other, commit, here):
        sides = {commit: (other, str(Path(folder) / "cache-other")), here: (ROOT, str(Path(folder) / "cache-this"))}
        times = {side: {} for side in sides}
        load = os.getloadavg()[0]
        for index, name in enumerate(names):
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            for side in order:
                root, cache = sides[side]
                if (root / "notebooks" / f"{name}.ipynb").exists():
                    times[side][name] = timed_run(name, cache, root)[0]
            print(f"{name}: " + ", ".join(f"{times[side].get(name, float('nan')):.1f} s" for side in sides),
                  flush=True)
    before, after = sides
    both = [name for name in names if name in times[before] and name in times[after]]
    print(f"\n| notebook | {before} cold s | {after} cold s |\n|---|---:|---:|")
    for name in names:
        print(f"| {name} | {times[before].get(name, float('nan')):.1f} | {times[after].get(name, float('nan')):.1f} |")
    total = {side: sum(times[side][name] for name in both) for side in sides}
    print(f"| **total** ({len(both)} notebooks on both sides) | {total[before]:.1f} | {total[after]:.1f} |")
    print(f"| ratio | 1.00 | {total[after] / total[before]:.3f} |")
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="notebook names (default: every notebook)")
    parser.add_argument("--cells", type=int, default=0, help="also print each run's N slowest cells")
    parser.add_argument("--one-cache", action="store_true",
                        help="one cache for the whole book, in order (cold pass, then warm pass)")
    parser.add_argument("--jobs", nargs="+", type=int, metavar="J",
                        help="time the whole book as `make book` runs it, once per value of --jobs (e.g. 1 2)")
    parser.add_argument("--record", action="store_true",
                        help="with --jobs: write the first value's cold times and peaks to vlbias/resources/"
                             "notebook_costs.json, the runner's schedule on a fresh clone")
    parser.add_argument("--against", metavar="REV",
                        help="the book cold, this checkout against git revision REV, notebook by notebook in turn")
    arguments = parser.parse_args()
    if arguments.against and arguments.jobs:
        if len(arguments.jobs) != 1:
            parser.error("--against REV --jobs J takes one value of --jobs")
        return against_book(arguments.only or [], arguments.against, arguments.jobs[0])
    if arguments.jobs:
        sys.exit(book_table(arguments.jobs, arguments.only or [], arguments.record))
    names = arguments.only or sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    if arguments.against:
        return interleaved(names, arguments.against)
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
