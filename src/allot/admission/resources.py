"""Quota amounts: (flavor, resource) keys, conversion from quantities, printing.

Admission counts in the same integer units as `allot.cluster.resources`:
CPU in millicores, everything else (memory bytes, pods, GPUs, DRA devices,
device capacity) in whole units rounded up. Quotas are converted once when
the tree is built, so every comparison below is between integers. Printing
goes back through `Quantity`, the way Kueue prints amounts in its messages
(`500m`, `2`, `1Gi`).

Admission fair sharing is the one place amounts are floats: Kueue decays
usage with `Quantity.AsApproximateFloat64`, which counts CPU in cores, so
`afs_value` converts millicores back to cores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from allot.cluster.resources import CPU, MEMORY, PODS, amount
from allot.model.quantity import Quantity, QuantityFormat

__all__ = [
    "CPU",
    "MEMORY",
    "PODS",
    "FlavorResource",
    "Usage",
    "add_into",
    "afs_value",
    "format_amount",
    "quota_amount",
    "resources_of",
    "subtract_into",
]

FlavorResource = tuple[str, str]
"""(flavor name, resource name), the key of every quota and usage map."""

Usage = dict[FlavorResource, int]


def quota_amount(resource: str, quantity: Quantity | None) -> int:
    """A quota or request quantity in admission units (0 when unset)."""
    if quantity is None:
        return 0
    return amount(resource, quantity)


def format_amount(resource: str, value: int) -> str:
    """`value` of `resource` as Kueue prints it: CPU as a milli quantity, memory binary."""
    if resource == CPU:
        return Quantity.from_milli(value).canonical()
    if resource == MEMORY:
        return Quantity.from_int(value, QuantityFormat.BINARY_SI).canonical()
    return Quantity.from_int(value).canonical()


def afs_value(resource: str, value: int | float) -> float:
    """An amount as admission fair sharing weighs it (CPU in cores, others as counted)."""
    return value / 1000.0 if resource == CPU else float(value)


def add_into(total: Usage, extra: Mapping[FlavorResource, int]) -> None:
    for key, value in extra.items():
        total[key] = total.get(key, 0) + value


def subtract_into(total: Usage, extra: Mapping[FlavorResource, int]) -> None:
    for key, value in extra.items():
        left = total.get(key, 0) - value
        if left:
            total[key] = left
        else:
            total.pop(key, None)


def resources_of(usage: Iterable[FlavorResource]) -> set[str]:
    return {resource for _, resource in usage}
