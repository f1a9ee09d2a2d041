"""Run a source notebook opened from the book's launch buttons with a profile's parameters.

A notebook opened in Colab is the repository's source notebook, whose ``parameters`` cell holds
the full profile's values (real models, a GPU). Its first cell calls :func:`run_with_profile`:
once the ``parameters`` cell has run, its values are replaced by the profile's (``params/demo.yml``),
exactly as papermill would inject them, and the profile's environment (offline hubs) is set.
Binder does the same ahead of time: its ``postBuild`` prepares every notebook with
``python -m vlbias open NAME --profile demo --no-launch``.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import runner


def profile_parameters(name: str, profile: str = "demo", root: Path | None = None) -> tuple[dict, dict]:
    """(parameters, environment) that ``python -m vlbias run --profile PROFILE --only NAME`` uses."""
    root = runner.find_project_root(root)
    plan = runner.plan_run(root, profile, [name])
    return plan.parameters[name], plan.env


def run_with_profile(name: str, profile: str = "demo", shell=None, root: Path | None = None) -> dict:
    """After the next cell that sets ``profile`` (the ``parameters`` cell) has run, replace the
    values it set by the profile's; returns those values. ``shell``: the IPython shell (default: this one)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    parameters, env = profile_parameters(name, profile, root)
    os.environ.update(env)

    def apply_after_parameters_cell(result=None):
        if "profile" in shell.user_ns:
            shell.user_ns.update(parameters)
            shell.events.unregister("post_run_cell", apply_after_parameters_cell)

    shell.events.register("post_run_cell", apply_after_parameters_cell)
    print(f"This notebook will run with the {profile} profile's parameters (params/{profile}.yml); "
          "they replace the parameters cell's values when it runs.")
    return parameters
