"""GpuPacking: fill partly used GPU nodes first, so whole nodes stay whole for the jobs that need them.

A score plugin, allot's own (not in kube-scheduler's default profile; the
simulator's `fair` and `fgd` policies enable it, see docs/placement.md).
For each feasible node:

    gpu    = 100 * (1 - free GPUs of the node / GPUs of the largest node)
    cpu    = 100 * (cpu requested on the node + the pod's) / allocatable cpu
    memory = the same for memory
    score  = (w_gpu * gpu + w_cpu * cpu + w_memory * memory) / (w_gpu + w_cpu + w_memory)

Free GPUs are GPU-equivalents (`packing.occupancy`: a whole GPU 1, a 30 %
share 0.3, a MIG partition its share of the counters). The node with the
fewest free GPUs that still fits the pod wins (best fit): one-GPU pods,
shared-GPU pods and MIG partitions pile onto nodes already broken, and an
eight-GPU job finds an idle node. Nodes without GPUs have none free and
score highest on the GPU term, so pods asking for no GPU keep off GPU
nodes that have GPUs to give. CPU and memory count too (most allocated
first), because a GPU node whose CPUs are taken cannot host a GPU job
either. Weights are the `resources` argument (`gpu` 4, `cpu` 1, `memory`
1 by default), as NodeResourcesFit's scoring resources are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from allot.cluster.nodes import saturate
from allot.cluster.resources import CPU, MEMORY
from allot.cluster.state import ClusterState
from allot.scheduling.framework import Cycle, FloatArray, IntArray
from allot.scheduling.packing.occupancy import GpuOccupancy

NAME = "GpuPacking"
GPU = "gpu"
DEFAULT_WEIGHTS: Mapping[str, int] = {GPU: 4, CPU: 1, MEMORY: 1}
MAX_WEIGHT = 100


class GpuPacking:
    name = NAME

    def __init__(self, weights: Mapping[str, int] | None = None) -> None:
        chosen = dict(DEFAULT_WEIGHTS if weights is None else weights)
        for resource, weight in chosen.items():
            if resource not in DEFAULT_WEIGHTS:
                raise ValueError(f"unknown resource {resource!r}; expected gpu, cpu or memory")
            if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= MAX_WEIGHT:
                raise ValueError(
                    f"weight of {resource} should be an integer from 0 to {MAX_WEIGHT}, got {weight!r}"
                )
        if not any(chosen.values()):
            raise ValueError("at least one resource weight must be positive")
        self.weights = chosen
        self._occupancy: GpuOccupancy | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> GpuPacking:
        resources = args.get("resources")
        if resources is None:
            return cls()
        if not isinstance(resources, list):
            raise ValueError("resources: expected a list of {name, weight}")
        weights: dict[str, int] = {}
        for entry in resources:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ValueError("resources: expected a list of {name, weight}")
            weights[entry["name"]] = entry.get("weight", 1)
        return cls(weights)

    def occupancy(self, state: ClusterState) -> GpuOccupancy:
        if self._occupancy is None or self._occupancy.state is not state:
            if self._occupancy is not None:
                self._occupancy.detach()
            self._occupancy = GpuOccupancy(state)
        return self._occupancy

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        table = cycle.state.nodes
        total = np.zeros(nodes.size, dtype=np.float64)
        weights = self.weights
        if weights[GPU]:
            occupancy = self.occupancy(cycle.state)
            largest = max(int(occupancy.totals().max(initial=0)), 1)
            total += weights[GPU] * 100.0 * (1.0 - occupancy.free_of(nodes) / largest)
        pod_cpu, pod_memory = (saturate(amount) for amount in cycle.pod.nonzero)
        for resource, used in (
            (CPU, table.nonzero_cpu[nodes] + pod_cpu),
            (MEMORY, table.nonzero_memory[nodes] + pod_memory),
        ):
            if not weights[resource]:
                continue
            capacity = table.allocatable[resource][nodes]
            safe = np.where(capacity > 0, capacity, 1)
            total += weights[resource] * np.where(
                capacity > 0, np.minimum(used, capacity) * 100.0 / safe, 0.0
            )
        result: FloatArray = np.floor(total / sum(weights.values()))
        return result
