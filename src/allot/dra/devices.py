"""Per-device facts derived once from a ResourceSlice and shared by every node and call.

`DeviceInfo` wraps one `Device` of one slice with what the allocator asks
of it again and again: its id, its attributes keyed by fully qualified name
(for constraints), its capacities in a fixed order (for consumable
capacity), its blocking taints, and two content keys:

* `cel_key` identifies what a CEL selector can see (driver, attributes,
  capacity, allowMultipleAllocations); identical devices on different nodes
  share selector results in `allot.cel`'s cache;
* `signature` identifies everything that influences whether the device can
  be allocated (all of the device but its name, its pool and the slice's
  node selection); two devices with equal signatures are interchangeable,
  which is what symmetry pruning relies on.

The expensive parts are computed lazily: a call that never needs them (the
common single-device claim) never pays for them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec.structs import replace

from allot.cel import DeviceInput
from allot.dra.capacity import CapacityKey, DeviceCapacities, consumed_amounts, fits
from allot.dra.ids import DeviceId
from allot.dra.tolerations import blocking
from allot.model.quantity import Quantity
from allot.model.resource import Device, DeviceAttribute, DeviceTaint, ResourceSlice

# A typed attribute value as constraints compare it: (kind, value).
AttrValue = tuple[str, Any]
UNKNOWN_KIND = "?"


def _enc_hook(value: Any) -> Any:
    if isinstance(value, Quantity):
        return str(value.nano)  # exact (and unbounded); the printed form does not matter for identity
    raise NotImplementedError(type(value).__name__)


# Key order is kept as published: equal content listed in another order only costs a cache miss.
_ENCODER = msgspec.msgpack.Encoder(enc_hook=_enc_hook)


def typed_value(attribute: DeviceAttribute) -> AttrValue:
    """The attribute as (kind, value); kind "?" when no (scalar) value is set."""
    if attribute.string_value is not None:
        return ("string", attribute.string_value)
    if attribute.int_value is not None:
        return ("int", attribute.int_value)
    if attribute.bool_value is not None:
        return ("bool", attribute.bool_value)
    if attribute.version_value is not None:
        return ("version", attribute.version_value)
    return (UNKNOWN_KIND, None)


class DeviceInfo:
    """One device of one slice, with lazily derived facts."""

    __slots__ = (
        "_attrs",
        "_caps",
        "_cel_input",
        "_cel_key",
        "_consumed",
        "_signature",
        "allow_multiple",
        "binding_conditions",
        "binds_to_node",
        "blocking_taints",
        "consumes",
        "device",
        "id",
        "per_device",
        "slice",
    )

    def __init__(self, slice_: ResourceSlice, device: Device) -> None:
        spec = slice_.spec
        self.slice = slice_
        self.device = device
        self.id = DeviceId(spec.driver, spec.pool.name, device.name)
        self.per_device = bool(spec.per_device_node_selection)
        self.allow_multiple = bool(device.allow_multiple_allocations)
        self.binding_conditions = bool(device.binding_conditions)
        self.binds_to_node = bool(device.binds_to_node)
        self.consumes = bool(device.consumes_counters)
        self.blocking_taints: tuple[DeviceTaint, ...] = blocking(device.taints) if device.taints else ()
        self._attrs: dict[str, AttrValue] | None = None
        self._caps: DeviceCapacities | None = None
        self._cel_input: DeviceInput | None = None
        self._cel_key: tuple[str, bytes] | None = None
        self._signature: bytes | None = None
        self._consumed: dict[CapacityKey, tuple[tuple[int, ...] | None, bool]] = {}

    @property
    def attributes(self) -> dict[str, AttrValue]:
        """Typed attribute values keyed by fully qualified name (`domain/id`)."""
        attrs = self._attrs
        if attrs is None:
            attrs = {}
            prefix = self.id.driver + "/"
            # An explicitly qualified name wins over the unqualified one of the driver's domain.
            for name, attribute in self.device.attributes.items():
                if "/" not in name:
                    attrs[prefix + name] = typed_value(attribute)
            for name, attribute in self.device.attributes.items():
                if "/" in name:
                    attrs[name] = typed_value(attribute)
            self._attrs = attrs
        return attrs

    @property
    def capacities(self) -> DeviceCapacities:
        caps = self._caps
        if caps is None:
            caps = self._caps = DeviceCapacities(self.device.capacity)
        return caps

    def consumed(
        self, key: CapacityKey, requests: Mapping[str, int] | None
    ) -> tuple[tuple[int, ...] | None, bool]:
        """(amounts one allocation for these capacity requests consumes, whether they fit an unused device).

        Cached per request shape: it depends only on the device and the requests.
        """
        cached = self._consumed.get(key)
        if cached is None:
            caps = self.capacities
            amounts = consumed_amounts(caps, requests)
            cached = (amounts, amounts is not None and fits(caps, amounts, None, None))
            self._consumed[key] = cached
        return cached

    @property
    def has_capacity(self) -> bool:
        return bool(self.device.capacity)

    @property
    def cel_key(self) -> tuple[str, bytes]:
        key = self._cel_key
        if key is None:
            visible = (self.device.attributes, self.device.capacity, self.allow_multiple)
            digest = hashlib.blake2b(_ENCODER.encode(visible), digest_size=16).digest()
            key = self._cel_key = (self.id.driver, digest)
        return key

    @property
    def signature(self) -> bytes:
        sig = self._signature
        if sig is None:
            spec = self.slice.spec
            content = (
                spec.driver,
                spec.pool.name,
                replace(self.device, name=""),
                spec.node_name,
                spec.node_selector,
                spec.all_nodes,
                spec.per_device_node_selection,
            )
            sig = self._signature = hashlib.blake2b(_ENCODER.encode(content), digest_size=16).digest()
        return sig

    @property
    def cel_input(self) -> DeviceInput:
        """The `allot.cel.DeviceInput` for this device (built once)."""
        value = self._cel_input
        if value is None:
            value = self._cel_input = DeviceInput(
                key=self.cel_key,
                driver=self.id.driver,
                attributes=self.device.attributes,
                capacity=self.device.capacity,
                allow_multiple_allocations=self.allow_multiple,
            )
        return value

    def __repr__(self) -> str:
        return f"DeviceInfo({self.id})"
