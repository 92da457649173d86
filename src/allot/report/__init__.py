"""allot.report: the simulation report, one self-contained HTML file with inline figures.

`write_report(data, directory)` writes `<directory>/index.html` and returns
its path; `render(data)` returns the HTML. The report reads simulation
results (`allot.sim`); the simulator knows nothing of it (the CLI composes
the two).

The names are loaded on first use: the report draws with matplotlib, which
takes a second or more to import, and commands that only use a helper of
this package (`allot.report.files`) must not pay for it at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from allot.report.document import ReportData, render, write_report

__all__ = ["ReportData", "render", "write_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from allot.report import document

        return getattr(document, name)
    raise AttributeError(f"module 'allot.report' has no attribute {name!r}")
