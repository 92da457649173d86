"""How many GPUs each node has and how much of them is free, kept current as devices are allocated.

A node's *GPUs* are counted the way the simulator counts them
(docs/simulator.md): a device of a GPU driver that consumes no counters is
one GPU, whole or shared (consumable capacity); the devices that consume
one counter set of a partitionable pool (MIG) are partitions of one GPU;
a node without DRA GPUs counts its allocatable `nvidia.com/gpu`.

What is free of each GPU, in [0, 1]:

* a whole device: 1 when no claim holds it, else 0;
* a shared device: 1 minus the largest share of any capacity consumed
  (a GPU with 30 % of its cores and 10 % of its memory taken is 0.7 free);
* a counter set: 1 minus the largest share of any of its counters
  consumed (one 1g.10gb partition takes a seventh of the multiprocessors);
* device-plugin GPUs: allocatable minus requested.

`free(index)` sums that over the node's GPUs; `untouched(index)` counts
the GPUs nothing holds at all; `whole_need(pod)` is how many whole GPUs a
pending pod asks for at least (its requests for exclusive GPU devices, and
`nvidia.com/gpu`): a pod needing eight cannot be placed by any moves while
the cluster has fewer than eight untouched GPUs.

On a partitionable GPU, a full-GPU device (one that takes all of a counter
that every device of its counter set uses) fits only while nothing holds
any part of that GPU, so untouched GPUs bound what requests for such
devices can get there; a MIG slice leaves room for others, and where a
request may select one the count cannot tell.

Per node the sums are recomputed only after an allocation on the node
changed them (the state's allocation listeners, rollbacks included);
everything read of nodes and devices is read again once the state's
nodes, slices or device classes were replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dra import Allocator, DeviceId
from allot.dra.counters import PoolCounters
from allot.dra.pools import NodeDevice
from allot.dra.selection import candidates
from allot.model.resource import AllocationResult, DeviceRequest
from allot.scheduling.framework import FloatArray, IntArray
from allot.scheduling.topology.places import place_of

PLUGIN_GPU_RESOURCE = "nvidia.com/gpu"


def is_gpu(device: NodeDevice) -> bool:
    """Whether a device is (part of) a GPU: its driver publishes GPUs (`places.KIND_BY_DRIVER`), or
    names them (a driver with `gpu` in its name, as the simulator counts GPUs)."""
    driver = device.info.id.driver
    return "gpu" in driver or place_of(driver, device.info.device).kind == "gpu"


@dataclass(slots=True)
class _CounterSet:
    """One partitionable GPU: a pool's counter set, by the positions of its counters."""

    counters: PoolCounters
    positions: list[int]


@dataclass(slots=True)
class _Node:
    """A node's DRA GPUs, and their free sums (None: to recompute)."""

    whole: list[DeviceId] = field(default_factory=list)
    # Shared devices with their capacities (nano-units, by capacity name).
    shared: list[tuple[DeviceId, dict[str, int]]] = field(default_factory=list)
    partitioned: list[_CounterSet] = field(default_factory=list)
    free: float | None = None
    untouched: int | None = None

    @property
    def gpus(self) -> int:
        return len(self.whole) + len(self.shared) + len(self.partitioned)


