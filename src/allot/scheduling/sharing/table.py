"""SharedGpuTable: every node's shared GPUs as numpy arrays, kept current by the state's listeners.

A *shared GPU* is a device that several allocations may use at once
(`allowMultipleAllocations`, ConsumableCapacity on) and that publishes a
GPU share dimension: `cores` (fractional GPUs, HAMi's model) or `replicas`
(time-sliced GPUs), optionally `memory`, and nothing else. Such GPUs have
no memory isolation, which is what trust domains are about, and they are
what the sharing placement policies pack.

Layout: node i of the state's node table is row i; its shared GPUs take
columns 0..k-1 in the node's pool order (the allocator's order), padded to
the widest node. Per GPU the table holds capacity and free amount of the
share dimension (in its own units: percent for cores) and of memory
(bytes), the free share in milli-GPUs (1000 = the whole GPU, the unit of
the FGD paper), and a capacity group (GPUs with identical capacities and
request policies consume identically). `version[i]` changes whenever node
i's GPUs or its pods change, so derived per-node values can be cached.

Updates come from `ClusterState.allocation_listeners` (consumed capacity,
rollbacks included) and `pod_listeners` (which pods sit on which GPU, for
trust domains and GPU-affinity tags). The table holds no strong reference
to the state; `table_for` keeps one table per state.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from allot.cluster.nodes import AMOUNT_CAP, saturate
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dra import Allocator, DeviceId
from allot.dra.capacity import CapacityKey, DeviceCapacities, consumed_amounts, fits
from allot.dra.pools import NodeDevice
from allot.dra.selection import candidates
from allot.model.resource import AllocationResult

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

CORES = "cores"
REPLICAS = "replicas"
MEMORY = "memory"
_SHARE_NAMES = (CORES, REPLICAS)
_NANO = 1_000_000_000
MILLI = 1000
# Owner value of a GPU shared by pods of several trust domains (possible only with "any").
MIXED = -1
# Names a pod's trust domain (it may look at the state: namespace labels).
DomainOf = Callable[[ClusterState, PodInfo], str]


def is_shared_gpu(device: NodeDevice, node_name: str) -> bool:
    """A node-local shared device with a GPU share dimension and nothing the arrays cannot follow."""
    info = device.info
    caps = info.device.capacity
    if not device.shared or not any(name in caps for name in _SHARE_NAMES):
        return False
    if any(name not in (*_SHARE_NAMES, MEMORY) for name in caps) or (CORES in caps and REPLICAS in caps):
        return False
    if device.counters or device.taints or device.blocked or info.binding_conditions:
        return False
    if info.slice.spec.node_name != node_name or info.per_device:
        return False
    # Amounts must be whole units to fit int64 arrays (bytes, percent, replicas).
    return all(c.value.nano % _NANO == 0 for c in caps.values())


@dataclass(slots=True)
class Needs:
    """What one allocation for a request's capacity asks of each GPU (by slot)."""

    ok: BoolArray  # the GPU can take the request at all (capacity names, policies, fits when empty)
    share: IntArray
    memory: IntArray
    milli: IntArray  # share in milli-GPUs, rounded up


@dataclass(slots=True)
class ShapeMask:
    """The GPUs a request shape (device class + request selectors) selects."""

    mask: BoolArray
    # True when the shape selects nothing but table GPUs on every node (no other devices, no CEL errors).
    pure: bool


class OwnerIndex:
    """Which trust domain uses each GPU, for one way of naming domains."""

    def __init__(self, shape: tuple[int, int], domain_of: DomainOf) -> None:
        self.domain_of = domain_of
        self.owner = np.zeros(shape, dtype=np.int32)
        self.counts: dict[tuple[int, int], Counter[int]] = {}
        self.ids: dict[str, int] = {}

    def domain_id(self, domain: str) -> int:
        ident = self.ids.get(domain)
        if ident is None:
            ident = self.ids[domain] = len(self.ids) + 1
        return ident

    def change(self, slots: list[tuple[int, int]], domain: int, sign: int) -> None:
        for slot in set(slots):
            counter = self.counts.setdefault(slot, Counter())
            counter[domain] += sign
            if counter[domain] <= 0:
                del counter[domain]
            if not counter:
                del self.counts[slot]
                self.owner[slot] = 0
            elif len(counter) == 1:
                self.owner[slot] = next(iter(counter))
            else:
                self.owner[slot] = MIXED


