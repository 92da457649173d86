"""The report in a real browser: headless Chromium renders it with no console errors, and the
screenshot is not blank. Skipped only when Chromium is not installed (CI installs it with
.ci/install-browser)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from allot.report import ReportData, write_report
from allot.sim.metrics import summarize
from chromium import FLAGS as chromium_flags
from chromium import chromium
from sim.cases import SMALL, run

FLAGS = (*chromium_flags, "--enable-logging=stderr", "--v=0", "--window-size=1400,3000")


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed; run .ci/install-browser to enable this test")
    results = [run(SMALL, policy) for policy in ("fifo-priority", "fair")]
    page = write_report(
        ReportData("allot simulation: small", results, [summarize(r) for r in results]), tmp_path / "report"
    )
    shot = tmp_path / "screenshot.png"
    completed = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    # Chromium logs every console message (errors included) as ":CONSOLE" lines.
    console = [line for line in completed.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    pixels = imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    rgb = np.asarray(pixels)[..., :3]
    assert float(rgb.std()) > 0.05, "the screenshot is blank"
    # Plenty of distinct colours: text, tables and the figures rendered.
    assert len(np.unique((rgb[::7, ::7] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50
