"""The allot.dra API beyond upstream's table: features, ids, state, caches, shareIDs, budget, scorer."""

from __future__ import annotations

from typing import Any

import pytest

from allot.dra import (
    AllocatedState,
    Allocation,
    AllocationError,
    Candidate,
    DeviceId,
    Features,
    NoAllocation,
    SliceIndex,
    parse_device_id,
)
from allot.model.codec import to_data
from allot.model.quantity import Quantity
from allot.model.resource import AllocationResult, DeviceAllocationResult, DeviceRequestAllocationResult

DRIVER = "gpu.example.com"


def gpus(dra: Any, count: int, *, node: str = "node-1", identical: bool = False, **extra: Any) -> Any:
    devices = []
    for i in range(count):
        attributes: dict[str, Any] = {"numa": {"int": i // 4}}
        if not identical:
            attributes["uuid"] = {"string": f"{node}-{i}"}
        devices.append({"name": f"gpu-{i}", "attributes": attributes, **extra})
    return dra.slice(f"{node}-gpus", DRIVER, node, devices, nodeName=node)


def gpu_class(dra: Any) -> Any:
    return dra.device_class("gpu", f'device.driver == "{DRIVER}"')


# -- Features and DeviceId ------------------------------------------------------------------


def test_features() -> None:
    assert Features.all() == Features()
    assert not any(getattr(Features.none(), f) for f in Features.__dataclass_fields__)
    features = Features.from_names(["AdminAccess", "DeviceTaints"])
    assert features.admin_access and features.device_taints and not features.prioritized_list
    assert features.names() == ("AdminAccess", "DeviceTaints")
    assert Features.from_names(Features.all().names()) == Features.all()
    assert not features.experimental and Features.from_names(["ConsumableCapacity"]).experimental
    with pytest.raises(ValueError, match="unknown DRA feature"):
        Features.from_names(["DRAAdminAccess"])


def test_device_id() -> None:
    device = DeviceId("gpu.example.com", "pools/a", "gpu-0")
    assert str(device) == "gpu.example.com/pools/a/gpu-0"
    assert parse_device_id(str(device)) == device
    with pytest.raises(ValueError):
        parse_device_id("driver/device")


# -- AllocatedState -----------------------------------------------------------------------------


def _allocation(*results: DeviceRequestAllocationResult) -> AllocationResult:
    return AllocationResult(devices=DeviceAllocationResult(results=results))


def test_allocated_state_incremental() -> None:
    exclusive = _allocation(DeviceRequestAllocationResult(request="r", driver="d", pool="p", device="a"))
    admin = _allocation(
        DeviceRequestAllocationResult(request="r", driver="d", pool="p", device="b", admin_access=True)
    )
    shared = _allocation(
        DeviceRequestAllocationResult(
            request="r",
            driver="d",
            pool="p",
            device="c",
            share_id="s1",
            consumed_capacity={"mem": Quantity.parse("1Gi")},
        ),
        DeviceRequestAllocationResult(
            request="r",
            driver="d",
            pool="p",
            device="c",
            share_id="s2",
            consumed_capacity={"mem": Quantity.parse("2Gi")},
        ),
    )
    state = AllocatedState()
    version = state.version
    for allocation in (exclusive, admin, shared):
        state.add_allocation(allocation)
    assert state.version > version
    a, b, c = (DeviceId("d", "p", x) for x in "abc")
    assert a in state.exclusive and b not in state.exclusive and not state.in_use(b)
    assert state.shared[c] == 2 and state.in_use(c)
    assert state.consumed(c) == {"mem": Quantity.parse("3Gi")}
    assert set(state.share_ids) == {(c, "s1"), (c, "s2")}
    copy = state.copy()
    state.remove_allocation(shared)
    assert not state.in_use(c) and state.capacity == {}
    assert copy.in_use(c) and copy.serial != state.serial
    state.remove_allocation(exclusive)
    assert not state.exclusive


def test_allocated_state_from_claims(dra: Any) -> None:
    claim = dra.claim("c", [dra.request("gpu", "gpu")])
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 2)])
    outcome = allocator.allocate(dra.node("node-1"), [claim], AllocatedState())
    assert isinstance(outcome, Allocation)
    from msgspec.structs import replace

    allocated = replace(claim, status=replace(claim.status, allocation=outcome.results[0]))
    state = AllocatedState.from_claims([allocated, dra.claim("other", [dra.request("gpu", "gpu")])])
    assert list(state.exclusive) == [DeviceId(DRIVER, "node-1", "gpu-0")]
    second = allocator.allocate(dra.node("node-1"), [dra.claim("d", [dra.request("gpu", "gpu")])], state)
    assert isinstance(second, Allocation)
    assert second.results[0].devices.results[0].device == "gpu-1"


