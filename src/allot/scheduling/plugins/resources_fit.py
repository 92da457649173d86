"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scores by allocation.

Extended resources (device-plugin GPUs such as `nvidia.com/gpu`) are
counted like cpu and memory. An extended resource that a DeviceClass
serves through DRA (`extendedResourceName`) is left to the DynamicResources
plugin on nodes that do not advertise it as allocatable.

Scoring strategies as kube-scheduler's: LeastAllocated (spread) and
MostAllocated (pack), over weighted resources (cpu and memory by default),
using the non-zero request defaults for pods that ask for nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.nodes import AMOUNT_CAP, saturate
from allot.cluster.resources import CPU, MEMORY, PODS
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.status import Code

NAME = "NodeResourcesFit"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
IMPLICIT_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
# kube-scheduler's bounds on a scoring resource's weight.
MIN_WEIGHT = 1
MAX_WEIGHT = 100


def insufficient(resource: str) -> str:
    return "Too many pods" if resource == PODS else f"Insufficient {resource}"


def dra_backed_resources(cycle: Cycle) -> set[str]:
    names = {IMPLICIT_CLASS_RESOURCE_PREFIX + name for name in cycle.state.classes}
    names.update(
        c.spec.extended_resource_name for c in cycle.state.classes.values() if c.spec.extended_resource_name
    )
    return names


class NodeResourcesFit:
    name = NAME
    # Room appears when a pod leaves or a node grows (or comes back).
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT}

    def __init__(
        self, *, strategy: str = LEAST_ALLOCATED, resources: Mapping[str, int] | None = None
    ) -> None:
        if strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            raise ValueError(
                f"unsupported scoring strategy {strategy!r}; expected LeastAllocated or MostAllocated"
            )
        for resource, weight in (resources or {}).items():
            if not isinstance(weight, int) or not MIN_WEIGHT <= weight <= MAX_WEIGHT:
                raise ValueError(
                    f"resource weight of {resource} should be in the range of {MIN_WEIGHT}-{MAX_WEIGHT}, got {weight!r}"
                )
        self.strategy = strategy
        self.resources = dict(resources) if resources else {CPU: 1, MEMORY: 1}

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        table = cycle.state.nodes
        wanted = {**cycle.pod.requests, PODS: cycle.pod.requests.get(PODS, 0) + 1}
        backed = None
        rejections: list[Rejection] = []
        for resource in sorted(wanted):
            need = wanted[resource]
            if need <= 0:
                continue
            short = candidates & (table.free(resource) < need)
            if need > AMOUNT_CAP or table.saturated(resource):
                # Past what the arrays hold exactly: decide each candidate on the exact amounts.
                for index in np.flatnonzero(candidates):
                    short[index] = table.free_exact(resource, int(index)) < need
            if resource not in (CPU, MEMORY, PODS):
                if backed is None:
                    backed = dra_backed_resources(cycle)
                if resource in backed and resource in table.allocatable:
                    short &= table.allocatable[resource] > 0
                elif resource in backed:
                    continue
            if short.any():
                rejections.append(Rejection(insufficient(resource), short, Code.UNSCHEDULABLE))
        return rejections

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        table = cycle.state.nodes
        pod_cpu, pod_memory = (saturate(amount) for amount in cycle.pod.nonzero)
        total = np.zeros(nodes.size, dtype=np.int64)
        weight_sum = 0
        for resource, weight in self.resources.items():
            if resource == CPU:
                used = table.nonzero_cpu[nodes] + pod_cpu
            elif resource == MEMORY:
                used = table.nonzero_memory[nodes] + pod_memory
            else:
                used = table.requested.get(resource, np.zeros(table.size, np.int64))[nodes] + saturate(
                    cycle.pod.requests.get(resource, 0)
                )
            capacity = table.allocatable.get(resource, np.zeros(table.size, np.int64))[nodes]
            safe = np.where(capacity > 0, capacity, 1)
            if self.strategy == LEAST_ALLOCATED:
                part = np.where((capacity > 0) & (used <= capacity), (capacity - used) * 100 // safe, 0)
            else:
                part = np.where(capacity > 0, np.minimum(used, capacity) * 100 // safe, 0)
            total += weight * part
            weight_sum += weight
        return (total // max(weight_sum, 1)).astype(np.float64)
