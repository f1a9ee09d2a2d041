"""Sphinx hook of the book (Jupyter Book ``local_extensions``): a page whose latest run failed says
that it shows the last good run.

``python -m vlbias run`` (:mod:`vlbias.runner`) replaces ``book/generated/NAME.ipynb`` only when a
run succeeds, and keeps a failed one beside it as ``NAME.failed.ipynb``; the page, built from the
last good notebook, would otherwise look current. The note is added to the page's source in memory
only: the notebook on disk stays the run's own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from vlbias.paths import GENERATED_DIR
from vlbias.runner import FAILED_SUFFIX, sibling


def last_good_run_note(notebook: Path) -> str | None:
    """The note a page gets when its latest run failed and it shows the last good one; else None."""
    failed = sibling(notebook, FAILED_SUFFIX)
    if notebook.suffix != ".ipynb" or not failed.exists():
        return None
    executed = time.strftime("%Y-%m-%d %H:%M", time.localtime(notebook.stat().st_mtime))
    attempted = time.strftime("%Y-%m-%d %H:%M", time.localtime(failed.stat().st_mtime))
    return (f"```{{warning}}\nThis page shows the last good run of `{notebook.stem}`, executed {executed}. "
            f"A later run ({attempted}) failed; it is kept as `{GENERATED_DIR / failed.name}` for reading.\n```")


def _add_last_good_run_note(app, docname: str, source: list[str]) -> None:
    """``source-read``: put the note at the top of the page's notebook (in memory only)."""
    noted = app.env.__dict__.setdefault("vlbias_noted_pages", set())
    note = last_good_run_note(Path(app.env.doc2path(docname)))
    if note is None:
        noted.discard(docname)
        return
    notebook = json.loads(source[0])
    notebook["cells"].insert(0, {"cell_type": "markdown", "id": "vlbias-last-good-run", "metadata": {}, "source": note})
    source[0] = json.dumps(notebook)
    noted.add(docname)


def _pages_whose_note_changed(app, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: reread pages that gain or lose the note although their notebook did not change."""
    noted = env.__dict__.get("vlbias_noted_pages", set())
    return [doc for doc in env.found_docs
            if (doc in noted) != (last_good_run_note(Path(env.doc2path(doc))) is not None)]


def setup(app) -> dict[str, Any]:
    """Sphinx extension (``_config.yml``): pages of failed notebooks say they show the last good run."""
    app.connect("source-read", _add_last_good_run_note)
    app.connect("env-get-outdated", _pages_whose_note_changed)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
