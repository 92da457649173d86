"""Consumable capacity: request policies, consumed amounts, and whether a share fits.

All amounts are exact integers in nano-units (`Quantity.nano`), so rounding
to a policy step and summing shares never loses precision. A device's
capacities are kept in one fixed order (`DeviceCapacities`); consumed
amounts, existing consumption and in-flight consumption are tuples/lists in
that order.

Semantics (upstream 1.35, `experimental/consumable_capacity.go`):

* consumed amount per capacity: no request -> the policy default, else the
  whole capacity; a request without policy -> the request; with a valid
  range -> at least min, rounded up to min + n*step; with valid values -> the
  smallest valid value >= the request, else the request unchanged;
* a consumed amount equal to the default never violates; otherwise above
  max, off the step grid, or not one of the valid values violates;
* the share fits if existing + in-flight + consumed <= capacity for every
  capacity of the device;
* a request naming a capacity the device does not have makes the device
  unusable for that request (not an error).

Request and device capacity names must match exactly, as in 1.35 (later
upstream versions also let `<driver>/name` and `name` meet; allot keeps
1.35's feasibility).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from allot.model.resource import CapacityRequestPolicy, DeviceCapacity

# A request's capacity requests in hashable form (sorted name, nano pairs); None = no requests.
CapacityKey = tuple[tuple[str, int], ...] | None


def capacity_key(requests: Mapping[str, int] | None) -> CapacityKey:
    return None if requests is None else tuple(sorted(requests.items()))


class Policy(NamedTuple):
    default: int | None
    valid_values: tuple[int, ...]
    range_min: int | None
    range_max: int | None
    range_step: int | None
    has_range: bool


def _policy(policy: CapacityRequestPolicy | None) -> Policy | None:
    if policy is None:
        return None
    rng = policy.valid_range
    return Policy(
        default=policy.default.nano if policy.default is not None else None,
        valid_values=tuple(v.nano for v in policy.valid_values),
        range_min=rng.min.nano if rng is not None and rng.min is not None else None,
        range_max=rng.max.nano if rng is not None and rng.max is not None else None,
        range_step=rng.step.nano if rng is not None and rng.step is not None else None,
        has_range=rng is not None,
    )


class DeviceCapacities:
    """One device's capacities in a fixed order, with name resolution."""

    __slots__ = ("_index", "names", "policies", "values")

    def __init__(self, capacity: Mapping[str, DeviceCapacity]) -> None:
        self.names: tuple[str, ...] = tuple(capacity)
        self.values: tuple[int, ...] = tuple(c.value.nano for c in capacity.values())
        self.policies: tuple[Policy | None, ...] = tuple(_policy(c.request_policy) for c in capacity.values())
        self._index = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def position(self, name: str) -> int | None:
        return self._index.get(name)

    def vector(self, amounts: Mapping[str, int]) -> list[int]:
        """Named amounts (e.g. existing consumption) in this device's order; unknown names dropped."""
        result = [0] * len(self.names)
        for name, nano in amounts.items():
            i = self._index.get(name)
            if i is not None:
                result[i] += nano
        return result


def _round_up(requested: int, policy: Policy) -> int:
    if policy.range_min is not None:
        if requested < policy.range_min:
            return policy.range_min
        step = policy.range_step
        if not step:
            return requested
        added = requested - policy.range_min
        steps = -(-added // step)
        return policy.range_min + steps * step
    for value in policy.valid_values:
        if requested <= value:
            return value
    return requested


def violates(amount: int, policy: Policy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.has_range:
        if policy.range_max is not None and amount > policy.range_max:
            return True
        if policy.range_step:
            base = policy.range_min if policy.range_min is not None else 0
            if (amount - base) % policy.range_step != 0:
                return True
        return False
    if policy.valid_values:
        return amount not in policy.valid_values
    return False


def consumed_amounts(caps: DeviceCapacities, requests: Mapping[str, int] | None) -> tuple[int, ...] | None:
    """What one allocation of the device consumes for a request's capacity requests.

    None when the request names a capacity the device lacks, or when a
    consumed amount violates the device's policy: the device cannot serve
    this request at all, whatever else is allocated.
    """
    wanted: list[int | None] = [None] * len(caps.names)
    if requests:
        for name, nano in requests.items():
            i = caps.position(name)
            if i is None:
                return None
            wanted[i] = nano
    result: list[int] = []
    for i, policy in enumerate(caps.policies):
        request = wanted[i]
        if request is None:
            amount = policy.default if policy is not None and policy.default is not None else caps.values[i]
        elif policy is None:
            amount = request
        else:
            amount = _round_up(request, policy)
        if violates(amount, policy):
            return None
        result.append(amount)
    return tuple(result)


def fits(
    caps: DeviceCapacities,
    amounts: Sequence[int],
    existing: Sequence[int] | None,
    in_flight: Sequence[int] | None,
) -> bool:
    """Whether existing + in-flight + amounts stays within every capacity."""
    values = caps.values
    for i, amount in enumerate(amounts):
        total = amount
        if existing is not None:
            total += existing[i]
        if in_flight is not None:
            total += in_flight[i]
        if total > values[i]:
            return False
    return True
