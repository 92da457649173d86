"""Field checks shared by the resource.k8s.io validators (`validate_resource`, `validate_slice`).

Driver, pool, device and attribute names, CEL selectors (presence and
length; compiling them is `allot.cel`'s job), device taints and
tolerations, and opaque driver configuration, as
k8s.io/kubernetes pkg/apis/resource/validation checks them, in its wording.
Nothing here raises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from allot.model.resource import (
    MAX_CEL_EXPRESSION_LENGTH,
    MAX_SELECTORS,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    OpaqueDeviceConfiguration,
)
from allot.model.validate_common import INT64, Problems, byte_length, c_identifier, dns_label, dns_subdomain

# Upstream prints these sorted (sets.List).
DEVICE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
DEVICE_TOLERATION_OPERATORS = ("Equal", "Exists")
MAX_DRIVER_NAME_LENGTH = 63
MAX_POOL_NAME_LENGTH = 253
MAX_ID_LENGTH = 32
MAX_OPAQUE_PARAMETERS_BYTES = 10 * 1024


# --- names -------------------------------------------------------------------------------


def check_driver_name(problems: Problems, path: str, driver: str) -> None:
    """A CSI-style driver name: DNS subdomain (case-insensitive) of at most 63 characters."""
    if not driver:
        problems.required(path)
        return
    if len(driver) > MAX_DRIVER_NAME_LENGTH:
        problems.too_long(path, MAX_DRIVER_NAME_LENGTH)
    problems.each(path, driver, dns_subdomain(driver.lower()))


def check_pool_name(problems: Problems, path: str, name: str) -> None:
    """At most 253 characters of '/'-separated DNS subdomains."""
    if not name:
        problems.required(path)
        return
    if len(name) > MAX_POOL_NAME_LENGTH:
        problems.too_long(path, MAX_POOL_NAME_LENGTH)
    for part in name.split("/"):
        problems.each(path, part, dns_subdomain(part))


def check_dns_label(problems: Problems, path: str, name: str) -> None:
    """Device, request, counter and counter-set names."""
    if not name:
        problems.required(path)
    else:
        problems.each(path, name, dns_label(name))


def _c_identifier(problems: Problems, path: str, ident: str) -> None:
    if len(ident) > MAX_ID_LENGTH:
        problems.too_long(path, MAX_ID_LENGTH)
    problems.each(path, ident, c_identifier(ident))


def check_qualified_name(problems: Problems, path: str, name: str) -> None:
    """An attribute or capacity name: a C identifier, or `domain/identifier`."""
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(problems, path, name)
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            problems.invalid(path, "", "the domain must not be empty")
        else:
            check_driver_name(problems, path, domain)
        if not ident:
            problems.invalid(path, "", "the name must not be empty")
        else:
            _c_identifier(problems, path, ident)
    else:
        problems.invalid(path, name, "must not contain more than one slash")


def check_fully_qualified_name(problems: Problems, path: str, name: str) -> None:
    check_qualified_name(problems, path, name)
    if "/" not in name:
        problems.invalid(
            path, name, "a fully qualified name must be a domain and a name separated by a slash"
        )


# --- selectors, taints, tolerations, configuration --------------------------------------------


def check_selectors(problems: Problems, path: str, selectors: Sequence[DeviceSelector]) -> None:
    if not problems.limit(path, selectors, MAX_SELECTORS):
        return
    for i, selector in enumerate(selectors):
        if selector.cel is None:
            problems.required(f"{path}[{i}].cel")
            continue
        expression = selector.cel.expression
        if not expression:
            problems.required(f"{path}[{i}].cel.expression")
        elif byte_length(expression) > MAX_CEL_EXPRESSION_LENGTH:
            problems.too_long(f"{path}[{i}].cel.expression", MAX_CEL_EXPRESSION_LENGTH)


def check_device_taint(problems: Problems, path: str, taint: DeviceTaint) -> None:
    problems.label_name(f"{path}.key", taint.key)
    if taint.value:
        problems.label_value(f"{path}.value", taint.value)
    if not taint.effect:
        problems.required(f"{path}.effect")
    else:
        problems.enum(f"{path}.effect", taint.effect, DEVICE_TAINT_EFFECTS)


def check_toleration(problems: Problems, path: str, toleration: DeviceToleration) -> None:
    if toleration.key:
        problems.label_name(f"{path}.key", toleration.key)
    if toleration.operator == "Exists":
        if toleration.value:
            problems.invalid(f"{path}.value", toleration.value, "must be empty for operator `Exists`")
    elif toleration.operator == "Equal":
        problems.label_value(f"{path}.value", toleration.value)
    elif not toleration.operator:
        problems.required(f"{path}.operator")
    else:
        problems.unsupported(f"{path}.operator", toleration.operator, DEVICE_TOLERATION_OPERATORS)
    if toleration.effect:
        problems.enum(f"{path}.effect", toleration.effect, DEVICE_TAINT_EFFECTS)
    if toleration.toleration_seconds is not None:
        problems.int_range(f"{path}.tolerationSeconds", toleration.toleration_seconds, INT64)


def check_opaque(problems: Problems, path: str, opaque: OpaqueDeviceConfiguration | None) -> None:
    if opaque is None:
        problems.required(f"{path}.opaque")
        return
    check_driver_name(problems, f"{path}.opaque.driver", opaque.driver)
    parameters = opaque.parameters
    at = f"{path}.opaque.parameters"
    if parameters is None:
        problems.required(at)
    elif not isinstance(parameters, dict):
        problems.invalid(at, "<value omitted>", "must be a valid JSON object")
    elif len(json.dumps(parameters, default=str).encode()) > MAX_OPAQUE_PARAMETERS_BYTES:
        problems.too_long(at, MAX_OPAQUE_PARAMETERS_BYTES)
