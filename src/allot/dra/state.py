"""AllocatedState: what already-allocated claims use, kept up to date incrementally.

Upstream rebuilds this per scheduling cycle from every allocated claim. The
cluster state layer instead keeps one instance and feeds it each allocation
as it is made or released (`add_allocation` / `remove_allocation`), so a
cycle costs nothing here. Every mutation bumps `version`, which the
allocator uses to key what it derives from the state (available counters).

Upstream's three views are kept, interpreted by the allocator according to
its features:

* exclusive devices: results without a shareID (upstream's AllocatedDevices);
* shared allocations: results with a shareID, per device and per share;
* aggregated consumed capacity per shared device.

Results with `adminAccess: true` are ignored, as upstream does: admin access
does not consume the device. Reference counts make add/remove symmetric even
if two claims (wrongly) name the same device.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

from allot.dra.ids import DeviceId, parse_device_id
from allot.model.quantity import Quantity
from allot.model.resource import AllocationResult, ResourceClaim

_SERIAL = itertools.count(1)


def _bump(counts: dict[DeviceId, int], key: DeviceId, delta: int) -> None:
    value = counts.get(key, 0) + delta
    if value > 0:
        counts[key] = value
    else:
        counts.pop(key, None)


class AllocatedState:
    """Devices, shares and capacity that existing allocations hold."""

    __slots__ = ("_capacity", "_exclusive", "_share_ids", "_shared", "serial", "version")

    def __init__(self) -> None:
        # (serial, version) identifies one content of one instance, for caches.
        self.serial = next(_SERIAL)
        self._exclusive: dict[DeviceId, int] = {}
        self._shared: dict[DeviceId, int] = {}
        self._share_ids: dict[tuple[DeviceId, str], int] = {}
        self._capacity: dict[DeviceId, dict[str, int]] = {}
        self.version = 0

    # -- construction -----------------------------------------------------------

    @classmethod
    def from_claims(cls, claims: Iterable[ResourceClaim]) -> AllocatedState:
        """The state of every claim that has `status.allocation`."""
        state = cls()
        for claim in claims:
            allocation = claim.status.allocation
            if allocation is not None:
                state.add_allocation(allocation)
        return state

    def copy(self) -> AllocatedState:
        other = AllocatedState()
        other._exclusive = dict(self._exclusive)
        other._shared = dict(self._shared)
        other._share_ids = dict(self._share_ids)
        other._capacity = {k: dict(v) for k, v in self._capacity.items()}
        other.version = self.version
        return other

    # -- incremental updates ------------------------------------------------------

    def add_allocation(self, allocation: AllocationResult) -> None:
        self._apply(allocation, +1)

    def remove_allocation(self, allocation: AllocationResult) -> None:
        self._apply(allocation, -1)

    def _apply(self, allocation: AllocationResult, sign: int) -> None:
        for result in allocation.devices.results:
            if result.admin_access:
                continue
            device = DeviceId(result.driver, result.pool, result.device)
            if result.share_id:
                self._change_share(device, result.share_id, sign)
                if result.consumed_capacity:
                    self._change_capacity(device, result.consumed_capacity, sign)
            else:
                _bump(self._exclusive, device, sign)
        self.version += 1

    def add_device(self, device: DeviceId | str) -> None:
        """Mark a device as exclusively allocated (tests, fixtures)."""
        _bump(self._exclusive, _id(device), +1)
        self.version += 1

    def remove_device(self, device: DeviceId | str) -> None:
        _bump(self._exclusive, _id(device), -1)
        self.version += 1

    def add_share(self, device: DeviceId | str, share_id: str) -> None:
        self._change_share(_id(device), share_id, +1)
        self.version += 1

    def remove_share(self, device: DeviceId | str, share_id: str) -> None:
        self._change_share(_id(device), share_id, -1)
        self.version += 1

    def add_capacity(self, device: DeviceId | str, consumed: Mapping[str, Quantity]) -> None:
        self._change_capacity(_id(device), consumed, +1)
        self.version += 1

    def remove_capacity(self, device: DeviceId | str, consumed: Mapping[str, Quantity]) -> None:
        self._change_capacity(_id(device), consumed, -1)
        self.version += 1

    def _change_share(self, device: DeviceId, share_id: str, sign: int) -> None:
        key = (device, share_id)
        count = self._share_ids.get(key, 0) + sign
        if count > 0:
            self._share_ids[key] = count
        else:
            self._share_ids.pop(key, None)
        _bump(self._shared, device, sign)

    def _change_capacity(self, device: DeviceId, consumed: Mapping[str, Quantity], sign: int) -> None:
        totals = self._capacity.setdefault(device, {})
        for name, quantity in consumed.items():
            totals[name] = totals.get(name, 0) + sign * quantity.nano
        # Upstream drops a device whose aggregated consumption is all zero.
        if all(v == 0 for v in totals.values()):
            del self._capacity[device]

    # -- queries --------------------------------------------------------------------

    @property
    def exclusive(self) -> Mapping[DeviceId, int]:
        """Exclusively allocated devices (reference counts)."""
        return self._exclusive

    @property
    def shared(self) -> Mapping[DeviceId, int]:
        """Devices with shared allocations (number of shares)."""
        return self._shared

    @property
    def share_ids(self) -> Iterable[tuple[DeviceId, str]]:
        return self._share_ids.keys()

    @property
    def capacity(self) -> Mapping[DeviceId, Mapping[str, int]]:
        """Aggregated consumed capacity per shared device, in nano-units."""
        return self._capacity

    def consumed(self, device: DeviceId) -> dict[str, Quantity]:
        """Aggregated consumed capacity of one device as quantities."""
        return {name: Quantity(nano) for name, nano in self._capacity.get(device, {}).items()}

    def in_use(self, device: DeviceId) -> bool:
        """Allocated in any form: exclusively, shared, or with consumed capacity (the #139040 test)."""
        return device in self._exclusive or device in self._shared or device in self._capacity

    def __repr__(self) -> str:
        return (
            f"AllocatedState(exclusive={len(self._exclusive)}, shared={len(self._shared)}, "
            f"capacity={len(self._capacity)}, version={self.version})"
        )


def _id(device: DeviceId | str) -> DeviceId:
    return device if isinstance(device, DeviceId) else parse_device_id(device)
