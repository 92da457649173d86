"""Structural validation the API server would do, for the fields that matter here.

`validate_object` returns every problem of one object as located errors; it
never raises. Rules that need another layer (CEL compilation, quota-tree
cycles) live in that layer and are composed by `allot validate`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from allot.model.base import Object
from allot.model.core import Namespace
from allot.model.errors import Location, ManifestError

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc'), "
    "at most 63 characters"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com'), at most 253 characters"
)


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and DNS1123_LABEL.match(value) is not None


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and DNS1123_SUBDOMAIN.match(value) is not None


Validator = Callable[[Object, Location], list[ManifestError]]

# Kind-specific validators register here (see allot.model.validate_* modules).
KIND_VALIDATORS: dict[type[Object], list[Validator]] = {}


def register(cls: type[Object]) -> Callable[[Validator], Validator]:
    def decorator(fn: Validator) -> Validator:
        KIND_VALIDATORS.setdefault(cls, []).append(fn)
        return fn

    return decorator


def validate_metadata(obj: Object, where: Location) -> list[ManifestError]:
    errors: list[ManifestError] = []
    name = obj.metadata.name
    if not name:
        errors.append(ManifestError(where.at("metadata.name"), "required: every object needs a name"))
    elif isinstance(obj, Namespace):
        if not is_dns_label(name):
            errors.append(ManifestError(where.at("metadata.name"), f"invalid value {name!r}: {LABEL_MESSAGE}"))
    elif not is_dns_subdomain(name):
        errors.append(ManifestError(where.at("metadata.name"), f"invalid value {name!r}: {SUBDOMAIN_MESSAGE}"))
    namespace = obj.metadata.namespace
    if obj.NAMESPACED and namespace and not is_dns_label(namespace):
        errors.append(
            ManifestError(where.at("metadata.namespace"), f"invalid value {namespace!r}: {LABEL_MESSAGE}")
        )
    return errors


def validate_object(obj: Object, where: Location) -> list[ManifestError]:
    """Every structural problem of `obj`; empty when it would be accepted."""
    errors = validate_metadata(obj, where)
    for validator in KIND_VALIDATORS.get(type(obj), ()):
        errors.extend(validator(obj, where))
    return errors
