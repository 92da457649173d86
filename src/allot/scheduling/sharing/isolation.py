"""The isolation hook: GPUs a pod must not get because another trust domain uses them.

`GpuIsolation` (the plugin) works out the pod's trust domain in pre-filter
and leaves an `Exclusion` in the cycle under `EXCLUSION_KEY`. Whoever runs
the DRA allocator for the pod passes it as the allocator's `exclude`
(a device filter: the search treats those devices as taken), and the
placement policies read `allowed()` to see which GPUs the pod may get.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from allot.dra import DeviceId
from allot.scheduling.framework import Cycle
from allot.scheduling.sharing.table import BoolArray, OwnerIndex, SharedGpuTable

EXCLUSION_KEY = "GpuIsolation"


@dataclass(slots=True)
class Exclusion:
    """The shared GPUs of other trust domains, as a device filter and as an (N, G) mask."""

    table: SharedGpuTable
    owners: OwnerIndex
    domain: int
    _allowed: BoolArray | None = field(default=None)

    def __contains__(self, device: object) -> bool:
        if not isinstance(device, DeviceId):
            return False
        slot = self.table.slot.get(device)
        if slot is None:
            return False  # not a GPU without memory isolation: never restricted
        owner = int(self.owners.owner[slot])
        return owner != 0 and owner != self.domain

    def allowed(self) -> BoolArray:
        """GPUs that are free of other domains (computed once per cycle)."""
        if self._allowed is None:
            owner = self.owners.owner
            self._allowed = (owner == 0) | (owner == self.domain)
        return self._allowed

    def blocks(self, index: int) -> bool:
        """Whether any GPU of node `index` is closed to the pod."""
        return not bool(self.allowed()[index].all())


def exclusion(cycle: Cycle) -> Exclusion | None:
    found = cycle.data.get(EXCLUSION_KEY)
    return found if isinstance(found, Exclusion) else None


def allowed_mask(cycle: Cycle, shape: tuple[int, int]) -> BoolArray | None:
    found = exclusion(cycle)
    if found is None:
        return None
    mask = found.allowed()
    return mask if mask.shape == shape else np.ones(shape, dtype=np.bool_)
