"""Plugin names to factories; a profile's arguments are passed to the factory."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from allot.scheduling.framework import Plugin
from allot.scheduling.plugins.balanced_allocation import BalancedAllocation
from allot.scheduling.plugins.dynamic_resources import DynamicResources
from allot.scheduling.plugins.gpu_isolation import GpuIsolation
from allot.scheduling.plugins.gpu_packing import GpuPacking
from allot.scheduling.plugins.gpu_placement import GpuPlacement
from allot.scheduling.plugins.node_affinity import NodeAffinity
from allot.scheduling.plugins.node_unschedulable import NodeUnschedulable
from allot.scheduling.plugins.resources_fit import NodeResourcesFit
from allot.scheduling.plugins.taint_toleration import TaintToleration
from allot.scheduling.plugins.topology_alignment import TopologyAlignment

Factory = Callable[[Mapping[str, Any]], Plugin]


def _resources_fit(args: Mapping[str, Any]) -> Plugin:
    strategy = args.get("scoringStrategy") or {}
    resources = {r["name"]: int(r.get("weight", 1)) for r in strategy.get("resources") or []}
    return NodeResourcesFit(strategy=strategy.get("type", "LeastAllocated"), resources=resources or None)


REGISTRY: dict[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": lambda args: NodeAffinity(),
    "NodeResourcesFit": _resources_fit,
    "NodeResourcesBalancedAllocation": lambda args: BalancedAllocation(),
    "DynamicResources": lambda args: DynamicResources.from_args(args),
    "GpuPlacement": lambda args: GpuPlacement.from_args(args),
    "GpuIsolation": lambda args: GpuIsolation.from_args(args),
    "GpuPacking": lambda args: GpuPacking.from_args(args),
    "TopologyAlignment": lambda args: TopologyAlignment(),
}


def known_plugins() -> set[str]:
    return set(REGISTRY)


def build(name: str, args: Mapping[str, Any]) -> Plugin:
    return REGISTRY[name](args)