# -- caches ---------------------------------------------------------------------------------------


def test_pools_cached_per_node_until_labels_change(dra: Any) -> None:
    index = SliceIndex([gpus(dra, 2)])
    node = dra.node("node-1", zone="a")
    features = Features.all()
    first = index.gather(node, features)
    assert index.gather(dra.node("node-1", zone="a"), features) is first
    assert index.gather(dra.node("node-1", zone="b"), features) is not first
    assert index.gather(node, Features.none()) is not index.gather(node, features)
    assert [str(p) for p in first.pools] == [f"{DRIVER}/node-1"]


def test_same_claim_shape_does_not_evaluate_cel_again(dra: Any) -> None:
    env = dra.environment()
    allocator = dra.allocator(
        [dra.device_class("gpu-cache", f'device.driver == "{DRIVER}" && true')], [gpus(dra, 8)]
    )
    node = dra.node("node-1")
    allocator.allocate(node, [dra.claim("a", [dra.request("gpu", "gpu-cache")])], AllocatedState())
    evaluations = env.stats.evaluations
    for name in ("b", "c", "d"):
        outcome = allocator.allocate(
            node, [dra.claim(name, [dra.request("gpu", "gpu-cache")])], AllocatedState()
        )
        assert isinstance(outcome, Allocation)
    assert env.stats.evaluations == evaluations


# -- CEL errors ---------------------------------------------------------------------------------


def test_cel_runtime_error_only_when_reached(dra: Any) -> None:
    # gpu-1 lacks the attribute; the selector fails on it only if the search gets there.
    slice_ = dra.slice(
        "s",
        DRIVER,
        "node-1",
        [{"name": "gpu-0", "attributes": {"model": {"string": "a"}}}, {"name": "gpu-1"}],
        nodeName="node-1",
    )
    klass = dra.device_class("gpu-model", f'device.attributes["{DRIVER}"].model == "a"')
    allocator = dra.allocator([klass], [slice_])
    claim = dra.claim("c", [dra.request("gpu", "gpu-model")])
    assert isinstance(allocator.allocate(dra.node("node-1"), [claim], AllocatedState()), Allocation)
    busy = dra.state(devices=[f"{DRIVER}/node-1/gpu-0"])
    with pytest.raises(AllocationError, match="class gpu-model: selector #0: CEL runtime error: no such key"):
        allocator.allocate(dra.node("node-1"), [claim], busy)


def test_validation_errors_are_fatal(dra: Any) -> None:
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 1)])
    node = dra.node("node-1")
    bad = dra.claim("c", [dra.request("gpu", "gpu", count=33)])
    with pytest.raises(
        AllocationError, match="claim default/c: number of requested devices 33 exceeds the claim limit of 32"
    ):
        allocator.allocate(node, [bad], AllocatedState())
    missing = dra.claim("c", [dra.request("gpu", "nope")])
    with pytest.raises(
        AllocationError,
        match=r'could not retrieve device class nope: deviceclass\.resource\.k8s\.io "nope" not found',
    ):
        allocator.allocate(node, [missing], AllocatedState())


# -- shareIDs ------------------------------------------------------------------------------------


def _shared_setup(dra: Any) -> tuple[Any, Any]:
    slice_ = dra.slice(
        "s",
        DRIVER,
        "node-1",
        [{"name": "gpu-0", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "80Gi"}}}],
        nodeName="node-1",
    )
    return gpu_class(dra), slice_


def test_share_ids_are_deterministic(dra: Any) -> None:
    klass, slice_ = _shared_setup(dra)
    request = dra.request("gpu", "gpu", count=2, capacity={"requests": {"memory": "10Gi"}})
    claims = [dra.claim("a", [request]), dra.claim("b", [request])]

    def share_ids() -> list[str | None]:
        allocator = dra.allocator([klass], [slice_])
        outcome = allocator.allocate(dra.node("node-1"), claims, AllocatedState())
        assert isinstance(outcome, Allocation)
        return [d.share_id for r in outcome.results for d in r.devices.results]

    first = share_ids()
    assert first == share_ids()
    assert len(set(first)) == 4 and all(first)


