"""Compare two runs of the book page by page: every table, figure and text output of each executed
notebook (``book/generated/NAME.ipynb``) of run A against run B.

    python benchmarks/compare_pages.py A/book/generated B/book/generated [--ignore-cell-source]

Used for changes that must not change what the pages show (a re-layout, a refactor): outputs are
compared cell by cell after the injected-parameters cell is set aside; figures byte for byte (their
PNG), tables and text after replacing each run's own folder with ``<root>`` and durations with
``<time>``. Prints one line per page (``same`` or what differs) and exits 1 if any page differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

#: what a rerun changes by itself: folders, durations, memory addresses, temporary names
VOLATILE = [
    (re.compile(r"\d+(\.\d+)?\s?(s|ms|min|seconds)\b"), "<time>"),
    (re.compile(r"\d+m\d{2}s"), "<time>"),
    (re.compile(r"0x[0-9a-f]{6,}"), "<address>"),
    (re.compile(r"\bT_[0-9a-f]{5}(?=[\s_\"])"), "T_<styler id>"),  # pandas Styler's random table ids
    (re.compile(r"\d+(\.\d+)?it/s|\d+(\.\d+)?s/it"), "<rate>"),
]


def outputs(path: Path, roots: list[str]) -> list[list[tuple[str, str]]]:
    """Per source cell (papermill's injected parameters left out): its outputs as (kind, value)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shown = []
    for cell in cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []) or cell["cell_type"] != "code":
            continue
        items = []
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                items.append((f"stream:{output['name']}", normalise("".join(output["text"]), roots)))
            elif output["output_type"] == "error":
                items.append(("error", output["ename"]))
            else:
                for mime, value in sorted(output.get("data", {}).items()):
                    text = "".join(value) if isinstance(value, list) else str(value)
                    if mime.startswith("image/"):
                        items.append((mime, hashlib.sha256(text.encode()).hexdigest()[:16]))
                    else:
                        items.append((mime, normalise(text, roots)))
        shown.append(items)
    return shown


def normalise(text: str, roots: list[str]) -> str:
    for root in roots:
        text = text.replace(root, "<root>")
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def compare(a: Path, b: Path) -> list[str]:
    roots = sorted({str(p.resolve().parents[2]) for p in (a, b)} | {str(a.resolve()), str(b.resolve())},
                   key=len, reverse=True)
    first, second = outputs(a, roots), outputs(b, roots)
    if len(first) != len(second):
        return [f"{len(first)} code cells against {len(second)}"]
    problems = []
    for index, (x, y) in enumerate(zip(first, second), start=1):
        if x == y:
            continue
        kinds_x, kinds_y = [k for k, _ in x], [k for k, _ in y]
        if kinds_x != kinds_y:
            problems.append(f"cell {index}: outputs {kinds_x} against {kinds_y}")
            continue
        for (kind, u), (_, v) in zip(x, y):
            if u != v:
                where = next((i for i, (p, q) in enumerate(zip(u, v)) if p != q), min(len(u), len(v)))
                problems.append(f"cell {index} {kind}: ...{u[max(0, where - 80):where + 80]!r} against "
                                f"...{v[max(0, where - 80):where + 80]!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    names = sorted({p.name for p in args.a.glob("*.ipynb") if p.name.count(".") == 1}
                   | {p.name for p in args.b.glob("*.ipynb") if p.name.count(".") == 1})
    differ = 0
    for name in names:
        if not (args.a / name).exists() or not (args.b / name).exists():
            print(f"{name}: only in {'B' if not (args.a / name).exists() else 'A'}")
            differ += 1
            continue
        problems = compare(args.a / name, args.b / name)
        differ += bool(problems)
        print(f"{name}: " + ("same" if not problems else f"{len(problems)} difference(s)"))
        for problem in problems[:12]:
            print(f"    {problem}")
    print(f"{len(names) - differ} of {len(names)} pages show the same tables, figures and text")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
