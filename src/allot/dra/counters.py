"""Shared counters of partitionable devices, per pool.

In 1.35 a pool's counter sets live in their own slices and any device of the
pool may consume from any set. A pool's counters are flattened into one
list (`CounterLayout`); each device's consumption becomes `(index, amount)`
pairs. What is available is the counter values minus what every allocated
device of the pool consumes, computed once per pool and AllocatedState
content. "Allocated" means in any form, exclusive or shared: upstream 1.35
forgot shared allocations here (kubernetes #139040), which let a pool be
over-committed across scheduling cycles.

Availability can be negative (a pool already over-committed, e.g. after a
slice update); then no device of the pool that consumes counters can be
allocated, as upstream decides by checking every counter of the pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.dra.ids import DeviceId
from allot.dra.state import AllocatedState
from allot.model.resource import CounterSet, Device

Consumption = tuple[tuple[int, int], ...]


class CounterLayout:
    """A pool's counters in one flat list: (set, counter) -> index, and the set values."""

    __slots__ = ("index", "names", "totals")

    def __init__(self, counter_sets: Sequence[CounterSet]) -> None:
        self.index: dict[tuple[str, str], int] = {}
        self.names: list[tuple[str, str]] = []
        self.totals: list[int] = []
        for counter_set in counter_sets:
            for name, counter in counter_set.counters.items():
                self.index[(counter_set.name, name)] = len(self.totals)
                self.names.append((counter_set.name, name))
                self.totals.append(counter.value.nano)

    def consumption(self, device: Device) -> Consumption:
        """The device's counter consumption as (index, amount); pool validation guarantees the names exist."""
        pairs: list[tuple[int, int]] = []
        for entry in device.consumes_counters:
            for name, counter in entry.counters.items():
                pairs.append((self.index[(entry.counter_set, name)], counter.value.nano))
        return tuple(pairs)


class PoolCounters:
    """Availability of one pool's counters, derived from AllocatedState and cached per state content."""

    __slots__ = ("_available", "_overcommitted", "_token", "devices", "layout")

    def __init__(self, layout: CounterLayout, devices: list[tuple[DeviceId, Consumption]]) -> None:
        self.layout = layout
        # Every device of the pool's current generation that consumes counters,
        # on this node or not: allocated ones elsewhere still use the counters.
        self.devices = devices
        self._token: tuple[int, int] = (0, -1)
        self._available: list[int] = []
        self._overcommitted = False

    def available(self, state: AllocatedState) -> tuple[list[int], bool]:
        """(available per counter, whether any counter is already over-committed)."""
        token = (state.serial, state.version)
        if token != self._token:
            available = list(self.layout.totals)
            for device_id, consumption in self.devices:
                if state.in_use(device_id):
                    for index, amount in consumption:
                        available[index] -= amount
            self._available = available
            self._overcommitted = any(a < 0 for a in available)
            self._token = token
        return self._available, self._overcommitted
