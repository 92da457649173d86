"""A static worst-case bound on a selector's evaluation cost.

Upstream stops an evaluation once its actual cost passes 1,000,000 units
and rejects, at admission, expressions whose estimated worst case passes it.
The engine tracks no cost, so `estimate_cost` computes a worst-case bound in
the spirit of cel-go's estimator: unit costs per node, string functions
charged by length, comprehension bodies multiplied by the size of their
range, with the limits the API puts on a device (32 domains, 32 identifiers
each, 64-character values). A range of unknown size makes the bound
`UNBOUNDED`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from allot.cel.syntax import (
    INDEX_FUNCTIONS,
    Call,
    Comprehension,
    Const,
    CreateList,
    CreateMap,
    Expr,
    Ident,
    Select,
)
from allot.cel.variables import ATTRIBUTES, CAPACITY, DRIVER, MULTI_ALLOC

__all__ = ["UNBOUNDED", "estimate_cost"]

# Anything at or above this is "no bound known"; arithmetic saturates here.
UNBOUNDED: Final = 1 << 62


@dataclass(frozen=True, slots=True)
class _Size:
    """Upper bound on a value's length (characters, or elements of a list or map), None if unknown."""

    length: int | None = None
    element: _Size | None = None  # list elements, map values
    key: _Size | None = None  # map keys


_SCALAR: Final = _Size(1)
_UNKNOWN: Final = _Size(None)

# The limits resource.k8s.io/v1 puts on a device (types.go).
_MAX_DOMAIN, _MAX_ID, _MAX_ENTRIES, _MAX_STRING, _MAX_DRIVER = 63, 32, 32, 64, 63

_VARIABLE_SIZES: Final[Mapping[str, _Size]] = {
    DRIVER: _Size(_MAX_DRIVER),
    MULTI_ALLOC: _SCALAR,
    ATTRIBUTES: _Size(
        _MAX_ENTRIES,
        key=_Size(_MAX_DOMAIN),
        element=_Size(_MAX_ENTRIES, key=_Size(_MAX_ID), element=_Size(_MAX_STRING)),
    ),
    CAPACITY: _Size(
        _MAX_ENTRIES,
        key=_Size(_MAX_DOMAIN),
        element=_Size(_MAX_ENTRIES, key=_Size(_MAX_ID), element=_SCALAR),
    ),
}

# Functions whose cost grows with the length of the string they work on.
_LINEAR_STRING_FUNCTIONS: Final = frozenset(
    {
        "contains",
        "startsWith",
        "endsWith",
        "charAt",
        "indexOf",
        "lastIndexOf",
        "lowerAscii",
        "upperAscii",
        "replace",
        "split",
        "substring",
        "trim",
        "join",
        "quote",
        "strings.quote",
        "format",
        "string",
        "bytes",
    }
)
_SAME_LENGTH_FUNCTIONS: Final = frozenset(
    {"lowerAscii", "upperAscii", "trim", "substring", "string", "bytes"}
)
_COMPARISONS: Final = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})


def _add(*costs: int) -> int:
    return min(sum(costs), UNBOUNDED)


def _mul(count: int | None, cost: int) -> int:
    if count is None:
        return UNBOUNDED
    return min(count * cost, UNBOUNDED)


def _tenth(size: _Size) -> int:
    # cel-go charges string and list traversals 0.1 per element.
    return math.ceil(0.1 * size.length) if size.length is not None else 0


def _max_size(sizes: list[_Size]) -> _Size:
    if not sizes:
        return _Size(0)
    lengths = [s.length for s in sizes]
    length = None if any(n is None for n in lengths) else max(n for n in lengths if n is not None)
    elements = [s.element for s in sizes if s.element is not None]
    keys = [s.key for s in sizes if s.key is not None]
    return _Size(
        length,
        element=_max_size(elements) if elements else None,
        key=_max_size(keys) if keys else None,
    )


def _sum_length(sizes: list[_Size]) -> int | None:
    total = 0
    for size in sizes:
        if size.length is None:
            return None
        total += size.length
    return total


