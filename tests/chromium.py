"""Headless Chromium for the browser tests: where it is and the flags that work here.

.ci/install-browser installs Debian's `chromium`; tests that need it skip where it is absent.
"""

from __future__ import annotations

import shutil

# A fresh --user-data-dir per run is added by each caller.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")
