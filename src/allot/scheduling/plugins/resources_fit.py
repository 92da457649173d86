"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; scores by allocation.

Extended resources (device-plugin GPUs such as `nvidia.com/gpu`) are
counted like cpu and memory. An extended resource that a DeviceClass
serves through DRA (`extendedResourceName`) is left to the DynamicResources
plugin on nodes that do not advertise it as allocatable.

Scoring strategies as kube-scheduler's: LeastAllocated (spread),
MostAllocated (pack) and RequestedToCapacityRatio (a piecewise linear
function of utilisation), over weighted resources (cpu and memory by
default), using the non-zero request defaults for pods that ask for
nothing. A resource the node has none of, or an extended resource the pod
does not ask for, takes no part in a node's weighted average.

Args (NodeResourcesFitArgs): `scoringStrategy` {type, resources, requestedToCapacityRatio
{shape}}, `ignoredResources` and `ignoredResourceGroups` (extended resources the filter
does not check, by name or by the prefix before `/`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.nodes import AMOUNT_CAP, NodeTable, saturate
from allot.cluster.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from allot.cluster.state import ClusterState
from allot.model.validate_core import is_native_resource
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.plugin_args import ArgumentError
from allot.scheduling.status import Code

NAME = "NodeResourcesFit"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
# A shape point's score runs 0-10 (MaxCustomPriorityScore), scaled to the node score's 0-100.
MAX_CUSTOM_SCORE = 10
MAX_UTILIZATION = 100
IMPLICIT_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
# kube-scheduler's bounds on a scoring resource's weight.
MIN_WEIGHT = 1
MAX_WEIGHT = 100


def insufficient(resource: str) -> str:
    return "Too many pods" if resource == PODS else f"Insufficient {resource}"


def dra_backed_resources(state: ClusterState) -> set[str]:
    """The extended resource names DeviceClasses serve through DRA (their own and the implicit ones)."""
    names = {IMPLICIT_CLASS_RESOURCE_PREFIX + name for name in state.classes}
    names.update(
        c.spec.extended_resource_name for c in state.classes.values() if c.spec.extended_resource_name
    )
    return names


def _shape(raw: Any) -> tuple[tuple[int, int], ...]:
    """RequestedToCapacityRatio's shape: utilisation 0-100 strictly increasing, score 0-10."""
    points = (raw or {}).get("shape") if isinstance(raw, dict) else None
    if not isinstance(points, list) or not points:
        raise ArgumentError(
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"
        )
    shape: list[tuple[int, int]] = []
    for i, point in enumerate(points):
        where = f"scoringStrategy.requestedToCapacityRatio.shape[{i}]"
        if not isinstance(point, dict) or set(point) - {"utilization", "score"}:
            raise ArgumentError(f"{where}: expected {{utilization: <0-100>, score: <0-10>}}")
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        for key, value, high in (
            ("utilization", utilization, MAX_UTILIZATION),
            ("score", score, MAX_CUSTOM_SCORE),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise ArgumentError(
                    f"{where}.{key}: Invalid value: {value!r}: not in valid range [0, {high}]"
                )
        if shape and utilization <= shape[-1][0]:
            raise ArgumentError(
                f"{where}.utilization: Invalid value: {utilization}: utilization values must be sorted in increasing order"
            )
        shape.append((utilization, score * (100 // MAX_CUSTOM_SCORE)))
    return tuple(shape)


def _broken_linear(shape: Sequence[tuple[int, int]], utilization: int) -> int:
    for i, (x, y) in enumerate(shape):
        if utilization <= x:
            if i == 0:
                return y
            px, py = shape[i - 1]
            # Go's integer division truncates toward zero.
            return py + int((y - py) * (utilization - px) / (x - px))
    return shape[-1][1]


def from_args(args: Mapping[str, Any]) -> NodeResourcesFit:
    """NodeResourcesFitArgs, checked as kube-scheduler checks them."""
    strategy = args.get("scoringStrategy") or {}
    if not isinstance(strategy, dict) or set(strategy) - {"type", "resources", "requestedToCapacityRatio"}:
        raise ArgumentError("scoringStrategy: expected {type, resources, requestedToCapacityRatio}")
    kind = strategy.get("type", LEAST_ALLOCATED)
    if kind not in STRATEGIES:
        listed = ", ".join(f'"{s}"' for s in STRATEGIES)
        raise ArgumentError(f"scoringStrategy.type: Unsupported value: {kind!r}: supported values: {listed}")
    resources: dict[str, int] = {}
    for i, entry in enumerate(strategy.get("resources") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ArgumentError(
                f"scoringStrategy.resources[{i}]: expected {{name: <resource>, weight: <1-100>}}"
            )
        weight = entry.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or not MIN_WEIGHT <= weight <= MAX_WEIGHT:
            raise ArgumentError(
                f"scoringStrategy.resources[{i}].weight: Invalid value: {weight!r}: resource weight of "
                f"{entry['name']} not in valid range (0, {MAX_WEIGHT}]"
            )
        resources[entry["name"]] = weight
    shape = _shape(strategy.get("requestedToCapacityRatio")) if kind == REQUESTED_TO_CAPACITY_RATIO else ()
    ignored: set[str] = set()
    groups: set[str] = set()
    for key, found in (("ignoredResources", ignored), ("ignoredResourceGroups", groups)):
        values = args.get(key) or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ArgumentError(f"{key}: expected a list of resource names")
        for i, value in enumerate(values):
            if key == "ignoredResourceGroups" and "/" in value:
                raise ArgumentError(
                    f"{key}[{i}]: Invalid value: {value!r}: resource group name can't contain '/'"
                )
            found.add(value)
    return NodeResourcesFit(
        strategy=kind,
        resources=resources or None,
        shape=shape,
        ignored=frozenset(ignored),
        ignored_groups=frozenset(groups),
    )


def _exceeds_allocatable(table: NodeTable, resource: str, need: int) -> BoolArray:
    """Nodes whose whole allocatable amount of `resource` is less than `need` (exact amounts)."""
    if resource not in table.allocatable:
        return np.ones(table.size, dtype=np.bool_)
    if need > AMOUNT_CAP or table.saturated(resource):
        return np.array([info.allocatable.get(resource, 0) < need for info in table.infos], dtype=np.bool_)
    result: BoolArray = table.allocatable[resource] < need
    return result


class NodeResourcesFit:
    name = NAME
    # Room appears when a pod leaves or a node grows (or comes back).
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT}

    def __init__(
        self,
        *,
        strategy: str = LEAST_ALLOCATED,
        resources: Mapping[str, int] | None = None,
        shape: Sequence[tuple[int, int]] = (),
        ignored: frozenset[str] = frozenset(),
        ignored_groups: frozenset[str] = frozenset(),
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(
                f"unsupported scoring strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}"
            )
        if strategy == REQUESTED_TO_CAPACITY_RATIO and not shape:
            raise ValueError("RequestedToCapacityRatio needs a shape")
        for resource, weight in (resources or {}).items():
            if not isinstance(weight, int) or not MIN_WEIGHT <= weight <= MAX_WEIGHT:
                raise ValueError(
                    f"resource weight of {resource} should be in the range of {MIN_WEIGHT}-{MAX_WEIGHT}, got {weight!r}"
                )
        self.strategy = strategy
        self.resources = dict(resources) if resources else {CPU: 1, MEMORY: 1}
        self.shape = tuple(shape)
        self.ignored = ignored
        self.ignored_groups = ignored_groups

    def _ignored(self, resource: str) -> bool:
        if is_native_resource(resource):
            return False
        return resource in self.ignored or resource.split("/", 1)[0] in self.ignored_groups

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        table = cycle.state.nodes
        wanted = {**cycle.pod.requests, PODS: cycle.pod.requests.get(PODS, 0) + 1}
        backed = None
        rejections: list[Rejection] = []
        for resource in sorted(wanted):
            need = wanted[resource]
            if need <= 0 or self._ignored(resource):
                continue
            short = candidates & (table.free(resource) < need)
            if need > AMOUNT_CAP or table.saturated(resource):
                # Past what the arrays hold exactly: decide each candidate on the exact amounts.
                for index in np.flatnonzero(candidates):
                    short[index] = table.free_exact(resource, int(index)) < need
            if resource not in (CPU, MEMORY, PODS):
                if backed is None:
                    backed = dra_backed_resources(cycle.state)
                if resource in backed and resource in table.allocatable:
                    short &= table.allocatable[resource] > 0
                elif resource in backed:
                    continue
            if not short.any():
                continue
            # Where the pod asks for more than the node has at all, no preemption can make room:
            # kube-scheduler marks such a node unresolvable (its preemption skips it). "Too many
            # pods" stays resolvable there too.
            beyond = short & _exceeds_allocatable(table, resource, need) if resource != PODS else None
            if beyond is not None and beyond.any():
                rejections.append(Rejection(insufficient(resource), beyond, Code.UNRESOLVABLE))
                short &= ~beyond
                if not short.any():
                    continue
            rejections.append(Rejection(insufficient(resource), short, Code.UNSCHEDULABLE))
        return rejections

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        table = cycle.state.nodes
        # kube-scheduler v1.36 scores the pod without its pod-level requests (checked against its
        # binary: benchmarks/oddities/pod-level-scoring), the pods already there with theirs.
        pod_cpu, pod_memory = (saturate(amount) for amount in cycle.pod.incoming_nonzero)
        total = np.zeros(nodes.size, dtype=np.int64)
        # The weights of the resources each node counts: a number while every node counts every
        # resource so far (the usual case), an array once some node leaves one out.
        weights: int | IntArray = 0
        for resource, weight in self.resources.items():
            if resource == CPU:
                used = table.nonzero_cpu[nodes] + pod_cpu
            elif resource == MEMORY:
                used = table.nonzero_memory[nodes] + pod_memory
            else:
                wanted = cycle.pod.requests.get(resource, 0)
                if wanted == 0 and resource != EPHEMERAL_STORAGE:
                    # A resource other than cpu, memory and ephemeral storage that the pod does
                    # not ask for is left out of the average.
                    continue
                used = table.requested.get(resource, np.zeros(table.size, np.int64))[nodes] + saturate(wanted)
            capacity = table.allocatable.get(resource, np.zeros(table.size, np.int64))[nodes]
            counted = capacity > 0
            safe = np.where(counted, capacity, 1)
            if self.strategy == LEAST_ALLOCATED:
                part = np.where(counted & (used <= capacity), (capacity - used) * 100 // safe, 0)
            elif self.strategy == MOST_ALLOCATED:
                part = np.where(counted, np.minimum(used, capacity) * 100 // safe, 0)
            else:
                utilization = np.where(
                    counted & (used <= capacity), used * MAX_UTILIZATION // safe, MAX_UTILIZATION
                )
                part = np.array([_broken_linear(self.shape, int(u)) for u in utilization], dtype=np.int64)
            if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
                counted &= part > 0
            if counted.all():
                total += weight * part
                weights = weights + weight
            else:
                total += np.where(counted, weight * part, 0)
                weights = weights + np.where(counted, weight, 0)
        if isinstance(weights, int) and self.strategy != REQUESTED_TO_CAPACITY_RATIO:
            return (total // max(weights, 1)).astype(np.float64)
        per_node = np.broadcast_to(weights, total.shape)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            # math.Round(float64(score) / float64(weightSum)), half away from zero.
            ratio = [
                math.floor(t / w + 0.5) if w else 0
                for t, w in zip(total.tolist(), per_node.tolist(), strict=True)
            ]
            return np.array(ratio, dtype=np.float64)
        return np.where(per_node > 0, total // np.maximum(per_node, 1), 0).astype(np.float64)
