"""What a pod asks of shared GPUs, read from the claims it still needs allocated.

A `GpuRequest` is one device request in the table's terms: its shape (class
and request selectors), its capacity requests and the number of GPUs. The
`Demand` of a pod adds its CPU (non-zero, as kube-scheduler's scorers count
it) and whether the table decides its feasibility *exactly*:

* exactly one request, ExactCount, no admin access, no firstAvailable;
* its shape selects table GPUs only (on every node, without CEL errors);
* constraints only `distinctAttribute` on an attribute unique per node
  (HAMi's "n physical GPUs"); a request for several GPUs without one may
  pick the same shared GPU twice, which counting cannot follow.

Everything else is still placed correctly, by the allocator on each
candidate node; the policies then score the first GPU request as an
approximation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from allot.cluster.nodes import AMOUNT_CAP, saturate
from allot.dra.capacity import CapacityKey, capacity_key
from allot.model.resource import ResourceClaim, ResourceClaimSpec
from allot.scheduling.sharing.table import ShapeMask, SharedGpuTable

_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class GpuRequest:
    class_name: str
    selectors: tuple[str, ...]
    capacity_key: CapacityKey
    count: int

    @property
    def capacity(self) -> dict[str, int] | None:
        return None if self.capacity_key is None else dict(self.capacity_key)


@dataclass(frozen=True, slots=True)
class Demand:
    """A pod's CPU and shared-GPU needs; `key` identifies equal demands for caches."""

    cpu: int
    request: GpuRequest | None
    exact: bool

    @property
    def key(self) -> tuple[int, GpuRequest | None]:
        return (self.cpu, self.request)

    @property
    def count(self) -> int:
        return 0 if self.request is None else self.request.count


def request_of(spec: ResourceClaimSpec) -> GpuRequest | None:
    """The claim's first exact request as a GpuRequest (what a task class of such pods is keyed by)."""
    for request in spec.devices.requests:
        exactly = request.exactly
        if exactly is None:
            continue
        selectors = tuple(s.cel.expression for s in exactly.selectors if s.cel is not None)
        caps = None if exactly.capacity is None else {n: q.nano for n, q in exactly.capacity.requests.items()}
        count = 1 if exactly.count is None else exactly.count
        return GpuRequest(exactly.device_class_name, selectors, capacity_key(caps), count)
    return None


@dataclass(frozen=True, slots=True)
class _Parsed:
    request: GpuRequest | None
    exact: bool


class DemandReader:
    """Parses claim specs into GPU requests, cached per spec object (templates share theirs)."""

    def __init__(self, table: SharedGpuTable) -> None:
        self.table = table
        self._cache: dict[tuple[int, ...], tuple[Sequence[ResourceClaimSpec], _Parsed]] = {}

    def demand(self, claims: Sequence[ResourceClaim], cpu: int) -> Demand:
        specs = [c.spec for c in claims]
        key = tuple(id(s) for s in specs)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            # The entry keeps the specs alive, so their ids cannot be reused while cached.
            hit = self._cache[key] = (specs, self._parse(specs))
        parsed = hit[1]
        # Past the table's exact range, counting is only approximate: the allocator decides.
        exact = parsed.exact and not self.table.saturated and abs(cpu) <= AMOUNT_CAP
        return Demand(cpu=saturate(cpu), request=parsed.request, exact=exact)

    def shape(self, request: GpuRequest) -> ShapeMask | None:
        return self.table.shape(request.class_name, request.selectors)

    def _parse(self, specs: Sequence[ResourceClaimSpec]) -> _Parsed:
        found: list[GpuRequest] = []
        exact = True
        distinct = False
        for spec in specs:
            devices = spec.devices
            for constraint in devices.constraints:
                attribute = constraint.distinct_attribute
                if attribute is not None and self.table.unique_attribute(attribute):
                    distinct = True
                    continue
                exact = False
            for request in devices.requests:
                exactly = request.exactly
                if exactly is None:
                    exact = False
                    if request.first_available:
                        sub = request.first_available[0]
                        selectors = tuple(s.cel.expression for s in sub.selectors if s.cel is not None)
                        caps = (
                            None
                            if sub.capacity is None
                            else {n: q.nano for n, q in sub.capacity.requests.items()}
                        )
                        found.append(
                            GpuRequest(sub.device_class_name, selectors, capacity_key(caps), sub.count or 1)
                        )
                    continue
                if exactly.allocation_mode not in ("", "ExactCount") or exactly.admin_access:
                    exact = False
                    continue
                if any(s.cel is None for s in exactly.selectors):
                    exact = False
                    continue
                selectors = tuple(s.cel.expression for s in exactly.selectors if s.cel is not None)
                caps = (
                    None
                    if exactly.capacity is None
                    else {name: q.nano for name, q in exactly.capacity.requests.items()}
                )
                count = 1 if exactly.count is None else exactly.count
                found.append(GpuRequest(exactly.device_class_name, selectors, capacity_key(caps), count))
        gpu = [r for r in found if self._selects_gpus(r)]
        if len(found) != 1 or len(gpu) != 1:
            exact = False
        else:
            shape = self.shape(gpu[0])
            if shape is None or not shape.pure or (gpu[0].count > 1 and not distinct):
                exact = False
        return _Parsed(gpu[0] if gpu else None, exact)

    def _selects_gpus(self, request: GpuRequest) -> bool:
        shape = self.shape(request)
        return shape is not None and bool(shape.mask.any())
