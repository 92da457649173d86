"""The cluster's GPUs as the simulator counts them, and what an allocation takes of each.

A *physical GPU* is the unit every GPU metric counts in:

* a DRA device of a GPU driver (a driver whose name contains `gpu`, such
  as `gpu.nvidia.com`) that consumes no counters is one GPU;
* devices that consume counters of one counter set (dynamic MIG: the full
  GPU and every partition placement) are partitions of one GPU, the
  counter set;
* a node's allocatable `nvidia.com/gpu` (device plugin) counts that many
  GPUs, unless the node already has DRA GPUs.

What an allocated device takes of its GPU, as (compute, memory) fractions:
a whole device takes (1, 1); a partition takes its share of the counter
set's `multiprocessors` and `memory` counters (of all counters together
when those are absent); a device with consumable capacity takes the
consumed `cores` (or any capacity named `...cores` / `compute`) and
`memory` over the device's capacity, and for other capacities (a
time-slicing replica count, say) the largest consumed fraction. A pod's
*GPU-equivalent* is the sum over its devices of max(compute, memory).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from allot.cluster.resources import amount
from allot.cluster.state import ClusterState
from allot.dra import Allocator
from allot.dra.selection import candidates
from allot.model.core import Node
from allot.model.quantity import Quantity
from allot.model.resource import (
    AllocationResult,
    DeviceRequestAllocationResult,
    DeviceSelector,
    ResourceSlice,
)

PLUGIN_GPU_RESOURCE = "nvidia.com/gpu"
COMPUTE_COUNTER = "multiprocessors"
MEMORY = "memory"

Usage = tuple[int, float, float]  # (gpu index, compute fraction, memory fraction)


def _expressions(selectors: Iterable[DeviceSelector]) -> tuple[str, ...]:
    return tuple(s.cel.expression for s in selectors if s.cel is not None)


def is_gpu_driver(driver: str) -> bool:
    return "gpu" in driver


def _value(q: Quantity) -> int:
    return amount(MEMORY, q)


@dataclass(frozen=True, slots=True)
class Gpu:
    """One physical GPU: its node and a label (device or counter-set name)."""

    node: str
    label: str


@dataclass(frozen=True, slots=True)
class _Entry:
    gpu: int
    # Fixed take for whole devices and partitions; None when it depends on consumed capacity.
    take: tuple[float, float] | None
    capacity: Mapping[str, int] = field(default_factory=dict)


def _counter_take(consumed: Mapping[str, int], totals: Mapping[str, int]) -> tuple[float, float]:
    def share(name: str) -> float | None:
        total = totals.get(name, 0)
        return consumed.get(name, 0) / total if total > 0 else None

    overall_total = sum(totals.values())
    overall = sum(consumed.values()) / overall_total if overall_total else 1.0
    compute = share(COMPUTE_COUNTER)
    memory = share(MEMORY)
    return (compute if compute is not None else overall, memory if memory is not None else overall)


def _natural(text: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _is_compute(name: str) -> bool:
    short = name.rsplit("/", 1)[-1]
    return short.endswith("cores") or short == "compute"


_Found = dict[tuple[str, str], list[tuple[tuple[str, str, str], tuple[float, float] | None, dict[str, int]]]]


def _physical_gpus(slices: list[ResourceSlice], node_names: list[str]) -> _Found:
    """Devices of GPU drivers grouped by (node, physical GPU label), with their fixed take."""
    counters: dict[tuple[str, str, str], dict[str, int]] = {}
    for s in slices:
        for counter_set in s.spec.shared_counters:
            counters[(s.spec.driver, s.spec.pool.name, counter_set.name)] = {
                name: _value(c.value) for name, c in counter_set.counters.items()
            }
    found: _Found = {}
    for s in sorted(slices, key=lambda s: (s.spec.node_name or "", s.spec.driver, s.spec.pool.name, s.name)):
        node, driver, pool = s.spec.node_name or "", s.spec.driver, s.spec.pool.name
        for device in s.spec.devices:
            key = (driver, pool, device.name)
            if device.consumes_counters:
                consumption = device.consumes_counters[0]
                used = {n: _value(c.value) for n, c in consumption.counters.items()}
                take = _counter_take(used, counters.get((driver, pool, consumption.counter_set), used))
                found.setdefault((node, consumption.counter_set), []).append((key, take, {}))
            elif device.allow_multiple_allocations:
                capacity = {n: _value(c.value) for n, c in device.capacity.items()}
                found.setdefault((node, device.name), []).append((key, None, capacity))
            else:
                found.setdefault((node, device.name), []).append((key, (1.0, 1.0), {}))
    return found


class GpuInventory:
    """Physical GPUs in node order (per node in natural name order: gpu-2 before gpu-10),
    and a lookup from allocated devices to GPUs."""

    def __init__(self, nodes: Iterable[Node], slices: Iterable[ResourceSlice]) -> None:
        node_list = sorted(nodes, key=lambda n: n.name)
        self.node_names = [n.name for n in node_list]
        known = set(self.node_names)
        gpu_slices = [s for s in slices if is_gpu_driver(s.spec.driver) and s.spec.node_name in known]
        found = _physical_gpus(gpu_slices, self.node_names)
        labels: dict[str, list[str]] = {}
        for node_name, label in found:
            labels.setdefault(node_name, []).append(label)
        self.gpus: list[Gpu] = []
        self._entries: dict[tuple[str, str, str], _Entry] = {}
        self._plugin: dict[str, list[int]] = {}
        for node in node_list:
            for label in sorted(labels.get(node.name, []), key=_natural):
                index = self._add(node.name, label)
                for key, fixed, capacity in found[(node.name, label)]:
                    self._entries[key] = _Entry(index, fixed, capacity)
            if node.name not in labels:
                plugin = node.status.allocatable.get(PLUGIN_GPU_RESOURCE)
                count = amount(PLUGIN_GPU_RESOURCE, plugin) if plugin is not None else 0
                self._plugin[node.name] = [
                    self._add(node.name, f"{PLUGIN_GPU_RESOURCE}#{i}") for i in range(count)
                ]
        position = {name: i for i, name in enumerate(self.node_names)}
        self.node_of = [position[g.node] for g in self.gpus]

    def _add(self, node: str, label: str) -> int:
        self.gpus.append(Gpu(node, label))
        return len(self.gpus) - 1

    def __len__(self) -> int:
        return len(self.gpus)

    def device_usage(self, allocations: Iterable[AllocationResult]) -> list[Usage]:
        """(gpu, compute, memory) for every GPU device in the allocations."""
        usage: list[Usage] = []
        for allocation in allocations:
            for result in allocation.devices.results:
                taken = self.result_usage(result)
                if taken is not None:
                    usage.append(taken)
        return usage

    def result_usage(self, result: DeviceRequestAllocationResult) -> Usage | None:
        """(gpu, compute, memory) for one allocated device; None when it is not a GPU's."""
        entry = self._entries.get((result.driver, result.pool, result.device))
        if entry is None:
            return None
        if entry.take is not None:
            return (entry.gpu, *entry.take)
        return (entry.gpu, *self._capacity_take(entry, result.consumed_capacity))

    def gpu_of(self, driver: str, pool: str, device: str) -> int | None:
        """The physical GPU a device belongs to (whole, partition or shared), or None."""
        entry = self._entries.get((driver, pool, device))
        return entry.gpu if entry is not None else None

    @staticmethod
    def _capacity_take(entry: _Entry, consumed: Mapping[str, Quantity] | None) -> tuple[float, float]:
        if not consumed:
            return (1.0, 1.0)
        fractions: dict[str, float] = {}
        for name, quantity in consumed.items():
            short = name.rsplit("/", 1)[-1]
            total = entry.capacity.get(name) or entry.capacity.get(short) or 0
            if total > 0:
                fractions[short] = min(1.0, _value(quantity) / total)
        if not fractions:
            return (1.0, 1.0)
        compute = [f for n, f in fractions.items() if _is_compute(n)]
        largest = max(fractions.values())
        c = compute[0] if compute else largest
        m = fractions.get(MEMORY, c)
        return (c, m)

    def usable_by(self, state: ClusterState, pod_key: str) -> npt.NDArray[np.bool_]:
        """Which GPUs the pod could run on, judged by device class and selectors (its claims'
        requests, or `nvidia.com/gpu` served by device plugins or a DeviceClass); node taints,
        affinity and what is free now are not asked."""
        usable = np.zeros(len(self.gpus), dtype=np.bool_)
        info = state.pods[pod_key]
        shapes: list[tuple[str, tuple[str, ...]]] = []
        for claim in state.pod_claims(info):
            for request in claim.spec.devices.requests:
                options = (request.exactly,) if request.exactly is not None else request.first_available
                for option in options:
                    if option is not None:
                        shapes.append((option.device_class_name, _expressions(option.selectors)))
        if info.requests.get(PLUGIN_GPU_RESOURCE, 0) > 0:
            for slots in self._plugin.values():
                usable[slots] = True
            shapes.extend(
                (name, ())
                for name, device_class in sorted(state.classes.items())
                if device_class.spec.extended_resource_name == PLUGIN_GPU_RESOURCE
            )
        if not shapes:
            return usable
        allocator = Allocator(state.classes, state.slices, features=state.features)
        for class_name, selectors in shapes:
            device_class = state.classes.get(class_name)
            if device_class is None:
                continue
            class_selectors = _expressions(device_class.spec.selectors)
            for node in state.nodes.infos:
                found = candidates(
                    allocator.pools(node.node), allocator.selectors, class_selectors, selectors
                )
                for device in found.devices:
                    device_id = device.info.id
                    entry = self._entries.get((device_id.driver, device_id.pool, device_id.device))
                    if entry is not None:
                        usable[entry.gpu] = True
        return usable

    def plugin_slots(self, node: str) -> list[int]:
        """Device-plugin GPUs of a node (empty when the node publishes DRA GPUs)."""
        return self._plugin.get(node, [])
