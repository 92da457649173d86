"""What Kueue would report in ClusterQueue, LocalQueue and Cohort status.

`admission_status(state)` reads an `StatusSource` and returns plain values:
per ClusterQueue the reservation per flavor and resource (`total`, and
`borrowed` = usage above nominal), pending / reserving / admitted counts and
`fairSharing.weightedShare`; per LocalQueue its counts, usage per flavor and
the admission-fair-sharing consumed resources; per Cohort its weighted
share. allot has no admission checks, so "reserving" and "admitted" are the
same workloads, and `flavorsUsage` equals `flavorsReservation`.

`*_record` helpers turn these into the model's Kueue status records, so
`allot queues -o yaml` prints Kueue's field names and quantity spelling.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from allot.admission.afs import AdmissionFairSharing
from allot.admission.ordering import Admitted
from allot.admission.resources import CPU, MEMORY, format_amount
from allot.admission.view import AdmissionView
from allot.model.kueue import AdmissionFairSharingStatus, LocalQueue
from allot.model.kueue import ClusterQueueStatus as ClusterQueueStatusRecord
from allot.model.kueue import FairSharingStatus as FairSharingRecord
from allot.model.kueue import FlavorUsage as FlavorUsageRecord
from allot.model.kueue import LocalQueueStatus as LocalQueueStatusRecord
from allot.model.kueue import ResourceUsage as ResourceUsageRecord
from allot.model.quantity import Quantity


class StatusSource(AdmissionView, Protocol):
    """What the status report reads of the admission state (AdmissionState is one)."""

    @property
    def admitted(self) -> Mapping[str, Mapping[str, Admitted]]: ...
    @property
    def afs(self) -> AdmissionFairSharing | None: ...
    @property
    def local_queues(self) -> Mapping[str, LocalQueue]: ...


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    name: str
    total: int
    borrowed: int = 0


@dataclass(frozen=True, slots=True)
class FlavorUsage:
    name: str
    resources: tuple[ResourceUsage, ...]


@dataclass(frozen=True, slots=True)
class ClusterQueueStatus:
    name: str
    cohort: str
    flavors: tuple[FlavorUsage, ...]
    pending: int
    reserving: int
    admitted: int
    weighted_share: int | None = None
    dominant_resource: str = ""
    inactive: str | None = None


@dataclass(frozen=True, slots=True)
class LocalQueueStatus:
    key: str
    cluster_queue: str
    pending: int
    reserving: int
    admitted: int
    flavors: tuple[FlavorUsage, ...] = ()
    consumed: Mapping[str, float] | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class CohortStatus:
    name: str
    parent: str
    weighted_share: int | None = None


@dataclass(frozen=True, slots=True)
class AdmissionStatus:
    cluster_queues: tuple[ClusterQueueStatus, ...] = ()
    local_queues: tuple[LocalQueueStatus, ...] = ()
    cohorts: tuple[CohortStatus, ...] = ()
    by_name: Mapping[str, ClusterQueueStatus] = field(default_factory=lambda: MappingProxyType({}))

    def cluster_queue(self, name: str) -> ClusterQueueStatus:
        return self.by_name[name]

    def local_queue(self, key: str) -> LocalQueueStatus:
        for lq in self.local_queues:
            if lq.key == key:
                return lq
        raise KeyError(key)


def admission_status(state: StatusSource) -> AdmissionStatus:
    fair = state.config.fair_sharing
    pending_by_lq: dict[str, int] = {}
    admitted_by_lq: dict[str, int] = {}
    lq_usage: dict[str, dict[tuple[str, str], int]] = {}
    pending_by_cq: dict[str, int] = {}
    for entry in state.entries.values():
        lq = entry.local_queue
        if entry.state == "Admitted":
            admitted_by_lq[lq] = admitted_by_lq.get(lq, 0) + 1
            assert entry.cluster_queue is not None
            record = state.admitted[entry.cluster_queue][entry.workload.key]
            usage = lq_usage.setdefault(lq, {})
            for fr, value in record.usage.items():
                usage[fr] = usage.get(fr, 0) + value
        else:
            pending_by_lq[lq] = pending_by_lq.get(lq, 0) + 1
            if entry.cluster_queue is not None:
                pending_by_cq[entry.cluster_queue] = pending_by_cq.get(entry.cluster_queue, 0) + 1
    queues = []
    for name, policy in sorted(state.policies.items()):
        node = state.tree.cqs[name]
        flavors = []
        for group in policy.resource_groups:
            for flavor in group.flavors:
                resources = tuple(
                    ResourceUsage(
                        resource,
                        node.usage.get((flavor, resource), 0),
                        max(
                            0, node.usage.get((flavor, resource), 0) - node.nominal.get((flavor, resource), 0)
                        ),
                    )
                    for resource in group.covered
                )
                flavors.append(FlavorUsage(flavor, resources))
        admitted = len(state.admitted[name])
        share = state.shares.share(node) if fair else None
        queues.append(
            ClusterQueueStatus(
                name=name,
                cohort=policy.cohort,
                flavors=tuple(flavors),
                pending=pending_by_cq.get(name, 0),
                reserving=admitted,
                admitted=admitted,
                weighted_share=share.weighted_share() if share is not None else None,
                dominant_resource=share.dominant if share is not None else "",
                inactive=policy.inactive,
            )
        )
    local = []
    for key, local_queue in sorted(state.local_queues.items()):
        usage = lq_usage.get(key, {})
        by_flavor: dict[str, list[ResourceUsage]] = {}
        for (flavor, resource), value in sorted(usage.items()):
            by_flavor.setdefault(flavor, []).append(ResourceUsage(resource, value))
        cq = local_queue.spec.cluster_queue
        afs_on = state.afs is not None and cq in state.policies and state.policies[cq].admission_fair_sharing
        local.append(
            LocalQueueStatus(
                key=key,
                cluster_queue=cq,
                pending=pending_by_lq.get(key, 0),
                reserving=admitted_by_lq.get(key, 0),
                admitted=admitted_by_lq.get(key, 0),
                flavors=tuple(FlavorUsage(f, tuple(r)) for f, r in by_flavor.items()),
                consumed=MappingProxyType(state.afs.consumed(key))
                if afs_on and state.afs is not None
                else None,
                score=state.afs.score(key) if afs_on and state.afs is not None else None,
            )
        )
    cohorts = []
    for name, node in sorted(state.tree.cohorts.items()):
        share = state.shares.share(node) if fair else None
        cohorts.append(
            CohortStatus(
                name=name,
                parent=node.parent.name if node.parent is not None else "",
                weighted_share=share.weighted_share() if share is not None else None,
            )
        )
    return AdmissionStatus(
        cluster_queues=tuple(queues),
        local_queues=tuple(local),
        cohorts=tuple(cohorts),
        by_name=MappingProxyType({q.name: q for q in queues}),
    )


# --- Kueue records ------------------------------------------------------------------


def _quantity(resource: str, value: int) -> Quantity:
    return Quantity.parse(format_amount(resource, value))


def _float_quantity(resource: str, value: float) -> Quantity:
    if resource == CPU:
        return Quantity.from_milli(round(value * 1000))
    if resource == MEMORY:
        return Quantity.parse(format_amount(resource, round(value)))
    return Quantity.from_milli(round(value * 1000))


def _flavor_records(flavors: tuple[FlavorUsage, ...], *, borrowed: bool) -> tuple[FlavorUsageRecord, ...]:
    return tuple(
        FlavorUsageRecord(
            name=f.name,
            resources=tuple(
                ResourceUsageRecord(
                    name=r.name,
                    total=_quantity(r.name, r.total),
                    borrowed=_quantity(r.name, r.borrowed) if borrowed else None,
                )
                for r in f.resources
            ),
        )
        for f in flavors
    )


def cluster_queue_record(status: ClusterQueueStatus) -> ClusterQueueStatusRecord:
    flavors = _flavor_records(status.flavors, borrowed=True)
    return ClusterQueueStatusRecord(
        flavors_reservation=flavors,
        flavors_usage=flavors,
        pending_workloads=status.pending,
        reserving_workloads=status.reserving,
        admitted_workloads=status.admitted,
        fair_sharing=FairSharingRecord(weighted_share=status.weighted_share)
        if status.weighted_share is not None
        else None,
    )


def local_queue_record(status: LocalQueueStatus) -> LocalQueueStatusRecord:
    flavors = _flavor_records(status.flavors, borrowed=False)
    fair = None
    if status.consumed is not None:
        fair = FairSharingRecord(
            admission_fair_sharing_status=AdmissionFairSharingStatus(
                consumed_resources={r: _float_quantity(r, v) for r, v in status.consumed.items()}
            )
        )
    return LocalQueueStatusRecord(
        pending_workloads=status.pending,
        reserving_workloads=status.reserving,
        admitted_workloads=status.admitted,
        flavors_reservation=flavors,
        flavors_usage=flavors,
        fair_sharing=fair,
    )
