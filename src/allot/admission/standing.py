"""Where pending workloads stand, and whose pods are whose: read-only accounts for drivers.

A workload behind its queue's head is not tried in a cycle, so no decision
names its pods; `queue_position` says where it waits instead (behind which
workload, in which ClusterQueue). `workload_pods` maps pods to their
workloads, for an engine that learns what the admission state restored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from allot.admission.cycle import PENDING
from allot.admission.entry import QueueEntry
from allot.admission.queues import PendingQueue
from allot.admission.view import AdmissionView


class StandingSource(AdmissionView, Protocol):
    """What the accounts read of the admission state (AdmissionState is one)."""

    @property
    def queues(self) -> Mapping[str, PendingQueue]: ...

    def _score(self, local_queue: str) -> float: ...


def queue_position(state: StandingSource, key: str) -> str:
    """Where a pending workload that is not parked stands, in words."""
    entry = state.entries.get(key)
    if entry is None or entry.cluster_queue is None:
        return "not submitted to a ClusterQueue yet"
    cq = entry.cluster_queue
    queue = state.queues[cq]
    if queue.blocked is not None and queue.blocked[0] != key:
        return f"queued behind workload {queue.blocked[0]}, the head of StrictFIFO ClusterQueue {cq}"
    head = queue.head(state._score if queue.by_local_queue else None)
    if head is not None and head != key:
        return f"queued in ClusterQueue {cq} behind workload {head}; not tried yet"
    return f"at the head of ClusterQueue {cq}; not tried yet"


def workload_pods(entries: Mapping[str, QueueEntry], *, admitted_only: bool = False) -> dict[str, str]:
    """Pod key -> key of the workload it belongs to (of admitted workloads only, if asked)."""
    return {
        pod: key
        for key, entry in sorted(entries.items())
        if not admitted_only or entry.state != PENDING
        for pod in entry.workload.pods
    }
