"""Numbers as people read them: percentages, durations, counts; '–' for what is not defined."""

from __future__ import annotations

DASH = "–"


def pct(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{value:.{digits}f}%"


def num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return DASH
    if float(value).is_integer() and digits >= 0 and abs(value) >= 100:
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def duration(seconds: float | None) -> str:
    """`42 s`, `4.2 min`, `3.1 h`, `2.0 d`."""
    if seconds is None:
        return DASH
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
