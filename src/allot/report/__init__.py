"""allot.report: the simulation report, one self-contained HTML file with inline figures.

`write_report(data, directory)` writes `<directory>/index.html` and returns
its path; `render(data)` returns the HTML. The report reads simulation
results (`allot.sim`); the simulator knows nothing of it (the CLI composes
the two).
"""

from __future__ import annotations

from allot.report.document import ReportData, render, write_report

__all__ = ["ReportData", "render", "write_report"]
