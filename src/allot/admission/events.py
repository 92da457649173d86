"""Why a workload waits, and which reported events can end the wait.

A pending workload that cannot be admitted now is parked with a
`ParkReason`. Parked workloads are not retried every cycle: they go back to
their queue only when an `Event` of a kind that can help arrives (Kueue's
inadmissible workloads and requeue-on-event, kube-scheduler's
EventsToRegister):

| park kind   | woken by                                                                  |
|-------------|---------------------------------------------------------------------------|
| QUOTA       | a workload finished / evicted / removed in the same cohort tree;           |
|             | QUOTA_CHANGED (for that queue or cohort tree, or everywhere)               |
| PLACEMENT   | CAPACITY_FREED / NODES_CHANGED (for one of its flavors, or everywhere);    |
|             | a workload finishing or being evicted on one of its flavors                |
| BACKOFF     | time reaching `until` (waitForPodsReady requeue backoff)                   |
| WAITING     | QUEUES_CHANGED, or submitting the workload again (incomplete pod group,    |
|             | missing LocalQueue or ClusterQueue, namespace not selected, invalid)       |

Some reasons requeue at once instead of parking, as Kueue's
RequeueIfNotPresent does for BestEffortFIFO: PENDING_PREEMPTION (victims are
still terminating) and FAILED_AFTER_NOMINATION. In a StrictFIFO queue every
reason except a namespace mismatch keeps the workload at the head, blocking
the queue until a waking event arrives.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ParkKind(enum.Enum):
    QUOTA = "Quota"
    PLACEMENT = "Placement"
    BACKOFF = "Backoff"
    WAITING = "Waiting"
    PENDING_PREEMPTION = "PendingPreemption"
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"

    @property
    def immediate(self) -> bool:
        """Requeued at once rather than parked (BestEffortFIFO)."""
        return self in (ParkKind.PENDING_PREEMPTION, ParkKind.FAILED_AFTER_NOMINATION)


@dataclass(frozen=True, slots=True)
class ParkReason:
    kind: ParkKind
    message: str
    until: float | None = None

    @classmethod
    def quota(cls, message: str) -> ParkReason:
        return cls(ParkKind.QUOTA, message)

    @classmethod
    def placement(cls, message: str) -> ParkReason:
        return cls(ParkKind.PLACEMENT, message)

    @classmethod
    def waiting(cls, message: str) -> ParkReason:
        return cls(ParkKind.WAITING, message)

    @classmethod
    def pending_preemption(cls, message: str = "waiting for preempted workloads to finish") -> ParkReason:
        return cls(ParkKind.PENDING_PREEMPTION, message)


class EventKind(enum.Enum):
    WORKLOAD_FINISHED = "WorkloadFinished"
    WORKLOAD_EVICTED = "WorkloadEvicted"
    WORKLOAD_REMOVED = "WorkloadRemoved"
    QUOTA_CHANGED = "QuotaChanged"
    CAPACITY_FREED = "CapacityFreed"
    NODES_CHANGED = "NodesChanged"
    QUEUES_CHANGED = "QueuesChanged"
    TIME = "Time"


@dataclass(frozen=True, slots=True)
class Event:
    """Something the caller observed. Empty scope fields mean "anywhere".

    `cluster_queue` / `cohort` scope quota events to that queue's or cohort's
    tree; `flavor` scopes capacity events to workloads assigned that flavor;
    `now` is the time for TIME events (and advances admission fair sharing).
    """

    kind: EventKind
    cluster_queue: str = ""
    cohort: str = ""
    flavor: str = ""
    now: float | None = None
