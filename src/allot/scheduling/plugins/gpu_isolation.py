"""GpuIsolation: a GPU without memory isolation holds pods of one trust domain only.

Fractional (HAMi) and time-sliced GPUs let every pod on them reach the
same device memory; MIG partitions and whole GPUs are isolated and are
never restricted. The trust domain is the namespace by default, or per
profile a tenant label, the Kueue LocalQueue, or `any` (no isolation);
see `allot.scheduling.sharing.domains`.

* Pre-filter: the pod's domain; the shared GPUs other domains use become
  the cycle's device exclusion (`sharing.isolation`), which GpuPlacement
  hands to the DRA allocator as its device filter and to its policies.
* Mask filter: nodes where fewer GPUs than the pod asks for are open to
  its domain (and could take it) are rejected in one array operation.
* Reserve: a last check that the allocation chosen for the node uses no
  excluded GPU, so the rule holds even next to a DRA plugin that does not
  read the exclusion (plain DynamicResources); list GpuIsolation after it.

It is in the default profile (secure by default); on a cluster whose
ResourceSlices publish no device that allows multiple allocations it does
nothing at all. A cluster opts out by disabling the plugin in its
KubeSchedulerConfiguration or with `trustDomain: any`.

Args: `trustDomain`: `namespace` | `label:<key>` | `localQueue` | `any`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dra import Allocator, DeviceId
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.sharing.demand import DemandReader
from allot.scheduling.sharing.domains import TrustDomain, parse_trust_domain
from allot.scheduling.sharing.isolation import EXCLUSION_KEY, Exclusion, exclusion
from allot.scheduling.sharing.table import SharedGpuTable, table_for
from allot.scheduling.status import SUCCESS, Code, Status, unschedulable

NAME = "GpuIsolation"
OTHER_DOMAIN = "GPU shared with another trust domain"


class GpuIsolation:
    name = NAME
    # A shared GPU opens to another trust domain only when its last user leaves.
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT}

    def __init__(self, *, trust_domain: TrustDomain | None = None) -> None:
        self.trust_domain = trust_domain if trust_domain is not None else TrustDomain()
        self._allocator: Allocator | None = None
        self._reader: DemandReader | None = None
        # Per slice index: whether any device may be allocated more than once (else nothing to do).
        self._shared: tuple[object, bool] | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> GpuIsolation:
        return cls(trust_domain=parse_trust_domain(args.get("trustDomain")))

    def _table(self, cycle: Cycle) -> SharedGpuTable:
        state = cycle.state
        allocator = self._allocator
        if (
            allocator is None
            or allocator.slices is not state.slices
            or allocator.classes is not state.classes
        ):
            allocator = self._allocator = Allocator(state.classes, state.slices, features=state.features)
        table = table_for(state, allocator)
        if self._reader is None or self._reader.table is not table:
            self._reader = DemandReader(table)
        return table

    def _active(self, state: ClusterState) -> bool:
        """Whether pods must be kept apart here: isolation is on and some device can be shared."""
        if not self.trust_domain.isolates or not state.features.consumable_capacity:
            return False
        slices = state.slices
        if self._shared is None or self._shared[0] is not slices:
            shared = any(
                device.allow_multiple_allocations for s in slices.slices for device in s.spec.devices
            )
            self._shared = (slices, shared)
        return self._shared[1]

    def equivalence_key(self, state: ClusterState, info: PodInfo) -> str:
        return self.trust_domain.domain_of(state, info) if self._active(state) else ""

    def pre_filter(self, cycle: Cycle) -> Status:
        if not self._active(cycle.state):
            return SUCCESS
        table = self._table(cycle)
        owners = table.owners(self.trust_domain.key, self.trust_domain.domain_of)
        domain = owners.domain_id(self.trust_domain.domain_of(cycle.state, cycle.pod))
        cycle.data[EXCLUSION_KEY] = Exclusion(table, owners, domain)
        return SUCCESS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        found = exclusion(cycle)
        if found is None or self._reader is None:
            return []
        claims = [
            claim
            for _, key in cycle.pod.claims
            if (claim := cycle.state.claims.get(key)) is not None and claim.status.allocation is None
        ]
        demand = self._reader.demand(claims, 0) if claims else None
        if demand is None or demand.request is None or not demand.exact:
            return []
        table = found.table
        shape = self._reader.shape(demand.request)
        if shape is None:
            return []
        needs = table.needs(demand.request.capacity_key, demand.request.capacity)
        usable = table.usable(shape.mask, needs)
        open_ = (usable & found.allowed()).sum(axis=1) >= demand.count
        closed = candidates & ~open_ & (usable.sum(axis=1) >= demand.count)
        return [Rejection(OTHER_DOMAIN, closed, Code.UNSCHEDULABLE)] if closed.any() else []

    def reserve(self, cycle: Cycle, index: int) -> Status:
        found = exclusion(cycle)
        if found is None:
            return SUCCESS
        for allocation in cycle.allocations.values():
            for result in allocation.devices.results:
                if DeviceId(result.driver, result.pool, result.device) in found:
                    return unschedulable(NAME, OTHER_DOMAIN)
        return SUCCESS
