"""Shared test set-up: offline hubs, and a fresh cache so tiny checkpoints are really built."""

from __future__ import annotations

import os

# Set before transformers/huggingface_hub are imported: offline, hub calls fail fast
# instead of retrying for minutes (and CLIPTokenizer would silently come back empty).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# The conformance tests write full-size random checkpoints (SD 1.4's, 4.3 GB, the largest); measured
# on 2026-12-01, the temporary folder of a whole `make test` peaked at 4.6 GB.
CONFORMANCE_DISK_GB = 6.0


def disk_shortfall(folder: str, needed_gb: float) -> str | None:
    """Why ``folder`` cannot hold ``needed_gb`` more gigabytes, or None when it can."""
    import shutil

    free_gb = shutil.disk_usage(folder).free / 1e9
    if free_gb >= needed_gb:
        return None
    return (f"the conformance tests need about {needed_gb:.0f} GB free in the temporary folder {folder}; "
            f"it has {free_gb:.1f} GB. Free some disk, point TMPDIR at a larger disk, or leave them out "
            f"with: pytest -m \"not conformance\"")


def _group(item) -> str | None:
    if item.get_closest_marker("conformance"):
        return "conformance"
    if "demo_book" in getattr(item, "fixturenames", ()):
        return "demo-book"
    return None


def _groups_file(folder, worker: str):
    from pathlib import Path

    return Path(folder) / f"xdist-groups-{worker}.json"


