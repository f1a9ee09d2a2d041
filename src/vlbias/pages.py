"""Compare two runs of one page: the tables, figures and text an executed notebook shows.

Used to prove that a change shows the same pages (a re-layout, a refactor, notebooks run side by
side instead of one after another): outputs are compared cell by cell after papermill's
injected-parameters cell is set aside; figures byte for byte (their PNG), tables and text after
replacing each run's own folder with ``<root>`` and durations with ``<time>``. The command line is
``benchmarks/compare_pages.py``; ``tests/core/test_demo_book.py`` compares a sequential run's pages
with the demo book's.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

#: what a rerun changes by itself: folders, durations, memory addresses, temporary names
VOLATILE = [
    (re.compile(r"\d+(\.\d+)?\s?(s|ms|min|seconds)\b"), "<time>"),
    (re.compile(r"\d+m\d{2}s"), "<time>"),
    (re.compile(r"0x[0-9a-f]{6,}"), "<address>"),
    (re.compile(r"\bT_[0-9a-f]{5}(?=[\s_\"])"), "T_<styler id>"),  # pandas Styler's random table ids
    (re.compile(r"\d+(\.\d+)?it/s|\d+(\.\d+)?s/it"), "<rate>"),
]


def page_outputs(path: Path, roots: list[str]) -> list[list[tuple[str, str]]]:
    """Per source cell (papermill's injected parameters left out): its outputs as (kind, value)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shown = []
    for cell in cells:
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []) or cell["cell_type"] != "code":
            continue
        items = []
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                # a kernel splits one stream into outputs as its flushes fall (timing, not content): the
                # consecutive pieces of one stream are one output
                kind, text = f"stream:{output['name']}", "".join(output["text"])
                if items and items[-1][0] == kind:
                    items[-1] = (kind, items[-1][1] + text)
                else:
                    items.append((kind, text))
            elif output["output_type"] == "error":
                items.append(("error", output["ename"]))
            else:
                for mime, value in sorted(output.get("data", {}).items()):
                    text = "".join(value) if isinstance(value, list) else str(value)
                    if mime.startswith("image/"):
                        items.append((mime, hashlib.sha256(text.encode()).hexdigest()[:16]))
                    else:
                        items.append((mime, normalise(text, roots)))
        shown.append([(kind, normalise(value, roots)) if kind.startswith("stream:") else (kind, value)
                      for kind, value in items])
    return shown


def normalise(text: str, roots: list[str]) -> str:
    for root in roots:
        text = text.replace(root, "<root>")
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def compare(a: Path, b: Path, roots: tuple[str, ...] = ()) -> list[str]:
    """What differs between two executed notebooks' outputs, one line per difference (none: the same page).

    Each run's project root (the folder above ``book/generated``) and the folders in ``roots``
    (each run's own cache or output folders) read as ``<root>``."""
    roots = sorted({str(p.resolve().parents[2]) for p in (a, b)} | {str(a.resolve()), str(b.resolve())}
                   | {str(Path(root).resolve()) for root in roots}, key=len, reverse=True)
    first, second = page_outputs(a, roots), page_outputs(b, roots)
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


def compare_folders(a: Path, b: Path, roots: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Per page (``NAME.ipynb``) in either folder, what differs; ``[]``: the same page (see :func:`compare`)."""
    names = sorted({p.name for p in Path(a).glob("*.ipynb") if p.name.count(".") == 1}
                   | {p.name for p in Path(b).glob("*.ipynb") if p.name.count(".") == 1})
    found = {}
    for name in names:
        missing = [label for label, folder in (("A", a), ("B", b)) if not (Path(folder) / name).exists()]
        found[name] = [f"only in {'B' if 'A' in missing else 'A'}"] if missing else compare(Path(a) / name, Path(b) / name, roots)
    return found
