"""NodeResourcesBalancedAllocation: prefer nodes whose resource use stays in proportion.

As kube-scheduler v1.36 (kubernetes #135573; checked against its binary): a node's balance is (1 − standard
deviation of its resources' fractions) × 100, truncated, where each resource of the list
(cpu and memory by default) that the node has gives requested / allocatable (at most 1),
with actual requests (no non-zero defaults); with two resources the deviation is half their
difference, with one it is 0. The score rewards what the pod does to the balance: 50 +
(50 + balance with the pod − balance without it) / 2, integer arithmetic. An extended
resource the pod does not ask for takes no part. A pod that requests none of the resources
(best effort) is not scored by this plugin (0 everywhere; kubernetes #129138), so such pods do not all pile onto
the same node.

Args (NodeResourcesBalancedAllocationArgs): `resources`, a list of {name, weight} (names
unique; weights are accepted and, as upstream, not used).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from allot.cluster.nodes import saturate
from allot.cluster.resources import CPU, EPHEMERAL_STORAGE, MEMORY
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray
from allot.scheduling.plugin_args import ArgumentError

NAME = "NodeResourcesBalancedAllocation"
_ALWAYS_COUNTED = (CPU, MEMORY, EPHEMERAL_STORAGE)


def _cpu_memory(
    allocatable: Mapping[str, IntArray], requested: Mapping[str, IntArray], nodes: IntArray, wanted: list[int]
) -> FloatArray:
    """The default resources (cpu, memory) on every node at once, with and without the pod."""
    cpu, memory = allocatable[CPU][nodes], allocatable[MEMORY][nodes]
    used_cpu, used_memory = requested[CPU][nodes], requested[MEMORY][nodes]
    both = (cpu > 0) & (memory > 0)
    # Where a node lacks either, the deviation is 0 whatever the fractions: divide by 1 there.
    cpu = np.where(both, cpu, 1)
    memory = np.where(both, memory, 1)
    before = np.abs(np.minimum(used_cpu / cpu, 1.0) - np.minimum(used_memory / memory, 1.0))
    after = np.abs(
        np.minimum((used_cpu + wanted[0]) / cpu, 1.0) - np.minimum((used_memory + wanted[1]) / memory, 1.0)
    )
    before[~both] = 0.0
    after[~both] = 0.0
    # Balance (1 - |difference| / 2) x 100, truncated, with the pod and without it.
    balance_after = np.floor((1.0 - after / 2) * 100)
    balance_before = np.floor((1.0 - before / 2) * 100)
    result: FloatArray = 50 + np.trunc((50 + balance_after - balance_before) / 2)
    return result


def _deviation(fractions: Sequence[float]) -> float:
    if len(fractions) == 2:
        return abs((fractions[0] - fractions[1]) / 2)
    if len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        return math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return 0.0


class BalancedAllocation:
    name = NAME

    def __init__(self, *, resources: Sequence[str] = (CPU, MEMORY)) -> None:
        self.resources = tuple(resources)

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> BalancedAllocation:
        raw = args.get("resources")
        if raw is None:
            return cls()
        if not isinstance(raw, list):
            raise ArgumentError("resources: expected a list of {name, weight}")
        names: list[str] = []
        for i, entry in enumerate(raw):
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("name"), str)
                or set(entry) - {"name", "weight"}
            ):
                raise ArgumentError(f"resources[{i}]: expected {{name: <resource>, weight: <int>}}")
            weight = entry.get("weight", 1)
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise ArgumentError(f"resources[{i}].weight: expected an integer, got {weight!r}")
            if entry["name"] in names:
                raise ArgumentError(f'resources[{i}].name: Duplicate value: "{entry["name"]}"')
            names.append(entry["name"])
        return cls(resources=names)

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        requests = cycle.pod.requests
        wanted = [saturate(requests.get(resource, 0)) for resource in self.resources]
        if not any(wanted):
            return np.zeros(nodes.size)
        table = cycle.state.nodes
        if self.resources == (CPU, MEMORY):
            return _cpu_memory(table.allocatable, table.requested, nodes, wanted)
        capacities = []
        requested = []
        counted = []
        for resource, asked in zip(self.resources, wanted, strict=True):
            capacity = table.allocatable.get(resource)
            if capacity is None or (asked == 0 and resource not in _ALWAYS_COUNTED):
                # A resource no node has, or an extended one the pod does not ask for: left out.
                continue
            capacity = capacity[nodes]
            capacities.append(np.where(capacity > 0, capacity, 1))
            requested.append((table.requested[resource][nodes], asked))
            counted.append(capacity > 0)
        with_pod = self._balance(capacities, [used + asked for used, asked in requested], counted)
        without = self._balance(capacities, [used for used, _ in requested], counted)
        # 50 + (50 + with - without) / 2, Go's integer division (toward zero).
        result: FloatArray = 50 + np.trunc((50 + with_pod - without) / 2)
        return result

    def _balance(
        self, capacities: list[IntArray], used: list[IntArray], counted: list[BoolArray]
    ) -> FloatArray:
        """Each node's balance score: (1 - deviation of its fractions) x 100, truncated."""
        fractions = [np.minimum(u / c, 1.0) for u, c in zip(used, capacities, strict=True)]
        if len(fractions) == 2:
            both = counted[0] & counted[1]
            deviation = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
        elif len(fractions) < 2:
            deviation = np.zeros(capacities[0].size if capacities else 0)
        else:
            deviation = np.array(
                [
                    _deviation([float(f[i]) for f, c in zip(fractions, counted, strict=True) if c[i]])
                    for i in range(capacities[0].size)
                ]
            )
        result: FloatArray = np.floor((1.0 - deviation) * 100)
        return result
