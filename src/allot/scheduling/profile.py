"""Scheduler profiles: which plugins run, with which score weights and arguments.

A profile is selected by the pod's `schedulerName`. The default profile is kube-scheduler
v1.36's (its plugins in its order and with its score weights), plus allot's own
GpuIsolation (filter) and TopologyAlignment (score). Profiles are read from a
KubeSchedulerConfiguration (`allot.scheduling.profile_config`); allot's own plugins and
arguments use the same shape, so one file configures everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# kube-scheduler v1.36's default profile (its `multiPoint` list, in order), then allot's own
# plugins: GpuIsolation keeps GPUs without memory isolation to one trust domain (secure by
# default; a profile opts out by disabling it or with `trustDomain: any`), TopologyAlignment
# prefers aligned GPU/NIC/CPU sets (see plugins/topology_alignment.py).
DEFAULT_PLUGINS = (
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
    "NodeDeclaredFeatures",
    "GpuIsolation",
    "TopologyAlignment",
)
# The default profile's filters, in kube-scheduler's order (cheap, unresolvable checks first).
DEFAULT_FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeDeclaredFeatures",
    "GpuIsolation",
)
# kube-scheduler v1.36's score weights, then allot's.
DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
    "TopologyAlignment": 2,
}
# allot's own profile adds GpuPacking (fill partly used GPU nodes first; docs/placement.md explains
# the weight). Not in the default profile, so `allot place` with a stock profile places as
# kube-scheduler does.
PACKING_WEIGHT = 3
ALLOT_SCORE_WEIGHTS: Mapping[str, int] = {**DEFAULT_SCORE_WEIGHTS, "GpuPacking": PACKING_WEIGHT}
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5
# DefaultPreemptionArgs' defaults: (minCandidateNodesPercentage, minCandidateNodesAbsolute).
DEFAULT_PREEMPTION_CANDIDATES = (10, 100)


@dataclass(frozen=True)
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # Plugins whose pre-filter and filter run, in order.
    filters: tuple[str, ...] = DEFAULT_FILTERS
    score_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    # None: kube-scheduler's adaptive percentage (50 - nodes/125, at least 5 %).
    percentage_of_nodes_to_score: int | None = None
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Plugins enabled at preFilter but not at filter: their pre-filter runs (and may reject).
    pre_filter_only: tuple[str, ...] = ()
    # DefaultPreemption enabled at postFilter, and its candidate-node arguments.
    preemption: bool = True
    preemption_candidates: tuple[int, int] = DEFAULT_PREEMPTION_CANDIDATES
    # DynamicResources enabled at postFilter: its account opens the post-filter message.
    claims_post_filter: bool = True

    @property
    def preempts_for_devices(self) -> bool:
        """allot's device preemption (default): nodes short of devices are preemption candidates and
        a victim's devices count as freed in the dry run. `DynamicResources: {preemptForDevices:
        false}` turns both off, as kube-scheduler v1.36 has them: its DRA plugin does not follow the
        dry run's removals, so a victim's devices stay allocated there."""
        return self.plugin_args.get("DynamicResources", {}).get("preemptForDevices", True) is not False

    def feasible_nodes_to_find(self, total: int) -> int:
        """How many feasible nodes to look for before scoring (kube-scheduler's rule)."""
        if total < MIN_FEASIBLE_NODES_TO_FIND:
            return total
        percentage = self.percentage_of_nodes_to_score
        if percentage is None or percentage <= 0:
            percentage = max(50 - total // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
        if percentage >= 100:
            return total
        return max(total * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def allot_profile(scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    """The default profile with allot's packing on: what the simulator's `fair` policy schedules with."""
    return Profile(scheduler_name=scheduler_name, score_weights=dict(ALLOT_SCORE_WEIGHTS))


class ProfileError(ValueError):
    """A scheduler configuration that cannot be used; the message names the file and field."""
