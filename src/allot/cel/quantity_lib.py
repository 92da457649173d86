"""Kubernetes' CEL quantity library (`quantity()`, `compareTo`, `add` ...) over `allot.model.quantity`.

A Quantity crosses into CEL as `bytes` holding an order-preserving encoding
of its exact value in nano-units: equal values encode to equal bytes, so
CEL's `==` is numeric (`quantity("1Gi") == quantity("1024Mi")`), and byte
order is numeric order. The format (`Gi` or `G`) is not carried: nothing in
the CEL library prints a quantity.

The carrier is handed to the engine as a `bytearray`: the engine reads a
Python `bytes` as a C string and would stop at the first zero byte.

Layout: a sign byte (0 negative, 1 zero, 2 positive), then for non-zero
values a two-byte length L and L magnitude bytes, big-endian; negatives store
65535 - L and the complemented magnitude, so that larger magnitudes sort lower.

Functions and messages follow `k8s.io/apiserver/pkg/cel/library/quantity.go`;
`sign` is a global function there (`sign(q)`, not `q.sign()`), and so here.
"""

from __future__ import annotations

from typing import Final

from allot.cel.functions import Kind, Overload
from allot.model.quantity import Quantity, QuantityError

__all__ = ["OVERLOADS", "decode", "encode", "encode_nano"]

_ZERO: Final = b"\x01"
_NANO: Final = 1_000_000_000
_MAX_LENGTH: Final = 0xFFFF
_NO_SUCH_OVERLOAD: Final = "no such overload"

# The same few literals (`quantity("40Gi")`) come back on every evaluation.
_LITERALS: dict[str, bytes] = {}
_LITERALS_SIZE: Final = 4096


def _encode_nano(nano: int) -> bytes:
    if nano == 0:
        return _ZERO
    magnitude = -nano if nano < 0 else nano
    length = (magnitude.bit_length() + 7) // 8
    if length > _MAX_LENGTH:
        raise ValueError("quantity is too large")
    if nano > 0:
        return b"\x02" + length.to_bytes(2, "big") + magnitude.to_bytes(length, "big")
    complement = (1 << (8 * length)) - 1 - magnitude
    return b"\x00" + (_MAX_LENGTH - length).to_bytes(2, "big") + complement.to_bytes(length, "big")


def encode_nano(nano: int) -> bytearray:
    """The CEL carrier of the quantity worth `nano` * 1e-9."""
    return bytearray(_encode_nano(nano))


def encode(quantity: Quantity) -> bytearray:
    """The CEL carrier of `quantity`."""
    return encode_nano(quantity.nano)


def decode(carrier: bytes | bytearray) -> int:
    """The nano value a carrier holds; a bytes value that is not one is a "no such overload" error."""
    if carrier == _ZERO:
        return 0
    if len(carrier) < 4 or carrier[0] not in (0, 2):
        raise ValueError(_NO_SUCH_OVERLOAD)
    stored = int.from_bytes(carrier[1:3], "big")
    body = carrier[3:]
    if carrier[0] == 2:
        if len(body) != stored:
            raise ValueError(_NO_SUCH_OVERLOAD)
        return int.from_bytes(body, "big")
    length = _MAX_LENGTH - stored
    if len(body) != length:
        raise ValueError(_NO_SUCH_OVERLOAD)
    return -((1 << (8 * length)) - 1 - int.from_bytes(body, "big"))


def _quantity(text: str) -> bytearray:
    carrier = _LITERALS.get(text)
    if carrier is None:
        try:
            carrier = _encode_nano(Quantity.parse(text).nano)
        except QuantityError as err:
            # allot.model prefixes the text; upstream's message is the bare reason.
            raise ValueError(str(err).removeprefix(f"{text!r}: ")) from None
        if len(_LITERALS) >= _LITERALS_SIZE:
            _LITERALS.clear()
        _LITERALS[text] = carrier
    return bytearray(carrier)


def _is_quantity(text: str) -> bool:
    try:
        _quantity(text)
    except ValueError:
        return False
    return True


def _compare(left: bytes, right: bytes) -> int:
    mine, theirs = decode(left), decode(right)
    return (mine > theirs) - (mine < theirs)


def _is_greater_than(left: bytes, right: bytes) -> bool:
    return _compare(left, right) > 0


def _is_less_than(left: bytes, right: bytes) -> bool:
    return _compare(left, right) < 0


def _sign(carrier: bytes) -> int:
    nano = decode(carrier)
    return (nano > 0) - (nano < 0)


def _as_approximate_float(carrier: bytes) -> float:
    return Quantity(decode(carrier)).as_approximate_float()


def _is_integer(carrier: bytes) -> bool:
    return Quantity(decode(carrier)).is_integer()


def _as_integer(carrier: bytes) -> int:
    quantity = Quantity(decode(carrier))
    if not quantity.is_integer():
        # Upstream's exact text; allot.model's message adds the reason.
        raise ValueError("cannot convert value to integer")
    return quantity.as_integer()


def _add(left: bytes, right: bytes) -> bytearray:
    return encode_nano(decode(left) + decode(right))


def _add_int(left: bytes, right: int) -> bytearray:
    # An int operand counts whole units (upstream: NewQuantity(right, DecimalExponent)).
    return encode_nano(decode(left) + right * _NANO)


def _sub(left: bytes, right: bytes) -> bytearray:
    return encode_nano(decode(left) - decode(right))


def _sub_int(left: bytes, right: int) -> bytearray:
    return encode_nano(decode(left) - right * _NANO)


_Q = Kind.QUANTITY

OVERLOADS: Final[tuple[Overload, ...]] = (
    Overload("quantity", "string_to_quantity", (Kind.STRING,), _Q, _quantity),
    Overload("isQuantity", "is_quantity_string", (Kind.STRING,), Kind.BOOL, _is_quantity),
    Overload("sign", "quantity_sign", (_Q,), Kind.INT, _sign),
    Overload("isGreaterThan", "quantity_is_greater_than", (_Q, _Q), Kind.BOOL, _is_greater_than, member=True),
    Overload("isLessThan", "quantity_is_less_than", (_Q, _Q), Kind.BOOL, _is_less_than, member=True),
    Overload("compareTo", "quantity_compare_to", (_Q, _Q), Kind.INT, _compare, member=True),
    Overload(
        "asApproximateFloat", "quantity_get_float", (_Q,), Kind.DOUBLE, _as_approximate_float, member=True
    ),
    Overload("asInteger", "quantity_get_int", (_Q,), Kind.INT, _as_integer, member=True),
    Overload("isInteger", "quantity_is_integer", (_Q,), Kind.BOOL, _is_integer, member=True),
    Overload("add", "quantity_add", (_Q, _Q), _Q, _add, member=True),
    Overload("add", "quantity_add_int", (_Q, Kind.INT), _Q, _add_int, member=True),
    Overload("sub", "quantity_sub", (_Q, _Q), _Q, _sub, member=True),
    Overload("sub", "quantity_sub_int", (_Q, Kind.INT), _Q, _sub_int, member=True),
)