def test_share_id_factory(dra: Any) -> None:
    klass, slice_ = _shared_setup(dra)
    calls: list[tuple[str, str, DeviceId, int]] = []

    def factory(claim: Any, request: str, device: DeviceId, ordinal: int) -> str:
        calls.append((claim.metadata.name, request, device, ordinal))
        return f"share-{ordinal}"

    allocator = dra.allocator([klass], [slice_], share_ids=factory)
    claim = dra.claim("a", [dra.request("gpu", "gpu", count=2, capacity={"requests": {"memory": "1Gi"}})])
    outcome = allocator.allocate(dra.node("node-1"), [claim], AllocatedState())
    assert isinstance(outcome, Allocation)
    assert [d.share_id for d in outcome.results[0].devices.results] == ["share-0", "share-1"]
    assert calls[0] == ("a", "gpu", DeviceId(DRIVER, "node-1", "gpu-0"), 0)


# -- bounded search (#131730) ----------------------------------------------------------------------


def test_step_budget_stops_exploding_search(dra: Any) -> None:
    # 10 distinct devices, one taken, 10 wanted: upstream explores every ordered subset of the 9 free.
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 10)], step_budget=5_000, symmetry_pruning=False)
    busy = dra.state(devices=[f"{DRIVER}/node-1/gpu-3"])
    claim = dra.claim("c", [dra.request("gpu", "gpu", count=10)])
    outcome = allocator.allocate(dra.node("node-1"), [claim], busy)
    assert isinstance(outcome, NoAllocation)
    assert outcome.budget_exhausted and outcome.steps == 5_001 and outcome.node_error is None
    assert "search stopped after 5001 steps (the step budget is 5000)" in outcome.diagnosis.summary


def test_pruning_turns_permutations_into_subsets(dra: Any) -> None:
    # The same shape with pruning: each request's devices are a set, so 2^9 subsets at most.
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 10)], step_budget=5_000)
    busy = dra.state(devices=[f"{DRIVER}/node-1/gpu-3"])
    claim = dra.claim("c", [dra.request("gpu", "gpu", count=10)])
    outcome = allocator.allocate(dra.node("node-1"), [claim], busy)
    assert isinstance(outcome, NoAllocation) and not outcome.budget_exhausted
    assert outcome.steps <= 2**9 * 2
    # Subsets still explode for large requests; the budget still stops them.
    big = dra.allocator([gpu_class(dra)], [gpus(dra, 24)], step_budget=20_000)
    wide = dra.claim("c", [dra.request("gpu", "gpu", count=24)])
    stopped = big.allocate(dra.node("node-1"), [wide], busy)
    assert isinstance(stopped, NoAllocation) and stopped.budget_exhausted


def test_symmetry_pruning_decides_identical_devices_fast(dra: Any) -> None:
    claim = dra.claim("c", [dra.request("gpu", "gpu", count=12)])
    busy = dra.state(devices=[f"{DRIVER}/node-1/gpu-5"])
    pruned = dra.allocator([gpu_class(dra)], [gpus(dra, 12, identical=True)])
    outcome = pruned.allocate(dra.node("node-1"), [claim], busy)
    assert isinstance(outcome, NoAllocation) and not outcome.budget_exhausted
    assert outcome.steps < 200
    exhaustive = dra.allocator(
        [gpu_class(dra)], [gpus(dra, 12, identical=True)], symmetry_pruning=False, step_budget=20_000
    )
    slow = exhaustive.allocate(dra.node("node-1"), [claim], busy)
    assert isinstance(slow, NoAllocation) and slow.budget_exhausted


