"""Kubernetes resource quantities with exact arithmetic.

A `Quantity` holds the exact value as an integer number of nano-units (1e-9),
so that parsing, comparing, adding and subtracting never lose precision, and
remembers the notation it was written in (decimal SI, binary SI, or decimal
exponent) so that it prints back the way Kubernetes prints it.

This module is the only place that understands the quantity grammar. The
scheduler's hot paths do not touch quantities: the state layer converts them
to plain integers (milli-CPU, bytes, device counts) once, at ingest.
"""

from __future__ import annotations

import enum
from fractions import Fraction


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class QuantityFormat(enum.Enum):
    """The notation a quantity is printed in, as Kubernetes names it."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class Quantity:
    """An exact Kubernetes quantity; immutable, hashable, ordered by value."""

    __slots__ = ("_format", "_nano")

    def __init__(self, nano: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> None:
        raise NotImplementedError

    @classmethod
    def parse(cls, text: str) -> Quantity:
        raise NotImplementedError
