"""Shared wording and format checks for the per-kind validators (`validate_*`).

The API server reports a bad field as `<path>: <type>: <value>: <detail>`
(k8s.io/apimachinery `field.Error`), e.g. `Invalid value: 0: must be greater
than zero` or `Unsupported value: "Foo": supported values: "ExactCount",
"All"`. `Problems` collects errors in that wording, each located with
`Location.at(path)`, so that allot's messages read like kubectl's. The
format checks (`dns_label`, `qualified_name`, ...) return upstream's detail
strings, none when the value is valid; like upstream they never raise.

Paths follow upstream's `field.Path` printing: `.child`, `[index]`, and
`[key]` for map keys (`attributes[gpu.nvidia.com/productName]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from allot.model.base import LabelSelector
from allot.model.errors import Location, ManifestError
from allot.model.quantity import Quantity

# A value upstream leaves out of the message (`field.OmitValueType`).
OMIT: Final = object()

INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)


def go_quote(text: str) -> str:
    """Roughly Go's %q: double quotes, backslash escapes, printable Unicode kept."""
    return json.dumps(text, ensure_ascii=False)


def go_value(value: object) -> str:
    """A bad value as `field.Error` prints it: strings quoted, numbers and bools bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Quantity):
        # Upstream passes quantity.String(), a string, so it is quoted.
        return go_quote(value.canonical())
    return go_quote(str(value))


def byte_length(text: str) -> int:
    """Go's len(): bytes, not characters."""
    return len(text.encode("utf-8", "surrogatepass"))


