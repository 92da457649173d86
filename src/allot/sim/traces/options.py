"""A trace's options (`--trace kind:key=value,...` or `trace: {type: kind, key: value}`), checked.

Each reader declares its options with their bounds (`allot.sim.limits`);
an unknown option, a value of the wrong type, or one outside its bounds is
a `TraceOptionError` whose message names the option, never a value that
slips through (`inf`, `2**70`, `"x"` for a number).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from allot.sim.limits import MAX_COUNT, RunLimits, too_many
from allot.sim.scenario.reader import short_repr


class TraceOptionError(ValueError):
    """An option of a trace that has the wrong type or value (the message names it)."""


class TraceOptions:
    """One trace's options, read through typed accessors that enforce each option's bounds."""

    def __init__(self, options: Mapping[str, Any], known: Sequence[str]) -> None:
        unknown = sorted(str(key) for key in options if key not in known)
        if unknown:
            raise TraceOptionError(f"{unknown[0]}: unknown option; expected one of: {', '.join(known)}")
        self.options = options

    def number(self, key: str, default: float, *, maximum: float) -> float:
        """A positive, finite number of at most `maximum`."""
        value = self.options.get(key, default)
        if isinstance(value, bool):
            value = None
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise TraceOptionError(f"{key}: expected a number, got {short_repr(value)}") from None
        if not (math.isfinite(number) and 0 < number <= maximum):
            raise TraceOptionError(
                f"{key}: expected a number above 0 and at most {maximum:g}, got {short_repr(value)}"
            )
        return number

    def integer(
        self, key: str, default: int | None, *, minimum: int = 1, maximum: int = MAX_COUNT
    ) -> int | None:
        """A whole number from `minimum` to `maximum` (a float with no fraction counts)."""
        value = self.options.get(key, default)
        if value is None:
            return None
        whole: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            whole = value
        elif (isinstance(value, float) and math.isfinite(value) and value.is_integer()) or (
            isinstance(value, str) and value.strip().lstrip("+-").isdigit() and len(value) < 30
        ):
            whole = int(value)
        if whole is None or not minimum <= whole <= maximum:
            raise TraceOptionError(
                f"{key}: expected a whole number from {minimum:,} to {maximum:,}, got {short_repr(value)}"
            )
        return whole

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self.options.get(key, default)
        if value not in choices:
            raise TraceOptionError(f"{key}: expected one of {', '.join(choices)}, got {short_repr(value)}")
        return str(value)

    def raw(self, key: str, default: Any = None) -> Any:
        return self.options.get(key, default)


def check_jobs(count: int, limits: RunLimits) -> None:
    """TraceOptionError when a trace would bring more jobs than the run may have."""
    if count > limits.jobs:
        raise TraceOptionError(too_many("jobs", count, limits.jobs, "--max-jobs"))
