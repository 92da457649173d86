"""Simulation events and the order in which events of one instant are handled.

Every event carries a time, a kind and a sequence number drawn from its
simulation's own counter (never a class-global one, so two simulations in
one process stay independent). The heap orders by `(time, kind, seq)`:

* `NODE_DOWN` first: capacity that disappears at t is gone before anything
  is decided at t;
* `COMPLETION` next: work that ends at t frees its devices for work that
  arrives at t;
* `NODE_UP`, then `ARRIVAL`;
* `HORIZON` last: the end of the simulation closes the books after
  everything else at that instant.

Starts (binds), preemptions and requeues are not scheduled on the heap:
they are what the engine decides in the cycle that follows a batch of
events, and are recorded as trace entries (`TraceKind`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class EventKind(enum.IntEnum):
    """Heap events; the value is the priority among events of the same instant (lower first)."""

    NODE_DOWN = 0
    COMPLETION = 1
    NODE_UP = 2
    ARRIVAL = 3
    HORIZON = 9


class TraceKind(enum.Enum):
    """What the simulation trace records (heap events and engine decisions alike)."""

    ARRIVAL = "arrival"
    START = "start"
    COMPLETION = "completion"
    PREEMPTION = "preemption"
    REQUEUE = "requeue"
    ADMISSION = "admission"
    NODE_DOWN = "node-down"
    NODE_UP = "node-up"


@dataclass(frozen=True, slots=True)
class SimEvent:
    """One heap entry. `subject` names what it is about (job, pod or node); `token` tells
    a completion which run of a pod it ends, so a run cut short by preemption is ignored."""

    time: float
    kind: EventKind
    seq: int
    subject: str
    token: int = 0

    def key(self) -> tuple[float, int, int]:
        return (self.time, int(self.kind), self.seq)
