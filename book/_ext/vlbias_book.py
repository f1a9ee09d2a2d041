"""Sphinx hooks of the book (Jupyter Book ``local_extensions``).

- Solutions: hidden in the students' build; ``VLBIAS_SOLUTIONS=1`` (``make book SOLUTIONS=1``)
  shows them, for instructors. sphinx-exercise's ``hide_solutions`` does the work.
- Launch buttons: pages are the executed copies under ``book/generated/`` (git-ignored), so the
  theme's Binder and Colab links would open nothing; they are pointed at the source notebook
  ``notebooks/NAME.ipynb`` in the repository instead.
- Figure captions: a cell's caption (``metadata.mystnb.figure``) goes on its images only, one
  figure per image (``vlbias.book.captions_on_images_only``), never on a table the cell shows too,
  and is the image's alt text; the parameters show once, as one table (``vlbias.book.for_the_book``).
"""

from __future__ import annotations

import json
import os

from vlbias.paths import GENERATED_DIR, NOTEBOOKS_DIR

#: where the runner writes executed notebooks and where their sources are, as page names and URLs begin
EXECUTED_PREFIX = f"{GENERATED_DIR.as_posix()}/"
SOURCE_PREFIX = f"{NOTEBOOKS_DIR.as_posix()}/"


def solutions_requested(environ=os.environ) -> bool:
    return environ.get("VLBIAS_SOLUTIONS", "").strip().lower() in {"1", "true", "yes", "on"}


def set_solution_visibility(app, config) -> None:
    config.hide_solutions = not solutions_requested()


def source_notebook_url(url: str) -> str:
    """A launch URL for an executed page, rewritten to open the page's source notebook: a notebook run
    once per model (``book/generated/NAME/SPEC.ipynb``) opens its one source, ``notebooks/NAME.ipynb``."""
    import re

    one_per_model = re.compile(re.escape(EXECUTED_PREFIX) + r"([^/?#]+)/[^/?#]+\.ipynb")
    url = one_per_model.sub(lambda match: f"{SOURCE_PREFIX}{match.group(1)}.ipynb", url)
    return url.replace(EXECUTED_PREFIX, SOURCE_PREFIX)


def point_launch_buttons_at_sources(app, pagename, templatename, context, doctree) -> None:
    if not pagename.startswith(EXECUTED_PREFIX):
        return
    for button in context.get("header_buttons", []):
        if button.get("label") == "launch-buttons":
            for link in button.get("buttons", []):
                if "url" in link:
                    link["url"] = source_notebook_url(link["url"])


def notebook_page(app, docname, source) -> None:
    """``source-read``: rewrite a notebook page's text (in memory) for the book: captions on images
    only and as their alt text, the parameters as one table (``vlbias.book.for_the_book``)."""
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    from vlbias.book import for_the_book

    notebook = json.loads(source[0])
    captioned = for_the_book(notebook)
    if captioned is not notebook:
        source[0] = json.dumps(captioned)


def setup(app):
    app.connect("config-inited", set_solution_visibility)
    app.connect("source-read", notebook_page)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", point_launch_buttons_at_sources, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
