"""Shared helpers for the allot.dra tests: building records from plain data, and a CEL environment.

Helpers are reached through the `dra` fixture (session-scoped, so hypothesis
tests may use it too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from allot.cel import SelectorEnvironment
from allot.dra import AllocatedState, Allocator, Features, SliceIndex, parse_device_id
from allot.model import kinds
from allot.model.base import Object
from allot.model.codec import decode
from allot.model.conversion import to_v1_shape
from allot.model.core import Node
from allot.model.defaults import apply_defaults
from allot.model.quantity import Quantity
from allot.model.resource import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice

_ENVIRONMENTS: dict[bool, SelectorEnvironment] = {}


def environment(consumable_capacity: bool = True) -> SelectorEnvironment:
    env = _ENVIRONMENTS.get(consumable_capacity)
    if env is None:
        env = _ENVIRONMENTS[consumable_capacity] = SelectorEnvironment(
            consumable_capacity=consumable_capacity
        )
    return env


def record(raw: Mapping[str, Any]) -> Object:
    """A manifest as the API server would store it (decoded and defaulted, not validated)."""
    cls = kinds.lookup(raw["apiVersion"], raw["kind"])
    assert cls is not None, f"unknown kind {raw['kind']}"
    obj = apply_defaults(decode(to_v1_shape(dict(raw)), cls))
    return obj


def node(name: str, **labels: str) -> Node:
    result = record({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
    assert isinstance(result, Node)
    return result


def device_class(name: str, *selectors: str, config: Iterable[Mapping[str, Any]] = ()) -> DeviceClass:
    raw = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": s}} for s in selectors], "config": list(config)},
    }
    result = record(raw)
    assert isinstance(result, DeviceClass)
    return result


def slice_(
    name: str,
    driver: str,
    pool: str,
    devices: list[Mapping[str, Any]],
    *,
    count: int = 1,
    generation: int = 1,
    **spec: Any,
) -> ResourceSlice:
    spec["pool"] = {"name": pool, "generation": generation, "resourceSliceCount": count}
    raw = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": driver, "devices": devices, **spec},
    }
    result = record(raw)
    assert isinstance(result, ResourceSlice)
    return result


def claim(
    name: str, requests: list[Mapping[str, Any]], namespace: str = "default", **devices: Any
) -> ResourceClaim:
    raw = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests, **devices}},
    }
    result = record(raw)
    assert isinstance(result, ResourceClaim)
    return result


def request(name: str, device_class_name: str, **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class_name, **exactly}}


def taint_rule(name: str, taint: Mapping[str, Any], **selector: str) -> DeviceTaintRule:
    raw = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {"deviceSelector": selector, "taint": dict(taint)},
    }
    result = record(raw)
    assert isinstance(result, DeviceTaintRule)
    return result


def allocator(
    classes: Iterable[DeviceClass],
    slices: Iterable[ResourceSlice],
    *,
    features: Features | None = None,
    rules: Iterable[DeviceTaintRule] = (),
    **options: Any,
) -> Allocator:
    features = features if features is not None else Features.all()
    return Allocator(
        {c.metadata.name: c for c in classes},
        SliceIndex(slices, rules),
        features=features,
        selectors=environment(features.consumable_capacity),
        **options,
    )


def state(
    devices: Iterable[str] = (),
    shared: Iterable[tuple[str, str]] = (),
    capacity: Mapping[str, Mapping[str, Any]] | None = None,
) -> AllocatedState:
    result = AllocatedState()
    for device in devices:
        result.add_device(parse_device_id(device))
    for device, share in shared:
        result.add_share(parse_device_id(device), share)
    for device, amounts in (capacity or {}).items():
        result.add_capacity(parse_device_id(device), {k: Quantity.coerce(v) for k, v in amounts.items()})
    return result


class Helpers:
    """Namespace handed to tests by the `dra` fixture."""

    environment = staticmethod(environment)
    record = staticmethod(record)
    node = staticmethod(node)
    device_class = staticmethod(device_class)
    slice = staticmethod(slice_)
    claim = staticmethod(claim)
    request = staticmethod(request)
    taint_rule = staticmethod(taint_rule)
    allocator = staticmethod(allocator)
    state = staticmethod(state)


@pytest.fixture(scope="session")
def dra() -> type[Helpers]:
    return Helpers
