"""Assembling the report page from simulation results.

The page: a header naming the scenario, cluster and seed; a sticky table
of contents; then the sections of `allot.report.sections`, every one
showing the policies side by side; a footer with the version.
"""

from __future__ import annotations

import itertools
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from allot import __version__
from allot.report import sections
from allot.report.files import write_atomically
from allot.report.format import duration
from allot.report.html import page
from allot.report.plots import tenant_colors
from allot.sim.metrics import Summary, summarize
from allot.sim.records import SimResult

INDEX = "index.html"


@dataclass
class ReportData:
    """What one `allot simulate` run hands to the report."""

    title: str
    results: list[SimResult]
    summaries: list[Summary]
    description: str = ""
    source: str = ""
    descriptions: dict[str, str] = field(default_factory=dict)


def render(data: ReportData) -> str:
    first = data.results[0]
    colors = tenant_colors(first.tenants)
    gpus = len(first.gpu_labels)
    subtitle = [
        data.description,
        f"{len(first.nodes)} nodes, {gpus} GPUs; tenants {', '.join(first.tenants)}; seed {first.seed}; "
        f"simulated {duration(first.end)}; policies {', '.join(r.policy for r in data.results)}.",
    ]
    if data.source:
        subtitle.append(f"Scenario: {data.source}")
    body = "".join(
        (
            sections.summary(data.summaries, data.descriptions),
            sections.cluster(data.results, colors),
            sections.nodes(data.results, colors),
            sections.tenants(data.results, data.summaries, colors),
            sections.fragmentation(data.results, data.summaries),
            sections.alignment(data.results, data.summaries),
            sections.admissions(data.results, data.summaries, colors),
            sections.pending(data.summaries),
        )
    )
    return page(
        title=data.title,
        subtitle=[s for s in subtitle if s],
        nav=sections.SECTIONS,
        body=body,
        footer=f"allot {__version__} simulation report. Definitions of every number: docs/simulator.md.",
    )


def draw_figures(result: SimResult, *, split: bool = False) -> None:
    """Draw the report's figures of one run now and keep them with it (`SimResult.figures`): the
    process that ran a policy draws them while the others still run, and the report only
    assembles the page. With `split`, a forked process draws every other figure meanwhile (where
    processes can be forked): the last run to finish is the one the report waits for."""
    data = ReportData(title=result.scenario, results=[result], summaries=[summarize(result)])
    if not split or not hasattr(os, "fork"):
        render(data)
        return
    receiving, sending = os.pipe()
    helper = os.fork()
    if helper == 0:  # pragma: no cover - the forked helper (its output is checked by the parent)
        status = 1
        try:
            os.close(receiving)
            _render_half(data, 1)
            with os.fdopen(sending, "wb") as out:
                out.write(pickle.dumps(result.figures))
            status = 0
        finally:
            os._exit(status)
    os.close(sending)
    _render_half(data, 0)
    with os.fdopen(receiving, "rb") as incoming:
        payload = incoming.read()
    _, status = os.waitpid(helper, 0)
    if status == 0 and payload:
        result.figures.update(pickle.loads(payload))
    else:
        render(data)  # the helper failed: its figures are drawn here


def _render_half(data: ReportData, half: int) -> None:
    positions = itertools.count()
    token = sections.DRAWING_ONLY.set(lambda: next(positions) % 2 == half)
    try:
        render(data)
    finally:
        sections.DRAWING_ONLY.reset(token)


def write_report(data: ReportData, directory: Path) -> Path:
    """Write `<directory>/index.html` (creating the directory) and return its path; OSError if it
    cannot be written, and then no file is left half-written."""
    text = render(data)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / INDEX
    write_atomically(path, text.encode("utf-8"))
    return path
