"""The syntax tree of a compiled CEL expression, read from the engine's serialized form.

The engine hands out a compiled expression only as a serialized
`google.protobuf.Any` holding a `cel.expr.CheckedExpr` (or `ParsedExpr` when
type checking is off). allot needs the tree for two static analyses
(`allot.cel.domains`, `allot.cel.cost`), so this module decodes the few messages involved
straight from the protobuf wire format, without a protobuf runtime. Field
numbers are those of `cel/expr/syntax.proto` and `checked.proto`.

Only what the analyses use is kept: constants keep their Python value,
struct (message) literals are reduced to their entries.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, TypeAlias

__all__ = [
    "INDEX_FUNCTIONS",
    "Call",
    "Comprehension",
    "Const",
    "CreateList",
    "CreateMap",
    "Expr",
    "Ident",
    "Select",
    "SyntaxDecodeError",
    "children",
    "decode_expression",
]

# The functions CEL's parser makes of `m[k]`, `m[?k]` and `m.?f`.
INDEX_FUNCTIONS: Final = frozenset({"_[_]", "_[?_]", "_?._"})


class SyntaxDecodeError(ValueError):
    """The engine's serialized expression is not what this decoder understands."""


@dataclass(frozen=True, slots=True)
class Const:
    value: object  # None, bool, int, float, str or bytes


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    operand: Expr
    field: str
    test_only: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    args: tuple[Expr, ...] = ()
    target: Expr | None = None


@dataclass(frozen=True, slots=True)
class CreateList:
    elements: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateMap:
    entries: tuple[tuple[Expr | None, Expr], ...] = ()  # (key, value); key None for message fields


@dataclass(frozen=True, slots=True)
class Comprehension:
    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr
    iter_var2: str = ""


@dataclass(frozen=True, slots=True)
class _Unknown:
    """An expression kind this decoder does not model (an empty `Expr`)."""

    kind: int = field(default=0)


Expr: TypeAlias = Const | Ident | Select | Call | CreateList | CreateMap | Comprehension | _Unknown


def children(expr: Expr) -> Iterator[Expr]:
    """The direct subexpressions of `expr`, in source order."""
    if isinstance(expr, Select):
        yield expr.operand
    elif isinstance(expr, Call):
        if expr.target is not None:
            yield expr.target
        yield from expr.args
    elif isinstance(expr, CreateList):
        yield from expr.elements
    elif isinstance(expr, CreateMap):
        for key, value in expr.entries:
            if key is not None:
                yield key
            yield value
    elif isinstance(expr, Comprehension):
        yield from (
            expr.iter_range,
            expr.accu_init,
            expr.loop_condition,
            expr.loop_step,
            expr.result,
        )


_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise SyntaxDecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs; varints and fixed values as int, the rest as bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            size, pos = _varint(data, pos)
            value = data[pos : pos + size]
            pos += size
        elif wire == _FIXED64:
            value = int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire == _FIXED32:
            value = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise SyntaxDecodeError(f"unsupported wire type {wire}")
        if pos > len(data):
            raise SyntaxDecodeError("truncated message")
        yield number, value


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise SyntaxDecodeError("expected a length-delimited field")
    return value


def _int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise SyntaxDecodeError("expected a varint field")
    return value


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _constant(data: bytes) -> Const:
    for number, value in _fields(data):
        if number == 1:
            return Const(None)
        if number == 2:
            return Const(bool(_int(value)))
        if number == 3:
            return Const(_signed64(_int(value)))
        if number == 4:
            return Const(_int(value))
        if number == 5:
            return Const(struct.unpack("<d", _int(value).to_bytes(8, "little"))[0])
        if number == 6:
            return Const(_bytes(value).decode("utf-8"))
        if number == 7:
            return Const(_bytes(value))
    return Const(None)


def _ident(data: bytes) -> Ident:
    name = ""
    for number, value in _fields(data):
        if number == 1:
            name = _bytes(value).decode("utf-8")
    return Ident(name)


def _select(data: bytes) -> Select:
    operand: Expr = _Unknown()
    name, test_only = "", False
    for number, value in _fields(data):
        if number == 1:
            operand = _expr(_bytes(value))
        elif number == 2:
            name = _bytes(value).decode("utf-8")
        elif number == 3:
            test_only = bool(_int(value))
    return Select(operand, name, test_only)


def _call(data: bytes) -> Call:
    target: Expr | None = None
    function = ""
    args: list[Expr] = []
    for number, value in _fields(data):
        if number == 1:
            target = _expr(_bytes(value))
        elif number == 2:
            function = _bytes(value).decode("utf-8")
        elif number == 3:
            args.append(_expr(_bytes(value)))
    return Call(function, tuple(args), target)


def _list(data: bytes) -> CreateList:
    return CreateList(tuple(_expr(_bytes(value)) for number, value in _fields(data) if number == 1))


def _map_entry(data: bytes) -> tuple[Expr | None, Expr]:
    key: Expr | None = None
    entry_value: Expr = _Unknown()
    for number, value in _fields(data):
        if number == 3:
            key = _expr(_bytes(value))
        elif number == 4:
            entry_value = _expr(_bytes(value))
    return key, entry_value


def _struct(data: bytes) -> CreateMap:
    return CreateMap(tuple(_map_entry(_bytes(value)) for number, value in _fields(data) if number == 2))


def _comprehension(data: bytes) -> Comprehension:
    names = {1: "", 3: "", 8: ""}
    parts: dict[int, Expr] = {}
    for number, value in _fields(data):
        if number in names:
            names[number] = _bytes(value).decode("utf-8")
        elif number in (2, 4, 5, 6, 7):
            parts[number] = _expr(_bytes(value))
    unknown = _Unknown()
    return Comprehension(
        iter_var=names[1],
        iter_range=parts.get(2, unknown),
        accu_var=names[3],
        accu_init=parts.get(4, unknown),
        loop_condition=parts.get(5, unknown),
        loop_step=parts.get(6, unknown),
        result=parts.get(7, unknown),
        iter_var2=names[8],
    )


_KINDS: dict[int, Callable[[bytes], Expr]] = {
    3: _constant,
    4: _ident,
    5: _select,
    6: _call,
    7: _list,
    8: _struct,
    9: _comprehension,
}


def _expr(data: bytes) -> Expr:
    for number, value in _fields(data):
        decoder = _KINDS.get(number)
        if decoder is not None:
            return decoder(_bytes(value))
    return _Unknown()


def decode_expression(serialized: bytes) -> Expr:
    """The expression tree of a serialized `Any` holding a `CheckedExpr` or a `ParsedExpr`."""
    type_url, payload = "", b""
    for number, value in _fields(serialized):
        if number == 1:
            type_url = _bytes(value).decode("utf-8")
        elif number == 2:
            payload = _bytes(value)
    # CheckedExpr keeps the expression in field 4, ParsedExpr in field 2.
    wanted = 4 if type_url.endswith("CheckedExpr") else 2
    for number, value in _fields(payload):
        if number == wanted:
            return _expr(_bytes(value))
    raise SyntaxDecodeError(f"no expression in the serialized {type_url or 'value'}")
