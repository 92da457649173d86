"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use the pod brings closer to
proportion.

As kube-scheduler v1.36 scores it (kubernetes #135573): the balance of a node is the standard
deviation of its cpu and memory fractions (requested over allocatable, each at most 1; with two
resources, half their difference), and the score is the change the pod makes to it,
75 + 50 x (deviation before - deviation after), from 50 (perfectly balanced made perfectly
unbalanced) to 100 (the reverse); a pod that changes nothing scores 75. Requests are the pods'
own (not the non-zero defaults LeastAllocated counts). Pods that request neither cpu nor memory
are not scored (kubernetes #129138): every node gets 0.
"""

from __future__ import annotations

import numpy as np

from allot.cluster.nodes import saturate
from allot.cluster.resources import CPU, MEMORY
from allot.cluster.state import ClusterState
from allot.scheduling.framework import Cycle, FloatArray, IntArray

NAME = "NodeResourcesBalancedAllocation"


def deviation(state: ClusterState, nodes: IntArray, cpu: int = 0, memory: int = 0) -> FloatArray:
    """Per node, the standard deviation of its cpu and memory fractions with `cpu` and `memory`
    more requested; 0 where a node has no allocatable amount of one of them."""
    table = state.nodes
    fractions = []
    present = np.ones(nodes.size, dtype=np.bool_)
    for name, extra in ((CPU, cpu), (MEMORY, memory)):
        capacity = table.allocatable[name][nodes]
        used = table.requested[name][nodes] + saturate(extra)
        present &= capacity > 0
        safe = np.where(capacity > 0, capacity, 1)
        fractions.append(np.minimum(used / safe, 1.0))
    result: FloatArray = np.where(present, np.abs(fractions[0] - fractions[1]) / 2, 0.0)
    return result


class BalancedAllocation:
    name = NAME

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        requests = cycle.pod.requests
        cpu, memory = requests.get(CPU, 0), requests.get(MEMORY, 0)
        if cpu == 0 and memory == 0:
            return np.zeros(nodes.size)
        state = cycle.state
        change = deviation(state, nodes) - deviation(state, nodes, cpu, memory)
        result: FloatArray = np.floor(75.0 + 50.0 * change)
        return result
