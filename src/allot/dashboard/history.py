"""The cluster's totals over time: one point per sample, kept in memory, bounded.

`totals(snapshot)` condenses a snapshot into a `Point`: GPUs ready (on ready nodes, healthy),
allocated and in use (GPU-equivalents), the free share stranded on partly used GPUs
(fragmentation, the simulator's definition), pending pods and the GPUs they ask for. A live
dashboard samples every `interval` seconds into a `History` ring that keeps `retention`
seconds; a simulation keeps one point per frame.
"""

from __future__ import annotations

from collections import deque

import msgspec

from allot.dashboard.model import Snapshot

EPSILON = 1e-9


class Point(msgspec.Struct, frozen=True, array_like=True):
    time: float
    ready: float
    allocated: float
    in_use: float
    fragmented: float
    pending_pods: int
    pending_gpus: float


def totals(snapshot: Snapshot) -> Point:
    ready = allocated = in_use = fragmented = 0.0
    for node in snapshot.nodes:
        for gpu in node.gpus:
            allocated += gpu.allocated
            in_use += gpu.in_use
            if node.ready and gpu.healthy:
                ready += 1
                if EPSILON < gpu.allocated < 1 - EPSILON:
                    fragmented += 1 - gpu.allocated
    pending = [p for p in snapshot.pods if not p.node]
    return Point(
        time=snapshot.time,
        ready=ready,
        allocated=round(allocated, 4),
        in_use=round(in_use, 4),
        fragmented=round(fragmented, 4),
        pending_pods=len(pending),
        pending_gpus=round(sum(p.gpus for p in pending), 4),
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
