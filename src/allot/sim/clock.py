"""The virtual clock: a heap of events and the time of the batch being handled.

`Clock` is the protocol a driver's code needs (what time is it, wake me at
t); `EventQueue` implements it over a plain `heapq` of `(time, kind, seq)`
keys, which is several times faster than a process-based library and keeps
the tie-break under our control (research/style.md, discrete-event core).
`pop_batch` hands out every event of the next instant at once, so the
simulator runs one engine cycle per instant, not one per event.

Times are rounded to the millisecond when scheduled: two events computed
along different float paths for "the same" instant land in one batch.
"""

from __future__ import annotations

import heapq
from typing import Protocol

from allot.sim.events import EventKind, SimEvent

RESOLUTION = 1e-3


def quantize(time: float) -> float:
    """`time` on the clock's millisecond grid."""
    return round(time / RESOLUTION) * RESOLUTION


class Clock(Protocol):
    """What simulated (or, later, wall-clock) drivers need from time."""

    def now(self) -> float: ...

    def call_at(self, time: float, kind: EventKind, subject: str, token: int = 0) -> SimEvent: ...


class EventQueue:
    """A deterministic event heap; see the module docstring."""

    __slots__ = ("_heap", "_now", "_seq")

    def __init__(self, start: float = 0.0) -> None:
        self._heap: list[tuple[float, int, int, SimEvent]] = []
        self._seq = 0
        self._now = start

    def now(self) -> float:
        return self._now

    def call_at(self, time: float, kind: EventKind, subject: str, token: int = 0) -> SimEvent:
        """Schedule an event; a time in the past is moved to now (events never run backwards)."""
        when = max(quantize(time), self._now)
        self._seq += 1
        event = SimEvent(when, kind, self._seq, subject, token)
        heapq.heappush(self._heap, (when, int(kind), self._seq, event))
        return event

    def __len__(self) -> int:
        return len(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_batch(self) -> list[SimEvent]:
        """Every event of the earliest pending instant, in (kind, seq) order; advances the clock."""
        if not self._heap:
            return []
        time = self._heap[0][0]
        batch: list[SimEvent] = []
        while self._heap and self._heap[0][0] == time:
            batch.append(heapq.heappop(self._heap)[3])
        self._now = time
        return batch
