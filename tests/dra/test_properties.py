"""Property tests: every allocation allot returns obeys every rule, whatever the cluster.

Random small clusters (slices with attributes, capacities, shared devices,
counters and taints; some devices already allocated) and random claims
(counts, All, firstAvailable, selectors, tolerations, capacity requests,
matchAttribute / distinctAttribute constraints). For each returned
allocation an independent checker, written from the API's rules rather than
from the allocator's code, verifies selectors, node reach, counts, exclusive
use (against AllocatedState too), capacity, shared counters, taints and
constraints. With a scorer, and with symmetry pruning off, the allocator
must find an allocation exactly when it finds one without.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allot.dra import AllocatedState, Allocation, AllocationError, DeviceId, NoAllocation
from allot.model.codec import to_data
from allot.model.quantity import Quantity
from allot.model.resource import ResourceClaim, ResourceSlice
from fuzzing import examples

DRIVERS = ("d1", "d2")
EFFECTS = ("NoSchedule", "NoExecute", "None")

# Classes and request selectors, each with the Python predicate it must mean.
Predicate = Callable[[str, dict[str, Any]], bool]


def _attr(device: dict[str, Any], driver: str, name: str) -> Any:
    value = device.get("attributes", {}).get(name)
    if value is None:
        return None
    return next(iter(value.values()))


CLASSES: dict[str, tuple[str, Predicate]] = {
    "any": ('device.driver != ""', lambda driver, d: True),
    "d1": ('device.driver == "d1"', lambda driver, d: driver == "d1"),
    "d2": ('device.driver == "d2"', lambda driver, d: driver == "d2"),
    "exclusive": (
        "device.allowMultipleAllocations == false",
        lambda driver, d: not d.get("allowMultipleAllocations"),
    ),
}
SELECTORS: dict[str, tuple[str, Predicate]] = {
    "numa0": (
        '"numa" in device.attributes[device.driver] && device.attributes[device.driver].numa == 0',
        lambda driver, d: _attr(d, driver, "numa") == 0,
    ),
    "model-a": (
        '"model" in device.attributes[device.driver] && device.attributes[device.driver].model == "a"',
        lambda driver, d: _attr(d, driver, "model") == "a",
    ),
}


@st.composite
def devices(draw: st.DrawFn, driver: str, pool: str, counters: bool) -> list[dict[str, Any]]:
    result = []
    for index in range(draw(st.integers(0, 6))):
        device: dict[str, Any] = {"name": f"dev-{index}", "attributes": {}}
        if draw(st.booleans()):
            device["attributes"]["numa"] = {"int": draw(st.integers(0, 1))}
        if draw(st.booleans()):
            device["attributes"]["model"] = {"string": draw(st.sampled_from(["a", "b"]))}
        if draw(st.booleans()):
            capacity: dict[str, Any] = {"value": str(draw(st.integers(1, 4)))}
            policy = draw(st.sampled_from(["none", "default", "range", "values"]))
            shared = draw(st.booleans())
            if shared:
                device["allowMultipleAllocations"] = True
                if policy == "default":
                    capacity["requestPolicy"] = {"default": "1"}
                elif policy == "range":
                    capacity["requestPolicy"] = {"default": "1", "validRange": {"min": "1", "step": "1"}}
                elif policy == "values":
                    capacity["requestPolicy"] = {"default": "1", "validValues": ["1", "2", "4"]}
            device["capacity"] = {"memory": capacity}
        elif draw(st.integers(0, 4)) == 0:
            device["allowMultipleAllocations"] = True
        if draw(st.integers(0, 4)) == 0:
            device["taints"] = [
                {
                    "key": draw(st.sampled_from(["k1", "k2"])),
                    "value": "v",
                    "effect": draw(st.sampled_from(EFFECTS)),
                }
            ]
        if counters and draw(st.booleans()):
            device["consumesCounters"] = [
                {"counterSet": "cs", "counters": {"c": {"value": str(draw(st.integers(0, 3)))}}}
            ]
        result.append(device)
    return result


@dataclass
class Cluster:
    slices: list[ResourceSlice]
    raw: dict[tuple[str, str], dict[str, Any]]  # (driver, pool) -> raw device slice spec
    counter_totals: dict[tuple[str, str], int]  # (driver, pool) -> value of counter cs/c
    exclusive: list[DeviceId] = field(default_factory=list)
    shared: list[tuple[DeviceId, int]] = field(default_factory=list)  # (device, consumed memory)


@st.composite
def clusters(draw: st.DrawFn, dra: Any) -> Cluster:
    slices: list[ResourceSlice] = []
    raw: dict[tuple[str, str], dict[str, Any]] = {}
    totals: dict[tuple[str, str], int] = {}
    for index in range(draw(st.integers(1, 3))):
        driver = draw(st.sampled_from(DRIVERS))
        pool = f"pool-{index}"
        has_counters = draw(st.booleans())
        reach = draw(st.sampled_from(["node-1", "node-1", "node-1", "all", "node-2"]))
        spec: dict[str, Any] = {"allNodes": True} if reach == "all" else {"nodeName": reach}
        device_list = draw(devices(driver, pool, has_counters))
        count = 2 if has_counters else 1
        slices.append(dra.slice(f"{pool}-devices", driver, pool, device_list, count=count, **spec))
        raw[(driver, pool)] = {"devices": device_list, "reach": reach}
        if has_counters:
            total = draw(st.integers(0, 8))
            totals[(driver, pool)] = total
            slices.append(
                dra.slice(
                    f"{pool}-counters",
                    driver,
                    pool,
                    [],
                    count=2,
                    nodeName="node-1",
                    sharedCounters=[{"name": "cs", "counters": {"c": {"value": str(total)}}}],
                )
            )
    cluster = Cluster(slices=slices, raw=raw, counter_totals=totals)
    for (driver, pool), spec in raw.items():
        for device in spec["devices"]:
            device_id = DeviceId(driver, pool, device["name"])
            roll = draw(st.integers(0, 7))
            if roll == 0:
                cluster.exclusive.append(device_id)
            elif roll == 1 and device.get("allowMultipleAllocations"):
                cluster.shared.append((device_id, draw(st.integers(0, 2))))
    return cluster


@st.composite
def requests(draw: st.DrawFn, name: str) -> dict[str, Any]:
    def exact() -> dict[str, Any]:
        body: dict[str, Any] = {
            "deviceClassName": draw(st.sampled_from(["any", "any", "d1", "d2", "exclusive"]))
        }
        mode = draw(st.integers(0, 9))
        if mode == 0:
            body["allocationMode"] = "All"
        else:
            body["count"] = draw(st.integers(1, 2))
        if draw(st.integers(0, 2)) == 0:
            body["selectors"] = [
                {"cel": {"expression": SELECTORS[draw(st.sampled_from(sorted(SELECTORS)))][0]}}
            ]
        if draw(st.booleans()):
            body["tolerations"] = [
                draw(
                    st.sampled_from(
                        [
                            {"key": "k1", "operator": "Exists"},
                            {"key": "k2", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                            {"operator": "Exists", "effect": "NoExecute"},
                        ]
                    )
                )
            ]
        if draw(st.integers(0, 3)) == 0:
            body["capacity"] = {"requests": {"memory": str(draw(st.integers(1, 3)))}}
        return body

    if draw(st.integers(0, 3)) == 0:
        subs = [{"name": f"s{i}", **exact()} for i in range(draw(st.integers(1, 2)))]
        return {"name": name, "firstAvailable": subs}
    return {"name": name, "exactly": exact()}


@st.composite
def claims(draw: st.DrawFn, dra: Any) -> list[ResourceClaim]:
    result = []
    for index in range(draw(st.sampled_from([1, 1, 2]))):
        reqs = [draw(requests(f"r{i}")) for i in range(draw(st.sampled_from([1, 1, 2])))]
        constraints = []
        kind = draw(st.sampled_from(["none", "none", "none", "match", "distinct"]))
        if kind != "none":
            field_name = "matchAttribute" if kind == "match" else "distinctAttribute"
            attribute = draw(st.sampled_from(["d1/numa", "d1/model", "d2/numa"]))
            scope = draw(st.sampled_from([[], ["r0"]]))
            constraints.append({field_name: attribute, "requests": scope})
        result.append(dra.claim(f"c{index}", reqs, constraints=constraints))
    return result


def state_of(cluster: Cluster) -> AllocatedState:
    state = AllocatedState()
    for device in cluster.exclusive:
        state.add_device(device)
    for index, (device, memory) in enumerate(cluster.shared):
        state.add_share(device, f"share-{index}")
        if memory:
            state.add_capacity(device, {"memory": Quantity.from_int(memory)})
    return state


def _request_spec(claim: ResourceClaim, name: str) -> tuple[dict[str, Any], str]:
    """The raw request (or sub-request) a result names, and its top-level name."""
    base, _, sub = name.partition("/")
    data = to_data(claim.spec.devices)
    for request in data["requests"]:
        if request["name"] == base:
            if sub:
                return next(s for s in request["firstAvailable"] if s["name"] == sub), base
            return request["exactly"], base
    raise AssertionError(f"unknown request {name}")


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def check(cluster: Cluster, claims_: list[ResourceClaim], outcome: Allocation) -> None:
    """Every rule of the API, checked independently of the allocator."""
    state = state_of(cluster)
    devices = {
        DeviceId(driver, pool, d["name"]): (driver, pool, d, spec["reach"])
        for (driver, pool), spec in cluster.raw.items()
        for d in spec["devices"]
    }
    previously_used = set(cluster.exclusive) | {d for d, _ in cluster.shared}
    exclusive_use: Counter[DeviceId] = Counter()
    consumed: Counter[DeviceId] = Counter()
    new_devices: set[DeviceId] = set()
    assert len(outcome.results) == len(claims_)
    for claim, result in zip(claims_, outcome.results, strict=True):
        per_request: dict[str, list[DeviceId]] = {}
        chosen: dict[str, str] = {}
        for entry in result.devices.results:
            device_id = DeviceId(entry.driver, entry.pool, entry.device)
            assert device_id in devices, f"unknown device {device_id}"
            driver, pool, device, reach = devices[device_id]
            assert reach in ("node-1", "all"), "device not reachable from the node"
            request, base = _request_spec(claim, entry.request)
            assert chosen.setdefault(base, entry.request) == entry.request, "two alternatives of one request"
            per_request.setdefault(entry.request, []).append(device_id)
            klass = next(k for k, (expr, _) in CLASSES.items() if k == request["deviceClassName"])
            assert CLASSES[klass][1](driver, device), "class selector violated"
            for selector in request.get("selectors", []):
                predicate = next(p for e, p in SELECTORS.values() if e == selector["cel"]["expression"])
                assert predicate(driver, device), "request selector violated"
            for taint in device.get("taints", []):
                if taint["effect"] in ("NoSchedule", "NoExecute"):
                    assert _tolerated(taint, request.get("tolerations", [])), "untolerated taint"
            shared = bool(device.get("allowMultipleAllocations"))
            assert device_id not in cluster.exclusive, "device allocated exclusively elsewhere"
            if shared:
                assert entry.share_id
                if device.get("capacity"):
                    amount = entry.consumed_capacity["memory"].nano if entry.consumed_capacity else 0
                    wanted = request.get("capacity", {}).get("requests", {}).get("memory")
                    if wanted is not None:
                        assert amount >= Quantity.coerce(wanted).nano
                    consumed[device_id] += amount
            else:
                assert not entry.share_id
                assert device_id not in {d for d, _ in cluster.shared}, (
                    "shared elsewhere, used exclusively here"
                )
                exclusive_use[device_id] += 1
                wanted = request.get("capacity", {}).get("requests", {}).get("memory")
                if wanted is not None:
                    cap = device.get("capacity", {}).get("memory")
                    assert cap is not None and Quantity.coerce(cap["value"]) >= Quantity.coerce(wanted)
            new_devices.add(device_id)
        for name, picked in per_request.items():
            request, _ = _request_spec(claim, name)
            if request.get("allocationMode") == "All":
                assert picked
            else:
                assert len(picked) == request.get("count", 1), f"{name}: wrong number of devices"
        for constraint in to_data(claim.spec.devices).get("constraints", []):
            scope = constraint.get("requests") or []
            values = []
            for entry in result.devices.results:
                if scope and entry.request.split("/")[0] not in scope and entry.request not in scope:
                    continue
                domain, attribute = (
                    constraint.get("matchAttribute") or constraint["distinctAttribute"]
                ).split("/")
                driver, _, device, _ = devices[DeviceId(entry.driver, entry.pool, entry.device)]
                assert driver == domain, "device lacks the constrained attribute"
                raw = device.get("attributes", {}).get(attribute)
                assert raw is not None, "device lacks the constrained attribute"
                values.append(next(iter(raw.items())))
            if "matchAttribute" in constraint:
                assert len(set(values)) <= 1, "matchAttribute violated"
            else:
                assert len(set(values)) == len(values), "distinctAttribute violated"
    assert all(n == 1 for n in exclusive_use.values()), "exclusive device allocated twice"
    for device_id, amount in consumed.items():
        _, _, device, _ = devices[device_id]
        existing = state.capacity.get(device_id, {}).get("memory", 0)
        assert existing + amount <= Quantity.coerce(device["capacity"]["memory"]["value"]).nano, (
            "capacity exceeded"
        )
    for (driver, pool), total in cluster.counter_totals.items():
        in_pool = [d for d in devices if d.driver == driver and d.pool == pool]
        fresh = [
            d for d in new_devices - previously_used if d in in_pool and devices[d][2].get("consumesCounters")
        ]
        if not fresh:
            continue
        used = 0
        for device_id in set(in_pool) & (new_devices | previously_used):
            for entry in devices[device_id][2].get("consumesCounters", []):
                used += Quantity.coerce(entry["counters"]["c"]["value"]).nano
        assert used <= Quantity.from_int(total).nano, "shared counters over-committed"


def _allocate(dra: Any, cluster: Cluster, claims_: list[ResourceClaim], **options: Any) -> Any:
    scorer = options.pop("scorer", None)
    classes = [dra.device_class(name, expression) for name, (expression, _) in CLASSES.items()]
    allocator = dra.allocator(classes, cluster.slices, step_budget=20_000, **options)
    state = state_of(cluster)
    version = state.version
    try:
        outcome = allocator.allocate(dra.node("node-1"), claims_, state, scorer=scorer)
    except AllocationError as err:
        return err.message
    assert state.version == version
    return outcome


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_allocations_obey_every_rule(dra: Any, data: st.DataObject) -> None:
    cluster = data.draw(clusters(dra))
    claims_ = data.draw(claims(dra))
    outcome = _allocate(dra, cluster, claims_)
    if isinstance(outcome, Allocation):
        check(cluster, claims_, outcome)
    elif isinstance(outcome, NoAllocation):
        assert outcome.diagnosis.summary.startswith("cannot allocate all claims")


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scorer_and_pruning_keep_feasibility(dra: Any, data: st.DataObject) -> None:
    cluster = data.draw(clusters(dra))
    claims_ = data.draw(claims(dra))
    plain = _allocate(dra, cluster, claims_)
    exhaustive = _allocate(dra, cluster, claims_, symmetry_pruning=False)
    weights = {name: data.draw(st.integers(-3, 3)) for name in [f"dev-{i}" for i in range(6)]}
    scored = _allocate(
        dra, cluster, claims_, scorer=lambda c: float(sum(weights[p.device_id.device] for p in c.devices()))
    )
    kinds = {type(plain), type(exhaustive), type(scored)}
    if isinstance(plain, str):
        assert plain == exhaustive == scored
        return
    if isinstance(plain, NoAllocation) and plain.budget_exhausted:
        return  # the unpruned search may use its budget; nothing to compare
    if isinstance(exhaustive, NoAllocation) and exhaustive.budget_exhausted:
        return
    assert len(kinds) == 1, (plain, exhaustive, scored)
    if isinstance(plain, Allocation):
        assert [to_data(r) for r in plain.results] == [to_data(r) for r in exhaustive.results]
        check(cluster, claims_, scored)
        assert scored.score is not None
