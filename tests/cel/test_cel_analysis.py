"""Static analyses of compiled selectors: looked-up domains and the worst-case cost bound."""

from __future__ import annotations

import pytest

from allot.cel import SelectorEnvironment
from allot.cel.cost import UNBOUNDED
from allot.cel.domains import DomainLookups, domain_lookups
from allot.cel.engine import Engine

ENGINE = Engine(consumable_capacity=True)


def lookups(expression: str) -> DomainLookups:
    return domain_lookups(ENGINE.compile(expression).tree)


def test_constant_index_and_field_lookups() -> None:
    found = lookups('device.attributes["a.com"].x == 1 && device.capacity["b.com"].y.isInteger()')
    assert found == DomainLookups(attributes=frozenset({"a.com"}), capacity=frozenset({"b.com"}))


def test_membership_and_iteration_are_not_lookups() -> None:
    found = lookups('"a.com" in device.attributes && device.attributes.exists(d, d == "b.com")')
    assert found == DomainLookups()


def test_bind_alias_is_followed() -> None:
    found = lookups('cel.bind(attrs, device.attributes, attrs["a.com"].x == 1)')
    assert found.attributes == frozenset({"a.com"})


def test_bind_alias_is_shadowed_by_inner_variables() -> None:
    found = lookups('cel.bind(attrs, device.attributes, [{"z.com": 1}].all(attrs, attrs["z.com"] == 1))')
    assert found.attributes == frozenset()


def test_computed_keys_make_every_string_a_candidate() -> None:
    found = lookups(
        '["a.com", "b.com"].exists(d, has(device.attributes[d].model)) && device.driver == "c.com"'
    )
    assert found.attributes_dynamic is True
    assert found.attributes == frozenset({"a.com", "b.com", "c.com"})
    assert found.capacity_dynamic is False


def test_cost_of_simple_selectors_is_small() -> None:
    env = SelectorEnvironment()
    assert env.estimated_cost('device.driver == "gpu.example.com"') < 20
    assert env.estimated_cost('device.capacity["a.com"].memory.isGreaterThan(quantity("1Gi"))') < 20


def test_cost_grows_with_iteration_over_the_device() -> None:
    env = SelectorEnvironment()
    one = env.estimated_cost('device.attributes["a.com"].exists(k, k == "x")')
    two = env.estimated_cost(
        'device.attributes["a.com"].exists(k, device.attributes["b.com"].exists(j, j == k))'
    )
    assert 32 <= one < 1_000
    assert two >= 32 * one // 2
    four = (
        'device.attributes["a.com"].all(a, device.attributes["a.com"].all(b, '
        'device.attributes["a.com"].all(c, device.attributes["a.com"].all(d, a + b + c + d != ""))))'
    )
    assert env.estimated_cost(four) > 1_000_000


@pytest.mark.parametrize(
    "expression",
    [
        "[1, 2, 3].map(x, [x, x]).all(l, l.all(y, y > 0))",
        "cel.bind(l, [1, 2, 3], l.all(x, x > 0))",
        'device.attributes["a.com"].model.split(",").all(p, p != "")',
    ],
)
def test_nested_ranges_are_bounded(expression: str) -> None:
    assert SelectorEnvironment().estimated_cost(expression) < 10_000


def test_cost_limit_is_enforced_before_evaluation() -> None:
    env = SelectorEnvironment(cost_limit=100)
    expression = "[1,2,3,4,5,6,7,8,9,10].all(x, [1,2,3,4,5,6,7,8,9,10].all(y, x * y > 0))"
    assert 100 < env.estimated_cost(expression) < UNBOUNDED
    assert env.compile_error(expression) is None
