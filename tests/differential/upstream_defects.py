"""Known defects of the kube-scheduler the corpus is recorded with, worked out again so that a
step where kube-scheduler is wrong and allot is right is told apart from an allot bug.

kube-scheduler v1.36.2's structured allocator reserves a candidate device's shared counters
before it checks the claim's constraints, and does not give them back when a constraint then
rejects the device (kubernetes/kubernetes#140436, fixed upstream by #140431). A MIG claim
asking for two partitions of one GPU (`matchAttribute` on the parent) thus fails on a node
where a first GPU has one free partition and a second GPU is free: the first GPU's partition is
taken, each partition of the second GPU is tried, rejected by the constraint and its counters
kept, and after backtracking the second GPU's counters look used up.

`counter_leak_explains(objects, pod, node)` runs a depth-first search in the allocator's order
over the pod's unallocated claims on `node` twice, once as the claims should be allocated and
once with that leak. It says yes only when the correct search finds devices and the leaking
one does not; claims it does not model (firstAvailable, All, distinctAttribute, shared
devices, device taints) make it say no, so a real allot bug is never explained away.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from differential.validity import (
    _Cluster,
    _device_reaches,
    _Devices,
    _expressions,
    _Selectors,
    key_of,
    quantity,
)

Obj = Mapping[str, Any]
DeviceKey = tuple[str, str, str]
CounterKey = tuple[str, str, str, str]  # driver, pool, counter set, counter


@dataclass
class _Slot:
    """One device to find: for this claim's request, among these candidates."""

    claim: int
    request: str
    candidates: list[DeviceKey]


class _Unmodelled(Exception):
    """The claims use something this search does not model."""


def counter_leak_explains(objects: Iterable[Obj], pod_key: str, node_name: str) -> bool:
    """Whether the counter leak above, and only it, keeps the pod's claims off `node_name`."""
    cluster = _Cluster(objects)
    node = cluster.nodes.get(node_name)
    pod = next((p for p in cluster.pods if key_of(p) == pod_key), None)
    if node is None or pod is None:
        return False
    try:
        search = _Search(cluster, pod, node)
    except _Unmodelled:
        return False
    return search.run(leak=False) and not search.run(leak=True)


class _Search:
    def __init__(self, cluster: _Cluster, pod: Obj, node: Obj) -> None:
        self.devices = _Devices(cluster.slices)
        selectors = _Selectors()
        claims = _pod_claims(cluster, pod)
        if not claims:
            raise _Unmodelled
        taken: set[DeviceKey] = set()
        self.used: dict[CounterKey, Fraction] = defaultdict(Fraction)
        for claim in cluster.claims.values():
            for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get(
                "results"
            ) or []:
                key = (result["driver"], result["pool"], result["device"])
                if key in taken or key not in self.devices.devices:
                    continue
                taken.add(key)
                for counter, amount in self._consumes(key).items():
                    self.used[counter] += amount
        # The allocator's order: pools by driver and name, then the devices as their slices list them.
        reachable = [
            key
            for key, (device, slice_) in sorted(
                self.devices.devices.items(),
                key=lambda item: (item[0][0], item[0][1], item[1][1]["metadata"]["name"]),
            )
            if _device_reaches(device, slice_, node) and key not in taken
        ]
        self.slots: list[_Slot] = []
        self.constraints: list[list[tuple[str, set[str]]]] = []
        for index, claim in enumerate(claims):
            devices_spec = claim["spec"].get("devices") or {}
            names = [r["name"] for r in devices_spec.get("requests") or []]
            constraints: list[tuple[str, set[str]]] = []
            for constraint in devices_spec.get("constraints") or []:
                if not constraint.get("matchAttribute"):
                    raise _Unmodelled
                constraints.append((constraint["matchAttribute"], set(constraint.get("requests") or names)))
            self.constraints.append(constraints)
            for request in devices_spec.get("requests") or []:
                exactly = request.get("exactly")
                if exactly is None or exactly.get("allocationMode", "ExactCount") != "ExactCount":
                    raise _Unmodelled
                if exactly.get("adminAccess"):
                    raise _Unmodelled
                cls = cluster.classes.get(exactly["deviceClassName"], {})
                expressions = _expressions(cls.get("spec", {}).get("selectors")) + _expressions(
                    exactly.get("selectors")
                )
                candidates = [
                    key
                    for key in reachable
                    if selectors.match(key, self.devices.devices[key][0], expressions) is None
                ]
                for key in candidates:
                    device = self.devices.devices[key][0]
                    if device.get("taints") or device.get("allowMultipleAllocations"):
                        raise _Unmodelled
                for _ in range(int(exactly.get("count", 1))):
                    self.slots.append(_Slot(index, request["name"], candidates))

    def _consumes(self, key: DeviceKey) -> dict[CounterKey, Fraction]:
        device, _ = self.devices.devices[key]
        out: dict[CounterKey, Fraction] = {}
        for use in device.get("consumesCounters") or []:
            for counter, value in (use.get("counters") or {}).items():
                out[(key[0], key[1], use["counterSet"], counter)] = quantity(value["value"])
        return out

    def _fits(self, key: DeviceKey, used: Mapping[CounterKey, Fraction]) -> bool:
        for counter, amount in self._consumes(key).items():
            driver, pool, counter_set, name = counter
            available = self.devices.counters.get((driver, pool, counter_set), {}).get(name, Fraction(0))
            if used.get(counter, Fraction(0)) + amount > available:
                return False
        return True

    def _matches(self, chosen: list[tuple[_Slot, DeviceKey]], slot: _Slot, key: DeviceKey) -> bool:
        for attribute, scope in self.constraints[slot.claim]:
            if slot.request not in scope:
                continue
            value = self.devices.attribute(key, attribute)
            if value is None:
                return False
            for other, other_key in chosen:
                same_scope = other.claim == slot.claim and other.request in scope
                if same_scope and self.devices.attribute(other_key, attribute) != value:
                    return False
        return True

    def run(self, *, leak: bool) -> bool:
        used: dict[CounterKey, Fraction] = defaultdict(Fraction, self.used)
        chosen: list[tuple[_Slot, DeviceKey]] = []
        in_use: set[DeviceKey] = set()

        def place(index: int) -> bool:
            if index == len(self.slots):
                return True
            slot = self.slots[index]
            for key in slot.candidates:
                if key in in_use or not self._fits(key, used):
                    continue
                consumes = self._consumes(key)
                for counter, amount in consumes.items():
                    used[counter] += amount
                if not self._matches(chosen, slot, key):
                    if not leak:
                        for counter, amount in consumes.items():
                            used[counter] -= amount
                    continue
                chosen.append((slot, key))
                in_use.add(key)
                if place(index + 1):
                    return True
                chosen.pop()
                in_use.discard(key)
                for counter, amount in consumes.items():
                    used[counter] -= amount
            return False

        return place(0)


def _pod_claims(cluster: _Cluster, pod: Obj) -> list[Obj]:
    """The pod's claims not allocated yet, in the pod's order; a claim already allocated (or
    missing) makes the search unmodelled."""
    namespace = pod["metadata"].get("namespace", "default")
    statuses = {
        s["name"]: s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    found: list[Obj] = []
    for entry in pod["spec"].get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or statuses.get(entry["name"])
        claim = cluster.claims.get(f"{namespace}/{name}") if name else None
        if claim is None or (claim.get("status") or {}).get("allocation"):
            raise _Unmodelled
        found.append(claim)
    return found
