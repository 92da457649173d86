"""Decoding errors as located problems: msgspec's message and path, made exact.

msgspec names the path of a bad value (`$.spec.devices[0].capacity[...]`)
but not the key inside a map: it prints `[...]`. To point at the exact
field, `decode_problem` walks the raw manifest along the path and, at each
`[...]`, picks the first entry whose value shows the reported problem (the
wrong type, a missing field, a value that is not a quantity), as msgspec
stops at the first bad entry in order. Paths come back in the API server's
form (`capacity[memory].value`). Nothing here raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from allot.model.quantity import Quantity, QuantityError

_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_EXPECTED = re.compile(r"^Expected `(?P<expected>[^`]+)`, got `(?P<got>[^`]+)`")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`")
_KEY_IN = re.compile(r"^`key` in `(?P<path>[^`]*)`$")
_ANY = "..."


def _type_name(value: Any) -> str:
    """msgspec's name for the type of a decoded YAML/JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _segments(path: str) -> list[str | int]:
    segments: list[str | int] = []
    for name, index in _SEGMENT.findall(path.removeprefix("$")):
        if name:
            segments.append(name)
        else:
            segments.append(_ANY if index == _ANY else int(index))
    return segments


def _step(node: Any, segment: str | int) -> tuple[bool, Any]:
    if isinstance(segment, int):
        if isinstance(node, list) and 0 <= segment < len(node):
            return True, node[segment]
        return False, None
    if isinstance(node, dict) and segment in node:
        return True, node[segment]
    return False, None


def _shows(leaf: Any, message: str) -> bool:
    """Whether `leaf` is a value that msgspec would report with `message`."""
    expected = _EXPECTED.match(message)
    if expected:
        return _type_name(leaf) == expected["got"]
    missing = _MISSING.match(message)
    if missing:
        return isinstance(leaf, dict) and missing["field"] not in leaf
    try:
        Quantity.coerce(leaf)
    except QuantityError:
        return True
    return False


def _matches(node: Any, rest: Sequence[str | int], message: str) -> bool:
    """Whether some value under `node` along `rest` shows the problem."""
    if not rest:
        return _shows(node, message)
    head, tail = rest[0], rest[1:]
    if head == _ANY:
        return isinstance(node, dict) and any(_matches(v, tail, message) for v in node.values())
    found, child = _step(node, head)
    return found and _matches(child, tail, message)


def _resolve(raw: Any, segments: Sequence[str | int], message: str) -> str:
    parts: list[str] = []
    node, known = raw, True
    for i, segment in enumerate(segments):
        if segment == _ANY:
            key = None
            if known and isinstance(node, dict):
                key = next((k for k, v in node.items() if _matches(v, segments[i + 1 :], message)), None)
            parts.append(f"[{key}]" if key is not None else "[...]")
            known, node = (
                key is not None,
                node.get(key) if key is not None and isinstance(node, dict) else None,
            )
        elif isinstance(segment, int):
            parts.append(f"[{segment}]")
            known, node = _step(node, segment) if known else (False, None)
        else:
            parts.append(f".{segment}")
            known, node = _step(node, segment) if known else (False, None)
    return "".join(parts).removeprefix(".")


def _readable(message: str) -> str:
    message = message.replace("`", "")
    if message.startswith("Expected"):
        return "expected" + message[len("Expected") :]
    if message.startswith("Object missing required field "):
        return "required field " + message[len("Object missing required field ") :] + " is missing"
    return message


def decode_problem(err: msgspec.ValidationError, raw: Any) -> tuple[str, str]:
    """(field path, message) for a decoding error of the manifest `raw`; the path may be empty."""
    text = str(err)
    message, sep, where = text.rpartition(" - at ")
    if not sep:
        return "", _readable(text)
    key_in = _KEY_IN.match(where)
    if key_in:
        segments = _segments(key_in["path"])
        path = _resolve(raw, segments, "")
        known, node = True, raw
        for segment in segments:
            known, node = _step(node, segment) if known else (False, None)
        if known and isinstance(node, dict):
            # Every map key of a Kubernetes object is a string.
            bad = next((k for k in node if not isinstance(k, str)), None)
            if bad is not None:
                path = f"{path}[{bad}]"
        return path, f"{_readable(message)} (a map key)"
    return _resolve(raw, _segments(where.strip("`")), message), _readable(message)
