"""Headless Chromium driven over the Chrome DevTools protocol, for the dashboard's browser tests.

`Browser(workdir)` starts Chromium (`chromium` on PATH, installed by .ci/install-browser) with a
fresh profile and a DevTools port, and attaches to its page over a websocket (the
`websocket-client` package): `open(url)`, `evaluate(js)`, `wait_for(js)` (polls until the
expression is truthy, no reload), `click(selector)`, `screenshot(path)`, and `problems()`: the
console errors and uncaught exceptions the page produced. No browser is downloaded: where
Chromium is missing, `browser_or_skip()` skips the test.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from chromium import FLAGS as chromium_flags
from chromium import chromium

FLAGS = (*chromium_flags, "--remote-debugging-port=0", "--remote-allow-origins=*")


def browser_or_skip() -> str:
    found = chromium()
    if found is None:
        pytest.skip("chromium is not installed; run .ci/install-browser to enable this test")
    try:
        import websocket  # noqa: F401
    except ImportError:
        pytest.skip("websocket-client is not installed (the test extra has it)")
    return found


class BrowserError(AssertionError):
    pass


class Browser:
    """See the module docstring. Use as a context manager."""

    def __init__(self, workdir: Path, *, width: int = 1366, height: int = 900) -> None:
        import websocket

        binary = browser_or_skip()
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / "chromium.log"
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [
                    binary,
                    *FLAGS,
                    f"--user-data-dir={workdir / 'profile'}",
                    f"--window-size={width},{height}",
                    "about:blank",
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        port = self._devtools_port()
        deadline = time.monotonic() + 20
        page: dict[str, Any] | None = None
        while page is None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                targets = json.loads(response.read())
            page = next((t for t in targets if t.get("type") == "page"), None)
            if page is None:
                if time.monotonic() > deadline:
                    raise BrowserError("chromium opened no page")
                time.sleep(0.1)
        self.socket = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True
        )
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _devtools_port(self) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(
                r"DevTools listening on ws://[^:]+:(\d+)/", self.log.read_text(errors="replace")
            )
            if found:
                return int(found.group(1))
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise BrowserError("chromium did not start:\n" + self.log.read_text(errors="replace")[-2000:])

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 30.0, what: str = "") -> None:
        """Poll until the expression is truthy in the page (a DOM node counts), without reloading."""
        deadline = time.monotonic() + timeout
        while True:
            if self.evaluate(f"!!({expression})"):
                return
            if time.monotonic() > deadline:
                text = self.evaluate(
                    "document.getElementById('main') ? document.getElementById('main').innerText : ''"
                )
                raise BrowserError(
                    f"timed out waiting for {what or expression}; the page shows:\n{str(text)[:3000]}"
                )
            time.sleep(0.2)

    def text(self, selector: str = "#main") -> str:
        value = self.evaluate(
            f"(document.querySelector({json.dumps(selector)}) || {{innerText: ''}}).innerText"
        )
        return str(value)

    def click(self, selector: str) -> None:
        """Click the first element matching `selector` (a link followed as a user would)."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; e.click(); return true; }})()"
        )
        if not found:
            raise BrowserError(f"nothing on the page matches {selector}; it shows:\n{self.text()[:2000]}")

    def location(self) -> str:
        return str(self.evaluate("location.hash"))

    def screenshot(self, path: Path) -> Path:
        size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size[0], "height": min(size[1], 4000), "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def problems(self) -> list[str]:
        """Console errors and uncaught exceptions seen so far."""
        self.call("Runtime.evaluate", expression="0")  # drain pending events
        found: list[str] = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(
                    " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", []))
                )
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
        return found

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def distinct_colours(png: Path) -> int:
    """How many distinct colours a screenshot holds (a blank page has a handful)."""
    import numpy as np
    from matplotlib.image import imread

    pixels = np.asarray(imread(png))[..., :3]
    return len(np.unique((pixels[::5, ::5] * 255).astype(np.uint8).reshape(-1, 3), axis=0))
