"""The choice hook: how a scorer sees candidate allocations.

Upstream takes the first allocation its depth-first search finds. With a
scorer, allot keeps searching (within a bound on solutions and steps) and
returns the candidate with the highest score; ties go to the one found
first, so a constant scorer returns exactly upstream's answer. Topology
alignment and GPU-sharing packing plug in here.

A `Candidate` lists, per claim, the devices picked for each request with
everything a scorer may weigh: the `Device` record (attributes, capacity),
its slice and pool, whether it is shared, and what a shared allocation
consumes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from allot.dra.ids import DeviceId
from allot.model.quantity import Quantity
from allot.model.resource import Device, ResourceClaim, ResourceSlice


@dataclass(frozen=True, slots=True)
class PickedDevice:
    """One device of a candidate allocation."""

    claim_index: int
    claim: ResourceClaim
    request: str  # "req" or "req/sub"
    device_id: DeviceId
    device: Device
    slice: ResourceSlice
    shared: bool
    admin_access: bool
    # What a shared allocation consumes, per capacity of the device (None for exclusive use).
    consumed_capacity: Mapping[str, Quantity] | None

    @property
    def pool(self) -> str:
        return self.device_id.pool

    @property
    def driver(self) -> str:
        return self.device_id.driver


@dataclass(frozen=True, slots=True)
class Candidate:
    """One complete, feasible allocation of all claims; `index` is the order it was found in (0 = upstream's)."""

    index: int
    claims: tuple[tuple[PickedDevice, ...], ...]

    def devices(self) -> Iterator[PickedDevice]:
        for picks in self.claims:
            yield from picks

    def for_request(self, claim_index: int, request: str) -> tuple[PickedDevice, ...]:
        """The devices picked for one request (`req`, or `req/sub`; `req` also matches its sub-requests)."""
        prefix = request + "/"
        return tuple(
            p for p in self.claims[claim_index] if p.request == request or p.request.startswith(prefix)
        )


class Scorer(Protocol):
    """Scores a candidate; higher is better. Must be deterministic."""

    def __call__(self, candidate: Candidate, /) -> float: ...
