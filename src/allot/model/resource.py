"""resource.k8s.io records: DeviceClass, ResourceClaim(Template), ResourceSlice, DeviceTaintRule.

The shapes follow resource.k8s.io/v1 as served by Kubernetes 1.34-1.36,
including the beta and alpha fields the allocator understands (prioritized
lists, partitionable devices with shared counters, consumable capacity,
device taints, binding conditions). Field-by-field meaning is described in
docs/model.md; the allocator in `allot.dra` is what gives them behaviour.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from allot.model.base import Condition, Object, ObjectMeta, Record
from allot.model.core import NodeSelector
from allot.model.quantity import Quantity

RESOURCE_GROUP = "resource.k8s.io"

# Limits the API server enforces (resource/v1 types.go) and the allocator relies on.
MAX_REQUESTS_PER_CLAIM = 32
MAX_SUBREQUESTS = 8
MAX_CONSTRAINTS_PER_CLAIM = 32
MAX_CONFIGS_PER_CLAIM = 32
MAX_SELECTORS = 32
MAX_DEVICES_PER_ALLOCATION = 32
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES = 64
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
MAX_COUNTER_SETS_PER_SLICE = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMES_COUNTERS_PER_DEVICE = 2
MAX_TAINTS_PER_DEVICE = 16
MAX_TOLERATIONS_PER_REQUEST = 16
MAX_RESERVED_FOR = 256
MAX_BINDING_CONDITIONS = 4
MAX_ATTRIBUTE_STRING_LENGTH = 64
MAX_VALID_VALUES = 10
MAX_CEL_EXPRESSION_LENGTH = 10 * 1024


# --- selectors, configuration --------------------------------------------------


class CELDeviceSelector(Record, frozen=True):
    expression: str = ""


class DeviceSelector(Record, frozen=True):
    # Only CEL exists today; a selector without it is an unsupported future type.
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(Record, frozen=True):
    driver: str = ""
    parameters: Any = None


class DeviceClassConfiguration(Record, frozen=True):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(Record, frozen=True):
    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None


class DeviceClass(Object, frozen=True):
    API_GROUP: ClassVar[str] = RESOURCE_GROUP
    KIND: ClassVar[str] = "DeviceClass"
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1", "v1beta2", "v1beta1")

    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --- ResourceSlice ------------------------------------------------------------------


class DeviceAttribute(Record, frozen=True):
    """Exactly one typed value. List forms are 1.36+ (DRAListTypeAttributes)."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")
    ints: tuple[int, ...] | None = None
    bools: tuple[bool, ...] | None = None
    strings: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None

    @property
    def value(self) -> int | bool | str | None:
        """The scalar value, whichever type is set (the version as its string)."""
        if self.int_value is not None:
            return self.int_value
        if self.bool_value is not None:
            return self.bool_value
        if self.string_value is not None:
            return self.string_value
        return self.version_value


class CapacityRequestPolicyRange(Record, frozen=True):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(Record, frozen=True):
    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(Record, frozen=True):
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


class Counter(Record, frozen=True):
    value: Quantity


class CounterSet(Record, frozen=True):
    name: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class DeviceCounterConsumption(Record, frozen=True):
    counter_set: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class DeviceTaint(Record, frozen=True):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Device(Record, frozen=True):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = msgspec.field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = msgspec.field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    # Per-device node selection, only with spec.perDeviceNodeSelection.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None


class ResourcePool(Record, frozen=True):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(Record, frozen=True):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()


class ResourceSlice(Object, frozen=True):
    API_GROUP: ClassVar[str] = RESOURCE_GROUP
    KIND: ClassVar[str] = "ResourceSlice"
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1", "v1beta2", "v1beta1")

    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


# --- ResourceClaim --------------------------------------------------------------------


class DeviceToleration(Record, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(Record, frozen=True):
    requests: dict[str, Quantity] = msgspec.field(default_factory=dict)


class ExactDeviceRequest(Record, frozen=True):
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = ""
    count: int | None = None
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(Record, frozen=True):
    name: str = ""
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str = ""
    count: int | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None


class DeviceRequest(Record, frozen=True):
    """Exactly one of `exactly` or `first_available` is set."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


class DeviceConstraint(Record, frozen=True):
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(Record, frozen=True):
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(Record, frozen=True):
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()


class ResourceClaimSpec(Record, frozen=True):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(Record, frozen=True):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, Quantity] | None = None


class DeviceAllocationConfiguration(Record, frozen=True):
    source: str = ""
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(Record, frozen=True):
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()


class AllocationResult(Record, frozen=True):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(Record, frozen=True):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class NetworkDeviceData(Record, frozen=True):
    interface_name: str = ""
    ips: tuple[str, ...] = ()
    hardware_address: str = ""


class AllocatedDeviceStatus(Record, frozen=True):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: tuple[Condition, ...] = ()
    data: Any = None
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(Record, frozen=True):
    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()
    devices: tuple[AllocatedDeviceStatus, ...] = ()


class ResourceClaim(Object, frozen=True):
    API_GROUP: ClassVar[str] = RESOURCE_GROUP
    KIND: ClassVar[str] = "ResourceClaim"
    NAMESPACED: ClassVar[bool] = True
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1", "v1beta2", "v1beta1")

    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(Record, frozen=True):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(Object, frozen=True):
    API_GROUP: ClassVar[str] = RESOURCE_GROUP
    KIND: ClassVar[str] = "ResourceClaimTemplate"
    NAMESPACED: ClassVar[bool] = True
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1", "v1beta2", "v1beta1")

    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# --- DeviceTaintRule ------------------------------------------------------------------


class DeviceTaintSelector(Record, frozen=True):
    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(Record, frozen=True):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = msgspec.field(default_factory=DeviceTaint)


class DeviceTaintRule(Object, frozen=True):
    """Taints every device the selector matches, as if the driver had published it."""

    API_GROUP: ClassVar[str] = RESOURCE_GROUP
    KIND: ClassVar[str] = "DeviceTaintRule"
    API_VERSIONS: ClassVar[tuple[str, ...]] = ("v1alpha3", "v1beta2")

    spec: DeviceTaintRuleSpec = msgspec.field(default_factory=DeviceTaintRuleSpec)
