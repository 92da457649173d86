"""resource.k8s.io ResourceSlice validation.

Follows k8s.io/kubernetes pkg/apis/resource/validation for create, as of
1.35: a slice carries either devices or shared counters, counter sets are
named per pool, and devices using taints or counters lower the per-slice
device limit to 64. Device taint effects are checked as the API server does
(None, NoSchedule, NoExecute); the allocator itself treats unknown effects
like None. Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.model.errors import Location, ManifestError
from allot.model.quantity import Quantity
from allot.model.resource import (
    MAX_ATTRIBUTE_STRING_LENGTH,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    MAX_BINDING_CONDITIONS,
    MAX_CONSUMES_COUNTERS_PER_DEVICE,
    MAX_COUNTER_SETS_PER_SLICE,
    MAX_COUNTERS_PER_SET,
    MAX_DEVICES_PER_SLICE,
    MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
    MAX_TAINTS_PER_DEVICE,
    MAX_VALID_VALUES,
    CapacityRequestPolicyRange,
    Counter,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    ResourceSlice,
    ResourceSliceSpec,
)
from allot.model.validate_common import INT64, OMIT, Problems, byte_length, duplicates, is_semver
from allot.model.validate_core import check_node_name, check_node_selector
from allot.model.validate_devices import (
    check_device_taint,
    check_dns_label,
    check_driver_name,
    check_pool_name,
    check_qualified_name,
)
from allot.model.validate_registry import register

_NODE_FIELDS = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
_DEVICE_NODE_FIELDS = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
    "is set to true in the ResourceSlice spec"
)


def _node_selection(problems: Problems, spec: ResourceSliceSpec) -> None:
    chosen: list[str] = []
    if spec.node_name is not None:
        if spec.node_name:
            chosen.append("`nodeName`")
            check_node_name(problems, "spec.nodeName", spec.node_name)
        else:
            problems.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string")
    if spec.node_selector is not None:
        chosen.append("`nodeSelector`")
        check_node_selector(problems, "spec.nodeSelector", spec.node_selector)
        terms = spec.node_selector.node_selector_terms
        if len(terms) != 1:
            problems.invalid(
                "spec.nodeSelector.nodeSelectorTerms",
                f"{len(terms)} terms",
                "must have exactly one node selector term",
            )
    for flag, value in (
        ("allNodes", spec.all_nodes),
        ("perDeviceNodeSelection", spec.per_device_node_selection),
    ):
        if value:
            chosen.append(f"`{flag}`")
        elif value is not None:
            problems.invalid(f"spec.{flag}", value, "must be either unset or set to true")
    if not chosen:
        problems.required("spec", f"exactly one of {_NODE_FIELDS} is required")
    elif len(chosen) > 1:
        problems.invalid(
            "spec",
            "{" + ", ".join(chosen) + "}",
            f"exactly one of {_NODE_FIELDS} is required, but multiple fields are set",
        )


def _device_node_selection(problems: Problems, path: str, device: Device, per_device: bool) -> None:
    if not per_device:
        if device.node_name is not None or device.node_selector is not None or device.all_nodes is not None:
            problems.invalid(
                path,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
                "is set to true in the ResourceSlice spec",
            )
        return
    chosen: list[str] = []
    if device.node_name is not None:
        if device.node_name:
            chosen.append("`nodeName`")
            check_node_name(problems, f"{path}.nodeName", device.node_name)
        else:
            problems.invalid(f"{path}.nodeName", "", "must not be empty")
    if device.node_selector is not None:
        chosen.append("`nodeSelector`")
        check_node_selector(problems, f"{path}.nodeSelector", device.node_selector)
    if device.all_nodes:
        chosen.append("`allNodes`")
    elif device.all_nodes is not None:
        problems.invalid(f"{path}.allNodes", device.all_nodes, "must be either unset or set to true")
    if not chosen:
        problems.required(path, _DEVICE_NODE_FIELDS)
    elif len(chosen) > 1:
        problems.invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_NODE_FIELDS)


def _attribute(problems: Problems, path: str, attribute: DeviceAttribute) -> None:
    set_fields = 0
    if attribute.int_value is not None:
        set_fields += 1
        problems.int_range(f"{path}.int", attribute.int_value, INT64)
    if attribute.bool_value is not None:
        set_fields += 1
    for name, strings, version in (
        ("string", (attribute.string_value,) if attribute.string_value is not None else None, False),
        ("version", (attribute.version_value,) if attribute.version_value is not None else None, True),
        ("strings", attribute.strings, False),
        ("versions", attribute.versions, True),
    ):
        if strings is None:
            continue
        set_fields += 1
        listed = name.endswith("s")
        if listed and not strings:
            problems.invalid(f"{path}.{name}", "[]", "must not be empty if specified")
        for i, value in enumerate(strings):
            at = f"{path}.{name}[{i}]" if listed else f"{path}.{name}"
            if version and not is_semver(value):
                problems.invalid(at, value, "must be a string compatible with semver.org spec 2.0.0")
            if byte_length(value) > MAX_ATTRIBUTE_STRING_LENGTH:
                problems.too_long(at, MAX_ATTRIBUTE_STRING_LENGTH)
    for name, values in (("ints", attribute.ints), ("bools", attribute.bools)):
        if values is not None:
            set_fields += 1
            if not values:
                problems.invalid(f"{path}.{name}", "[]", "must not be empty if specified")
    if set_fields != 1:
        problems.invalid(path, "" if set_fields == 0 else OMIT, "exactly one value must be specified")


def _range(
    problems: Problems,
    path: str,
    default: Quantity,
    capacity: Quantity,
    valid_range: CapacityRequestPolicyRange,
) -> None:
    low, high, step = valid_range.min, valid_range.max, valid_range.step
    if low is None:
        problems.required(f"{path}.min", "required when validRange is defined")
        return
    if low > capacity:
        problems.invalid(f"{path}.min", low, f"min is larger than capacity value: {capacity.canonical()}")
    if default < low:
        problems.invalid(f"{path}.default", default, f"default is less than min: {low.canonical()}")
    if high is not None:
        if low > high:
            problems.invalid(f"{path}.max", low, f"min is larger than max: {high.canonical()}")
        if high > capacity:
            problems.invalid(
                f"{path}.max", high, f"max is larger than capacity value: {capacity.canonical()}"
            )
        if default > high:
            problems.invalid(f"{path}.default", default, f"default is more than max: {high.canonical()}")
    if step is None:
        return
    if step.sign() <= 0:
        problems.invalid(f"{path}.step", step, "must be greater than zero")
        return
    if low + step > capacity:
        problems.invalid(
            f"{path}.step",
            step,
            f"one step {(low + step).canonical()} is larger than capacity value: {capacity.canonical()}",
        )
    for value in (default, high):
        if value is not None and (value.as_fraction() - low.as_fraction()) % step.as_fraction() != 0:
            problems.invalid(
                f"{path}.step",
                value,
                f"value is not a multiple of a given step ({step.canonical()}) from ({low.canonical()})",
            )


def _request_policy(problems: Problems, path: str, capacity: DeviceCapacity) -> None:
    policy = capacity.request_policy
    if policy is None:
        return
    if policy.valid_values and policy.valid_range is not None:
        problems.forbidden(
            path,
            'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time',
        )
        return
    if not policy.valid_values and policy.valid_range is None:
        return
    default = policy.default
    kind = "validValues" if policy.valid_values else "validRange"
    if default is None:
        problems.required(f"{path}.default", f"required when {kind} is defined")
        return
    if policy.valid_range is not None:
        _range(problems, f"{path}.validRange", default, capacity.value, policy.valid_range)
        return
    values = policy.valid_values
    at = f"{path}.validValues"
    for i in range(len(values) - 1):
        if values[i] > values[i + 1]:
            problems.invalid(f"{at}[{i + 1}]", values[i + 1], "values must be sorted in ascending order")
    if not problems.limit(at, values, MAX_VALID_VALUES):
        return
    for i, option in enumerate(values):
        if option > capacity.value:
            problems.invalid(
                f"{at}[{i}]", option, f"option is larger than capacity value: {capacity.value.canonical()}"
            )
    for i, _ in duplicates(str(v.as_fraction()) for v in values):
        problems.duplicate(f"{at}[{i}]", values[i])
    if default not in values:
        problems.invalid(at, default, "default value is not valid according to the requestPolicy")


def _counters(problems: Problems, path: str, counters: Mapping[str, Counter], limit: int) -> None:
    if not counters:
        problems.required(path)
    elif problems.limit(path, counters, limit):
        for name in counters:
            check_dns_label(problems, f"{path}[{name}]", name)


def _binding_conditions(problems: Problems, path: str, device: Device) -> None:
    conditions, failures = device.binding_conditions, device.binding_failure_conditions
    for name, items in (("bindingConditions", conditions), ("bindingFailureConditions", failures)):
        if problems.limit(f"{path}.{name}", items, MAX_BINDING_CONDITIONS):
            for i, condition in enumerate(items):
                problems.label_name(f"{path}.{name}[{i}]", condition)
        for i, condition in duplicates(items):
            problems.duplicate(f"{path}.{name}[{i}]", condition)
    for i, condition in enumerate(failures):
        if condition in conditions:
            problems.invalid(
                f"{path}.bindingFailureConditions[{i}]",
                condition,
                "bindingFailureConditions must not overlap with bindingConditions",
            )
    if failures and not conditions:
        problems.invalid(
            f"{path}.bindingConditions",
            "[]",
            "bindingConditions are required to use bindingFailureConditions",
        )
    if conditions and not failures:
        problems.invalid(
            f"{path}.bindingFailureConditions",
            "[]",
            "bindingFailureConditions are required to use bindingConditions",
        )


def _device(problems: Problems, path: str, device: Device, per_device: bool) -> None:
    check_dns_label(problems, f"{path}.name", device.name)
    entries = len(device.attributes) + len(device.capacity)
    if entries > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        problems.invalid(
            path,
            entries,
            f"the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}",
        )
    for name, attribute in device.attributes.items():
        check_qualified_name(problems, f"{path}.attributes[{name}]", name)
        _attribute(problems, f"{path}.attributes[{name}]", attribute)
    shared = bool(device.allow_multiple_allocations)
    for name, capacity in device.capacity.items():
        at = f"{path}.capacity[{name}]"
        check_qualified_name(problems, at, name)
        if capacity.request_policy is not None and not shared:
            problems.forbidden(f"{at}.requestPolicy", "allowMultipleAllocations must be true")
        elif shared:
            _request_policy(problems, f"{at}.requestPolicy", capacity)
    if problems.limit(f"{path}.taints", device.taints, MAX_TAINTS_PER_DEVICE):
        for i, taint in enumerate(device.taints):
            check_device_taint(problems, f"{path}.taints[{i}]", taint)
    consumes = device.consumes_counters
    if problems.limit(f"{path}.consumesCounters", consumes, MAX_CONSUMES_COUNTERS_PER_DEVICE):
        for i, consumption in enumerate(consumes):
            at = f"{path}.consumesCounters[{i}]"
            check_dns_label(problems, f"{at}.counterSet", consumption.counter_set)
            _counters(problems, f"{at}.counters", consumption.counters, MAX_COUNTERS_PER_SET)
        for i, name in duplicates(c.counter_set for c in consumes):
            problems.duplicate(f"{path}.consumesCounters[{i}].counterSet", name)
    _device_node_selection(problems, path, device, per_device)
    _binding_conditions(problems, path, device)


def _devices(problems: Problems, devices: Sequence[Device], per_device: bool) -> None:
    advanced = any(d.taints or d.consumes_counters for d in devices)
    limit = MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES if advanced else MAX_DEVICES_PER_SLICE
    if not problems.limit("spec.devices", devices, limit):
        return
    for i, device in enumerate(devices):
        _device(problems, f"spec.devices[{i}]", device, per_device)
    for i, name in duplicates(d.name for d in devices):
        problems.duplicate(f"spec.devices[{i}].name", name)


@register(ResourceSlice)
def validate_slice(resource_slice: ResourceSlice, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = resource_slice.spec
    check_driver_name(problems, "spec.driver", spec.driver)
    check_pool_name(problems, "spec.pool.name", spec.pool.name)
    if spec.pool.resource_slice_count <= 0:
        problems.invalid(
            "spec.pool.resourceSliceCount", spec.pool.resource_slice_count, "must be greater than zero"
        )
    if spec.pool.generation < 0:
        problems.invalid(
            "spec.pool.generation", spec.pool.generation, "must be greater than or equal to zero"
        )
    problems.int_range("spec.pool.generation", spec.pool.generation, INT64)
    problems.int_range("spec.pool.resourceSliceCount", spec.pool.resource_slice_count, INT64)
    _node_selection(problems, spec)
    if spec.devices and spec.shared_counters:
        problems.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")
    _devices(problems, spec.devices, bool(spec.per_device_node_selection))
    counter_sets = spec.shared_counters
    if problems.limit("spec.sharedCounters", counter_sets, MAX_COUNTER_SETS_PER_SLICE):
        for i, counter_set in enumerate(counter_sets):
            at = f"spec.sharedCounters[{i}]"
            check_dns_label(problems, f"{at}.name", counter_set.name)
            _counters(problems, f"{at}.counters", counter_set.counters, MAX_COUNTERS_PER_SET)
        for i, name in duplicates(c.name for c in counter_sets):
            problems.duplicate(f"spec.sharedCounters[{i}].name", name)
    return problems.errors