class SharedGpuTable:
    """Per-node, per-GPU state of shared GPUs (see the module docstring)."""

    def __init__(self, state: ClusterState, allocator: Allocator) -> None:
        self._state = weakref.ref(state)
        self.allocator = allocator
        table = state.nodes
        self.size = table.size
        per_node: list[list[NodeDevice]] = []
        for info in table.infos:
            pools = allocator.pools(info.node)
            per_node.append([d for d in pools.devices if is_shared_gpu(d, info.name)])
        self.width = max((len(d) for d in per_node), default=0) or 1
        shape = (self.size, self.width)
        self.valid: BoolArray = np.zeros(shape, dtype=np.bool_)
        # Amounts past AMOUNT_CAP are held saturated (as in the node table); then the table is only
        # approximate, and `saturated` tells placement to leave feasibility to the allocator.
        self.saturated = False
        self.share_cap: IntArray = np.zeros(shape, dtype=np.int64)
        self.share_free: IntArray = np.zeros(shape, dtype=np.int64)
        self.mem_cap: IntArray = np.zeros(shape, dtype=np.int64)
        self.mem_free: IntArray = np.zeros(shape, dtype=np.int64)
        self.milli_free: IntArray = np.zeros(shape, dtype=np.int64)
        self.group: IntArray = np.full(shape, -1, dtype=np.int64)
        self.version: IntArray = np.zeros(self.size, dtype=np.int64)
        self.slot: dict[DeviceId, tuple[int, int]] = {}
        self.devices: list[list[NodeDevice]] = per_node
        self.groups: list[DeviceCapacities] = []
        self.share_name: list[str] = []
        group_ids: dict[object, int] = {}
        for n, devices in enumerate(per_node):
            for g, device in enumerate(devices):
                caps = device.info.capacities
                key = tuple(
                    sorted(
                        (name, c.value.nano, c.request_policy)
                        for name, c in device.info.device.capacity.items()
                    )
                )
                gid = group_ids.get(key)
                if gid is None:
                    gid = group_ids[key] = len(self.groups)
                    self.groups.append(caps)
                    self.share_name.append(CORES if CORES in caps.names else REPLICAS)
                share = self.share_name[gid]
                self.group[n, g] = gid
                self.valid[n, g] = True
                self.share_cap[n, g] = self._held(caps.values[caps.names.index(share)] // _NANO)
                if MEMORY in caps.names:
                    self.mem_cap[n, g] = self._held(caps.values[caps.names.index(MEMORY)] // _NANO)
                self.slot[device.info.id] = (n, g)
        self.share_free[:] = self.share_cap
        self.mem_free[:] = self.mem_cap
        for device_id, consumed in state.allocated.capacity.items():
            slot = self.slot.get(device_id)
            if slot is not None:
                self._consume(slot, {name: nano // _NANO for name, nano in consumed.items()}, +1)
        self._refresh_milli()
        self._shapes: dict[tuple[str, tuple[str, ...]], ShapeMask | None] = {}
        self._needs: dict[CapacityKey, Needs] = {}
        self._unique: dict[str, bool] = {}
        self._owners: dict[str, OwnerIndex] = {}
        # GPU-affinity tags of the pods on each node ("share-gpu", "<n>-gpu"), for GPU clustering:
        # pods per tag and node, and how many tags each node has.
        self._tag_counts: dict[str, IntArray] = {}
        self.tag_kinds: IntArray = np.zeros(self.size, dtype=np.int64)
        for pod in state.bound():
            self._pod_changed(state, pod, +1)
        state.allocation_listeners.append(self._on_allocation)
        state.pod_listeners.append(self._on_pod)

    # -- updates ----------------------------------------------------------------------

    def _held(self, amount: int) -> int:
        """`amount` as the arrays hold it (saturated), noting when that is not exact."""
        if abs(amount) > AMOUNT_CAP:
            self.saturated = True
        return saturate(amount)

    def _consume(self, slot: tuple[int, int], amounts: dict[str, int], sign: int) -> None:
        share = self.share_name[int(self.group[slot])]
        self.share_free[slot] = self._held(int(self.share_free[slot]) - sign * amounts.get(share, 0))
        self.mem_free[slot] = self._held(int(self.mem_free[slot]) - sign * amounts.get(MEMORY, 0))

    def _refresh_milli(self, node: int | None = None) -> None:
        rows = slice(None) if node is None else slice(node, node + 1)
        cap = np.where(self.share_cap[rows] > 0, self.share_cap[rows], 1)
        self.milli_free[rows] = np.where(self.valid[rows], self.share_free[rows] * MILLI // cap, 0)

    def _on_allocation(self, allocation: AllocationResult, sign: int) -> None:
        touched: set[int] = set()
        for result in allocation.devices.results:
            if not result.share_id or result.admin_access:
                continue
            slot = self.slot.get(DeviceId(result.driver, result.pool, result.device))
            if slot is None:
                continue
            consumed = result.consumed_capacity or {}
            self._consume(slot, {name: q.nano // _NANO for name, q in consumed.items()}, sign)
            touched.add(slot[0])
        for node in touched:
            self._refresh_milli(node)
            self.version[node] += 1

    def _on_pod(self, info: PodInfo, sign: int) -> None:
        state = self._state()
        if state is None or info.node is None:
            return
        self.version[info.node] += 1
        self._pod_changed(state, info, sign)

    def pod_slots(self, state: ClusterState, info: PodInfo) -> list[tuple[tuple[int, int], int]]:
        """The table GPUs the pod's allocated claims use, with the share each allocation consumes."""
        used: list[tuple[tuple[int, int], int]] = []
        for _, key in info.claims:
            claim = state.claims.get(key)
            allocation = claim.status.allocation if claim is not None else None
            if allocation is None:
                continue
            for result in allocation.devices.results:
                slot = self.slot.get(DeviceId(result.driver, result.pool, result.device))
                if slot is None or not result.share_id:
                    continue
                share = self.share_name[int(self.group[slot])]
                consumed = (result.consumed_capacity or {}).get(share)
                used.append((slot, consumed.nano // _NANO if consumed is not None else 0))
        return used

    def _pod_changed(self, state: ClusterState, info: PodInfo, sign: int) -> None:
        used = self.pod_slots(state, info)
        if not used or info.node is None:
            return
        slots = [slot for slot, _ in used]
        for index in self._owners.values():
            index.change(slots, index.domain_id(index.domain_of(state, info)), sign)
        counts = self._tag_counts.get(self.tag(used))
        if counts is None:
            counts = self._tag_counts[self.tag(used)] = np.zeros(self.size, dtype=np.int64)
        before = counts[info.node]
        counts[info.node] = before + sign
        if before == 0 and sign > 0:
            self.tag_kinds[info.node] += 1
        elif before + sign == 0 and sign < 0:
            self.tag_kinds[info.node] -= 1

    def tag(self, used: list[tuple[tuple[int, int], int]]) -> str:
        """The FGD simulator's GPU-affinity tag: `share-gpu` for part of one GPU, else `<n>-gpu`."""
        distinct = {slot for slot, _ in used}
        if len(distinct) == 1 and len(used) == 1:
            slot, share = used[0]
            if share < self.share_cap[slot]:
                return "share-gpu"
        return f"{len(distinct)}-gpu"

    # -- derived views ------------------------------------------------------------------

    def tag_counts(self, tag: str) -> IntArray:
        """Pods with GPU-affinity tag `tag` per node."""
        counts = self._tag_counts.get(tag)
        return counts if counts is not None else np.zeros(self.size, dtype=np.int64)

    def owners(self, kind: str, domain_of: DomainOf) -> OwnerIndex:
        """The owner index for one way of naming trust domains (built from the bound pods once)."""
        index = self._owners.get(kind)
        if index is None:
            index = self._owners[kind] = OwnerIndex(self.valid.shape, domain_of)
            state = self._state()
            if state is not None:
                for info in state.bound():
                    used = self.pod_slots(state, info)
                    if used:
                        index.change([s for s, _ in used], index.domain_id(domain_of(state, info)), +1)
        return index

    def shape(self, class_name: str, selectors: tuple[str, ...]) -> ShapeMask | None:
        """The GPUs a request shape selects (None: unknown class or selectors that do not compile)."""
        key = (class_name, selectors)
        if key not in self._shapes:
            self._shapes[key] = self._build_shape(class_name, selectors)
        return self._shapes[key]

    def _build_shape(self, class_name: str, selectors: tuple[str, ...]) -> ShapeMask | None:
        state = self._state()
        device_class = state.classes.get(class_name) if state is not None else None
        if state is None or device_class is None:
            return None
        class_selectors = tuple(s.cel.expression for s in device_class.spec.selectors if s.cel is not None)
        if len(class_selectors) != len(device_class.spec.selectors):
            return None
        mask = np.zeros(self.valid.shape, dtype=np.bool_)
        pure = True
        env = self.allocator.selectors
        for info in state.nodes.infos:
            pools = self.allocator.pools(info.node)
            found = candidates(pools, env, class_selectors, selectors)
            if found.errors:
                pure = False
            for device in found.devices:
                slot = self.slot.get(device.info.id)
                if slot is None:
                    pure = False
                elif device not in found.errors:
                    mask[slot] = True
        return ShapeMask(mask, pure)

    def needs(self, key: CapacityKey, requests: dict[str, int] | None) -> Needs:
        """Per-GPU consumption of one allocation for these capacity requests (nano-units in `requests`)."""
        cached = self._needs.get(key)
        if cached is None:
            cached = self._needs[key] = self._build_needs(requests)
        return cached

    def _build_needs(self, requests: dict[str, int] | None) -> Needs:
        count = len(self.groups)
        ok = np.zeros(count + 1, dtype=np.bool_)
        share = np.zeros(count + 1, dtype=np.int64)
        memory = np.zeros(count + 1, dtype=np.int64)
        for gid, caps in enumerate(self.groups):
            amounts = consumed_amounts(caps, requests)
            if amounts is None or not fits(caps, amounts, None, None):
                continue
            named = dict(zip(caps.names, amounts, strict=True))
            ok[gid] = True
            share[gid] = self._held(named.get(self.share_name[gid], 0) // _NANO)
            memory[gid] = self._held(named.get(MEMORY, 0) // _NANO)
        # Index -1 (no GPU in the slot) lands on the extra, never-ok entry.
        group = self.group
        share_needed = share[group]
        cap = np.where(self.share_cap > 0, self.share_cap, 1)
        milli = -(-share_needed * MILLI // cap)
        return Needs(ok=ok[group] & self.valid, share=share_needed, memory=memory[group], milli=milli)

    def unique_attribute(self, name: str) -> bool:
        """Whether every table GPU has attribute `name` and no two GPUs of one node share its value."""
        cached = self._unique.get(name)
        if cached is None:
            cached = True
            for devices in self.devices:
                values = [d.info.attributes.get(name) for d in devices]
                if any(v is None or v[1] is None for v in values) or len(set(values)) != len(values):
                    cached = False
                    break
            self._unique[name] = cached
        return cached

    def usable(self, mask: BoolArray, needs: Needs) -> BoolArray:
        """GPUs of the shape with room for one more allocation of these needs, now."""
        result: BoolArray = (
            mask & needs.ok & (self.share_free >= needs.share) & (self.mem_free >= needs.memory)
        )
        return result


_TABLES: weakref.WeakKeyDictionary[ClusterState, SharedGpuTable] = weakref.WeakKeyDictionary()


def table_for(state: ClusterState, allocator: Allocator) -> SharedGpuTable:
    """The state's table (built on first use, then shared by every plugin and profile)."""
    table = _TABLES.get(state)
    if table is None or table.allocator.slices is not allocator.slices or table.size != state.nodes.size:
        if table is not None:
            _detach(state, table)
        table = _TABLES[state] = SharedGpuTable(state, allocator)
    return table


def _detach(state: ClusterState, table: SharedGpuTable) -> None:
    if table._on_allocation in state.allocation_listeners:
        state.allocation_listeners.remove(table._on_allocation)
    if table._on_pod in state.pod_listeners:
        state.pod_listeners.remove(table._on_pod)