class GpuOccupancy:
    """The GPUs of every node of one ClusterState, and what is free of them (see the module docstring)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._nodes: dict[int, _Node] = {}
        self._node_of: dict[DeviceId, int] = {}
        self._totals: IntArray | None = None
        self._allocator: Allocator | None = None
        # (class, selectors) -> whether every device it selects is an exclusive GPU, and the nodes
        # where it selects some.
        self._whole: dict[tuple[str, tuple[str, ...]], tuple[bool, frozenset[int]]] = {}
        # (class, selectors) -> the nodes where it selects a partition that leaves room on its GPU
        # for others (a MIG slice), where untouched GPUs do not bound what it can get.
        self._partial: dict[tuple[str, tuple[str, ...]], frozenset[int]] = {}
        # The state makes a new slice index whenever nodes, slices, taint rules or classes change:
        # everything above was read through it and is read again after.
        self._slices = state.slices
        state.allocation_listeners.append(self._on_allocation)

    def _current(self) -> None:
        """Forget what was read of nodes and devices that changed since."""
        if self.state.slices is not self._slices:
            self._slices = self.state.slices
            self._nodes.clear()
            self._node_of.clear()
            self._totals = None
            self._allocator = None
            self._whole.clear()
            self._partial.clear()

    def detach(self) -> None:
        if self._on_allocation in self.state.allocation_listeners:
            self.state.allocation_listeners.remove(self._on_allocation)

    def _on_allocation(self, allocation: AllocationResult, sign: int) -> None:
        self._current()
        for result in allocation.devices.results:
            index = self._node_of.get(DeviceId(result.driver, result.pool, result.device))
            if index is not None:
                node = self._nodes[index]
                node.free = node.untouched = None

    def _node(self, index: int) -> _Node:
        self._current()
        node = self._nodes.get(index)
        if node is None:
            node = self._nodes[index] = _Node()
            state = self.state
            pools = state.slices.gather(state.nodes.infos[index].node, state.features)
            for pool in pools.pools:
                if not pool.usable:
                    continue
                sets: dict[str, list[int]] = {}
                for device in pool.devices:
                    if not is_gpu(device):
                        continue
                    device_id = device.info.id
                    self._node_of[device_id] = index
                    consumes = device.info.device.consumes_counters
                    if consumes and pool.counters is not None:
                        for entry in consumes:
                            positions = sets.setdefault(entry.counter_set, [])
                            for name in entry.counters:
                                position = pool.counters.layout.index.get((entry.counter_set, name))
                                if position is not None and position not in positions:
                                    positions.append(position)
                    elif device.shared:
                        capacity = {name: c.value.nano for name, c in device.info.device.capacity.items()}
                        node.shared.append((device_id, capacity))
                    else:
                        node.whole.append(device_id)
                if pool.counters is not None:
                    node.partitioned.extend(
                        _CounterSet(pool.counters, sorted(positions)) for _, positions in sorted(sets.items())
                    )
        return node

    def gpus(self, index: int) -> int:
        """The node's GPUs (DRA, else device-plugin)."""
        node = self._node(index)
        return node.gpus if node.gpus else self._plugin(index)[0]

    def totals(self) -> IntArray:
        """GPUs of every node, by index (computed once per node table)."""
        self._current()
        size = self.state.nodes.size
        if self._totals is None or self._totals.size != size:
            self._totals = np.array([self.gpus(i) for i in range(size)], dtype=np.int64)
        return self._totals

    def free(self, index: int) -> float:
        """GPU-equivalents free on the node."""
        node = self._node(index)
        if not node.gpus:
            total, used = self._plugin(index)
            return float(max(total - used, 0))
        if node.free is None:
            self._measure(node)
        assert node.free is not None
        return node.free

    def untouched(self, index: int) -> int:
        """GPUs of the node that nothing holds any part of."""
        node = self._node(index)
        if not node.gpus:
            total, used = self._plugin(index)
            return max(total - used, 0)
        if node.untouched is None:
            self._measure(node)
        assert node.untouched is not None
        return node.untouched

    def untouched_total(self) -> int:
        return sum(self.untouched(i) for i in range(self.state.nodes.size))

    def whole_need(self, info: PodInfo) -> int:
        """Whole GPUs the pod asks for at least (see the module docstring)."""
        return self._whole_requests(info)[0]

    def whole_requests(self, info: PodInfo) -> tuple[int, frozenset[int] | None]:
        """(whole GPUs the pod asks for at least, the nodes where those requests select GPUs; None:
        any node)."""
        return self._whole_requests(info)

    def whole_room(
        self, info: PodInfo, index: int, requests: tuple[int, frozenset[int] | None] | None = None
    ) -> int | None:
        """At most how many whole GPUs node `index` can give the pod's whole-GPU requests now, or None
        where this count cannot tell: the pod asks for GPUs both through claims and
        `nvidia.com/gpu`, the node offers them both ways (devices and allocatable, or an extended
        resource a DeviceClass serves), or its GPUs are partitionable (several exclusive partitions
        share one counted GPU, and the pod's requests may select one). Queueing hints use it to skip
        work, so it never says less than a placement could find. `requests`: the pod's
        `whole_requests`, when the caller has them."""
        plugin = int(info.requests.get(PLUGIN_GPU_RESOURCE, 0))
        need, nodes = requests if requests is not None else self._whole_requests(info)
        node = self._node(index)
        total, used = self._plugin(index)
        if plugin:
            if need != plugin or node.gpus or self._dra_backed_plugin():
                return None
            return max(total - used, 0)
        if nodes is not None and index not in nodes:
            return 0  # its claims select no GPU there
        if total or (node.partitioned and self._may_select_partial(info, index)):
            return None
        return self.untouched(index)

    def _may_select_partial(self, info: PodInfo, index: int) -> bool:
        """Whether one of the pod's whole-GPU requests may select, on node `index`, a partition that
        leaves room on its GPU (not `_fills_a_gpu`): then the count of untouched GPUs is no bound."""
        for claim in self.state.pod_claims(info):
            if claim.status.allocation is not None:
                continue
            for request in claim.spec.devices.requests:
                shape = _whole_shape(request)
                if shape is not None and index in self._partial_nodes(shape[0], shape[1]):
                    return True
        return False

    def held(self, info: PodInfo) -> int:
        """At least as many GPUs as the bound pod would leave untouched if it went: the GPU devices
        its claims hold (read after `whole_room` on its node, which learns that node's GPUs) and
        its `nvidia.com/gpu`."""
        count = int(info.requests.get(PLUGIN_GPU_RESOURCE, 0))
        node_of = self._node_of
        for claim in self.state.pod_claims(info):
            allocation = claim.status.allocation
            if allocation is None:
                continue
            for result in allocation.devices.results:
                if DeviceId(result.driver, result.pool, result.device) in node_of:
                    count += 1
        return count

    def _dra_backed_plugin(self) -> bool:
        return any(c.spec.extended_resource_name == PLUGIN_GPU_RESOURCE for c in self.state.classes.values())

    def untouched_for(self, info: PodInfo, index: int) -> int:
        """Untouched GPUs of node `index` if the pod's whole-GPU requests can select GPUs there, else 0
        (a fractional-GPU node's GPUs are no room for a job asking for whole ones)."""
        return self.untouched(index) if self.selectable(info, index) else 0

    def selectable(self, info: PodInfo, index: int) -> bool:
        """Whether the pod asks for whole GPUs and its requests can select GPUs on node `index`."""
        need, nodes = self._whole_requests(info)
        return bool(need) and (nodes is None or index in nodes)

    def _whole_requests(self, info: PodInfo) -> tuple[int, frozenset[int] | None]:
        """(whole GPUs asked for, nodes where those requests select GPUs; None: any node)."""
        state = self.state
        need = int(info.requests.get(PLUGIN_GPU_RESOURCE, 0))
        nodes: frozenset[int] | None = None if need else frozenset()
        for claim in state.pod_claims(info):
            if claim.status.allocation is not None:
                continue
            for request in claim.spec.devices.requests:
                shape = _whole_shape(request)
                if shape is None:
                    continue
                whole, where = self._selects_whole_gpus(shape[0], shape[1])
                if whole:
                    need += max(shape[2], 1)
                    nodes = None if nodes is None else nodes | where
        return need, nodes

    def _selects_whole_gpus(self, class_name: str, selectors: tuple[str, ...]) -> tuple[bool, frozenset[int]]:
        self._current()
        key = (class_name, selectors)
        found = self._whole.get(key)
        if found is None:
            found = self._whole[key] = self._scan(class_name, selectors)
        return found

    def _partial_nodes(self, class_name: str, selectors: tuple[str, ...]) -> frozenset[int]:
        self._selects_whole_gpus(class_name, selectors)
        return self._partial.get((class_name, selectors), frozenset())

    def _scan(self, class_name: str, selectors: tuple[str, ...]) -> tuple[bool, frozenset[int]]:
        state = self.state
        device_class = state.classes.get(class_name)
        if device_class is None or any(s.cel is None for s in device_class.spec.selectors):
            return False, frozenset()
        if self._allocator is None:
            self._allocator = Allocator(state.classes, state.slices, features=state.features)
        allocator = self._allocator
        class_selectors = tuple(s.cel.expression for s in device_class.spec.selectors if s.cel is not None)
        nodes: set[int] = set()
        partial: set[int] = set()
        for node in state.nodes.infos:
            found = candidates(allocator.pools(node.node), allocator.selectors, class_selectors, selectors)
            if found.errors:
                return False, frozenset()
            for device in found.devices:
                if device.shared or not is_gpu(device):
                    return False, frozenset()
                nodes.add(node.index)
                if device.counters and not _fills_a_gpu(device):
                    partial.add(node.index)
        self._partial[(class_name, selectors)] = frozenset(partial)
        return bool(nodes), frozenset(nodes)

    def free_of(self, nodes: IntArray) -> FloatArray:
        return np.array([self.free(int(i)) for i in nodes], dtype=np.float64)

    def _plugin(self, index: int) -> tuple[int, int]:
        table = self.state.nodes
        allocatable = table.allocatable.get(PLUGIN_GPU_RESOURCE)
        if allocatable is None:
            return (0, 0)
        requested = table.requested.get(PLUGIN_GPU_RESOURCE)
        used = int(requested[index]) if requested is not None else 0
        return (int(allocatable[index]), used)

    def _measure(self, node: _Node) -> None:
        allocated = self.state.allocated
        free = 0.0
        untouched = 0
        for device_id in node.whole:
            if not allocated.in_use(device_id):
                free += 1.0
                untouched += 1
        for device_id, capacity in node.shared:
            consumed = allocated.capacity.get(device_id, {})
            taken = max(
                (min(consumed.get(name, 0) / total, 1.0) for name, total in capacity.items() if total > 0),
                default=0.0,
            )
            if not allocated.in_use(device_id):
                taken, untouched = 0.0, untouched + 1
            free += 1.0 - taken
        for counter_set in node.partitioned:
            available, _ = counter_set.counters.available(allocated)
            totals = counter_set.counters.layout.totals
            taken = max(
                ((totals[p] - available[p]) / totals[p] for p in counter_set.positions if totals[p] > 0),
                default=0.0,
            )
            taken = min(max(taken, 0.0), 1.0)
            untouched += taken <= 0.0
            free += 1.0 - taken
        node.free = free
        node.untouched = untouched


def _whole_shape(request: DeviceRequest) -> tuple[str, tuple[str, ...], int] | None:
    """(class, selectors, count) of a request for an exact number of devices with no capacity asked
    (what may be whole GPUs), else None."""
    exact = request.exactly
    if exact is None or exact.allocation_mode not in ("", "ExactCount") or exact.capacity is not None:
        return None
    selectors = tuple(s.cel.expression for s in exact.selectors if s.cel is not None)
    return exact.device_class_name, selectors, exact.count or 1


def _fills_a_gpu(device: NodeDevice) -> bool:
    """Whether the partitionable device takes all of one counter that every device consuming from
    its counter set also uses (a full-GPU device of a MIG GPU): it then fits only while nothing
    holds any part of that GPU, and takes all of it, so it counts as one untouched GPU."""
    pool = device.pool.counters
    if pool is None:
        return False
    layout = pool.layout
    for position, amount in device.counters:
        if amount <= 0 or amount != layout.totals[position]:
            continue
        counter_set = layout.names[position][0]
        if all(
            any(p == position and a > 0 for p, a in consumption)
            for _device, consumption in pool.devices
            if any(layout.names[p][0] == counter_set for p, _a in consumption)
        ):
            return True
    return False
