"""Engine-neutral declarations of the functions allot adds to CEL.

A library module (`quantity_lib`, `semver_lib`) lists its overloads as
`Overload` records: name, overload id, parameter and result kinds, and a
plain Python implementation. `allot.cel.engine` turns them into the CEL
engine's declarations, so the libraries never import the engine.

Kubernetes' `Quantity` and `Semver` are opaque CEL types. The engine can only
carry CEL's own value kinds across to Python, so each has a carrier kind
(`QUANTITY` travels as `bytes`, `SEMVER` as `list(string)`, see the library
modules for the encodings). The two carriers are different kinds, so the
type checker still tells a Quantity from a Semver and from int or string.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Kind", "Overload"]


class Kind(enum.Enum):
    """A parameter or result type of an allot-defined CEL function."""

    BOOL = "bool"
    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    QUANTITY = "kubernetes.Quantity"
    SEMVER = "kubernetes.Semver"


@dataclass(frozen=True, slots=True)
class Overload:
    """One overload of a CEL function; `member` overloads are called as `receiver.name(args)`."""

    name: str
    overload_id: str
    params: tuple[Kind, ...]
    result: Kind
    impl: Callable[..., object]
    member: bool = False
