"""The conformance suite: every fixture in conformance/cases/ (see conformance/FORMAT.md).

Each fixture is one upstream allocator test case (NNN-*.yaml) or one of
allot's own (x-*.yaml). Results are compared as upstream's harness does:
claims in order, devices within a claim order-insensitively, nodeSelector
terms, requirements and values order-insensitively, config exactly when the
fixture gives it, shareIDs only for presence, errors by substring. A fixture
with `steps` runs with symmetry pruning off and checks upstream's exact
allocateOne count; every other fixture runs with pruning on and off, and both
runs must agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.dra import AllocatedState, Allocation, AllocationError, Features, NoAllocation, parse_device_id
from allot.model.codec import decode, to_data
from allot.model.core import Node
from allot.model.quantity import Quantity
from allot.model.resource import (
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)

CASES = Path(__file__).parent / "conformance" / "cases"


def _case_files() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))


def _quantity_nano(value: Any) -> int:
    return Quantity.coerce(value).nano


def _toleration(raw: Mapping[str, Any]) -> tuple[str, str, str, str, int | None]:
    toleration = decode(dict(raw), DeviceToleration) if not isinstance(raw, DeviceToleration) else raw
    return (
        toleration.key,
        toleration.operator or "Equal",
        toleration.value,
        toleration.effect,
        toleration.toleration_seconds,
    )


def _expected_device(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    consumed = raw.get("consumedCapacity")
    return (
        raw["request"],
        raw["driver"],
        raw["pool"],
        raw["device"],
        bool(raw.get("adminAccess", False)),
        tuple(sorted(_toleration(t) for t in raw.get("tolerations", []))),
        tuple(raw.get("bindingConditions", [])),
        tuple(raw.get("bindingFailureConditions", [])),
        "shareID" in raw,
        None if not consumed else tuple(sorted((k, _quantity_nano(v)) for k, v in consumed.items())),
    )


def _actual_device(result: Any) -> tuple[Any, ...]:
    consumed = result.consumed_capacity
    return (
        result.request,
        result.driver,
        result.pool,
        result.device,
        bool(result.admin_access),
        tuple(sorted(_toleration(t) for t in result.tolerations)),
        tuple(result.binding_conditions),
        tuple(result.binding_failure_conditions),
        bool(result.share_id),
        None if not consumed else tuple(sorted((k, v.nano) for k, v in consumed.items())),
    )


def _requirements(raw: list[Mapping[str, Any]] | None) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((r["key"], r["operator"], tuple(sorted(r.get("values", [])))) for r in raw or [])


def _selector(raw: Mapping[str, Any] | None) -> Any:
    if raw is None:
        return None
    terms = [
        (_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields")))
        for t in raw.get("nodeSelectorTerms", [])
    ]
    return sorted(terms)


def _config(raw: list[Mapping[str, Any]]) -> list[Any]:
    return [
        {"source": c["source"], "requests": list(c.get("requests", [])), "opaque": c.get("opaque")}
        for c in raw
    ]


class Case:
    def __init__(self, path: Path, dra: Any) -> None:
        self.dra = dra
        record = dra.record
        self.path = path
        self.raw: dict[str, Any] = yaml.safe_load(path.read_text())
        self.features = Features.from_names(self.raw.get("features") or [])
        objects = [record(o) for o in self.raw.get("objects") or []]
        self.nodes = {o.metadata.name: o for o in objects if isinstance(o, Node)}
        self.classes = [o for o in objects if isinstance(o, DeviceClass)]
        self.slices = [o for o in objects if isinstance(o, ResourceSlice)]
        self.rules = [o for o in objects if isinstance(o, DeviceTaintRule)]
        self.claims = [record(c) for c in self.raw.get("claims") or []]
        assert all(isinstance(c, ResourceClaim) for c in self.claims)
        node_name = self.raw.get("node")
        self.node = self.nodes[node_name] if node_name is not None else None
        self.expect: dict[str, Any] = self.raw["expect"]

    def state(self) -> AllocatedState:
        state = AllocatedState()
        allocated = self.raw.get("allocated") or {}
        for device in allocated.get("devices", []):
            state.add_device(parse_device_id(device))
        for share in allocated.get("shared", []):
            state.add_share(parse_device_id(share["device"]), str(share["shareID"]))
        for device, amounts in (allocated.get("capacity") or {}).items():
            state.add_capacity(parse_device_id(device), {k: Quantity.coerce(v) for k, v in amounts.items()})
        return state

    def run(self, *, pruning: bool) -> Allocation | NoAllocation | AllocationError:
        subject = self.dra.allocator(
            self.classes, self.slices, features=self.features, rules=self.rules, symmetry_pruning=pruning
        )
        state = self.state()
        before = state.version
        claims = [c for c in self.claims if isinstance(c, ResourceClaim)]
        try:
            outcome = subject.allocate(self.node, claims, state)
        except AllocationError as err:
            return err
        assert state.version == before, "the allocator must not modify AllocatedState"
        return outcome

    def check(self, outcome: Allocation | NoAllocation | AllocationError) -> None:
        expect = self.expect
        if "error" in expect:
            if isinstance(outcome, AllocationError):
                message = outcome.message
            elif isinstance(outcome, NoAllocation) and outcome.node_error:
                message = outcome.node_error
            else:
                pytest.fail(f"expected error {expect['error']!r}, got {outcome!r}")
            assert expect["error"] in message
            return
        if isinstance(outcome, AllocationError):
            pytest.fail(f"unexpected error: {outcome.message}")
        if expect.get("unallocatable"):
            if isinstance(outcome, Allocation):
                assert not self.claims and not outcome.results, (
                    f"expected no allocation, got {outcome.results}"
                )
            else:
                assert outcome.node_error is None, outcome.node_error
            return
        assert isinstance(outcome, Allocation), f"expected an allocation: {outcome.diagnosis.text()}"  # type: ignore[union-attr]
        expected = expect["results"]
        assert len(outcome.results) == len(expected)
        for claim_, want, got in zip(self.claims, expected, outcome.results, strict=True):
            assert want["claim"] == claim_.metadata.name
            self._check_result(want, got)

    @staticmethod
    def _check_result(want: Mapping[str, Any], got: AllocationResult) -> None:
        assert sorted(_actual_device(d) for d in got.devices.results) == sorted(
            _expected_device(d) for d in want["devices"]
        ), f"devices differ: {to_data(got.devices.results)}"
        if "config" in want:
            assert _config(to_data(got.devices.config) if got.devices.config else []) == _config(
                want["config"]
            )
        if "nodeSelector" in want:
            actual = to_data(got.node_selector) if got.node_selector is not None else None
            assert _selector(actual) == _selector(want["nodeSelector"])


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: p.stem)
def test_case(path: Path, dra: Any) -> None:
    case = Case(path, dra)
    steps = case.expect.get("steps")
    if steps is not None:
        outcome = case.run(pruning=False)
        case.check(outcome)
        assert isinstance(outcome, Allocation | NoAllocation)
        assert outcome.steps == steps
        return
    pruned = case.run(pruning=True)
    case.check(pruned)
    exhaustive = case.run(pruning=False)
    case.check(exhaustive)
    if isinstance(pruned, Allocation) and isinstance(exhaustive, Allocation):
        # Symmetry pruning may only skip subtrees that fail: the first allocation is the same.
        assert [to_data(r) for r in pruned.results] == [to_data(r) for r in exhaustive.results]
        assert pruned.steps <= exhaustive.steps


def test_there_are_cases() -> None:
    assert len(_case_files()) >= 180
