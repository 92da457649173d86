"""The diagnosis of a failed allocation: counts per check and the scheduler's one-line summary."""

from __future__ import annotations

from typing import Any

from allot.dra import AllocatedState, Features, NoAllocation

DRIVER = "gpu.example.com"


def _slice(dra: Any, devices: list[dict[str, Any]], **spec: Any) -> Any:
    spec.setdefault("nodeName", "node-1")
    return dra.slice("gpus", DRIVER, "node-1", devices, **spec)


def _fail(
    dra: Any,
    classes: list[Any],
    slices: list[Any],
    claims: list[Any],
    state: AllocatedState | None = None,
    **options: Any,
) -> NoAllocation:
    outcome = dra.allocator(classes, slices, **options).allocate(
        dra.node("node-1"), claims, state or AllocatedState()
    )
    assert isinstance(outcome, NoAllocation), outcome
    return outcome


def test_all_devices_allocated(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    slice_ = _slice(dra, [{"name": f"gpu-{i}"} for i in range(8)])
    state = dra.state(devices=[f"{DRIVER}/node-1/gpu-{i}" for i in range(8)])
    outcome = _fail(dra, [klass], [slice_], [dra.claim("c1", [dra.request("gpu", "gpu")])], state)
    assert outcome.diagnosis.summary == (
        "cannot allocate all claims: claim default/c1 request gpu: 8 devices considered, 8 already allocated; "
        "0 usable, 1 wanted"
    )
    assert outcome.reason == outcome.diagnosis.summary and str(outcome.diagnosis) == outcome.diagnosis.summary
    [request] = outcome.diagnosis.requests
    assert (request.claim, request.request, request.considered, request.usable, request.wanted) == (
        "default/c1",
        "gpu",
        8,
        0,
        1,
    )
    assert dict(request.rejected) == {"already allocated": 8}


def test_each_check_is_counted(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    other = dra.slice("nics", "nic.example.com", "node-1", [{"name": "nic-0"}], nodeName="node-1")
    devices = [
        {"name": "small", "attributes": {"big": {"bool": False}}},
        {"name": "taken", "attributes": {"big": {"bool": True}}},
        {
            "name": "tainted",
            "attributes": {"big": {"bool": True}},
            "taints": [{"key": "k", "effect": "NoSchedule"}],
        },
        {"name": "full", "attributes": {"big": {"bool": True}}, "capacity": {"memory": {"value": "1Gi"}}},
        {"name": "no-numa", "attributes": {"big": {"bool": True}}},
    ]
    slice_ = _slice(dra, devices)
    request = dra.request(
        "gpu", "gpu", selectors=[{"cel": {"expression": f'device.attributes["{DRIVER}"].big'}}], count=1
    )
    claim = dra.claim("c", [request], constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    state = dra.state(
        devices=[f"{DRIVER}/node-1/taken"], capacity={f"{DRIVER}/node-1/full": {"memory": "1Gi"}}
    )
    outcome = _fail(dra, [klass], [slice_, other], [claim], state)
    [diagnosis] = outcome.diagnosis.requests
    assert diagnosis.considered == 6
    assert dict(diagnosis.rejected) == {
        "rejected by the class selectors": 1,
        "rejected by the request selectors": 1,
        "already allocated": 1,
        "without enough capacity": 1,
        "tainted": 1,
        "lacking a constrained attribute": 1,
    }


def test_pools_and_node_selection(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    incomplete = dra.slice(
        "a",
        DRIVER,
        "pool-a",
        [{"name": "x"}],
        nodeName="node-1",
        count=2,
    )
    invalid = [
        dra.slice(
            "b1",
            DRIVER,
            "pool-b",
            [{"name": "x"}],
            nodeName="node-1",
            count=2,
        ),
        dra.slice(
            "b2",
            DRIVER,
            "pool-b",
            [{"name": "x"}],
            nodeName="node-1",
            count=2,
        ),
    ]
    per_device = dra.slice(
        "c",
        DRIVER,
        "pool-c",
        [{"name": "elsewhere", "nodeName": "node-2"}, {"name": "here", "nodeName": "node-1"}],
        perDeviceNodeSelection=True,
    )
    state = dra.state(devices=[f"{DRIVER}/pool-c/here"])
    outcome = _fail(
        dra, [klass], [incomplete, *invalid, per_device], [dra.claim("c", [dra.request("gpu", "gpu")])], state
    )
    assert outcome.node_error == "invalid resource pools were encountered"
    assert outcome.reason == "invalid resource pools were encountered"
    [diagnosis] = outcome.diagnosis.requests
    assert dict(diagnosis.rejected) == {
        "in incomplete pools": 1,
        "in invalid pools": 2,
        "not on this node": 1,
        "already allocated": 1,
    }
    assert outcome.diagnosis.pools == (
        f"{DRIVER}/pool-a: incomplete (not all slices of its generation are published)",
        f"{DRIVER}/pool-b: invalid: duplicate device name x",
    )
    text = outcome.diagnosis.text()
    assert text.splitlines()[0] == outcome.diagnosis.summary
    assert f"  pool {DRIVER}/pool-b: invalid: duplicate device name x" in text


def test_counters_and_feature_gates(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    devices = dra.slice(
        "d",
        DRIVER,
        "node-1",
        [
            {"name": "part", "consumesCounters": [{"counterSet": "gpu", "counters": {"sm": {"value": "8"}}}]},
            {"name": "bound", "bindingConditions": ["ready"]},
        ],
        nodeName="node-1",
        count=2,
    )
    counters = dra.slice(
        "s",
        DRIVER,
        "node-1",
        [],
        nodeName="node-1",
        count=2,
        sharedCounters=[{"name": "gpu", "counters": {"sm": {"value": "4"}}}],
    )
    features = Features.from_names(["PartitionableDevices"])
    outcome = _fail(
        dra, [klass], [devices, counters], [dra.claim("c", [dra.request("gpu", "gpu")])], features=features
    )
    [diagnosis] = outcome.diagnosis.requests
    assert dict(diagnosis.rejected) == {
        "with binding conditions (feature off)": 1,
        "without enough shared counters": 1,
    }


def test_first_available_lists_every_alternative(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    slice_ = _slice(dra, [{"name": "gpu-0"}])
    claim = dra.claim(
        "c",
        [
            {
                "name": "gpu",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu", "count": 4},
                    {"name": "small", "deviceClassName": "gpu", "count": 2},
                ],
            }
        ],
    )
    outcome = _fail(dra, [klass], [slice_], [claim])
    assert [r.request for r in outcome.diagnosis.requests] == ["gpu/big", "gpu/small"]
    assert outcome.diagnosis.summary == (
        "cannot allocate all claims: claim default/c request gpu/big: 1 devices considered; 1 usable, 4 wanted"
    )


def test_competing_claims(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    slice_ = _slice(dra, [{"name": "gpu-0"}])
    claims = [dra.claim("a", [dra.request("gpu", "gpu")]), dra.claim("b", [dra.request("gpu", "gpu")])]
    outcome = _fail(dra, [klass], [slice_], claims)
    assert outcome.diagnosis.summary == (
        "cannot allocate all claims: enough devices for each request alone, but not for all together "
        "(they compete for devices, shared counters or capacity)"
    )
    assert len(outcome.diagnosis.requests) == 2


def test_all_mode(dra: Any) -> None:
    klass = dra.device_class("gpu", f'device.driver == "{DRIVER}"')
    slice_ = _slice(dra, [{"name": "gpu-0"}, {"name": "gpu-1"}])
    state = dra.state(devices=[f"{DRIVER}/node-1/gpu-1"])
    outcome = _fail(
        dra, [klass], [slice_], [dra.claim("c", [dra.request("gpu", "gpu", allocationMode="All")])], state
    )
    assert outcome.diagnosis.summary == (
        "cannot allocate all claims: claim default/c request gpu: 2 devices considered, 1 already allocated; "
        "all of them wanted"
    )
