"""Fixtures for the tests of the built book.

- ``static_book``: a small book of every page of ``_toc.yml``, with the source notebooks standing
  in (unexecuted) for the executed copies under ``book/generated/``. It builds in seconds, so the
  exercise, launch-button and browser tests need not run the demo profile.
- ``chromium``, ``browser_check``: headless Chromium (Debian's ``chromium``; ``.ci/run`` installs
  it) reading every page of a built book as a reader sees it: typeset math and no raw TeX, no
  traceback or error output, every image loaded, exercises (and solutions only where the build
  shows them), launch links that open files the repository has.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

REPO = Path(__file__).resolve().parents[2]
FRAME = ["_config.yml", "_toc.yml", "book"]


def stand_in_page(generated: Path, name: str) -> Path:
    """Where a stand-in for notebook ``name``'s executed page goes in a book's ``generated`` folder: its
    page, or, for a notebook run once per model (its declaration's ``per_spec``), one page in its folder."""
    from vlbias.plan import declarations

    declared = declarations().get(name)
    return generated / name / f"{name}.ipynb" if declared is not None and declared.per_spec else generated / f"{name}.ipynb"


def build_static_book(target: Path, solutions: bool, hang_guard) -> tuple[Path, str]:
    """Copy the book's frame and notebooks to ``target``, build it; return (html folder, build log)."""
    for name in FRAME:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("generated", "__pycache__"))
        else:
            shutil.copy2(source, target / name)
    shutil.copytree(REPO / "notebooks", target / "notebooks")
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        page = stand_in_page(target / "book" / "generated", path.stem)
        page.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, page)
    executable = Path(sys.executable).with_name("jupyter-book")
    env = {**os.environ, "VLBIAS_SOLUTIONS": "1" if solutions else "0"}
    result = hang_guard.run([str(executable), "build", str(target), "--builder", "html"], 60.0,
                            "jupyter-book build of the static book", cwd=target, env=env, capture_output=True, text=True)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-5000:]
    return target / "_build" / "html", log


@pytest.fixture(scope="session")
def stand_in():
    """:func:`stand_in_page`, for tests that lay out a book of their own."""
    return stand_in_page


@pytest.fixture(scope="session")
def static_book(tmp_path_factory, hang_guard):
    """``static_book(solutions=False)`` → (html folder, build log), built once per setting and session."""
    built: dict[bool, tuple[Path, str]] = {}

    def build(solutions: bool = False) -> tuple[Path, str]:
        if solutions not in built:
            built[solutions] = build_static_book(tmp_path_factory.mktemp("static-book"), solutions, hang_guard)
        return built[solutions]

    return build


BROWSERS = ("chromium", "chromium-browser", "google-chrome")
RAW_TEX = ("$$", "\\frac", "\\sqrt", "\\mathrm", "\\(", "\\[", "\\hat", "\\sum")

# What a page shows, once it has loaded and MathJax has typeset it.
INSPECT = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const main = document.querySelector("main") || document.body;
  const images = [...document.images].filter(i => i.offsetParent !== null || i.closest("main"));
  return JSON.stringify({
    text: main.innerText,
    math: document.querySelectorAll("mjx-container").length,
    mathSource: document.querySelectorAll(".math, span.math, div.math").length,
    broken: images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute("src")),
    images: images.length,
    errors: document.querySelectorAll(".output.traceback, .output.error, .output.stderr, .system-message").length,
    exercises: document.querySelectorAll("div.exercise").length,
    solutions: document.querySelectorAll("div.solution").length,
    launch: [...document.querySelectorAll("a")].map(a => a.href)
              .filter(h => h.includes("colab.research.google.com") || h.includes("mybinder.org")),
    downloads: [...document.querySelectorAll("a")].map(a => a.href).filter(h => h.endsWith(".ipynb")),
    // tables and figures whose right edge passes the content column's (the page is 1400 px wide)
    overflowing: (() => {
      const article = document.querySelector("article.bd-article") || main;
      const right = article.getBoundingClientRect().right;
      return [...article.querySelectorAll("table, img")]
        .filter(e => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > right + 2)
        .map(e => `${e.tagName.toLowerCase()} ${Math.round(e.getBoundingClientRect().width)} px: ` +
                  ((e.querySelector && e.querySelector("caption")) ? e.querySelector("caption").textContent : (e.alt || ""))
                  .slice(0, 60));
    })()
  });
})()"""


def browser() -> str:
    found = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    if not found:
        pytest.skip("no Chromium: install Debian's `chromium` (apt-get install chromium; .ci/run does) to run it")
    return found


class Chromium:
    """Headless Chromium driven over the DevTools protocol (one tab, one page at a time)."""

    def __init__(self, executable: str, profile: Path):
        websocket = pytest.importorskip("websocket", reason="websocket-client (pinned in requirements.txt)")
        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--allow-file-access-from-files", "--remote-debugging-port=0", f"--user-data-dir={profile}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("Chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        # no Origin header: Chromium 111+ refuses a DevTools socket from an origin it was not told to allow
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        # a reader's window: 1400 px wide, as the issues' screenshots were taken
        self.call("Emulation.setDeviceMetricsOverride", width=1400, height=1500, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event: str, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv())
            if message.get("method") == event:
                return message
        raise TimeoutError(event)

    def inspect(self, path: Path) -> dict:
        self.call("Page.navigate", url=path.as_uri())
        self.wait_for("Page.loadEventFired")
        result = self.call("Runtime.evaluate", expression=INSPECT, awaitPromise=True, returnByValue=True)
        value = result.get("result", {}).get("value")
        if not isinstance(value, str):
            raise RuntimeError(f"{path}: the page could not be inspected: {json.dumps(result)[:2000]}")
        return json.loads(value)

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    """Headless Chromium; the test skips, saying why, where Debian's ``chromium`` is not installed."""
    session = Chromium(browser(), tmp_path_factory.mktemp("chromium-profile"))
    yield session
    session.close()


