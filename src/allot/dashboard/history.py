"""The cluster's totals over time: one point per sample, kept in memory, bounded.

`totals(snapshot)` condenses a snapshot into a `Point` (`allot.dashboard.measures`): GPUs ready,
allocated, in use and stranded over the cluster, pending pods and the GPUs they ask for. A live
dashboard samples every `interval` seconds into a `History` ring that keeps `retention`
seconds; a simulation keeps one point per frame.
"""

from __future__ import annotations

from collections import deque

import msgspec

from allot.dashboard.measures import EPSILON, STATES, gpu_states, pending_work, summed
from allot.dashboard.model import Snapshot


class Point(msgspec.Struct, frozen=True, array_like=True):
    time: float
    ready: float
    allocated: float
    in_use: float
    fragmented: float
    pending_pods: int
    pending_gpus: float


def totals(snapshot: Snapshot) -> Point:
    cluster = summed(gpu_states(snapshot)).get("", dict.fromkeys(STATES, 0.0))
    pending = pending_work(snapshot)
    return Point(
        time=snapshot.time,
        ready=cluster["ready"],
        allocated=round(cluster["allocated"], 4),
        in_use=round(cluster["in_use"], 4),
        fragmented=round(cluster["stranded"], 4),
        pending_pods=pending.pods,
        pending_gpus=round(pending.gpus, 4),
    )


class History:
    """A ring of points `interval` seconds apart at most, `retention` seconds long."""

    def __init__(self, *, interval: float = 30.0, retention: float = 6 * 3600.0) -> None:
        if interval <= 0 or retention < interval:
            raise ValueError("history: expected 0 < interval <= retention")
        self.interval = interval
        self.points: deque[Point] = deque(maxlen=int(retention // interval) + 1)

    def due(self, now: float) -> bool:
        return not self.points or now - self.points[-1].time >= self.interval - EPSILON

    def add(self, point: Point) -> None:
        self.points.append(point)

    def until(self, time: float | None = None) -> list[Point]:
        return [p for p in self.points if time is None or p.time <= time]
