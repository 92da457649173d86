"""The invariants of DESIGN.md's Reliability section, checked from scratch.

`check(state)` recomputes everything from the claims and pods (never from
the incremental indexes it is meant to audit) and returns a list of
violations, empty when the state is sound:

* no exclusively allocated device is in two claims;
* no shared device's consumed capacity exceeds its capacity;
* no counter of a partitionable pool is over-consumed;
* no node's requested resources exceed its allocatable, and the node
  table's incremental sums equal the sums over bound pods;
* every bound pod's claims are allocated, reserved for it, and usable on
  its node; AllocatedState matches the claims;
* no pod allot placed (bound here, its record naming no node) shares a
  topology domain with a pod that its required anti-affinity selects, nor
  with a bound pod whose required anti-affinity selects it (pods bound
  before, as a dump shows them, may break it: affinity is only checked when
  a pod is scheduled).

Quota and gang invariants belong to the layers that know about them
(admission, engine) and are checked there.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from allot.cluster.claims import pod_uid
from allot.cluster.pod_index import TermKind, pod_terms
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dra import AllocatedState, DeviceId
from allot.dra.errors import AllocationError
from allot.dra.nodes import selector_matches
from allot.model.resource import Device


def _devices(
    state: ClusterState,
) -> tuple[dict[DeviceId, Device], dict[tuple[str, str], dict[str, dict[str, Fraction]]]]:
    """Devices by id and counter sets by pool, from the newest generation of each pool."""
    newest: dict[tuple[str, str], int] = {}
    for slice_ in state.slices.slices:
        key = (slice_.spec.driver, slice_.spec.pool.name)
        newest[key] = max(newest.get(key, slice_.spec.pool.generation), slice_.spec.pool.generation)
    devices: dict[DeviceId, Device] = {}
    counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = defaultdict(dict)
    for slice_ in state.slices.slices:
        spec = slice_.spec
        key = (spec.driver, spec.pool.name)
        if spec.pool.generation != newest[key]:
            continue
        for device in spec.devices:
            devices[DeviceId(spec.driver, spec.pool.name, device.name)] = device
        for counter_set in spec.shared_counters:
            counters[key][counter_set.name] = {
                n: c.value.as_fraction() for n, c in counter_set.counters.items()
            }
    return devices, counters


def _check_devices(state: ClusterState) -> list[str]:
    problems: list[str] = []
    devices, counter_sets = _devices(state)
    holders: dict[DeviceId, list[str]] = defaultdict(list)
    consumed: dict[DeviceId, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    in_use: set[DeviceId] = set()
    for key, claim in sorted(state.claims.items()):
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for result in allocation.devices.results:
            device_id = DeviceId(result.driver, result.pool, result.device)
            if result.admin_access:
                continue
            in_use.add(device_id)
            if result.share_id:
                for name, amount in (result.consumed_capacity or {}).items():
                    consumed[device_id][name] += amount.as_fraction()
            else:
                holders[device_id].append(key)
    for device_id, keys in sorted(holders.items()):
        if len(keys) > 1:
            problems.append(
                f"device {device_id} is allocated exclusively to {len(keys)} claims: {', '.join(keys)}"
            )
        if device_id in consumed:
            problems.append(f"device {device_id} is allocated exclusively and shared at the same time")
    for device_id, amounts in sorted(consumed.items()):
        device = devices.get(device_id)
        if device is None:
            continue
        for name, total in sorted(amounts.items()):
            capacity = device.capacity.get(name)
            if capacity is not None and total > capacity.value.as_fraction():
                problems.append(
                    f"device {device_id}: {name} consumed {total} exceeds capacity {capacity.value}"
                )
    use: dict[tuple[str, str, str, str], Fraction] = defaultdict(Fraction)
    for device_id in in_use:
        device = devices.get(device_id)
        if device is None:
            continue
        for consumption in device.consumes_counters:
            for name, counter in consumption.counters.items():
                use[(device_id.driver, device_id.pool, consumption.counter_set, name)] += (
                    counter.value.as_fraction()
                )
    for (driver, pool, counter_set, name), total in sorted(use.items()):
        limit = counter_sets.get((driver, pool), {}).get(counter_set, {}).get(name)
        if limit is not None and total > limit:
            problems.append(
                f"pool {driver}/{pool}: counter {counter_set}/{name} consumed {total} exceeds {limit}"
            )
    rebuilt = AllocatedState.from_claims(state.claims.values())
    if dict(rebuilt.exclusive) != dict(state.allocated.exclusive):
        problems.append("AllocatedState's exclusive devices differ from the claims' allocations")
    if dict(rebuilt.shared) != dict(state.allocated.shared):
        problems.append("AllocatedState's shared devices differ from the claims' allocations")
    return problems


def _check_nodes(state: ClusterState) -> list[str]:
    problems: list[str] = []
    table = state.nodes
    # Exact sums in Python integers: amounts may be far past int64.
    sums: dict[str, list[int]] = {name: [0] * table.size for name in table.requested}
    for info in state.bound():
        assert info.node is not None
        for name, value in ClusterState.node_usage(info).items():
            sums.setdefault(name, [0] * table.size)[info.node] += value
    for name, totals in sorted(sums.items()):
        tracked = table.requested.get(name)
        if tracked is None or [table.requested_total(name, i) for i in range(table.size)] != totals:
            problems.append(f"node table's requested {name} differs from the sum over bound pods")
        if name not in table.allocatable:
            continue
        for index, total in enumerate(totals):
            capacity = table.infos[index].allocatable.get(name, 0)
            if total > capacity:
                problems.append(
                    f"node {table.infos[index].name}: requested {name} {total} exceeds allocatable {capacity}"
                )
    return problems


def _check_pods(state: ClusterState) -> list[str]:
    problems: list[str] = []
    for info in state.bound():
        assert info.node is not None
        node = state.nodes.infos[info.node].node
        uid = pod_uid(info.pod)
        for _, key in info.claims:
            claim = state.claims.get(key)
            if claim is None or claim.status.allocation is None:
                problems.append(f"pod {info.key} is bound but its claim {key} is not allocated")
                continue
            if all(r.uid != uid for r in claim.status.reserved_for):
                problems.append(f"pod {info.key} is bound but claim {key} is not reserved for it")
            selector = claim.status.allocation.node_selector
            try:
                usable = selector is None or selector_matches(selector, node)
            except AllocationError:
                usable = False
            if not usable:
                problems.append(
                    f"pod {info.key} is on {node.name} but claim {key} is allocated for other nodes"
                )
    return problems


def _check_anti_affinity(state: ClusterState) -> list[str]:
    problems: list[str] = []
    bound = [info for info in state.bound() if info.node is not None]
    placed = {info.key for info in bound if not info.pod.spec.node_name}

    def domain(info: PodInfo, key: str) -> str | None:
        assert info.node is not None
        return state.nodes.infos[info.node].labels.get(key)

    for owner in bound:
        for kind, term, _ in pod_terms(owner.pod):
            if kind is not TermKind.REQUIRED_ANTI_AFFINITY:
                continue
            mine = domain(owner, term.topology_key)
            if mine is None:
                continue
            for other in bound:
                if other is owner or (owner.key not in placed and other.key not in placed):
                    continue
                labels = state.namespace_labels(other.pod.namespace)
                if domain(other, term.topology_key) == mine and term.matches(other.pod, labels):
                    problems.append(
                        f"pod {owner.key}'s required anti-affinity selects pod {other.key} in its "
                        f"{term.topology_key} {mine}"
                    )
    return problems


def check(state: ClusterState) -> list[str]:
    """Every invariant violation in `state`; empty when sound."""
    return _check_devices(state) + _check_nodes(state) + _check_pods(state) + _check_anti_affinity(state)
