"""Compare two runs of the book page by page: every table, figure and text output of each executed
notebook (``book/generated/NAME.ipynb``) of run A against run B.

    python benchmarks/compare_pages.py A/book/generated B/book/generated

Used for changes that must not change what the pages show (a re-layout, a refactor, a parallel run):
:mod:`vlbias.pages` compares outputs cell by cell after the injected-parameters cell is set aside;
figures byte for byte (their PNG), tables and text after replacing each run's own folder with
``<root>`` and durations with ``<time>``. Prints one line per page (``same`` or what differs) and
exits 1 if any page differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from vlbias.pages import compare_folders  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    found = compare_folders(args.a, args.b)
    for name, problems in found.items():
        print(f"{name}: " + ("same" if not problems else f"{len(problems)} difference(s)"))
        for problem in problems[:12]:
            print(f"    {problem}")
    same = sum(not problems for problems in found.values())
    print(f"{same} of {len(found)} pages show the same tables, figures and text")
    return 0 if same == len(found) else 1


if __name__ == "__main__":
    sys.exit(main())
