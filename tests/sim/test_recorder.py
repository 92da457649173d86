"""The recorder's running totals: GPU shares, fragmentation, tenants' holdings and demand."""

from __future__ import annotations

import pytest

from allot.model.base import ObjectMeta
from allot.model.core import Node, NodeStatus
from allot.model.quantity import Quantity
from allot.model.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
)
from allot.sim.inventory import GpuInventory
from allot.sim.recorder import Recorder
from allot.sim.records import SimResult
from allot.sim.workload import Job, PodShape
from builders import device, device_slice, pod


def plugin_node(name: str, gpus: int) -> Node:
    capacity = {"cpu": Quantity.parse("8"), "nvidia.com/gpu": Quantity.from_int(gpus)}
    return Node(metadata=ObjectMeta(name=name), status=NodeStatus(capacity=capacity, allocatable=capacity))


def shared_gpu_slice(node: str) -> object:
    d = device("gpu-0", {"type": "hami-gpu"}, {"cores": "100", "memory": "80Gi"})
    from msgspec.structs import replace

    return device_slice(node, [replace(d, allow_multiple_allocations=True)], driver="gpu.example.com")


def share(pool: str, cores: int, memory: str) -> AllocationResult:
    result = DeviceRequestAllocationResult(
        request="gpu",
        driver="gpu.example.com",
        pool=pool,
        device="gpu-0",
        consumed_capacity={"cores": Quantity.from_int(cores), "memory": Quantity.parse(memory)},
    )
    return AllocationResult(devices=DeviceAllocationResult(results=(result,)))


def shape(tenant: str, gpus: float) -> PodShape:
    return PodShape(tenant, tenant, pod("p", namespace=tenant), gpus=gpus)


def two_gpu_run() -> SimResult:
    inventory = GpuInventory([plugin_node("n1", 2)], [])
    recorder = Recorder(inventory, ["a", "b"], {"a": "a", "b": "b"})
    ja, jb = Job("a/j", "a", "a", 0.0), Job("b/j", "b", "b", 0.0)
    recorder.arrived(ja, shape("a", 1), 0.0)
    recorder.arrived(jb, shape("b", 1), 0.0)
    recorder.bound("a/j-0", "n1", {}, 1, 0.0, aligned=None, factor=1.0)
    recorder.sample(0.0)
    recorder.bound("b/j-0", "n1", {}, 1, 100.0, aligned=None, factor=1.0)
    recorder.sample(100.0)
    recorder.released("a/j-0", 200.0, completed=True)
    recorder.released("b/j-0", 200.0, completed=True)
    recorder.sample(200.0)
    return recorder.result(scenario="t", policy="p", seed=0, weights=[1, 1], end=200.0, events=4, cycles=3)


def test_device_plugin_gpus_are_counted_and_freed() -> None:
    result = two_gpu_run()
    s = result.samples
    assert list(s.capacity) == [2, 2, 2]
    assert list(s.allocated) == [1, 2, 0]
    assert s.tenant_allocated[1].tolist() == [1, 1]
    assert s.tenant_demand[2].tolist() == [0, 0]
    assert len(result.occupancy.gpu) == 2
    assert set(result.occupancy.gpu.tolist()) == {0, 1}


def test_shared_gpu_takes_its_consumed_capacity_and_fragments() -> None:
    slices = [shared_gpu_slice("n1")]
    node = plugin_node("n1", 0)
    inventory = GpuInventory([node], slices)  # type: ignore[list-item]
    assert len(inventory) == 1
    recorder = Recorder(inventory, ["a"], {"a": "a"})
    recorder.arrived(Job("a/j", "a", "a", 0.0, pods=2), shape("a", 0.3), 0.0)
    recorder.bound("a/j-0", "n1", {"c": share("n1", 30, "10Gi")}, 0, 0.0, aligned=None, factor=1.0)
    recorder.bound("a/j-1", "n1", {"c": share("n1", 30, "40Gi")}, 0, 0.0, aligned=None, factor=1.0)
    recorder.sample(0.0)
    result = recorder.result(scenario="t", policy="p", seed=0, weights=[1], end=10.0, events=1, cycles=1)
    s = result.samples
    assert s.compute[0] == pytest.approx(0.6)
    assert s.memory[0] == pytest.approx(50 / 80)
    assert s.allocated[0] == pytest.approx(50 / 80)  # max(compute, memory) of the GPU
    assert s.fragmented[0] == pytest.approx(1 - 50 / 80)
    assert s.busy[0] == 1
    # The tenant holds max(compute, memory) of each pod's share: 0.3 + 0.5.
    assert s.tenant_allocated[0][0] == pytest.approx(0.8)


def test_waiting_reasons_group_by_normalised_text_however_often_reported() -> None:
    inventory = GpuInventory([plugin_node("n1", 1)], [])
    recorder = Recorder(inventory, ["a"], {"a": "a"})
    for name in ("j1", "j2"):
        recorder.arrived(Job(f"a/{name}", "a", "a", 0.0), shape("a", 1), 0.0)
    full = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    recorder.waiting("a/j1-0", full, 0.0)
    # Reported again (a retry), and for another pod with other counts: one reason, two pods.
    recorder.waiting("a/j1-0", full, 50.0)
    recorder.waiting("a/j2-0", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", 100.0)
    recorder.bound("a/j1-0", "n1", {}, 1, 200.0, aligned=None, factor=1.0)
    result = recorder.result(scenario="s", policy="p", seed=0, weights=[1.0], end=300.0, events=0, cycles=0)
    assert result.pending_reasons == {"no node fits: Insufficient nvidia.com/gpu.": (200.0 + 200.0, 2)}
