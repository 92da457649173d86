"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay in proportion."""

from __future__ import annotations

import numpy as np

from allot.cluster.nodes import saturate
from allot.scheduling.framework import Cycle, FloatArray, IntArray

NAME = "NodeResourcesBalancedAllocation"


class BalancedAllocation:
    name = NAME

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        table = cycle.state.nodes
        pod_cpu, pod_memory = (saturate(amount) for amount in cycle.pod.nonzero)
        fractions = []
        for used, capacity in (
            (table.nonzero_cpu[nodes] + pod_cpu, table.allocatable["cpu"][nodes]),
            (table.nonzero_memory[nodes] + pod_memory, table.allocatable["memory"][nodes]),
        ):
            safe = np.where(capacity > 0, capacity, 1)
            fractions.append(np.where(capacity > 0, np.minimum(used / safe, 1.0), 1.0))
        # With two resources the standard deviation is half their difference.
        deviation = np.abs(fractions[0] - fractions[1]) / 2
        result: FloatArray = np.floor((1.0 - deviation) * 100)
        return result
