"""`allot simulate --serve` and `allot dashboard --replay`: a what-if seen the way production is.

The simulation records frames while it runs and then serves them; the recording served again by
`allot dashboard --replay` answers the same JSON; the page, in headless Chromium, walks simulated
time with its slider; bad requests and bad recordings get a 4xx or a one-line error.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from allot.cli.dashboard_cmd import replay_sources
from allot.cli.main import cli
from allot.dashboard.server import serve
from dashboard.browser import Browser, browser_or_skip, distinct_colours
from sim.cases import SMALL

ALLOT = str(Path(sys.executable).with_name("allot"))


class Served:
    """An `allot` command that serves the dashboard, as its own process, until stopped."""

    def __init__(self, *args: str, log: Path) -> None:
        self.log = log
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [ALLOT, *args],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + 90
        while (found := re.search(r"dashboard: (http://\S+/)", log.read_text())) is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("allot did not serve the dashboard:\n" + log.read_text()[-3000:])
            time.sleep(0.1)
        self.url = found.group(1)

    def get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    folder = tmp_path_factory.mktemp("serve")
    (folder / "small.yaml").write_text(SMALL)
    recording = folder / "recording"
    process = Served(
        "simulate", str(folder / "small.yaml"), "--compare", "fifo-priority,fair", "--serve", "--port", "0",
        "--record-frames", str(recording), "--frames", "12", "--no-report", "-q",
        log=folder / "simulate.log",
    )  # fmt: skip
    yield process, recording
    assert process.stop() == 0, process.log.read_text()[-2000:]


def test_a_simulation_is_served_over_simulated_time(served: tuple[Served, Path]) -> None:
    process, recording = served
    _, meta = process.get("/api/v1/meta")
    assert meta["mode"] == "simulation" and meta["runs"] == ["fair", "fifo-priority"]
    times = meta["times"]
    assert 12 <= len(times) <= 14 and times == sorted(times) and times[-1] == 7200.0
    # A time between two frames shows the earlier frame; each run has its own frames.
    _, early = process.get(f"/api/v1/cluster?t={(times[3] + times[4]) / 2}")
    assert early["time"] == times[3]
    _, fifo = process.get("/api/v1/cluster?run=fifo-priority")
    _, fair = process.get("/api/v1/cluster")
    assert fifo["title"].endswith("fifo-priority") and fair["title"].endswith("fair")
    assert len(fair["history"]) == len(times)
    _, nodes = process.get("/api/v1/nodes")
    assert [n["name"] for n in nodes["items"]] == ["cpu-00", "gpu-00", "gpu-01"]
    assert sorted(p.name for p in recording.iterdir()) == ["fair", "fifo-priority"]
    for path, status in (
        ("/api/v1/cluster?run=kueue", 404),
        ("/api/v1/nodes/gpu-99", 404),
        ("/api/v1/nodes?limit=x", 400),
    ):
        code, body = process.get(path)
        assert (code, set(body)) == (status, {"error"}), body


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_recorded_simulation_is_served_again(served: tuple[Served, Path], tmp_path: Path) -> None:
    process, recording = served
    # What `allot dashboard --replay` serves, in this process (a thread with its own event loop).
    urls: list[str] = []
    held: dict[str, Any] = {}

    async def main() -> None:
        held["loop"], held["stop"] = asyncio.get_running_loop(), asyncio.Event()
        await serve(replay_sources(recording), "127.0.0.1", 0, stop=held["stop"], ready=urls.append)

    thread = threading.Thread(target=asyncio.run, args=(main(),))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not urls and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        _, meta = _get(urls[0] + "api/v1/meta")
        assert meta["runs"] == ["fair", "fifo-priority"]
        for run in meta["runs"]:
            for path in ("api/v1/cluster?", "api/v1/apps?kind=clusterqueue&", "api/v1/nodes/gpu-00?"):
                query = f"{path}run={run}&t=3600"
                assert _get(urls[0] + query) == process.get(query)
    finally:
        if "loop" in held:
            held["loop"].call_soon_threadsafe(held["stop"].set)
        thread.join(30)
    # A folder that holds no recording: one line, exit status 1.
    bad = CliRunner().invoke(cli, ["dashboard", "--replay", str(tmp_path)])
    assert bad.exit_code == 1 and "no recorded simulation here" in bad.output and bad.exception is not None
    assert isinstance(bad.exception, SystemExit)


def test_the_page_walks_simulated_time(served: tuple[Served, Path], tmp_path: Path) -> None:
    browser_or_skip()
    process, _ = served
    with Browser(tmp_path / "browser") as browser:
        browser.open(process.url + "#/cluster")
        browser.wait_for("/t = 2h 00m/.test(document.querySelector('#timetext').innerText) && document.querySelector('#cluster-totals')",
                         what="the last frame")  # fmt: skip
        assert browser.text("#mode") == "simulation"
        # Back to the first frame with the slider: the page follows without a reload.
        browser.evaluate(
            "(() => { const s = document.getElementById('time'); s.value = '0'; s.dispatchEvent(new Event('input')); })()"
        )
        browser.wait_for("/^Cluster\\n\\S+: fair t = 0 s/.test(document.querySelector('#main').innerText) || /t = 0 s/.test(document.querySelector('.lead').innerText)",
                         what="the first frame")  # fmt: skip
        browser.click('a[href="#/apps"]')
        browser.wait_for("document.querySelector('#data table')", what="the application list")
        _, meta = process.get("/api/v1/meta")
        _, listed = process.get(f"/api/v1/apps?t={meta['times'][0]}")
        shown = browser.text("#data")
        assert listed["items"] and all(a["name"] in shown for a in listed["items"])
        assert distinct_colours(browser.screenshot(tmp_path / "simulation.png")) > 15
        assert browser.problems() == []
