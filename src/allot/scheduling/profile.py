"""Scheduler profiles: which plugins run, with which score weights and arguments.

A profile is selected by the pod's `schedulerName`. Profiles are read from
a KubeSchedulerConfiguration-shaped YAML (`kubescheduler.config.k8s.io/v1`):
`profiles[].schedulerName`, `plugins.{filter,score,multiPoint}.{enabled,
disabled}` with weights, `pluginConfig[].args`, and `percentageOfNodesToScore`
globally or per profile. allot's own plugins and arguments use the same
shape, so one file configures everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Filter order as kube-scheduler's default profile (cheap, unresolvable checks first), then
# allot's GpuIsolation: GPUs without memory isolation hold one trust domain (secure by default;
# a profile opts out by disabling it or with `trustDomain: any`).
DEFAULT_FILTERS = (
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "DynamicResources",
    "GpuIsolation",
)
DEFAULT_SCORE_WEIGHTS: Mapping[str, int] = {
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "DynamicResources": 1,
    # allot's: aligned GPU/NIC/CPU sets and unbroken pairs (see plugins/topology_alignment.py).
    "TopologyAlignment": 2,
}
# allot's own profile adds GpuPacking (fill partly used GPU nodes first; docs/placement.md explains
# the weight). Not in the default profile, so `allot place` with a stock profile places as
# kube-scheduler does.
PACKING_WEIGHT = 3
ALLOT_SCORE_WEIGHTS: Mapping[str, int] = {**DEFAULT_SCORE_WEIGHTS, "GpuPacking": PACKING_WEIGHT}
# Filter plugins a profile may enable beyond the defaults; they run after them, in the order
# enabled. GpuPlacement replaces DynamicResources (disable that one) for shared GPUs.
OPTIONAL_FILTERS = ("GpuPlacement",)
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


@dataclass(frozen=True)
class Profile:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: tuple[str, ...] = DEFAULT_FILTERS
    score_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    # None: kube-scheduler's adaptive percentage (50 - nodes/125, at least 5 %).
    percentage_of_nodes_to_score: int | None = None
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

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
    """A scheduler configuration that cannot be used; the message names the field."""


def _plugin_set(section: Any, where: str) -> tuple[list[tuple[str, int | None]], list[str]]:
    if section is None:
        return [], []
    if not isinstance(section, dict):
        raise ProfileError(f"{where}: expected a mapping with enabled/disabled lists")
    enabled: list[tuple[str, int | None]] = []
    for i, entry in enumerate(section.get("enabled") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ProfileError(f"{where}.enabled[{i}]: expected {{name: <plugin>, weight: <int>}}")
        weight = entry.get("weight")
        if weight is not None and (not isinstance(weight, int) or weight < 0):
            raise ProfileError(f"{where}.enabled[{i}].weight: expected a non-negative integer")
        enabled.append((entry["name"], weight))
    disabled = []
    for i, entry in enumerate(section.get("disabled") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ProfileError(f"{where}.disabled[{i}]: expected {{name: <plugin>}}")
        disabled.append(entry["name"])
    return enabled, disabled


def profile_from_config(
    raw: Mapping[str, Any], *, known_plugins: set[str], where: str, default_percentage: int | None
) -> Profile:
    """One `profiles[]` entry of a KubeSchedulerConfiguration."""
    name = raw.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}.schedulerName: expected a non-empty string")
    filters = list(DEFAULT_FILTERS)
    weights = dict(DEFAULT_SCORE_WEIGHTS)
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, dict):
        raise ProfileError(f"{where}.plugins: expected a mapping")
    for point in ("multiPoint", "filter", "score"):
        enabled, disabled = _plugin_set(plugins.get(point), f"{where}.plugins.{point}")
        for plugin in [n for n, _ in enabled] + disabled:
            if plugin != "*" and plugin not in known_plugins:
                raise ProfileError(
                    f"{where}.plugins.{point}: unknown plugin {plugin!r}; known: {', '.join(sorted(known_plugins))}"
                )
        if "*" in disabled:
            if point in ("multiPoint", "filter"):
                filters = []
            if point in ("multiPoint", "score"):
                weights = {}
        for plugin in disabled:
            if point in ("multiPoint", "filter") and plugin in filters:
                filters.remove(plugin)
            if point in ("multiPoint", "score"):
                weights.pop(plugin, None)
        for plugin, weight in enabled:
            known_filter = plugin in DEFAULT_FILTERS or plugin in OPTIONAL_FILTERS
            if point in ("multiPoint", "filter") and known_filter and plugin not in filters:
                filters.append(plugin)
            if point in ("multiPoint", "score"):
                weights[plugin] = weight if weight is not None else DEFAULT_SCORE_WEIGHTS.get(plugin, 1)
    args: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(raw.get("pluginConfig") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ProfileError(f"{where}.pluginConfig[{i}]: expected {{name: <plugin>, args: {{...}}}}")
        if entry["name"] not in known_plugins:
            raise ProfileError(f"{where}.pluginConfig[{i}].name: unknown plugin {entry['name']!r}")
        plugin_args = entry.get("args") or {}
        if not isinstance(plugin_args, dict):
            raise ProfileError(f"{where}.pluginConfig[{i}].args: expected a mapping")
        args[entry["name"]] = plugin_args
    percentage = raw.get("percentageOfNodesToScore", default_percentage)
    if percentage is not None and (not isinstance(percentage, int) or not 0 <= percentage <= 100):
        raise ProfileError(f"{where}.percentageOfNodesToScore: expected an integer from 0 to 100")
    return Profile(
        scheduler_name=name,
        filters=tuple(filters),
        score_weights=weights,
        percentage_of_nodes_to_score=percentage,
        plugin_args=args,
    )


def profiles_from_config(
    raw: Any, *, known_plugins: set[str], source: str = "<config>"
) -> dict[str, Profile]:
    """All profiles of a KubeSchedulerConfiguration document, by scheduler name."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{source}: expected a KubeSchedulerConfiguration mapping")
    kind = raw.get("kind")
    if kind != "KubeSchedulerConfiguration":
        raise ProfileError(f"{source}: kind: expected KubeSchedulerConfiguration, got {kind!r}")
    percentage = raw.get("percentageOfNodesToScore")
    if percentage is not None and (not isinstance(percentage, int) or not 0 <= percentage <= 100):
        raise ProfileError(f"{source}: percentageOfNodesToScore: expected an integer from 0 to 100")
    entries = raw.get("profiles") or [{}]
    if not isinstance(entries, list):
        raise ProfileError(f"{source}: profiles: expected a list")
    profiles: dict[str, Profile] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ProfileError(f"{source}: profiles[{i}]: expected a mapping")
        profile = profile_from_config(
            entry,
            known_plugins=known_plugins,
            where=f"{source}: profiles[{i}]",
            default_percentage=percentage,
        )
        if profile.scheduler_name in profiles:
            raise ProfileError(f"{source}: profiles[{i}].schedulerName: duplicate {profile.scheduler_name!r}")
        profiles[profile.scheduler_name] = profile
    return profiles
