"""A sum checked before the search: the capacity the claims ask for against what their devices have free.

Many claims asking for shares of the same shared devices (consumable
capacity: 10Gi each of GPUs with 80Gi) make the depth-first search try the
shares in every order once they do not all fit, which exhausts any step
budget long before it can say why. A simple sum says it first: for one
capacity (say `memory`), each request needs at least the least it would
consume on any device it can use, once per device it wants; the devices
they can use have at most their capacity minus what existing allocations
consume. If the first total is larger, no allocation exists, whatever the
order, and the capacity is named as the reason. The same holds counted in
shares: a device with F free fits at most F // m picks that each consume at
least m, so when the requests want more picks than all devices fit (21
shares of 30Gi on eight 80Gi GPUs: 16 fit, two per GPU), nothing fits either.

The check is only a necessary condition, kept sound by counting demand
low and supply high: a request counts only when every device it can use
is a shared device (an exclusive one would serve it without drawing on
the shared capacity), alternatives of a firstAvailable request and All
mode requests count nothing, and every device any counted request can use
counts with all its free capacity.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.pools import NodeDevice
from allot.dra.requests import ClaimPlan, RequestData
from allot.dra.state import AllocatedState
from allot.model.quantity import Quantity, QuantityFormat


@dataclass(frozen=True, slots=True)
class Shortfall:
    """One capacity the counted requests want more of than their devices have free.

    `picks` > `room` when the total would fit but not in shares of at least `smallest` each.
    """

    capacity: str
    wanted: Quantity
    free: Quantity
    requests: int
    devices: int
    picks: int = 0
    room: int = 0
    smallest: Quantity | None = None

    def describe(self) -> str:
        where = f"the {self.devices} shared device(s) they can use"
        if self.smallest is not None:
            return (
                f"capacity {self.capacity}: {self.requests} request(s) want {self.picks} share(s) of at least "
                f"{self.smallest}, {where} have room for {self.room}"
            )
        return f"capacity {self.capacity}: {self.requests} request(s) want at least {self.wanted} together, {where} have {self.free} free"


def _least(data: RequestData, devices: list[NodeDevice]) -> dict[str, int]:
    """Per capacity name, the least one pick of `data` consumes on any of `devices` it can serve."""
    least: dict[str, int] | None = None
    for device in devices:
        info = device.info
        amounts, _ = info.consumed(data.capacity_key, data.capacity)
        if amounts is None:
            continue  # the device cannot serve this request at all
        here = dict(zip(info.capacities.names, amounts, strict=True))
        if least is None:
            least = here
        else:
            # A capacity some device lacks can be avoided: the request then needs none of it.
            least = {name: min(amount, here[name]) for name, amount in least.items() if name in here}
    return least or {}


def capacity_shortfall(
    plans: list[ClaimPlan],
    state: AllocatedState,
    features: Features,
    excluded: Container[DeviceId] | None = None,
) -> Shortfall | None:
    """The first capacity (by name) that the requests cannot all get, or None when the sum allows it."""
    if not features.consumable_capacity:
        return None
    wanted: dict[str, int] = {}
    counted: dict[str, int] = {}
    picks: dict[str, int] = {}
    smallest: dict[str, int] = {}
    supply: dict[DeviceId, NodeDevice] = {}
    for plan in plans:
        for request in plan.requests:
            data = request.data
            if data is None or data.all_mode or data.admin or data.num <= 0:
                continue
            devices = [d for d in data.candidates.devices if excluded is None or d.info.id not in excluded]
            if not devices or not all(d.shared for d in devices):
                continue
            for name, amount in _least(data, devices).items():
                if amount > 0:
                    wanted[name] = wanted.get(name, 0) + amount * data.num
                    counted[name] = counted.get(name, 0) + 1
                    picks[name] = picks.get(name, 0) + data.num
                    smallest[name] = min(amount, smallest.get(name, amount))
            supply.update((d.info.id, d) for d in devices)
    for name in sorted(wanted):
        free = room = holders = 0
        fmt = QuantityFormat.DECIMAL_SI
        for device in supply.values():
            caps = device.info.capacities
            position = caps.position(name)
            if position is None:
                continue
            used = state.capacity.get(device.info.id, {}).get(name, 0)
            left = max(caps.values[position] - used, 0)
            free += left
            room += left // smallest[name]
            holders += 1
            fmt = device.info.device.capacity[name].value.format
        if wanted[name] > free:
            return Shortfall(name, Quantity(wanted[name], fmt), Quantity(free, fmt), counted[name], holders)
        if picks[name] > room:
            return Shortfall(
                name,
                Quantity(wanted[name], fmt),
                Quantity(free, fmt),
                counted[name],
                holders,
                picks=picks[name],
                room=room,
                smallest=Quantity(smallest[name], fmt),
            )
    return None
