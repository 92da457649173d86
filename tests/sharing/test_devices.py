"""Fractional and time-sliced GPUs through the real allocator: shares, rounding, limits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.dra import AllocatedState, Allocation, Allocator, Features, SliceIndex
from allot.model.base import ObjectMeta
from allot.model.presets import gpu_sharing as gs
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequirements,
    DeviceAttribute,
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from builders import node
from fuzzing import examples

MIB = 1024 * 1024
GPU_MEMORY = 16 * 1024 * MIB


def claim(name: str, requests: dict[str, str] | None, *, cls: str = gs.HAMI_DRIVER) -> ResourceClaim:
    capacity = (
        CapacityRequirements(requests={k: Quantity.parse(v) for k, v in requests.items()})
        if requests
        else None
    )
    request = DeviceRequest(
        name="gpu", exactly=ExactDeviceRequest(device_class_name=cls, count=1, capacity=capacity)
    )
    return ResourceClaim(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=(request,))),
    )


def one_gpu_allocator(device: object, driver: str = gs.HAMI_DRIVER) -> Allocator:
    slice_ = gs.device_slice("n1", [device], driver=driver)  # type: ignore[list-item]
    classes = {
        c.name: c
        for c in [gs.hami_device_class(), gs.device_class("ts", 'device.driver == "gpu.nvidia.com"')]
    }
    return Allocator(classes, SliceIndex([slice_]), features=Features.all())


def fractional() -> object:
    return gs.shared_gpu_device("hami-gpu-0", attributes={}, memory=Quantity.from_int(GPU_MEMORY))


def consumed(outcome: object) -> dict[str, int]:
    assert isinstance(outcome, Allocation)
    (result,) = outcome.results[0].devices.results
    assert result.share_id and result.consumed_capacity is not None
    return {k: v.value() for k, v in result.consumed_capacity.items()}


def test_fractional_device_is_hamis_model() -> None:
    device = gs.shared_gpu_device("hami-gpu-0", attributes={}, memory=Quantity.parse("16Gi"))
    assert device.allow_multiple_allocations
    assert device.attributes["type"].string_value == "hami-gpu"
    cores, memory = device.capacity["cores"], device.capacity["memory"]
    assert cores.value == Quantity.from_int(100) and cores.request_policy is not None
    assert cores.request_policy.default == Quantity.from_int(100)
    assert (
        cores.request_policy.valid_range is not None
        and cores.request_policy.valid_range.step == Quantity.from_int(1)
    )
    assert memory.request_policy is not None and memory.request_policy.valid_range is not None
    assert memory.request_policy.valid_range.step == Quantity.parse("1Mi")
    assert memory.request_policy.valid_range.min == Quantity.parse("1Mi")


def test_shares_round_up_to_one_percent_and_one_mib() -> None:
    allocator = one_gpu_allocator(fractional())
    outcome = allocator.allocate(
        node("n1"), [claim("a", {"cores": "500m", "memory": "1536Ki"})], AllocatedState()
    )
    # 0.5 % -> 1 %, 1.5 MiB -> 2 MiB: the policy's step rounds up.
    assert consumed(outcome) == {"cores": 1, "memory": 2 * MIB}


def test_a_request_without_amounts_takes_the_whole_gpu() -> None:
    allocator = one_gpu_allocator(fractional())
    state = AllocatedState()
    first = allocator.allocate(node("n1"), [claim("a", None)], state)
    assert consumed(first) == {"cores": 100, "memory": GPU_MEMORY}
    assert isinstance(first, Allocation)
    state.add_allocation(first.results[0])
    assert not isinstance(allocator.allocate(node("n1"), [claim("b", {"cores": "1"})], state), Allocation)


def test_shares_fill_the_gpu_exactly_and_no_further() -> None:
    allocator = one_gpu_allocator(fractional())
    state = AllocatedState()
    for i, cores in enumerate((30, 50, 20)):
        outcome = allocator.allocate(
            node("n1"), [claim(f"c{i}", {"cores": str(cores), "memory": "1Gi"})], state
        )
        assert isinstance(outcome, Allocation)
        state.add_allocation(outcome.results[0])
    assert not isinstance(
        allocator.allocate(node("n1"), [claim("more", {"cores": "1", "memory": "1Mi"})], state), Allocation
    )


@settings(max_examples=examples(40))
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(1, 6000)), min_size=1, max_size=25))
def test_sum_of_shares_never_exceeds_the_capacity(requests: list[tuple[int, int]]) -> None:
    allocator = one_gpu_allocator(fractional())
    state = AllocatedState()
    total_cores = total_memory = 0
    for i, (cores, memory_mib) in enumerate(requests):
        outcome = allocator.allocate(
            node("n1"), [claim(f"c{i}", {"cores": str(cores), "memory": f"{memory_mib}Mi"})], state
        )
        fits = total_cores + cores <= 100 and (total_memory + memory_mib) * MIB <= GPU_MEMORY
        assert isinstance(outcome, Allocation) == fits
        if isinstance(outcome, Allocation):
            used = consumed(outcome)
            assert used == {"cores": cores, "memory": memory_mib * MIB}
            total_cores += cores
            total_memory += memory_mib
            state.add_allocation(outcome.results[0])
        assert total_cores <= 100 and total_memory * MIB <= GPU_MEMORY
        held = state.consumed(next(iter(state.capacity))) if state.capacity else {}
        assert all(q.value() <= {"cores": 100, "memory": GPU_MEMORY}[k] for k, q in held.items())


def test_time_sliced_gpu_takes_exactly_its_replicas() -> None:
    device = gs.time_sliced_device(
        "gpu-0", attributes={"minor": DeviceAttribute(int_value=0)}, memory=Quantity.parse("80Gi"), replicas=4
    )
    allocator = one_gpu_allocator(device, gs.NVIDIA_DRIVER)
    state = AllocatedState()
    for i in range(4):
        outcome = allocator.allocate(node("n1"), [claim(f"p{i}", None, cls="ts")], state)
        assert isinstance(outcome, Allocation), f"replica {i}"
        # One replica, and no memory reserved unless asked for.
        assert consumed(outcome) == {"replicas": 1, "memory": 0}
        state.add_allocation(outcome.results[0])
    assert not isinstance(allocator.allocate(node("n1"), [claim("p4", None, cls="ts")], state), Allocation)


def test_time_sliced_gpu_refuses_two_replicas_for_one_request() -> None:
    device = gs.time_sliced_device("gpu-0", attributes={}, memory=Quantity.parse("80Gi"), replicas=4)
    allocator = one_gpu_allocator(device, gs.NVIDIA_DRIVER)
    outcome = allocator.allocate(node("n1"), [claim("p", {"replicas": "2"}, cls="ts")], AllocatedState())
    assert not isinstance(outcome, Allocation)
