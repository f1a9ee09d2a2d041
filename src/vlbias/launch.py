"""Run a source notebook opened from the book's launch buttons with a profile's parameters.

A notebook opened in Colab is the repository's source notebook, whose ``parameters`` cell holds
the full profile's values (real models, a GPU). Its first cell calls :func:`run_with_profile`:
once the ``parameters`` cell has run, its values are replaced by the profile's (``params/demo.yml``),
exactly as papermill would inject them, and the profile's environment (offline hubs) is set.
Binder does the same ahead of time: its ``postBuild`` prepares every notebook with
``python -m vlbias open NAME --profile demo --no-launch``.

The Colab cell clones the repository that ``_config.yml`` names (``repository.url``, ``branch``):
it runs before anything is installed, so it cannot read that file and carries a copy.
``python -m vlbias.launch`` writes the configured repository into the Colab cell of every notebook
(a fork changes ``_config.yml``, then runs it).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import profiles


def profile_parameters(name: str, profile: str = "demo", root: Path | None = None) -> tuple[dict, dict]:
    """(parameters, environment) that ``python -m vlbias run --profile PROFILE --only NAME`` uses."""
    root = profiles.find_project_root(root)
    plan = profiles.plan_run(root, profile, [name])
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


#: the line of a notebook's Colab cell that names the repository and branch it clones
COLAB_REPOSITORY_LINE = re.compile(r'^(?P<lead>\s*REPOSITORY, BRANCH, CHECKOUT = )"[^"]*", "[^"]*"', re.MULTILINE)


def configured_repository(root: Path | None = None) -> tuple[str, str]:
    """(url, branch) of ``repository`` in ``_config.yml``: the one place that names the repository."""
    import yaml

    root = profiles.find_project_root(root)
    repository = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return repository["url"], repository.get("branch", "main")


def sync_colab_cells(root: Path | None = None) -> list[str]:
    """Write ``_config.yml``'s repository url and branch into every notebook's Colab cell (the first
    cell); returns the names of the notebooks changed. Other cells and the JSON layout stay as they are."""
    root = profiles.find_project_root(root)
    url, branch = configured_repository(root)
    changed = []
    for name, path in profiles.list_notebooks(root).items():
        text = path.read_text(encoding="utf-8")
        notebook = json.loads(text)
        cell = notebook["cells"][0]
        source = "".join(cell["source"])
        if not COLAB_REPOSITORY_LINE.search(source):
            raise profiles.RunnerError(f"{path}: its first cell is not the Colab cell (no 'REPOSITORY, BRANCH, "
                                       "CHECKOUT = ...' line); add it as the other notebooks have it")
        synced = COLAB_REPOSITORY_LINE.sub(lambda m: f'{m["lead"]}{json.dumps(url)}, {json.dumps(branch)}', source)
        if synced != source:
            cell["source"] = synced.splitlines(keepends=True)
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    names = sync_colab_cells()
    url, branch = configured_repository()
    print(f"Colab cells now clone {url} ({branch}): {', '.join(names) or 'all notebooks already did'}")