def test_symmetry_pruning_with_constraint_groups(dra: Any) -> None:
    # 16 devices identical but for numa (two groups of 8); 9 with one numa value cannot exist.
    claim = dra.claim(
        "c", [dra.request("gpu", "gpu", count=9)], constraints=[{"matchAttribute": f"{DRIVER}/numa"}]
    )
    slice_ = dra.slice(
        "s",
        DRIVER,
        "node-1",
        [{"name": f"gpu-{i}", "attributes": {"numa": {"int": i // 8}}} for i in range(16)],
        nodeName="node-1",
    )
    outcome = dra.allocator([gpu_class(dra)], [slice_]).allocate(
        dra.node("node-1"), [claim], AllocatedState()
    )
    assert isinstance(outcome, NoAllocation) and not outcome.budget_exhausted and outcome.steps < 1_000
    assert "no combination of devices satisfies its constraints (matchAttribute gpu.example.com/numa)" in (
        outcome.diagnosis.summary
    )


# -- choice hook --------------------------------------------------------------------------------------


def _numa_claims(dra: Any) -> list[Any]:
    return [dra.claim("c", [dra.request("gpu", "gpu", count=2)])]


def test_scorer_picks_best_candidate(dra: Any) -> None:
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 8)])
    node = dra.node("node-1")
    seen: list[Candidate] = []

    def prefer_numa_1(candidate: Candidate) -> float:
        seen.append(candidate)
        return sum(p.device.attributes["numa"].int_value or 0 for p in candidate.devices())

    plain = allocator.allocate(node, _numa_claims(dra), AllocatedState())
    scored = allocator.allocate(node, _numa_claims(dra), AllocatedState(), scorer=prefer_numa_1)
    assert isinstance(plain, Allocation) and isinstance(scored, Allocation)
    assert [d.device for d in plain.results[0].devices.results] == ["gpu-0", "gpu-1"]
    assert [d.device for d in scored.results[0].devices.results] == ["gpu-4", "gpu-5"]
    assert scored.score == 2 and scored.candidates == len(seen) > 1
    assert seen[0].index == 0 and seen[0].for_request(0, "gpu")[0].device_id.device == "gpu-0"
    assert all(p.pool == "node-1" and p.driver == DRIVER and not p.shared for p in seen[0].devices())


def test_scorer_ties_keep_upstream_choice(dra: Any) -> None:
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 8)])
    node = dra.node("node-1")
    plain = allocator.allocate(node, _numa_claims(dra), AllocatedState())
    scored = allocator.allocate(node, _numa_claims(dra), AllocatedState(), scorer=lambda c: 1.0)
    assert isinstance(plain, Allocation) and isinstance(scored, Allocation)
    assert [to_data(r) for r in plain.results] == [to_data(r) for r in scored.results]


def test_scorer_is_bounded(dra: Any) -> None:
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 8)], max_solutions=3)
    outcome = allocator.allocate(
        dra.node("node-1"), _numa_claims(dra), AllocatedState(), scorer=lambda c: -c.index
    )
    assert isinstance(outcome, Allocation) and outcome.candidates == 3 and outcome.score == 0


def test_scorer_sees_consumed_capacity(dra: Any) -> None:
    klass, slice_ = _shared_setup(dra)
    allocator = dra.allocator([klass], [slice_])
    claim = dra.claim("a", [dra.request("gpu", "gpu", capacity={"requests": {"memory": "10Gi"}})])
    seen: list[Candidate] = []
    outcome = allocator.allocate(
        dra.node("node-1"), [claim], AllocatedState(), scorer=lambda c: seen.append(c) or 0.0
    )
    assert isinstance(outcome, Allocation)
    picked = next(seen[0].devices())
    assert picked.shared and picked.consumed_capacity == {"memory": Quantity.parse("10Gi")}


def test_scorer_feasibility_matches(dra: Any) -> None:
    allocator = dra.allocator([gpu_class(dra)], [gpus(dra, 2)])
    claim = dra.claim("c", [dra.request("gpu", "gpu", count=3)])
    outcome = allocator.allocate(dra.node("node-1"), [claim], AllocatedState(), scorer=lambda c: 0.0)
    assert isinstance(outcome, NoAllocation)


def test_zero_claims(dra: Any) -> None:
    outcome = dra.allocator([], []).allocate(None, [], AllocatedState())
    assert isinstance(outcome, Allocation) and outcome.results == ()


def test_claim_cache_follows_class_changes(dra: Any) -> None:
    classes = {"gpu": dra.device_class("gpu", 'device.driver == "nobody"')}
    from allot.dra import Allocator

    allocator = Allocator(classes, SliceIndex([gpus(dra, 2)]), selectors=dra.environment())
    claim = dra.claim("c", [dra.request("gpu", "gpu")])
    node = dra.node("node-1")
    assert isinstance(allocator.allocate(node, [claim], AllocatedState()), NoAllocation)
    classes["gpu"] = gpu_class(dra)
    assert isinstance(allocator.allocate(node, [claim], AllocatedState()), Allocation)


def test_many_claims_deep_search(dra: Any) -> None:
    # 40 claims of 8 devices each on 320 devices: the recursion goes thousands of frames deep.
    slice_ = dra.slice("big", DRIVER, "node-1", [{"name": f"gpu-{i}"} for i in range(320)], nodeName="node-1")
    claims = [dra.claim(f"c{i}", [dra.request("gpu", "gpu", count=8)]) for i in range(40)]
    outcome = dra.allocator([gpu_class(dra)], [slice_]).allocate(dra.node("node-1"), claims, AllocatedState())
    assert isinstance(outcome, Allocation)
    devices = [d.device for r in outcome.results for d in r.devices.results]
    assert len(devices) == len(set(devices)) == 320
