"""The `device` a selector sees: `DeviceInput`, and its conversion into CEL values.

`DeviceInput` is what the allocator hands over: the device's driver, its
attributes and capacities as the ResourceSlice lists them, and a key the
caller guarantees identifies that content. `device_values` converts it the
way upstream's `DeviceMatches` does, once per key:

* an attribute or capacity name `domain/id` splits at the first `/`; a name
  without one belongs to the driver's domain, so `model` and
  `gpu.example.com/model` on a `gpu.example.com` device land in one slot;
* attribute values are CEL int, bool, string, or a Semver for versions;
* a version that does not parse, or an attribute with no value set, makes
  every evaluation on the device fail, as upstream converts all attributes
  before it evaluates anything.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from allot.cel import quantity_lib, semver_lib
from allot.cel.errors import CelRuntimeError
from allot.cel.semver import Semver, SemverError
from allot.model.resource import Device, DeviceAttribute, DeviceCapacity

__all__ = ["DeviceInput", "DeviceValues", "device_values", "split_qualified_name"]

_V = TypeVar("_V")

# Every GPU of a model publishes the same versions and capacities; convert each
# distinct value once. Carriers are copied out because the engine receives
# mutable bytearrays and lists.
_VERSIONS: dict[str, list[str] | str] = {}  # version text -> carrier, or the parse error
_QUANTITIES: dict[int, bytearray] = {}  # nano value -> carrier
_CONVERSIONS_SIZE: Final = 4096


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """One device as a selector sees it.

    `key` must change whenever anything else here changes; results are
    cached per (expression, key) for as long as the environment lives.
    """

    key: Hashable
    driver: str
    attributes: Mapping[str, DeviceAttribute]
    capacity: Mapping[str, DeviceCapacity]
    allow_multiple_allocations: bool = False

    @classmethod
    def from_device(cls, key: Hashable, driver: str, device: Device) -> DeviceInput:
        """The input for `device` of a slice published by `driver`."""
        return cls(
            key=key,
            driver=driver,
            attributes=device.attributes,
            capacity=device.capacity,
            allow_multiple_allocations=bool(device.allow_multiple_allocations),
        )


@dataclass(slots=True)
class DeviceValues:
    """A device converted to CEL values, or the error every evaluation on it reports."""

    driver: str
    allow_multiple_allocations: bool
    attributes: dict[str, dict[str, object]]
    capacity: dict[str, dict[str, bytearray]]
    error: CelRuntimeError | None = None
    # Engine activations, per (thread, (attribute domains, capacity domains) added as empty maps).
    activations: dict[tuple[int, tuple[frozenset[str], frozenset[str]]], Any] = field(default_factory=dict)


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of an attribute or capacity name; unqualified names take the driver's domain."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return driver, name
    return domain, ident


def _attribute_value(name: str, attribute: DeviceAttribute) -> object:
    # Upstream's order: int, bool, string, version. List values (1.36's
    # DRAListTypeAttributes) are not part of the 1.35 environment.
    if attribute.int_value is not None:
        return attribute.int_value
    if attribute.bool_value is not None:
        return attribute.bool_value
    if attribute.string_value is not None:
        return attribute.string_value
    if attribute.version_value is not None:
        converted = _version(attribute.version_value)
        if isinstance(converted, str):
            raise CelRuntimeError(f"attribute {name}: parse semantic version: {converted}")
        return list(converted)
    raise CelRuntimeError(f"attribute {name}: unsupported attribute value")


def _version(text: str) -> list[str] | str:
    converted = _VERSIONS.get(text)
    if converted is None:
        try:
            converted = semver_lib.encode(Semver.parse(text))
        except SemverError as err:
            converted = str(err)
        if len(_VERSIONS) >= _CONVERSIONS_SIZE:
            _VERSIONS.clear()
        _VERSIONS[text] = converted
    return converted


def _quantity(nano: int) -> bytearray:
    carrier = _QUANTITIES.get(nano)
    if carrier is None:
        carrier = quantity_lib.encode_nano(nano)
        if len(_QUANTITIES) >= _CONVERSIONS_SIZE:
            _QUANTITIES.clear()
        _QUANTITIES[nano] = carrier
    return bytearray(carrier)


def _unqualified_first(named: Mapping[str, _V]) -> list[tuple[str, _V]]:
    # So that `driver/x` wins over `x` should a slice list both; upstream
    # leaves that to Go's map order.
    return sorted(named.items(), key=lambda item: "/" in item[0])


def device_values(device: DeviceInput) -> DeviceValues:
    """Convert `device`; a bad attribute is recorded in `error`, not raised."""
    values = DeviceValues(
        driver=device.driver,
        allow_multiple_allocations=device.allow_multiple_allocations,
        attributes={},
        capacity={},
    )
    try:
        for name, attribute in _unqualified_first(device.attributes):
            domain, ident = split_qualified_name(name, device.driver)
            values.attributes.setdefault(domain, {})[ident] = _attribute_value(name, attribute)
    except CelRuntimeError as err:
        values.error = err
        return values
    for name, capacity in _unqualified_first(device.capacity):
        domain, ident = split_qualified_name(name, device.driver)
        values.capacity.setdefault(domain, {})[ident] = _quantity(capacity.value.nano)
    return values
