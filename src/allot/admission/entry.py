"""The admission state's record of one workload: queues, state, and why it waits."""

from __future__ import annotations

from dataclasses import dataclass

from allot.admission.events import ParkReason
from allot.admission.workload import Workload, equivalence_shape


@dataclass(slots=True)
class QueueEntry:
    """A workload known to admission: its queues, state and what it waits for."""

    workload: Workload
    cluster_queue: str | None
    local_queue: str
    state: str
    order_time: float
    requeues: int = 0
    flavors: frozenset[str] = frozenset()
    waiting: ParkReason | None = None
    evicted: str = ""
    deactivated: bool = False
    shape: tuple[object, ...] | None = None

    def equivalence(self) -> tuple[object, ...]:
        """Kueue's scheduling equivalence hash: priority and pod-set shapes."""
        if self.shape is None:
            self.shape = equivalence_shape(self.workload)
        return self.shape
