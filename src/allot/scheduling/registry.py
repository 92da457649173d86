"""Plugin names to factories, and the extension points each plugin can be enabled at.

A profile's arguments for a plugin are passed to its factory. kube-scheduler's own plugins
are listed with the extension points they implement in v1.36 (`UPSTREAM_POINTS`), so a
KubeSchedulerConfiguration that enables one where kube-scheduler would refuse it is refused
here too; allot's own plugins' points follow from the protocols they implement. Four
upstream plugins do their work outside the per-pod cycle and have no factory
(`FRAMEWORK_PLUGINS`): the engine's queue is PrioritySort's order, honours SchedulingGates,
runs DefaultPreemption and binds as DefaultBinder does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from allot.scheduling.framework import MaskFilter, NodeFilter, Plugin, ReservePlugin, ScorePlugin
from allot.scheduling.plugins import resources_fit
from allot.scheduling.plugins.balanced_allocation import BalancedAllocation
from allot.scheduling.plugins.dynamic_resources import DynamicResources
from allot.scheduling.plugins.gpu_isolation import GpuIsolation
from allot.scheduling.plugins.gpu_packing import GpuPacking
from allot.scheduling.plugins.gpu_placement import GpuPlacement
from allot.scheduling.plugins.image_locality import ImageLocality
from allot.scheduling.plugins.inter_pod_affinity import InterPodAffinity
from allot.scheduling.plugins.node_affinity import NodeAffinity
from allot.scheduling.plugins.node_declared_features import NodeDeclaredFeatures
from allot.scheduling.plugins.node_name import NodeName
from allot.scheduling.plugins.node_ports import NodePorts
from allot.scheduling.plugins.node_unschedulable import NodeUnschedulable
from allot.scheduling.plugins.node_volume_limits import NodeVolumeLimits
from allot.scheduling.plugins.pod_topology_spread import PodTopologySpread
from allot.scheduling.plugins.taint_toleration import TaintToleration
from allot.scheduling.plugins.topology_alignment import TopologyAlignment
from allot.scheduling.plugins.volume_binding import VolumeBinding
from allot.scheduling.plugins.volume_restrictions import VolumeRestrictions
from allot.scheduling.plugins.volume_zone import VolumeZone

Factory = Callable[[Mapping[str, Any]], Plugin]

REGISTRY: dict[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "NodeName": lambda args: NodeName(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": NodeAffinity.from_args,
    "NodePorts": lambda args: NodePorts(),
    "NodeResourcesFit": resources_fit.from_args,
    "VolumeRestrictions": lambda args: VolumeRestrictions(),
    "NodeVolumeLimits": lambda args: NodeVolumeLimits(),
    "VolumeBinding": lambda args: VolumeBinding.from_args(args),
    "VolumeZone": lambda args: VolumeZone(),
    "PodTopologySpread": PodTopologySpread.from_args,
    "InterPodAffinity": InterPodAffinity.from_args,
    "DynamicResources": lambda args: DynamicResources.from_args(args),
    "NodeDeclaredFeatures": lambda args: NodeDeclaredFeatures(),
    "NodeResourcesBalancedAllocation": BalancedAllocation.from_args,
    "ImageLocality": lambda args: ImageLocality(),
    "GpuPlacement": lambda args: GpuPlacement.from_args(args),
    "GpuIsolation": lambda args: GpuIsolation.from_args(args),
    "GpuPacking": lambda args: GpuPacking.from_args(args),
    "TopologyAlignment": lambda args: TopologyAlignment(),
}

# Upstream plugins whose work is the engine's, not the cycle's (no factory).
FRAMEWORK_PLUGINS = frozenset({"PrioritySort", "SchedulingGates", "DefaultPreemption", "DefaultBinder"})

PRE_ENQUEUE = "preEnqueue"
QUEUE_SORT = "queueSort"
PRE_FILTER = "preFilter"
FILTER = "filter"
POST_FILTER = "postFilter"
PRE_SCORE = "preScore"
SCORE = "score"
RESERVE = "reserve"
PERMIT = "permit"
PRE_BIND = "preBind"
BIND = "bind"
POST_BIND = "postBind"
PLACEMENT_GENERATE = "placementGenerate"
PLACEMENT_SCORE = "placementScore"
# KubeSchedulerConfiguration's extension points (besides multiPoint), in kube-scheduler's order.
EXTENSION_POINTS = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
    PLACEMENT_GENERATE,
    PLACEMENT_SCORE,
)

# The extension points kube-scheduler v1.36's plugins implement (checked against its binary).
UPSTREAM_POINTS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({PRE_ENQUEUE}),
    "PrioritySort": frozenset({QUEUE_SORT}),
    "NodeUnschedulable": frozenset({FILTER}),
    "NodeName": frozenset({FILTER}),
    "TaintToleration": frozenset({FILTER, PRE_SCORE, SCORE}),
    "NodeAffinity": frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    "NodePorts": frozenset({PRE_FILTER, FILTER}),
    "NodeResourcesFit": frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE, PLACEMENT_SCORE}),
    "VolumeRestrictions": frozenset({PRE_FILTER, FILTER}),
    "NodeVolumeLimits": frozenset({PRE_FILTER, FILTER}),
    "VolumeBinding": frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE, RESERVE, PRE_BIND}),
    "VolumeZone": frozenset({PRE_FILTER, FILTER}),
    "PodTopologySpread": frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    "InterPodAffinity": frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    "DynamicResources": frozenset({PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, SCORE, RESERVE, PRE_BIND}),
    "DefaultPreemption": frozenset({PRE_ENQUEUE, POST_FILTER}),
    "NodeResourcesBalancedAllocation": frozenset({PRE_SCORE, SCORE}),
    "ImageLocality": frozenset({SCORE}),
    "DefaultBinder": frozenset({BIND}),
    "NodeDeclaredFeatures": frozenset({PRE_FILTER, FILTER}),
}


def known_plugins() -> set[str]:
    """Every plugin name a profile may use."""
    return set(REGISTRY) | FRAMEWORK_PLUGINS


def build(name: str, args: Mapping[str, Any]) -> Plugin:
    return REGISTRY[name](args)


def points(name: str) -> frozenset[str]:
    """The extension points `name` can be enabled at: upstream's, or, for allot's own plugins,
    filter, score and reserve as they implement them (their pre-filter is part of their filter)."""
    upstream = UPSTREAM_POINTS.get(name)
    if upstream is not None:
        return upstream
    plugin = build(name, {})
    found: set[str] = set()
    if isinstance(plugin, MaskFilter | NodeFilter):
        found.add(FILTER)
    if isinstance(plugin, ScorePlugin):
        found.add(SCORE)
    if isinstance(plugin, ReservePlugin):
        found.add(RESERVE)
    return frozenset(found)


def scores(name: str) -> bool:
    """Whether allot's plugin of that name scores nodes (VolumeBinding's score is off upstream too)."""
    return name in REGISTRY and isinstance(build(name, {}), ScorePlugin)
