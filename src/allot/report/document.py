"""Assembling the report page from simulation results.

The page: a header naming the scenario, cluster and seed; a sticky table
of contents; then the sections of `allot.report.sections`, every one
showing the policies side by side; a footer with the version.
"""

from __future__ import annotations

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


def draw_figures(result: SimResult) -> None:
    """Draw the report's figures of one run now and keep them with it (`SimResult.figures`): the
    process that ran a policy draws them while the others still run, and the report only
    assembles the page."""
    render(ReportData(title=result.scenario, results=[result], summaries=[summarize(result)]))


def write_report(data: ReportData, directory: Path) -> Path:
    """Write `<directory>/index.html` (creating the directory) and return its path; OSError if it
    cannot be written, and then no file is left half-written."""
    text = render(data)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / INDEX
    write_atomically(path, text.encode("utf-8"))
    return path
