"""Reading a scenario file with located errors: every problem names the file, line and field.

`read_yaml(text, file)` parses YAML and remembers the line of every field,
so a problem found later can say `default.yaml:41: jobs[2].duration:
expected a duration such as 90s, 30m or 2h, got 'soon'`. `Field` wraps a
value with its path; its `as_*` accessors check the type, record an error
and return None when the value is wrong, so one pass reports every
problem. Nothing here raises for bad input except `Reader.raise_if_errors`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.quantity import Quantity, QuantityError
from allot.model.strict_yaml import compose_and_load, describe_yaml_error, error_line
from allot.sim.limits import MAX_RATE, MAX_SECONDS

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*/\s*(s|m|h|d)\s*$")
DURATION_HINT = "a duration such as 90s, 30m, 2h, 1h30m or a number of seconds"


def parse_duration(value: Any) -> float | None:
    """Seconds in `90`, `90s`, `30m`, `1h30m`, `2d`, `250ms`; None if it is not a duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position == 0 or position != len(text):
        try:
            total = float(text)
        except ValueError:
            return None
    # "1e99999" reads as infinity: no duration.
    return total if math.isfinite(total) else None


def parse_rate(value: Any) -> float | None:
    """Events per second from `12/h`, `0.5/m`, `3/s`, `100/d` or a plain number per second."""
    if isinstance(value, bool):
        return None
    rate: float | None = None
    if isinstance(value, int | float):
        rate = float(value)
    elif isinstance(value, str):
        match = _RATE.match(value)
        if match:
            rate = float(match.group(1)) / _UNITS[match.group(2)]
    return rate if rate is not None and math.isfinite(rate) else None


def _lines(node: yaml.Node, path: str, into: dict[str, int]) -> None:
    into.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = f"{path}.{key.value}" if path else str(key.value)
                into[child] = key.start_mark.line + 1
                _lines(value, child, into)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, f"{path}[{index}]", into)


class Reader:
    """Collects located errors for one file."""

    def __init__(self, file: str, lines: dict[str, int] | None = None) -> None:
        self.file = file
        self.lines = lines or {}
        self.errors: list[ManifestError] = []

    def location(self, path: str) -> Location:
        probe = path
        while probe and probe not in self.lines:
            shorter = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            probe = shorter if shorter != probe else ""
        line = self.lines.get(probe)
        where = f"{self.file}:{line}" if line is not None else self.file
        return Location(file=where, field=path)

    def error(self, path: str, message: str) -> None:
        self.errors.append(ManifestError(self.location(path), message))

    def raise_if_errors(self) -> None:
        if self.errors:
            raise ManifestErrors(self.errors)


def read_yaml(text: str, file: str) -> tuple[Any, Reader]:
    """The document and a reader that knows its line numbers; ManifestErrors for invalid YAML."""
    try:
        node, data = compose_and_load(text)
    except yaml.YAMLError as err:
        line = error_line(err)
        where = f"{file}:{line}" if line is not None else file
        raise ManifestErrors([ManifestError(Location(file=where), describe_yaml_error(err))]) from None
    lines: dict[str, int] = {}
    if node is not None:
        _lines(node, "", lines)
    return data, Reader(file, lines)


def _bounds(minimum: float | None, maximum: float | None, spec: str) -> str:
    if minimum is not None and maximum is not None:
        return f"from {minimum:{spec}} to {maximum:{spec}}"
    return f"of at least {minimum:{spec}}" if minimum is not None else f"of at most {maximum:{spec}}"