@dataclass(slots=True)
class _Estimator:
    variables: dict[str, _Size] = field(default_factory=lambda: dict(_VARIABLE_SIZES))

    def estimate(self, expr: Expr) -> tuple[int, _Size]:
        if isinstance(expr, Const):
            if isinstance(expr.value, str | bytes):
                return 0, _Size(len(expr.value))
            return 0, _SCALAR
        if isinstance(expr, Ident):
            return 1, self.variables.get(expr.name, _UNKNOWN)
        if isinstance(expr, Select):
            cost, size = self.estimate(expr.operand)
            return _add(cost, 1), (_SCALAR if expr.test_only else size.element or _UNKNOWN)
        if isinstance(expr, CreateList):
            parts = [self.estimate(e) for e in expr.elements]
            element = _max_size([s for _, s in parts]) if parts else None
            return _add(10, *(c for c, _ in parts)), _Size(len(parts), element=element)
        if isinstance(expr, CreateMap):
            cost = 30
            keys: list[_Size] = []
            values: list[_Size] = []
            for key, value in expr.entries:
                if key is not None:
                    key_cost, key_size = self.estimate(key)
                    cost = _add(cost, key_cost)
                    keys.append(key_size)
                value_cost, value_size = self.estimate(value)
                cost = _add(cost, value_cost)
                values.append(value_size)
            return cost, _Size(
                len(values),
                key=_max_size(keys) if keys else None,
                element=_max_size(values) if values else None,
            )
        if isinstance(expr, Comprehension):
            return self._comprehension(expr)
        if isinstance(expr, Call):
            return self._call(expr)
        return 1, _UNKNOWN

    def _comprehension(self, expr: Comprehension) -> tuple[int, _Size]:
        range_cost, range_size = self.estimate(expr.iter_range)
        init_cost, init_size = self.estimate(expr.accu_init)
        is_map = range_size.key is not None
        saved = dict(self.variables)
        first = range_size.key if is_map else (range_size.element or _UNKNOWN)
        if expr.iter_var2:
            # Two-variable forms bind (index, value) for lists and (key, value) for maps.
            first = range_size.key if is_map else _SCALAR
            self.variables[expr.iter_var2] = range_size.element or _UNKNOWN
        self.variables[expr.iter_var] = first or _UNKNOWN
        accu = init_size
        if isinstance(expr.accu_init, CreateList) and range_size.length != 0:
            # map() and filter() grow the accumulator by at most one element per iteration.
            accu = _Size(range_size.length, element=self._appended_element(expr))
        self.variables[expr.accu_var] = accu
        condition_cost, _ = self.estimate(expr.loop_condition)
        step_cost, _ = self.estimate(expr.loop_step)
        result_cost, result_size = self.estimate(expr.result)
        self.variables = saved
        loop = _mul(range_size.length, _add(condition_cost, step_cost))
        return _add(range_cost, init_cost, loop, result_cost), result_size

    def _appended_element(self, expr: Comprehension) -> _Size | None:
        step = expr.loop_step
        candidates = [step]
        if isinstance(step, Call) and step.function == "_?_:_":
            candidates = list(step.args[1:])
        for candidate in candidates:
            if isinstance(candidate, Call) and candidate.function == "_+_":
                for arg in candidate.args:
                    if isinstance(arg, CreateList):
                        return self.estimate(arg)[1].element
        return None

    def _call(self, expr: Call) -> tuple[int, _Size]:
        operands = ([expr.target] if expr.target is not None else []) + list(expr.args)
        parts = [self.estimate(e) for e in operands]
        costs = [c for c, _ in parts]
        sizes = [s for _, s in parts]
        name = expr.function
        if name == "_?_:_" and len(parts) == 3:
            return _add(costs[0], max(costs[1], costs[2])), _max_size(sizes[1:])
        if name in ("_&&_", "_||_", "@not_strictly_false", "!_"):
            return _add(*costs), _SCALAR
        if name in INDEX_FUNCTIONS and sizes:
            return _add(1, *costs), sizes[0].element or _UNKNOWN
        if name == "@in" and len(sizes) == 2:
            container = sizes[1]
            traversal = 1 if container.key is not None else (container.length or UNBOUNDED)
            return _add(traversal, *costs), _SCALAR
        if name in _COMPARISONS:
            return _add(1, _tenth(_max_size(sizes)), *costs), _SCALAR
        if name == "_+_" and len(sizes) == 2:
            length = _sum_length(sizes)
            element = (
                _max_size([s.element for s in sizes if s.element is not None])
                if any(s.element for s in sizes)
                else None
            )
            return _add(1, _tenth(_Size(length)), *costs), _Size(length, element=element)
        if name == "matches" and len(sizes) == 2:
            text, pattern = sizes
            work = math.ceil(
                0.1 * (text.length or _MAX_STRING) * max(1, math.ceil(0.25 * (pattern.length or 1)))
            )
            return _add(1, work, *costs), _SCALAR
        if name in _LINEAR_STRING_FUNCTIONS:
            subject = sizes[0] if sizes else _UNKNOWN
            return _add(1, _tenth(subject), *costs), self._string_result(name, sizes)
        if name == "size":
            return _add(1, *costs), _SCALAR
        return _add(1, *costs), _UNKNOWN if name not in _SCALAR_RESULTS else _SCALAR

    @staticmethod
    def _string_result(name: str, sizes: list[_Size]) -> _Size:
        subject = sizes[0] if sizes else _UNKNOWN
        if name in _SAME_LENGTH_FUNCTIONS:
            return subject
        if name == "split":
            return _Size(subject.length, element=subject)
        if name == "join":
            return subject.element or _UNKNOWN
        if name == "replace" and len(sizes) >= 3 and subject.length is not None:
            replacement = sizes[2].length
            return _Size(None if replacement is None else subject.length * max(1, replacement))
        if name in ("charAt",):
            return _SCALAR
        return _UNKNOWN if name in ("format", "quote", "strings.quote") else _SCALAR


# Functions whose results are scalars (numbers, booleans, quantities, versions).
_SCALAR_RESULTS: Final = frozenset(
    {
        "int",
        "uint",
        "double",
        "bool",
        "dyn",
        "type",
        "duration",
        "timestamp",
        "_-_",
        "_*_",
        "_/_",
        "_%_",
        "-_",
        "quantity",
        "isQuantity",
        "sign",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "asApproximateFloat",
        "asInteger",
        "isInteger",
        "add",
        "sub",
        "semver",
        "isSemver",
        "major",
        "minor",
        "patch",
        "indexOf",
        "lastIndexOf",
    }
)


def estimate_cost(expr: Expr) -> int:
    """Worst-case evaluation cost of a checked expression; `UNBOUNDED` when no bound is known."""
    cost, _ = _Estimator().estimate(expr)
    return cost
