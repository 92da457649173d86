"""resource.k8s.io validation: DeviceClass, ResourceClaim, ResourceClaimTemplate, DeviceTaintRule.

Follows k8s.io/kubernetes pkg/apis/resource/validation (1.35) for create,
with upstream's wording. ResourceSlice rules are in `validate_slice`, the
field checks both share in `validate_devices`.

The allocator conformance fixtures deliberately hold claims these rules
reject (an empty class name, an unknown allocation mode ...); they load with
`load_text(..., validate=False)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.model.base import Object
from allot.model.core import Namespace
from allot.model.errors import Location, ManifestError
from allot.model.resource import (
    MAX_CONFIGS_PER_CLAIM,
    MAX_CONSTRAINTS_PER_CLAIM,
    MAX_REQUESTS_PER_CLAIM,
    MAX_SUBREQUESTS,
    MAX_TOLERATIONS_PER_REQUEST,
    CapacityRequirements,
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    DeviceTaintRule,
    DeviceToleration,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)
from allot.model.validate_common import (
    INT64,
    OMIT,
    Problems,
    dns_label,
    dns_subdomain,
    duplicates,
    qualified_name,
)
from allot.model.validate_devices import (
    check_device_taint,
    check_dns_label,
    check_driver_name,
    check_fully_qualified_name,
    check_opaque,
    check_pool_name,
    check_qualified_name,
    check_selectors,
    check_toleration,
)
from allot.model.validate_registry import register, register_set

ALLOCATION_MODES = ("ExactCount", "All")
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
_REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)

# request name -> its subrequest names (None for a request without firstAvailable)
RequestNames = Mapping[str, frozenset[str] | None]


# --- ResourceClaim -----------------------------------------------------------------------------


def _mode_and_count(problems: Problems, path: str, mode: str, count: int | None) -> None:
    if mode == "All":
        if count is not None and count != 0:
            problems.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count is None or count <= 0:
            problems.invalid(f"{path}.count", count if count is not None else 0, "must be greater than zero")
        else:
            problems.int_range(f"{path}.count", count, INT64)
    else:
        problems.unsupported(f"{path}.allocationMode", mode, ALLOCATION_MODES)


def _capacity(problems: Problems, path: str, capacity: CapacityRequirements | None) -> None:
    if capacity is None:
        return
    for name, value in capacity.requests.items():
        check_qualified_name(problems, f"{path}.requests[{name}]", name)
        problems.nonnegative(f"{path}.requests[{name}]", value)


def _device_request_fields(
    problems: Problems,
    path: str,
    *,
    class_name: str,
    selectors: Sequence[DeviceSelector],
    mode: str,
    count: int | None,
    tolerations: Sequence[DeviceToleration],
    capacity: CapacityRequirements | None,
) -> None:
    """What ExactDeviceRequest and DeviceSubRequest share."""
    if not class_name:
        problems.required(f"{path}.deviceClassName")
    else:
        problems.each(f"{path}.deviceClassName", class_name, dns_subdomain(class_name))
    check_selectors(problems, f"{path}.selectors", selectors)
    _mode_and_count(problems, path, mode, count)
    if problems.limit(f"{path}.tolerations", tolerations, MAX_TOLERATIONS_PER_REQUEST):
        for i, toleration in enumerate(tolerations):
            check_toleration(problems, f"{path}.tolerations[{i}]", toleration)
    _capacity(problems, f"{path}.capacity", capacity)


def request_names(devices: DeviceClaim) -> dict[str, frozenset[str] | None]:
    return {
        r.name: (frozenset(s.name for s in r.first_available) if r.first_available else None)
        for r in devices.requests
    }


def _check_request_refs(problems: Problems, path: str, refs: Sequence[str], names: RequestNames) -> None:
    if not problems.limit(path, refs, MAX_REQUESTS_PER_CLAIM):
        return
    for i, ref in enumerate(refs):
        at = f"{path}[{i}]"
        segments = ref.split("/")
        if len(segments) > 2:
            problems.invalid(at, ref, _REQUEST_REF)
            continue
        for segment in segments:
            problems.each(at, segment, dns_label(segment))
        subrequests = names.get(segments[0], frozenset())
        known = segments[0] in names and (len(segments) == 1 or segments[1] in (subrequests or ()))
        if not known:
            problems.invalid(at, ref, _REQUEST_REF)
    for index, ref in duplicates(refs):
        problems.duplicate(f"{path}[{index}]", ref)


def check_device_claim(problems: Problems, path: str, devices: DeviceClaim) -> None:
    requests = devices.requests
    if problems.limit(f"{path}.requests", requests, MAX_REQUESTS_PER_CLAIM):
        for i, request in enumerate(requests):
            at = f"{path}.requests[{i}]"
            check_dns_label(problems, f"{at}.name", request.name)
            exactly, first = request.exactly, request.first_available
            if exactly is not None and first:
                problems.invalid(
                    at,
                    None,
                    "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
                )
            elif exactly is None and not first:
                problems.required(at, "exactly one of `exactly` or `firstAvailable` is required")
            elif exactly is not None:
                _device_request_fields(
                    problems,
                    f"{at}.exactly",
                    class_name=exactly.device_class_name,
                    selectors=exactly.selectors,
                    mode=exactly.allocation_mode,
                    count=exactly.count,
                    tolerations=exactly.tolerations,
                    capacity=exactly.capacity,
                )
            elif problems.limit(f"{at}.firstAvailable", first, MAX_SUBREQUESTS):
                for s, sub in enumerate(first):
                    sub_at = f"{at}.firstAvailable[{s}]"
                    check_dns_label(problems, f"{sub_at}.name", sub.name)
                    _device_request_fields(
                        problems,
                        sub_at,
                        class_name=sub.device_class_name,
                        selectors=sub.selectors,
                        mode=sub.allocation_mode,
                        count=sub.count,
                        tolerations=sub.tolerations,
                        capacity=sub.capacity,
                    )
                for s, name in duplicates(sub.name for sub in first):
                    problems.duplicate(f"{at}.firstAvailable[{s}].name", name)
        for i, name in duplicates(r.name for r in requests):
            problems.duplicate(f"{path}.requests[{i}].name", name)
    names = request_names(devices)
    constraints = devices.constraints
    if problems.limit(f"{path}.constraints", constraints, MAX_CONSTRAINTS_PER_CLAIM):
        for i, constraint in enumerate(constraints):
            at = f"{path}.constraints[{i}]"
            _check_request_refs(problems, f"{at}.requests", constraint.requests, names)
            match, distinct = constraint.match_attribute, constraint.distinct_attribute
            if match is not None and distinct is not None:
                problems.invalid(
                    at,
                    OMIT,
                    'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set',
                )
            elif match is not None:
                check_fully_qualified_name(problems, f"{at}.matchAttribute", match)
            elif distinct is not None:
                check_fully_qualified_name(problems, f"{at}.distinctAttribute", distinct)
            else:
                problems.required(at, 'exactly one of "matchAttribute" or "distinctAttribute" is required')
    if problems.limit(f"{path}.config", devices.config, MAX_CONFIGS_PER_CLAIM):
        for i, config in enumerate(devices.config):
            _check_request_refs(problems, f"{path}.config[{i}].requests", config.requests, names)
            check_opaque(problems, f"{path}.config[{i}]", config.opaque)


def _claim_spec(spec: ResourceClaimSpec, where: Location, path: str) -> list[ManifestError]:
    problems = Problems(where)
    check_device_claim(problems, f"{path}.devices", spec.devices)
    return problems.errors


@register(ResourceClaim)
def validate_claim(claim: ResourceClaim, where: Location) -> list[ManifestError]:
    return _claim_spec(claim.spec, where, "spec")


@register(ResourceClaimTemplate)
def validate_claim_template(template: ResourceClaimTemplate, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    problems.labels("spec.metadata.labels", template.spec.metadata.labels)
    return problems.errors + _claim_spec(template.spec.spec, where, "spec.spec")


# --- DeviceClass, DeviceTaintRule -----------------------------------------------------------------


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name("requests." + name)


@register(DeviceClass)
def validate_device_class(device_class: DeviceClass, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = device_class.spec
    check_selectors(problems, "spec.selectors", spec.selectors)
    if problems.limit("spec.config", spec.config, MAX_CONFIGS_PER_CLAIM):
        for i, config in enumerate(spec.config):
            check_opaque(problems, f"spec.config[{i}]", config.opaque)
    name = spec.extended_resource_name
    if name is not None and not _is_extended_resource_name(name):
        problems.invalid("spec.extendedResourceName", name, "must be a valid extended resource name")
    return problems.errors


@register(DeviceTaintRule)
def validate_taint_rule(rule: DeviceTaintRule, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    selector = rule.spec.device_selector
    if selector is not None:
        if selector.driver is not None:
            check_driver_name(problems, "spec.deviceSelector.driver", selector.driver)
        if selector.pool is not None:
            check_pool_name(problems, "spec.deviceSelector.pool", selector.pool)
        if selector.device is not None:
            check_dns_label(problems, "spec.deviceSelector.device", selector.device)
    check_device_taint(problems, "spec.taint", rule.spec.taint)
    return problems.errors


# --- across objects ------------------------------------------------------------------------------


def _admin_access_requests(devices: DeviceClaim, path: str) -> list[str]:
    return [
        f"{path}.requests[{i}].exactly.adminAccess"
        for i, request in enumerate(devices.requests)
        if request.exactly is not None and request.exactly.admin_access
    ]


@register_set
def validate_admin_access(entries: Sequence[tuple[Object, Location]]) -> list[ManifestError]:
    """Admin access needs the namespace label; checked when the Namespace is among the manifests."""
    namespaces = {obj.name: obj for obj, _ in entries if isinstance(obj, Namespace)}
    errors: list[ManifestError] = []
    for obj, where in entries:
        if isinstance(obj, ResourceClaim):
            fields = _admin_access_requests(obj.spec.devices, "spec.devices")
        elif isinstance(obj, ResourceClaimTemplate):
            fields = _admin_access_requests(obj.spec.spec.devices, "spec.spec.devices")
        else:
            continue
        namespace = namespaces.get(obj.namespace)
        if not fields or namespace is None or namespace.metadata.labels.get(ADMIN_ACCESS_LABEL) == "true":
            continue
        problems = Problems(where)
        for field in fields:
            problems.forbidden(
                field,
                f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace",
            )
        errors.extend(problems.errors)
    return errors
