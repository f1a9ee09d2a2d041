"""Mutation testing of the measures, the foil construction, the CADS schedule and the cache.

``make mutation`` runs this script: mutmut (configured in ``pyproject.toml``, ``[tool.mutmut]``)
mutates the functions listed in :data:`TARGETS`, module by module, runs the fast unit tests that
reach each mutant, and writes ``benchmarks/mutation/score.md`` (score and run time per module).
Survivors not yet explained in ``benchmarks/mutation/survivors.md`` are printed; a mutant either
gets a test that kills it or a line there saying why it is equivalent or harmless.

    python benchmarks/mutation/run_mutation.py [MODULE ...] [--max-children N] [--report-only]

MODULE names a key of TARGETS (e.g. ``vlbias.cache``); by default all of them. mutmut keeps its
results in ``mutants/`` and only re-tests mutants whose function or tests changed, so a rerun
after adding a test is quick. One child process by default: the machine is small and shared.
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

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

#: module -> the functions mutated (None: every function and method of the module)
TARGETS: dict[str, list[str] | None] = {
    "vlbias.stats": None,
    "vlbias.cache": None,
    "vlbias.markedness.unmarked": None,
    "vlbias.markedness.significance": None,
    "vlbias.markedness.self_similarity": None,
    "vlbias.harms.weat": ["unit_rows", "association_scores", "effect_size_from_scores", "weat_effect_size",
                         "partition_count", "exact_subset_sums", "random_subset_sums", "weat_test",
                         "weat_test_from_scores", "weat_p_value"],
    "vlbias.harms.measures": ["pronoun_shares", "gap_direction", "stereotyping_table", "amplification_slope",
                              "erasure_index", "protagonist_gender", "erasure_from_texts", "false_positive_rates"],
    "vlbias.t2i.bias": ["vrbs", "spearman", "label_counts", "generated_shares", "compare_with_reference",
                        "_scorable", "bias_scores", "bootstrap_bias_scores", "classify_gaps", "extreme_cases",
                        "mean_pairwise_distance", "diversity_by_group", "category_distribution"],
    "vlbias.t2i.cads": ["cads_gamma", "anneal_condition"],
    "vlbias.colorfoil.foils": None,
    "vlbias.colorfoil.benchmark": ["candidate_lists", "score_benchmark", "correct_at", "f1_from_accuracy",
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


def explained_survivors() -> set[str]:
    path = HERE / "survivors.md"
    return set(re.findall(r"`(vlbias\.[^`]+__mutmut_\d+)`", path.read_text())) if path.exists() else set()


def summarise(module: str, seconds: float | None) -> dict:
    codes = results(module)
    checked = {name: code for name, code in codes.items() if code is not None}
    killed = sum(code in KILLED for code in checked.values())
    survived = sorted(name for name, code in checked.items() if code in SURVIVED)
    other = sorted(name for name, code in checked.items() if code not in KILLED | SURVIVED)
    tested = killed + len(survived) + len(other)
    return {"module": module, "mutants": len(codes), "tested": tested, "killed": killed, "survived": survived,
            "no tests or suspicious": other, "not run": len(codes) - len(checked),
            "score_%": round(100 * killed / tested, 1) if tested else None, "seconds": seconds}


def write_score(summaries: dict[str, dict]) -> None:
    lines = ["# Mutation score (mutmut, `make mutation`)", "",
             "Written by `benchmarks/mutation/run_mutation.py`. Run time: wall-clock, summed over the runs that",
             "tested the module's mutants (mutmut re-tests only what changed), one mutmut child process, on the",
             "machine named below. Killed includes timeouts; survivors are explained in `survivors.md`.", "",
             f"Machine: {os.cpu_count()} CPU cores (shared); mutmut {_mutmut_version()}; Python {sys.version.split()[0]}.",
             "", "| module | mutants | tested | killed | survived | no tests / suspicious | not run | score | run time |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total = {"mutants": 0, "tested": 0, "killed": 0, "survived": 0, "other": 0, "not run": 0, "seconds": 0.0}
    for module in TARGETS:
        s = summaries.get(module)
        if s is None:
            continue
        seconds = s["seconds"]
        lines.append(f"| `{module}` | {s['mutants']} | {s['tested']} | {s['killed']} | {len(s['survived'])} | "
                     f"{len(s['no tests or suspicious'])} | {s['not run']} | "
                     f"{'' if s['score_%'] is None else str(s['score_%']) + '%'} | "
                     f"{'' if seconds is None else f'{seconds / 60:.1f} min'} |")
        for key, value in (("mutants", s["mutants"]), ("tested", s["tested"]), ("killed", s["killed"]),
                           ("survived", len(s["survived"])), ("other", len(s["no tests or suspicious"])),
                           ("not run", s["not run"]), ("seconds", seconds or 0.0)):
            total[key] += value
    score = f"{100 * total['killed'] / total['tested']:.1f}%" if total["tested"] else ""
    lines.append(f"| **all** | {total['mutants']} | {total['tested']} | {total['killed']} | {total['survived']} | "
                 f"{total['other']} | {total['not run']} | {score} | {total['seconds'] / 60:.1f} min |")
    (HERE / "score.md").write_text("\n".join(lines) + "\n")
    (HERE / "results.json").write_text(json.dumps(summaries, indent=1) + "\n")


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="keys of TARGETS (default: all)")
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--report-only", action="store_true", help="summarise the results already in mutants/")
    args = parser.parse_args()
    modules = args.modules or list(TARGETS)
    unknown = [m for m in modules if m not in TARGETS]
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {list(TARGETS)}")
    previous = json.loads((HERE / "results.json").read_text()) if (HERE / "results.json").exists() else {}
    summaries = {m: s for m, s in previous.items() if m in TARGETS}
    # torch's intra-op thread pool does not survive mutmut's fork; one thread needs no pool
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    for module in modules:
        seconds = summaries.get(module, {}).get("seconds")
        if not args.report_only:
            print(f"== {module}", flush=True)
            start = time.perf_counter()
            subprocess.run([mutmut, "run", "--max-children", str(args.max_children), *patterns(module)],
                           cwd=ROOT, env=env, check=False, stdout=subprocess.DEVNULL)
            # named mutants are always re-tested, so one run is the module's whole cost
            seconds = time.perf_counter() - start
        summaries[module] = summarise(module, seconds)
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