def short_repr(value: Any) -> str:
    """A value for an error message, cut short: a fuzzed value can be a megabyte long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


@dataclass(frozen=True)
class Field:
    """A value at a path in the file; accessors report type errors and return None."""

    reader: Reader
    path: str
    value: Any
    present: bool = True

    def _child(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def error(self, message: str) -> None:
        self.reader.error(self.path, message)

    def expected(self, what: str) -> None:
        self.error(f"expected {what}, got {_kind(self.value)}")

    # -- structure ---------------------------------------------------------------------

    def get(self, name: str) -> Field:
        if isinstance(self.value, dict) and name in self.value:
            return Field(self.reader, self._child(name), self.value[name])
        return Field(self.reader, self._child(name), None, present=False)

    def require(self, name: str, what: str) -> Field:
        child = self.get(name)
        if not child.present or child.value is None:
            child.error(f"required: {what}")
        return child

    def mapping(self, allowed: Sequence[str] | None = None) -> bool:
        """Whether the value is a mapping; with `allowed`, unknown keys are errors."""
        if not self.present or self.value is None:
            return False
        if not isinstance(self.value, dict):
            self.expected("a mapping")
            return False
        if allowed is not None:
            for key in self.value:
                if key not in allowed:
                    self.reader.error(
                        self._child(str(key)), f"unknown field; expected one of: {', '.join(allowed)}"
                    )
        return True

    def items(self) -> Iterator[Field]:
        """List items (a single non-list value is reported)."""
        if not self.present or self.value is None:
            return
        if not isinstance(self.value, list):
            self.expected("a list")
            return
        for index, item in enumerate(self.value):
            yield Field(self.reader, f"{self.path}[{index}]", item)

    def entries(self) -> Iterator[tuple[str, Field]]:
        """Mapping entries with string keys."""
        if not self.mapping():
            return
        for key, value in self.value.items():
            yield str(key), Field(self.reader, self._child(str(key)), value)

    # -- scalars -------------------------------------------------------------------------

    def as_str(self, default: str | None = None) -> str | None:
        if not self.present or self.value is None:
            return default
        if isinstance(self.value, str) and self.value:
            return self.value
        self.expected("a non-empty string")
        return default

    def as_int(
        self, default: int | None = None, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        if not self.present or self.value is None:
            return default
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            low = minimum is not None and self.value < minimum
            if low or (maximum is not None and self.value > maximum):
                self.error(
                    f"expected an integer {_bounds(minimum, maximum, ',')}, got {short_repr(self.value)}"
                )
                return default
            return self.value
        self.expected("an integer")
        return default

    def as_float(
        self, default: float | None = None, *, minimum: float | None = None, maximum: float | None = None
    ) -> float | None:
        if not self.present or self.value is None:
            return default
        value = self.value
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
                self.error(f"expected a number {_bounds(minimum, maximum, 'g')}, got {short_repr(value)}")
                return default
            return float(value)
        self.expected("a number")
        return default

    def as_bool(self, default: bool | None = None) -> bool | None:
        if not self.present or self.value is None:
            return default
        if isinstance(self.value, bool):
            return self.value
        self.expected("true or false")
        return default

    def as_duration(
        self, default: float | None = None, *, positive: bool = False, maximum: float = MAX_SECONDS
    ) -> float | None:
        if not self.present or self.value is None:
            return default
        seconds = parse_duration(self.value)
        if seconds is None or seconds < 0 or (positive and seconds == 0):
            hint = (
                DURATION_HINT.replace("a duration", "a positive duration", 1) if positive else DURATION_HINT
            )
            self.error(f"expected {hint}, got {short_repr(self.value)}")
            return default
        if seconds > maximum:
            self.error(
                f"expected at most {maximum:g} seconds ({maximum / 86400:g} days), got {short_repr(self.value)}"
            )
            return default
        return seconds

    def as_rate(self, maximum: float = MAX_RATE) -> float | None:
        if not self.present or self.value is None:
            return None
        rate = parse_rate(self.value)
        if rate is None or rate <= 0:
            self.error(f"expected a positive rate such as 12/h, 0.5/m or 3/s, got {short_repr(self.value)}")
            return None
        if rate > maximum:
            self.error(f"expected at most {maximum:g} per second, got {short_repr(self.value)}")
            return None
        return rate

    def as_quantity(self) -> Quantity | None:
        if not self.present or self.value is None:
            return None
        if isinstance(self.value, bool) or not isinstance(self.value, int | float | str):
            self.expected("a quantity such as 8, 500m or 64Gi")
            return None
        try:
            return Quantity.coerce(self.value)
        except QuantityError as err:
            self.error(f"expected a quantity such as 8, 500m or 64Gi: {err}")
            return None

    def as_string_map(self) -> dict[str, str]:
        result: dict[str, str] = {}
        for key, item in self.entries():
            if isinstance(item.value, str | int | float) and not isinstance(item.value, bool):
                result[key] = str(item.value)
            else:
                item.expected("a string")
        return result
