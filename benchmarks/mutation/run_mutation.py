"""Mutation testing of the measures, the foil construction, the CADS schedule and the cache.

``make mutation`` runs this script: mutmut (configured in ``pyproject.toml``, ``[tool.mutmut]``)
mutates the functions listed in :data:`TARGETS`, module by module, runs the fast unit tests that
reach each mutant, and writes ``benchmarks/mutation/score.md`` (score and run time per module).
Survivors not yet explained in ``benchmarks/mutation/survivors.md`` are printed; a mutant either
gets a test that kills it or a line there saying why it is equivalent or harmless.

    python benchmarks/mutation/run_mutation.py [MODULE ...] [--only all|untested|survivors]
                                              [--max-children N] [--report-only]

MODULE names a key of TARGETS (e.g. ``vlbias.cache``); by default all of them. mutmut keeps its
results in ``mutants/``. ``--only all`` (the default) tests every mutant of the module afresh;
``--only untested`` resumes a run that was stopped; ``--only survivors`` re-tests every mutant
not killed yet (survivors, mutants no test reached, mutants of changed functions) after tests were
added (quick). A module's run time is the sum over its runs since the last
``--only all``. One child process by default: the machine is small and shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: module -> the functions mutated (None: every function and method of the module)
TARGETS: dict[str, list[str] | None] = {
    "vlbias.stats": None,
    "vlbias.cache": None,
    "vlbias.markedness.unmarked": None,
    "vlbias.markedness.significance": None,
    "vlbias.markedness.self_similarity": None,
    "vlbias.weat": ["unit_rows", "association_scores", "effect_size_from_scores", "weat_effect_size",
                    "partition_count", "exact_subset_sums", "random_subset_sums", "weat_test",
                    "weat_test_from_scores", "weat_p_value"],
    "vlbias.harms.measures": ["pronoun_shares", "gap_direction", "stereotyping_table", "amplification_slope",
                              "erasure_index", "protagonist_gender", "erasure_from_texts", "false_positive_rates"],
    "vlbias.t2i.bias": ["vrbs", "spearman", "label_counts", "generated_shares", "compare_with_reference",
                        "_scorable", "bias_scores", "bootstrap_bias_scores", "classify_gaps", "extreme_cases",
                        "mean_pairwise_distance", "diversity_by_group", "category_distribution"],
    "vlbias.t2i.cads": ["cads_gamma", "anneal_condition"],
    "vlbias.colorfoil.foils": None,
    "vlbias.colorfoil.evaluation": ["candidate_lists", "score_benchmark", "correct_at", "f1_from_accuracy",
                                    "f1_all_positive", "detection_auroc", "evaluation_row", "evaluation_table",
                                    "foil_comparisons", "colour_confusion", "per_colour_accuracy"],
}

KILLED, SURVIVED = {1, 3, 24, 36, 152, -24}, {0}   # 24/36/152/-24: timeouts, counted as killed (as mutmut does)


def patterns(module: str) -> list[str]:
    functions = TARGETS[module]
    if functions is None:
        return [f"{module}.*"]
    return [f"{module}.x_{name}__mutmut_*" for name in functions]


def in_scope(module: str, mutant: str) -> bool:
    functions = TARGETS[module]
    if functions is None:
        return mutant.startswith(module + ".")
    return any(mutant.startswith(f"{module}.x_{name}__mutmut_") for name in functions)


def results(module: str) -> dict[str, int | None]:
    meta = ROOT / "mutants" / "src" / (module.replace(".", "/") + ".py.meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    return {name: code for name, code in codes.items() if in_scope(module, name)}


def selection(module: str, only: str) -> list[str] | None:
    """The mutants to test: None for all of the module's; else those without a result, or the survivors."""
    codes = results(module)
    if only == "all" or not codes:
        return None
    # "survivors": every mutant not killed yet, including those no test reached and those of
    # functions changed since (no result): a new test may reach them
    wanted = (lambda code: code is None) if only == "untested" else (lambda code: code not in KILLED)
    return sorted(name for name, code in codes.items() if wanted(code))


def explained_survivors() -> set[str]:
    path = HERE / "survivors.md"
    return set(re.findall(r"`(vlbias\.[^`]+__mutmut_\d+)`", path.read_text())) if path.exists() else set()


def summarise(module: str, seconds: float | None, load: float | None = None) -> dict:
    codes = results(module)
    checked = {name: code for name, code in codes.items() if code is not None}
    killed = sum(code in KILLED for code in checked.values())
    survived = sorted(name for name, code in checked.items() if code in SURVIVED)
    other = sorted(name for name, code in checked.items() if code not in KILLED | SURVIVED)
    tested = killed + len(survived) + len(other)
    return {"module": module, "mutants": len(codes), "tested": tested, "killed": killed, "survived": survived,
            "no tests or suspicious": other, "not run": len(codes) - len(checked),
            "score_%": round(100 * killed / tested, 1) if tested else None, "seconds": seconds,
            "load": None if load is None else round(load, 1)}


