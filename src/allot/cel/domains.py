"""Which domains a selector looks up, recovered from its syntax tree.

Upstream wraps `device.attributes` and `device.capacity` so that looking up
an unknown domain (`device.attributes["x.com"]`) yields an empty map, where a
CEL map lookup fails. The engine has no such maps, so `domain_lookups` lists
the domains an expression looks up by constant key (following `cel.bind`
aliases), and the caller gives the device an empty map for each one it
lacks. Membership tests and iteration (`"x.com" in device.attributes`) see
the device's own domains only, as upstream, unless the same expression also
looks the missing domain up.

`device_field_presence_tests` finds `has(device.f)`, which the engine cannot
answer (see `allot.cel.environment`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from allot.cel.syntax import INDEX_FUNCTIONS, Call, Comprehension, Const, Expr, Ident, Select, children
from allot.cel.variables import ATTRIBUTES, CAPACITY

__all__ = ["DomainLookups", "device_field_presence_tests", "domain_lookups"]


@dataclass(frozen=True, slots=True)
class DomainLookups:
    """Domains an expression looks up in `device.attributes` / `device.capacity`.

    A `dynamic` flag means some lookup uses a computed key; the sets then also
    hold every string constant of the expression, and the device's own
    driver domain should be provided too.
    """

    attributes: frozenset[str] = frozenset()
    capacity: frozenset[str] = frozenset()
    attributes_dynamic: bool = False
    capacity_dynamic: bool = False


def _string_constants(expr: Expr) -> Iterator[str]:
    if isinstance(expr, Const) and isinstance(expr.value, str):
        yield expr.value
    for child in children(expr):
        yield from _string_constants(child)


class _LookupCollector:
    def __init__(self) -> None:
        self.keys: dict[str, set[str]] = {ATTRIBUTES: set(), CAPACITY: set()}
        self.dynamic: dict[str, bool] = {ATTRIBUTES: False, CAPACITY: False}

    def root(self, expr: Expr, aliases: Mapping[str, str]) -> str | None:
        if isinstance(expr, Ident):
            if expr.name in self.keys:
                return expr.name
            return aliases.get(expr.name)
        return None

    def visit(self, expr: Expr, aliases: Mapping[str, str]) -> None:
        if isinstance(expr, Call) and expr.function in INDEX_FUNCTIONS and len(expr.args) == 2:
            root = self.root(expr.args[0], aliases)
            if root is not None:
                key = expr.args[1]
                if isinstance(key, Const) and isinstance(key.value, str):
                    self.keys[root].add(key.value)
                else:
                    self.dynamic[root] = True
        elif isinstance(expr, Select) and not expr.test_only:
            root = self.root(expr.operand, aliases)
            if root is not None:
                self.keys[root].add(expr.field)
        if isinstance(expr, Comprehension):
            self.visit(expr.iter_range, aliases)
            self.visit(expr.accu_init, aliases)
            inner = {
                k: v for k, v in aliases.items() if k not in (expr.iter_var, expr.iter_var2, expr.accu_var)
            }
            # cel.bind(name, device.attributes, body) makes `name` another handle on the map.
            bound = self.root(expr.accu_init, aliases)
            if bound is not None:
                inner[expr.accu_var] = bound
            for part in (expr.loop_condition, expr.loop_step, expr.result):
                self.visit(part, inner)
            return
        for child in children(expr):
            self.visit(child, aliases)


def domain_lookups(expr: Expr) -> DomainLookups:
    """The domains the checked expression `expr` looks up in the attribute and capacity maps."""
    collector = _LookupCollector()
    collector.visit(expr, {})
    constants: frozenset[str] = frozenset()
    if collector.dynamic[ATTRIBUTES] or collector.dynamic[CAPACITY]:
        constants = frozenset(_string_constants(expr))
    attributes = frozenset(collector.keys[ATTRIBUTES])
    capacity = frozenset(collector.keys[CAPACITY])
    return DomainLookups(
        attributes=attributes | constants if collector.dynamic[ATTRIBUTES] else attributes,
        capacity=capacity | constants if collector.dynamic[CAPACITY] else capacity,
        attributes_dynamic=collector.dynamic[ATTRIBUTES],
        capacity_dynamic=collector.dynamic[CAPACITY],
    )


def device_field_presence_tests(parsed: Expr) -> list[str]:
    """Fields `f` in `has(device.f)` of a parsed (not yet checked) expression."""
    found: list[str] = []
    if isinstance(parsed, Select) and parsed.test_only and parsed.operand == Ident("device"):
        found.append(parsed.field)
    for child in children(parsed):
        found.extend(device_field_presence_tests(child))
    return found
