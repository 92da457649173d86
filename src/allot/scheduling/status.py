"""Outcomes of a scheduling step as values: a small ordered code and reasons.

Like kube-scheduler's framework, "does not fit" is not an exception. The
code says what may follow: an `UNSCHEDULABLE` node may become feasible by
preempting pods there; an `UNRESOLVABLE` one cannot (wrong labels, a taint,
a claim pinned elsewhere), so preemption does not consider it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Code(enum.IntEnum):
    SUCCESS = 0
    UNSCHEDULABLE = 1
    UNRESOLVABLE = 2
    ERROR = 3


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    def message(self) -> str:
        return ", ".join(self.reasons)


SUCCESS = Status(Code.SUCCESS)


def unschedulable(plugin: str, *reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons, plugin)


def unresolvable(plugin: str, *reasons: str) -> Status:
    return Status(Code.UNRESOLVABLE, reasons, plugin)


def error(plugin: str, *reasons: str) -> Status:
    return Status(Code.ERROR, reasons, plugin)