def write_score(summaries: dict[str, dict]) -> None:
    lines = ["# Mutation score (mutmut, `make mutation`)", "",
             "Written by `benchmarks/mutation/run_mutation.py`. Run time: wall-clock of the module's full run plus",
             "any resumed and survivor re-runs after it, one mutmut child process under `nice`, on the machine",
             "named below. Killed includes timeouts; survivors are explained in `survivors.md`.", "",
             f"Machine: {os.cpu_count()} CPU cores (shared); mutmut {_mutmut_version()}; Python {sys.version.split()[0]}.",
             "Load: the machine's mean 1-minute load average during the module's runs (the highest of its runs).", "",
             "| module | mutants | tested | killed | survived | no tests / suspicious | not run | score | run time | load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total = {"mutants": 0, "tested": 0, "killed": 0, "survived": 0, "other": 0, "not run": 0, "seconds": 0.0}
    for module in TARGETS:
        s = summaries.get(module)
        if s is None:
            continue
        seconds = s["seconds"]
        lines.append(f"| `{module}` | {s['mutants']} | {s['tested']} | {s['killed']} | {len(s['survived'])} | "
                     f"{len(s['no tests or suspicious'])} | {s['not run']} | "
                     f"{'' if s['score_%'] is None else str(s['score_%']) + '%'} | "
                     f"{'' if seconds is None else f'{seconds / 60:.1f} min'} | {s.get('load') or ''} |")
        for key, value in (("mutants", s["mutants"]), ("tested", s["tested"]), ("killed", s["killed"]),
                           ("survived", len(s["survived"])), ("other", len(s["no tests or suspicious"])),
                           ("not run", s["not run"]), ("seconds", seconds or 0.0)):
            total[key] += value
    score = f"{100 * total['killed'] / total['tested']:.1f}%" if total["tested"] else ""
    lines.append(f"| **all** | {total['mutants']} | {total['tested']} | {total['killed']} | {total['survived']} | "
                 f"{total['other']} | {total['not run']} | {score} | {total['seconds'] / 60:.1f} min | |")
    # hand-written notes on the record (what was run when, and on what) follow the table and are kept
    previous = (HERE / "score.md").read_text() if (HERE / "score.md").exists() else ""
    notes = previous[previous.index("\n## Notes"):] if "\n## Notes" in previous else ""
    (HERE / "score.md").write_text("\n".join(lines) + "\n" + notes)
    (HERE / "results.json").write_text(json.dumps(summaries, indent=1) + "\n")


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="keys of TARGETS (default: all)")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--only", choices=("all", "untested", "survivors"), default="all",
                        help="which of a module's mutants to test (untested: resume; survivors: after new tests)")
    parser.add_argument("--report-only", action="store_true", help="summarise the results already in mutants/")
    args = parser.parse_args()
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {list(TARGETS)}")
    previous = json.loads((HERE / "results.json").read_text()) if (HERE / "results.json").exists() else {}
    summaries = {m: s for m, s in previous.items() if m in TARGETS}
    # torch's intra-op thread pool does not survive mutmut's fork; one thread needs no pool
    # a mutant that never releases a cache lock fails in seconds instead of at mutmut's timeout
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               VLBIAS_CACHE_LOCK_TIMEOUT=os.environ.get("VLBIAS_CACHE_LOCK_TIMEOUT", "5"))
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    for module in modules:
        seconds = summaries.get(module, {}).get("seconds")
        load = summaries.get(module, {}).get("load")
        if not args.report_only:
            names = selection(module, args.only)
            print(f"== {module}: {'all' if names is None else len(names)} mutants", flush=True)
            if names is None or names:
                start, loads = time.perf_counter(), []
                # mutmut re-tests every mutant it is given by name (or pattern)
                run = subprocess.Popen([mutmut, "run", "--max-children", str(args.max_children),
                                        *(patterns(module) if names is None else names)],
                                       cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
                while run.poll() is None:  # the machine's load while it ran: the run time depends on it
                    loads.append(os.getloadavg()[0])
                    time.sleep(min(10.0, 1.0 + len(loads)))
                spent = time.perf_counter() - start
                seconds = spent if names is None else (seconds or 0.0) + spent
                load = summaries.get(module, {}).get("load") if names is not None else None
                load = max(load or 0.0, float(np.mean(loads))) if loads else load
        summaries[module] = summarise(module, seconds, load)
        write_score(summaries)
    explained = explained_survivors()
    unexplained = [name for m in modules for name in summaries[m]["survived"] if name not in explained]
    print((HERE / "score.md").read_text())
    if unexplained:
        print(f"{len(unexplained)} survivors not explained in benchmarks/mutation/survivors.md "
              "(see one with `mutmut show NAME`):")
        print("\n".join(f"  {name}" for name in unexplained))
    return 0


if __name__ == "__main__":
    sys.exit(main())
