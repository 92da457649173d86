"""Preemptions that freed quota but not room: not tried again while their outcome cannot change.

A Kueue workload whose flavor assignment is Preempt is admitted only if, once
its quota victims are off their nodes, all its pods can be placed. When that
placement fails, the victims stay and the workload waits; quota or node
changes requeue it (`allot.engine.workload_hints`), and the next attempt finds
victims again. On a busy cluster that is most attempts: the victims Kueue's
rules pick free GPUs spread over many nodes, and a job that needs whole nodes
fails the same way cycle after cycle, each time evicting, placing and rolling
back.

Compare the next attempt with the one that failed. Under the same flavors, a
node can offer more room than it did then only if it changed since (a pod
left it, its capacity or labels changed) or it hosts pods of a victim the
failed attempt did not take; every other node is as full as it was or fuller
(pods binding only take room, victims of then that are spared now stay). So
unless one of the workload's pods fits one of those nodes with the new
victims gone, or something changed that is not tied to one node (devices,
claims, classes, volumes, nodes added), the placement fails again: the attempt
is skipped and the workload waits for the reason its last placement gave.
Workloads whose pods other pods can keep from a node (inter-pod affinity,
spreading) are always tried.

Changes are counted in epochs (one per batch of events that had any), so a
check costs one pass over the changed nodes and no work is done per event for
each waiting workload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from allot.admission.flavors import Assignment
from allot.admission.workload import Workload
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.engine.workload_hints import assignment_signature

# Kinds that cannot give a workload room on any node: pods taking room or arriving pending, and quota
# changes (the victims and the flavors are worked out afresh at each attempt and compared).
_NEUTRAL = frozenset(
    {
        ClusterEventKind.POD_BOUND,
        ClusterEventKind.POD_ADDED,
        ClusterEventKind.QUOTA_CHANGED,
        ClusterEventKind.WORKLOAD_FINISHED,
        ClusterEventKind.QUEUES_CHANGED,
    }
)
# Node-local kinds whose node is the only one they change.
_ON_ONE_NODE = frozenset({ClusterEventKind.POD_LEFT, ClusterEventKind.NODE_CHANGED})

# Whether one of these pods fits one of these nodes with the pods of these workloads off their nodes.
FitsWithout = Callable[[Sequence[str], Sequence[int], Sequence[str]], bool]
# The nodes the pods of these admitted workloads are bound to.
NodesOf = Callable[[Iterable[str]], set[int]]


@dataclass(frozen=True, slots=True)
class _Failed:
    workload: Workload
    signature: tuple[object, ...]
    victims: tuple[str, ...]
    reason: str
    epoch: int


class FutilePreemptions:
    """The last failed preempting placement of each waiting workload, and the node changes since."""

    def __init__(self) -> None:
        self._failed: dict[str, _Failed] = {}
        self._epoch = 0
        # Per node, the epoch of its last change; the epoch of the last change not tied to a node.
        self._node_epoch: dict[int, int] = {}
        self._anywhere_epoch = 0

    def __len__(self) -> int:
        return len(self._failed)

    def observe(self, events: Iterable[ClusterEvent]) -> None:
        changed = False
        for event in events:
            if event.kind in _NEUTRAL:
                continue
            if not changed:
                changed = True
                self._epoch += 1
            if event.kind in _ON_ONE_NODE and event.node is not None:
                self._node_epoch[event.node] = self._epoch
            else:
                self._anywhere_epoch = self._epoch

    def failed(self, workload: Workload, assignment: Assignment, victims: Iterable[str], reason: str) -> None:
        """Its placement with these victims gone failed for `reason`."""
        self._failed[workload.key] = _Failed(
            workload, assignment_signature(assignment), tuple(sorted(victims)), reason, self._epoch
        )

    def forget(self, key: str) -> None:
        self._failed.pop(key, None)

    def keep_only(self, keys: Callable[[str], bool]) -> None:
        """Drop the records of workloads that no longer wait (`keys` says which still do)."""
        for key in [k for k in self._failed if not keys(k)]:
            del self._failed[key]

    def repeat(
        self,
        workload: Workload,
        assignment: Assignment,
        victims: Iterable[str],
        probes: Sequence[str],
        fits_without: FitsWithout,
        nodes_of: NodesOf,
    ) -> str | None:
        """The reason the last attempt failed with, if this one cannot turn out otherwise; else None."""
        failed = self._failed.get(workload.key)
        if failed is None or failed.workload is not workload:
            return None
        if failed.signature != assignment_signature(assignment) or self._anywhere_epoch > failed.epoch:
            return None
        now = tuple(sorted(victims))
        changed = {node for node, epoch in self._node_epoch.items() if epoch > failed.epoch}
        changed |= nodes_of(set(now) - set(failed.victims))
        if changed and fits_without(probes, sorted(changed), now):
            return None
        return failed.reason
