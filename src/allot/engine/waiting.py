"""Work that waits for room, listed from the cluster and admission state in a fixed order.

Consolidation (`allot.engine.consolidate`) and reservations
(`allot.engine.reserve`) look at the same waiting work: Kueue workloads
pending whose quota fits now (flavor assignment `Fit`, and no quota hold
for another workload refuses it, `allot.engine.quota_hold`), ClusterQueues with
the lowest fair-sharing value (DRS) first and each queue in its admission
order, parked or not; then pods and gangs outside Kueue in kube-scheduler's
order (priority, creation). The list is read from the states, never from
the queues' parked sets, so it is the same whether waiting work is retried
every cycle or only at events (queueing hints).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

from allot.admission.cycle import PENDING
from allot.admission.flavors import Assignment
from allot.admission.queues import SortKey
from allot.admission.state import AdmissionState
from allot.admission.workload import Workload
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.queueing import OrderKey
from allot.model.kueue import QUEUE_NAME_LABEL
from allot.scheduling.gang import gang_key, gangs
from allot.scheduling.scheduler import Scheduler

GANG_UNIT = "gang:"


@dataclass(frozen=True, slots=True)
class WaitingUnit:
    """Work that waits: a Kueue workload, a pod, or a gang outside Kueue. Units of one `klass` (queue,
    shape and priority) fit or fail alike."""

    key: str
    members: tuple[str, ...]
    priority: int
    klass: int
    workload: Workload | None = None
    assignment: Assignment | None = None


class WaitingWork:
    """Lists waiting work (a mixin of `Engine`; see the module docstring)."""

    state: ClusterState
    scheduler: Scheduler
    admission: AdmissionState | None
    _workload_of_pod: dict[str, str]
    _waiting_snapshot: WaitingSnapshot | None
    # Per ClusterQueue, the listing of its line and the line's version (`pending_version`).
    _queued_cache: dict[str, tuple[int, list[QueuedClass]]]
    # Class numbers (persistent: consolidation remembers classes across cycles).
    _class_numbers: dict[object, int]
    # Pods that are ours and name no Kueue queue (None until first asked; then kept in step
    # by `_note_pod`): with admission, only these and pods of admitted workloads wait outside it.
    _outside_kueue: dict[str, None] | None

    def ours(self, info: PodInfo) -> bool:
        raise NotImplementedError

    def queued(self, info: PodInfo) -> bool:
        raise NotImplementedError

    def _order_key(self, info: PodInfo) -> OrderKey:
        raise NotImplementedError

    def quota_refusal(self, workload: Workload, assignment: Assignment) -> str | None:
        raise NotImplementedError

    def holds_quota(self, workload_key: str) -> bool:
        raise NotImplementedError

    def _waiting_units(self, skip: Callable[[int], bool]) -> Iterator[WaitingUnit]:
        """Waiting units in order, leaving out the classes `skip` names."""
        for unit in chain(self._waiting_workloads(skip), self._waiting_pods(skip)):
            if not skip(unit.klass):
                yield unit

    def _snapshot(self) -> WaitingSnapshot:
        """What waits, listed once per cycle (`_forget_waiting` drops it when a cycle begins): binds and
        admissions later in the cycle only take entries away, which the readers skip."""
        snapshot = self._waiting_snapshot
        if snapshot is None:
            snapshot = self._waiting_snapshot = WaitingSnapshot(self._queued_in_order(), self._pod_units())
        return snapshot

    def _forget_waiting(self) -> None:
        self._waiting_snapshot = None

    def _queued_in_order(self) -> dict[str, list[QueuedClass]]:
        """Per ClusterQueue, its pending workloads by class, each class in admission order."""
        admission = self.admission
        if admission is None:
            return {}
        found: dict[str, list[QueuedClass]] = {}
        kept = self._queued_cache
        for cq in sorted(admission.tree.cqs):
            # A queue whose line did not change since it was last listed keeps that listing: a
            # cycle lists the queues that changed, not the whole backlog.
            version = admission.pending_version(cq)
            known = kept.get(cq)
            if version is not None and known is not None and known[0] == version:
                found[cq] = known[1]
                continue
            found[cq] = [
                QueuedClass(self._class_number((cq, *group)), pending.score, pending.members)
                for group, pending in admission.pending_groups(cq).items()
                if pending.members
            ]
            if version is not None:
                kept[cq] = (version, found[cq])
        return found

    def _class_number(self, klass: object) -> int:
        """A small number per distinct class (hashing a number is cheap; classes are deep tuples)."""
        return self._class_numbers.setdefault(klass, len(self._class_numbers))

    def _waiting_workloads(self, skip: Callable[[int], bool]) -> Iterator[WaitingUnit]:
        admission = self.admission
        if admission is None:
            return
        queued = self._snapshot().queued
        shares = admission.world.shares
        tree = admission.tree
        order = sorted(queued, key=lambda cq: (shares.share(tree.cqs[cq]).precise(), cq))
        pods = self.state.pods
        # Classes whose quota does not fit: workloads of one class get the same flavor assignment.
        over_quota: set[int] = set()
        for cq in order:
            for key, klass in _in_admission_order(queued[cq], over_quota, skip):
                workload = self._unplaced_pending(key)
                if workload is None:
                    continue
                assignment = admission.fitting(workload)
                if assignment is None or self.quota_refusal(workload, assignment) is not None:
                    # Workloads of one class get the same assignment, and the same refusal.
                    over_quota.add(klass)
                    continue
                members = tuple(sorted(workload.pods))
                priority = max(pods[p].priority for p in members)
                yield WaitingUnit(workload.key, members, priority, klass, workload, assignment)

    def _unplaced_pending(self, key: str) -> Workload | None:
        """The workload if it is pending in a queue with every pod present and none bound."""
        admission = self.admission
        entry = admission.entries.get(key) if admission is not None else None
        if entry is None or entry.state != PENDING or entry.waiting is not None:
            return None
        pods = self.state.pods
        workload = entry.workload
        if not workload.pods or any(p not in pods or pods[p].bound for p in workload.pods):
            return None
        return workload

    def _waiting_pods(self, skip: Callable[[int], bool]) -> Iterator[WaitingUnit]:
        pods = self.state.pods
        for unit in self._snapshot().pods:
            if skip(unit.klass) or any(m not in pods or pods[m].bound for m in unit.members):
                continue
            yield unit

    def _note_pod(self, pod_key: str) -> None:
        """A pod was added or changed: keep `_outside_kueue` in step."""
        known = self._outside_kueue
        if known is None:
            return
        info = self.state.pods.get(pod_key)
        if info is not None and self._outside(info):
            known[pod_key] = None
        else:
            known.pop(pod_key, None)

    def _outside(self, info: PodInfo) -> bool:
        return self.ours(info) and QUEUE_NAME_LABEL not in info.pod.metadata.labels

    def _maybe_outside_kueue(self) -> list[PodInfo]:
        """The pending pods that may wait outside Kueue: all of them without admission; with it,
        those without a queue name and those of admitted workloads, read from what the engine
        keeps rather than from every pod of the cluster."""
        state = self.state
        if self.admission is None:
            return state.pending()
        known = self._outside_kueue
        if known is None:
            known = self._outside_kueue = {k: None for k, info in state.pods.items() if self._outside(info)}
        pods = state.pods
        gone = [key for key in known if key not in pods]
        if gone and not state.journal.recording:
            for key in gone:
                del known[key]
        keys = [*known, *(key for key in self._workload_of_pod if key not in known)]
        return [pods[key] for key in keys if key in pods and pods[key].node is None]

    def _pod_units(self) -> list[WaitingUnit]:
        """Pending pods and gangs outside Kueue, in kube-scheduler's order (the order of the pods
        read does not matter: units are sorted by a unique key, gang members by name)."""
        pending = [
            info
            for info in self._maybe_outside_kueue()
            if self.ours(info) and not self.queued(info) and not info.pod.spec.scheduling_gates
        ]
        groups = gangs(pending)
        units: list[tuple[OrderKey, WaitingUnit]] = []
        seen: set[str] = set()
        for info in pending:
            group = gang_key(info) if info.key not in self._workload_of_pod else None
            if group is None:
                klass = self._class_number(self.scheduler.equivalence_class(info.key) or info.key)
                units.append(
                    (self._order_key(info), WaitingUnit(info.key, (info.key,), info.priority, klass))
                )
                continue
            gang = groups.get(group)
            if group in seen or gang is None or len(gang.members) < gang.required:
                continue
            seen.add(group)
            infos = [self.state.pods[m] for m in gang.members]
            classes = sorted(repr(self.scheduler.equivalence_class(m) or m) for m in gang.members)
            order = min(self._order_key(i) for i in infos)
            unit = WaitingUnit(
                GANG_UNIT + group,
                gang.members,
                max(i.priority for i in infos),
                self._class_number((group, *classes)),
            )
            units.append((order, unit))
        units.sort(key=lambda item: item[0])
        return [unit for _, unit in units]


class QueuedClass(NamedTuple):
    """The pending workloads of one class of a ClusterQueue: their LocalQueue score (admission fair
    sharing; else 0) and sort keys, in admission order."""

    klass: int
    score: float
    members: list[SortKey]


def _in_admission_order(
    classes: list[QueuedClass], dropped: set[int], skip: Callable[[int], bool]
) -> Iterator[tuple[str, int]]:
    """(workload, class) of a queue in admission order, passing over the classes in `dropped` and
    those `skip` names when their turn comes, as a walk of the whole line would, at a cost of the
    classes rather than the workloads. Callers change `dropped` and `skip` only while this waits
    on a yield (dropped classes never come back; skipped ones may)."""
    heap = [((c.score, c.members[0]), index, 0) for index, c in enumerate(classes)]
    heapq.heapify(heap)
    aside: list[tuple[int, int]] = []
    while heap:
        position, index, at = heapq.heappop(heap)
        klass = classes[index]
        if klass.klass in dropped:
            continue
        if skip(klass.klass):
            aside.append((index, at))
            continue
        if at + 1 < len(klass.members):
            heapq.heappush(heap, ((klass.score, klass.members[at + 1]), index, at + 1))
        yield klass.members[at][2], klass.klass
        # What was skipped up to here stays passed over; the rest of those classes is judged anew.
        for index, at in aside:
            other = classes[index]
            if other.score < position[0]:
                continue
            if other.score == position[0]:
                at = bisect_right(other.members, position[1], lo=at)
            if at < len(other.members):
                heapq.heappush(heap, ((other.score, other.members[at]), index, at))
        aside.clear()


@dataclass(slots=True)
class WaitingSnapshot:
    """The waiting work of one cycle: Kueue workloads per ClusterQueue by class, units outside Kueue."""

    queued: dict[str, list[QueuedClass]]
    pods: list[WaitingUnit]
