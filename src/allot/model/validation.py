"""Structural validation the API server would do, for the fields that matter here.

`validate_object` returns every problem of one object as located errors, in
the API server's wording (see `validate_common`); it never raises. Metadata
rules live here; the rules of each kind live in one module per API group
(`validate_core`, `validate_scheduling`, `validate_runtime`, `validate_resource`,
`validate_slice`, `validate_kueue`), which register themselves with
`validate_registry.register`; this module imports them all.

`validate_together` runs the few rules that need several objects at once
(a claim's admin access and its Namespace's label). Rules that need another
layer (CEL compilation, quota-tree cycles) live in that layer and are
composed by `allot validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# Imported for their side effect: each module registers the validators of its kinds.
from allot.model import (
    validate_batch,
    validate_core,
    validate_kueue,
    validate_pod_placement,
    validate_resource,
    validate_runtime,
    validate_scheduling,
    validate_slice,
    validate_storage,
)
from allot.model.base import Object
from allot.model.core import Namespace
from allot.model.errors import Location, ManifestError
from allot.model.validate_common import (
    DNS1123_LABEL_ERROR,
    DNS1123_SUBDOMAIN_ERROR,
    Problems,
    dns_label,
    dns_subdomain,
    qualified_name,
)
from allot.model.validate_registry import (
    KIND_VALIDATORS,
    SET_VALIDATORS,
    Validator,
    register,
    register_set,
)

# Kept for callers that only need a yes/no answer.
LABEL_MESSAGE = DNS1123_LABEL_ERROR
SUBDOMAIN_MESSAGE = DNS1123_SUBDOMAIN_ERROR

# Object names are DNS subdomains except for these kinds.
NAME_RULES: dict[type[Object], Callable[[str], list[str]]] = {Namespace: dns_label}

# Upstream caps all annotations of an object together (TotalAnnotationSizeLimitB).
MAX_ANNOTATIONS_BYTES = 256 * 1024


def is_dns_label(value: str) -> bool:
    return not dns_label(value)


def is_dns_subdomain(value: str) -> bool:
    return not dns_subdomain(value)


def validate_metadata(obj: Object, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    meta = obj.metadata
    name = meta.name
    if not name:
        if not obj.NAME_REQUIRED:
            pass
        elif meta.generate_name:
            problems.required("metadata.name", "allot needs a name: only the API server expands generateName")
        else:
            problems.required("metadata.name", "name or generateName is required")
    else:
        rule = NAME_RULES.get(type(obj), dns_subdomain)
        problems.each("metadata.name", name, rule(name))
    if obj.NAMESPACED and meta.namespace:
        problems.each("metadata.namespace", meta.namespace, dns_label(meta.namespace))
    problems.labels("metadata.labels", meta.labels)
    size = 0
    for key, value in meta.annotations.items():
        problems.each(f"metadata.annotations[{key}]", key, qualified_name(key.lower()))
        size += len(key.encode()) + len(value.encode())
    if size > MAX_ANNOTATIONS_BYTES:
        problems.too_long("metadata.annotations", MAX_ANNOTATIONS_BYTES)
    return problems.errors


def _internal(where: Location, err: Exception) -> ManifestError:
    # A validator bug must not turn bad input into a traceback; say so instead.
    return ManifestError(where, f"Internal error: validation failed: {type(err).__name__}: {err}")


def validate_object(obj: Object, where: Location) -> list[ManifestError]:
    """Every structural problem of `obj`; empty when it would be accepted."""
    errors = validate_metadata(obj, where)
    for validator in KIND_VALIDATORS.get(type(obj), ()):
        try:
            errors.extend(validator(obj, where))
        except Exception as err:
            errors.append(_internal(where, err))
    return errors


def validate_together(entries: Sequence[tuple[Object, Location]]) -> list[ManifestError]:
    """Problems that only show with several objects side by side (each object valid on its own)."""
    errors: list[ManifestError] = []
    for validator in SET_VALIDATORS:
        try:
            errors.extend(validator(entries))
        except Exception as err:
            errors.append(_internal(Location(), err))
    return errors


__all__ = [
    "KIND_VALIDATORS",
    "LABEL_MESSAGE",
    "SET_VALIDATORS",
    "SUBDOMAIN_MESSAGE",
    "Validator",
    "is_dns_label",
    "is_dns_subdomain",
    "register",
    "register_set",
    "validate_batch",
    "validate_core",
    "validate_kueue",
    "validate_metadata",
    "validate_object",
    "validate_pod_placement",
    "validate_resource",
    "validate_runtime",
    "validate_scheduling",
    "validate_slice",
    "validate_storage",
    "validate_together",
]
