"""Progress bars off the book's pages, warnings on them.

Executed notebooks keep every stderr stream, and the book shows it (``nb_output_stderr: show`` in
``_config.yml``), so that warnings reach the reader. Progress bars are noise there: the profiles set
``VLBIAS_PROGRESS_BARS=off`` (and ``HF_HUB_DISABLE_PROGRESS_BARS=1`` for the hub libraries' own
bars), and :func:`apply_environment`, run when :mod:`vlbias` is imported, then turns every tqdm bar
off in that process, whatever ``disable=`` its caller passed. Nothing else on stderr is touched.
"""

from __future__ import annotations

import os

#: the environment switch the profiles set for notebook kernels
ENVIRONMENT_VARIABLE = "VLBIAS_PROGRESS_BARS"


def bars_requested_off() -> bool:
    return os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() in ("off", "0", "false", "no")


def apply_environment() -> None:
    """Disable tqdm bars in this process when the environment asks for it (idempotent)."""
    if not bars_requested_off():
        return
    try:
        from tqdm import std
    except ImportError:
        return
    if getattr(std.tqdm.__init__, "_vlbias_quiet", False):
        return
    import warnings

    # with every bar off, tqdm.auto's complaint that notebook widgets are missing is moot; this one
    # warning is dropped, every other one still reaches the page
    warnings.filterwarnings("ignore", message="IProgress not found", category=std.TqdmWarning)
    original = std.tqdm.__init__

    def quiet_init(self, *args, **kwargs):
        kwargs["disable"] = True  # the callers' progress=True is meant for a terminal, not a page
        original(self, *args, **kwargs)

    quiet_init._vlbias_quiet = True
    std.tqdm.__init__ = quiet_init