def launch_target(url: str) -> str:
    """The repository path a Colab or Binder link opens."""
    parsed = urlparse(url)
    if "mybinder.org" in parsed.netloc:
        return parse_qs(parsed.query)["urlpath"][0].split("/tree/", 1)[1]
    return parsed.path.split("/blob/", 1)[1].split("/", 1)[1]


def pages(html: Path) -> list[Path]:
    """Every page of the book; index.html only redirects to the first one (checked on its own)."""
    return sorted((html / "book").rglob("*.html"))


def redirect_target(html: Path) -> Path | None:
    match = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', (html / "index.html").read_text())
    return html / match.group(1) if match else None


def book_problems(chromium: Chromium, html: Path, solutions: bool) -> tuple[list[str], dict[str, int]]:
    """What is wrong on any page of a built book, as a reader would see it, and what was counted."""
    problems, counts = [], {"math pages": 0, "exercise pages": 0, "notebook pages": 0, "images": 0}
    start = redirect_target(html)
    if start is None or not start.is_file():
        problems.append(f"index.html: does not lead to a page of the book ({start})")
    for page in pages(html):
        name = page.relative_to(html).as_posix()
        seen = chromium.inspect(page)
        raw = [tex for tex in RAW_TEX if tex in seen["text"]]
        if raw:
            problems.append(f"{name}: raw TeX {raw}")
        if seen["mathSource"] and not seen["math"]:
            problems.append(f"{name}: math not typeset")
        counts["math pages"] += seen["math"] > 0
        counts["images"] += seen["images"]
        if "Traceback" in seen["text"] or seen["errors"]:
            problems.append(f"{name}: traceback or error output")
        if seen["broken"]:
            problems.append(f"{name}: images not loaded {seen['broken']}")
        if seen["overflowing"]:
            problems.append(f"{name}: wider than the content column at 1400 px: {seen['overflowing']}")
        if page.stem.endswith("_exercises"):
            counts["exercise pages"] += 1
            expected = seen["exercises"] if solutions else 0
            if seen["exercises"] < 4 or seen["solutions"] != expected:
                problems.append(f"{name}: {seen['exercises']} exercises, {seen['solutions']} solutions shown")
        elif seen["solutions"]:
            problems.append(f"{name}: solutions outside an exercise page")
        if "generated" in name:
            counts["notebook pages"] += 1
            # a notebook run once per model has its pages in a folder of its name: each opens that one source
            source = page.parent.name if page.parent.name != "generated" else page.stem
            targets = {launch_target(url) for url in seen["launch"]}
            if len(seen["launch"]) < 2 or targets != {f"notebooks/{source}.ipynb"}:
                problems.append(f"{name}: launch links {seen['launch']}")
            if not (REPO / f"notebooks/{source}.ipynb").is_file():
                problems.append(f"{name}: no notebooks/{source}.ipynb in the repository")
            if not any(Path(urlparse(d).path).is_file() for d in seen["downloads"]):
                problems.append(f"{name}: no downloadable notebook {seen['downloads']}")
    return problems, counts


@pytest.fixture(scope="session")
def browser_check(chromium):
    """``browser_check(html, solutions)`` → (problems, counts) for every page of a built book."""
    return lambda html, solutions=False: book_problems(chromium, Path(html), solutions)