def pytest_collection_modifyitems(config, items):
    """Two groups of tests each run on one pytest-xdist worker (``make test``: ``-n auto --dist
    loadgroup``): the conformance tests, one after another (each writes gigabytes of full-size
    checkpoints, so two at once could double the peak memory and temporary disk they were sized for,
    ``CONFORMANCE_DISK_GB``), and the tests of the demo book, whose worker builds it once.

    pytest-xdist 3.8's own ``loadgroup`` puts a group into the test's id through ``item._nodeid``,
    which pytest 9 no longer reads, so its groups are silently ignored. Each worker therefore writes
    its items' groups to a file beside its temporary folder, and the scheduler below reads them.
    The demo book's group comes first: it is the longest piece of work.
    """
    items.sort(key=lambda item: _group(item) != "demo-book")
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: tell the controller's scheduler
        import json
        from pathlib import Path

        groups = {item.nodeid: group for item in items if (group := _group(item))}
        _groups_file(Path(config.option.basetemp).parent, config.workerinput["workerid"]).write_text(json.dumps(groups))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` with the groups the workers wrote (see ``pytest_collection_modifyitems``)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    folder = config._tmp_path_factory.getbasetemp()

    class FileGroups(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has collected by the time scopes are split
                self.groups = {}
                for path in folder.glob("xdist-groups-*.json"):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid, nodeid)

    return FileGroups(config, log)


def pytest_collection_finish(session):
    """One clear stop before a full disk fails a hundred tests one by one (after ``-m`` has deselected)."""
    import tempfile

    if any(item.get_closest_marker("conformance") for item in session.items):
        shortfall = disk_shortfall(tempfile.gettempdir(), CONFORMANCE_DISK_GB)
        if shortfall:
            pytest.exit(shortfall, returncode=pytest.ExitCode.USAGE_ERROR)


#: seconds of :func:`_speed_probe` on the 2-core machine of ``benchmarks/README.md`` (2026-12-02, one
#: other job running: 0.12-0.18 s; the fastest of three is taken)
REFERENCE_PROBE_SECONDS = 0.12
#: a hang guard allows this many times the measured time, scaled by the machine's slowness
GUARD_FACTOR = 10


def _speed_probe() -> float:
    """Seconds of a fixed piece of work (numpy and plain Python), the fastest of three runs."""
    import time

    import numpy as np

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        values = np.arange(2_000_000, dtype=np.float64)
        for _ in range(10):
            np.sqrt(values).sum()
        total = 0
        for i in range(1_000_000):
            total += i * i
        best = min(best, time.perf_counter() - started)
    return best


class HangGuard:
    """Limits on subprocesses and child processes that catch a hang, never a slow machine.

    A limit is ``GUARD_FACTOR`` times the work's measured seconds (on the machine of
    ``benchmarks/README.md``), times this machine's slowness against that one (a speed probe at the
    start of the session, at least 1), and at least ``floor`` seconds. A limit that is hit fails the
    test with one line: what ran, how long, and the limit.
    """

    def __init__(self, slowness: float):
        self.slowness = slowness

    def limit(self, measured_s: float, floor: float = 60.0) -> float:
        return max(floor, GUARD_FACTOR * measured_s * self.slowness)

    def _hit(self, what: str, seconds: float, limit: float, measured_s: float):
        pytest.fail(f"{what} ran {seconds:.0f} s, past its hang guard of {limit:.0f} s ({GUARD_FACTOR}x its measured "
                    f"{measured_s:g} s x this machine's slowness {self.slowness:.1f}): it hung, or this machine is far "
                    "slower than any it was sized for", pytrace=False)

    def run(self, command, measured_s: float, what: str | None = None, **options):
        """``subprocess.run(command, **options)`` under the guard."""
        import subprocess
        import time

        limit, started = self.limit(measured_s), time.monotonic()
        try:
            return subprocess.run(command, timeout=limit, **options)
        except subprocess.TimeoutExpired:
            self._hit(what or " ".join(map(str, command))[:120], time.monotonic() - started, limit, measured_s)

    def join(self, process, measured_s: float, what: str) -> None:
        """``process.join()`` (a thread or a multiprocessing child) under the guard."""
        import time

        limit, started = self.limit(measured_s), time.monotonic()
        process.join(timeout=limit)
        if process.is_alive():
            if hasattr(process, "kill"):
                process.kill()
            self._hit(what, time.monotonic() - started, limit, measured_s)


@pytest.fixture(scope="session")
def hang_guard() -> HangGuard:
    return HangGuard(max(1.0, _speed_probe() / REFERENCE_PROBE_SECONDS))


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test session builds its tiny checkpoints and caches from scratch."""
    previous = os.environ.get("VLBIAS_CACHE_DIR")
    path = tmp_path_factory.mktemp("vlbias-cache")
    os.environ["VLBIAS_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("VLBIAS_CACHE_DIR", None)
    else:
        os.environ["VLBIAS_CACHE_DIR"] = previous


# ------------------------------------------------------------------------------ the demo book, once

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
NETWORK_GUARD = REPO / "tests" / "network_guard"
#: the demo book's measured build on the machine of benchmarks/README.md (notebooks with --jobs 2,
#: then the Jupyter Book build): what its hang guard is sized from
DEMO_BOOK_SECONDS = 900.0


def guarded_env(folder) -> dict[str, str]:
    """Offline, with every non-loopback connection refused and recorded in ``folder/network.log``,
    and the cache in ``folder/cache``."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "VLBIAS_NETWORK_LOG": str(folder / "network.log"), "VLBIAS_CACHE_DIR": str(folder / "cache"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(NETWORK_GUARD), os.environ.get("PYTHONPATH")]))}


def copy_repository(target):
    """Tracked and untracked-but-not-ignored files: what a fresh clone (plus local edits) holds."""
    import shutil
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


class DemoBook:
    """The demo profile run once, as ``make book`` runs it, in a copy of the repository.

    ``project``: the copy; ``cache``: the cache it filled (tests of the same models and data read
    it instead of training again); ``result``: the finished ``python -m vlbias run``.
    """

    def __init__(self, folder, project, result):
        self.folder, self.project, self.result = folder, project, result
        self.cache = folder / "cache"
        self.log = result.stdout[-6000:] + result.stderr[-3000:]

    def page(self, name: str) -> tuple[str, str, int]:
        """(html, text, number of figures) of the executed ``book/generated/<name>.ipynb``."""
        import json

        cells = json.loads((self.project / "book" / "generated" / f"{name}.ipynb").read_text())["cells"]
        return page_outputs(name, cells)

    def rerun(self, name: str, tmp_path, **parameters) -> tuple[str, str, int]:
        """Execute ``name`` again under papermill with the demo profile's parameters and ``parameters``
        on the demo's cache (what it computed already is read back, as a reader's rerun does)."""
        import json

        import papermill

        from vlbias import profiles

        plan = profiles.plan_run(self.project, "demo", only=[name])
        output = tmp_path / f"{name}.ipynb"
        previous = {key: os.environ.get(key) for key in ("VLBIAS_CACHE_DIR", *plan.env)}
        os.environ.update({**plan.env, "VLBIAS_CACHE_DIR": str(self.cache)})  # the profile's environment too
        try:
            papermill.execute_notebook(str(self.project / "notebooks" / f"{name}.ipynb"), str(output),
                                       parameters={**plan.parameters[name], **parameters},
                                       cwd=str(self.project / "notebooks"), kernel_name="python3", progress_bar=False)
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        return page_outputs(name, json.loads(output.read_text())["cells"])


def page_outputs(name: str, cells: list[dict]) -> tuple[str, str, int]:
    """(html, text, number of figures) of a notebook's cells, its table headers checked to be words."""
    from vlbias import book

    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    # the break opportunities vlbias.tables puts in long labels (model specs) are not text
    html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in outputs).replace("<wbr>", "")
    text = "".join("".join(o.get("text", "")) for o in outputs)
    coded = book.code_style_headers(html)
    assert not coded, f"{name}: table headers in code style, not words: {coded}"
    measures = book.measure_names_in_cells(html)
    assert not measures, f"{name}: measure names in code style in a table, not words: {measures}"
    return html, text, sum("image/png" in o.get("data", {}) for o in outputs)


@pytest.fixture(scope="session")
def demo_book(tmp_path_factory, hang_guard) -> DemoBook:
    """The whole demo book, built once per session with the runner's default ``--jobs`` (every test
    that asks for it runs on one pytest-xdist worker: ``pytest_collection_modifyitems``)."""
    import sys

    folder = tmp_path_factory.mktemp("demo-book")
    project = copy_repository(folder / "repo")
    result = hang_guard.run([sys.executable, "-m", "vlbias", "run", "--profile", "demo"], DEMO_BOOK_SECONDS,
                            "the demo book (python -m vlbias run --profile demo)", cwd=project,
                            env=guarded_env(folder), capture_output=True, text=True)
    return DemoBook(folder, project, result)


@pytest.fixture(scope="session")
def repository_tools():
    """``copy_repository(target)`` and ``guarded_env(folder)`` for tests that run the book themselves."""
    from types import SimpleNamespace

    return SimpleNamespace(copy_repository=copy_repository, guarded_env=guarded_env)


@pytest.fixture
def demo_cache(demo_book, monkeypatch):
    """The demo book's cache as this test's: the models it trained and the data it wrote are reused."""
    monkeypatch.setenv("VLBIAS_CACHE_DIR", str(demo_book.cache))
    return demo_book.cache