class Problems:
    """Errors of one object in the API server's wording, each at a field of `where`."""

    __slots__ = ("errors", "where")

    def __init__(self, where: Location) -> None:
        self.where = where
        self.errors: list[ManifestError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(ManifestError(self.where.at(path), message))

    def required(self, path: str, detail: str = "") -> None:
        self.add(path, f"Required value: {detail}" if detail else "Required value")

    def invalid(self, path: str, value: object, detail: str) -> None:
        shown = "Invalid value" if value is OMIT else f"Invalid value: {go_value(value)}"
        self.add(path, f"{shown}: {detail}")

    def unsupported(self, path: str, value: object, supported: Iterable[str]) -> None:
        listed = ", ".join(go_quote(s) for s in supported)
        self.add(path, f"Unsupported value: {go_value(value)}: supported values: {listed}")

    def duplicate(self, path: str, value: object, detail: str = "") -> None:
        message = f"Duplicate value: {go_value(value)}"
        self.add(path, f"{message}: {detail}" if detail else message)

    def too_many(self, path: str, count: int, limit: int) -> None:
        items = "item" if limit == 1 else "items"
        self.add(path, f"Too many: {count}: must have at most {limit} {items}")

    def too_long(self, path: str, limit: int) -> None:
        self.add(path, f"Too long: may not be more than {limit} bytes")

    def forbidden(self, path: str, detail: str) -> None:
        self.add(path, f"Forbidden: {detail}")

    def not_found(self, path: str, value: object, detail: str = "") -> None:
        message = f"Not found: {go_value(value)}"
        self.add(path, f"{message}: {detail}" if detail else message)

    def each(self, path: str, value: object, details: Iterable[str]) -> None:
        """One `Invalid value` per detail, as upstream's `for _, msg := range Is...(v)` loops do."""
        for detail in details:
            self.invalid(path, value, detail)

    # --- frequent shapes ---------------------------------------------------------

    def limit(self, path: str, items: Sequence[object] | Mapping[str, object], limit: int) -> bool:
        """False (and a `Too many`) when over the limit; upstream then skips the items."""
        if len(items) > limit:
            self.too_many(path, len(items), limit)
            return False
        return True

    def enum(self, path: str, value: str, supported: Sequence[str]) -> None:
        if value not in supported:
            self.unsupported(path, value, supported)

    def int_range(self, path: str, value: int, bounds: tuple[int, int]) -> None:
        low, high = bounds
        if not low <= value <= high:
            self.invalid(path, value, f"must be between {low} and {high}, inclusive")

    def nonnegative(self, path: str, value: Quantity) -> None:
        if value.sign() < 0:
            self.invalid(path, value, "must be greater than or equal to 0")

    def label_name(self, path: str, value: str) -> None:
        """metav1 ValidateLabelName, with an empty key reported once as required."""
        if not value:
            self.required(path)
        else:
            self.each(path, value, qualified_name(value))

    def label_value(self, path: str, value: str) -> None:
        self.each(path, value, label_value(value))

    def labels(self, path: str, labels: Mapping[str, str]) -> None:
        for key, value in labels.items():
            self.each(f"{path}[{key}]", key, qualified_name(key))
            self.each(f"{path}[{key}]", value, label_value(value))

    def label_selector(self, path: str, selector: LabelSelector | None) -> None:
        if selector is None:
            return
        self.labels(f"{path}.matchLabels", selector.match_labels)
        for i, requirement in enumerate(selector.match_expressions):
            at = f"{path}.matchExpressions[{i}]"
            operator, values = requirement.operator, requirement.values
            if operator in ("In", "NotIn"):
                if not values:
                    self.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            elif operator in ("Exists", "DoesNotExist"):
                if values:
                    self.forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
            else:
                self.invalid(f"{at}.operator", operator, "not a valid selector operator")
            self.label_name(f"{at}.key", requirement.key)
            for v, value in enumerate(values):
                self.label_value(f"{at}.values[{v}]", value)


def duplicates(keys: Iterable[str]) -> list[tuple[int, str]]:
    """(index, key) of every entry whose key appeared earlier, as upstream's validateSet reports them."""
    seen: set[str] = set()
    found: list[tuple[int, str]] = []
    for index, key in enumerate(keys):
        if key in seen:
            found.append((index, key))
        else:
            seen.add(key)
    return found


# --- formats (k8s.io/apimachinery/pkg/util/validation) ----------------------------


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """Upstream's RegexError, double space before 'or' included."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT: Final = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT: Final = "(" + QUALIFIED_NAME_FMT + ")?"
C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
PERCENT_FMT: Final = "[0-9]+%"

_DNS1123_LABEL = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)
_C_IDENTIFIER = re.compile(C_IDENTIFIER_FMT)
_PERCENT = re.compile(PERCENT_FMT)

DNS1123_LABEL_ERROR: Final = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_ERROR: Final = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character",
    DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_NAME_ERROR: Final = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
LABEL_VALUE_ERROR: Final = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character",
    LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)
C_IDENTIFIER_ERROR: Final = regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'",
    C_IDENTIFIER_FMT,
    "my_name",
    "MY_NAME",
    "MyName",
)
PERCENT_ERROR: Final = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", PERCENT_FMT, "1%", "93%"
)


def dns_label(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL.fullmatch(value):
        errors.append(DNS1123_LABEL_ERROR)
    return errors


def dns_subdomain(value: str) -> list[str]:
    errors = [_max_len(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(DNS1123_SUBDOMAIN_ERROR)
    return errors


def qualified_name(value: str) -> list[str]:
    """A label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_ERROR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + _max_len(63))
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append("name part " + _QUALIFIED_NAME_ERROR)
    return errors


def label_value(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(LABEL_VALUE_ERROR)
    return errors


def c_identifier(value: str) -> list[str]:
    return [] if _C_IDENTIFIER.fullmatch(value) else [C_IDENTIFIER_ERROR]


def percent(value: str) -> list[str]:
    return [] if _PERCENT.fullmatch(value) else [PERCENT_ERROR]


_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?",
    re.ASCII,
)


def is_semver(value: str) -> bool:
    """semver.org 2.0.0, as the DRA version attribute requires (no leading 'v')."""
    return _SEMVER.fullmatch(value) is not None
