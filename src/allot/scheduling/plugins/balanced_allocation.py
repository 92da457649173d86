"""NodeResourcesBalancedAllocation: prefer nodes whose resource use stays in proportion.

As kube-scheduler v1.36: the pod's actual requests (no non-zero defaults) are added to the
node's requested amounts; each resource of the list (cpu and memory by default) that the
node has gives a fraction (at most 1), and the score is (1 − standard deviation of the
fractions) × 100, truncated: with two resources the deviation is half their difference,
with one it is 0. An extended resource the pod does not ask for takes no part. A pod that
requests none of the resources (best effort) is not scored by this plugin (0 everywhere),
so such pods do not all pile onto the same node.

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
from allot.scheduling.framework import Cycle, FloatArray, IntArray
from allot.scheduling.plugin_args import ArgumentError

NAME = "NodeResourcesBalancedAllocation"
_ALWAYS_COUNTED = (CPU, MEMORY, EPHEMERAL_STORAGE)


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
        table = cycle.state.nodes
        requests = cycle.pod.requests
        wanted = [saturate(requests.get(resource, 0)) for resource in self.resources]
        if not any(wanted):
            return np.zeros(nodes.size)
        fractions = []
        counted = []
        for resource, pod_amount in zip(self.resources, wanted, strict=True):
            zeros = np.zeros(table.size, dtype=np.int64)
            capacity = table.allocatable.get(resource, zeros)[nodes]
            used = table.requested.get(resource, zeros)[nodes] + pod_amount
            safe = np.where(capacity > 0, capacity, 1)
            fractions.append(np.minimum(used / safe, 1.0))
            taking = capacity > 0
            if pod_amount == 0 and resource not in _ALWAYS_COUNTED:
                taking = np.zeros(nodes.size, dtype=np.bool_)
            counted.append(taking)
        if self.resources == (CPU, MEMORY):
            both = counted[0] & counted[1]
            deviation = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
        else:
            deviation = np.array(
                [
                    _deviation([float(f[i]) for f, c in zip(fractions, counted, strict=True) if c[i]])
                    for i in range(nodes.size)
                ]
            )
        result: FloatArray = np.floor((1.0 - deviation) * 100)
        return result
