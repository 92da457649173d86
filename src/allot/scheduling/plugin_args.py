"""Plugin arguments (`pluginConfig[].args`) as kube-scheduler v1.36 accepts them.

Each upstream plugin's args are a typed object (`<Plugin>Args`, kubescheduler.config.k8s.io/v1)
decoded strictly: unknown fields are errors, and so are values of the wrong type or out of
range, in kube-scheduler's words. `check` does the part every plugin shares (the optional
`apiVersion`/`kind`, the field names); each plugin's factory checks its values and raises
`ArgumentError` naming the field. allot's own plugins (GpuPlacement, GpuIsolation, GpuPacking,
TopologyAlignment) and allot's additions to upstream plugins (DynamicResources `stepBudget`,
`alignment`) are listed with their fields too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

API_VERSION = "kubescheduler.config.k8s.io/v1"

# Fields of each plugin's args; None: the plugin's factory decides (allot's own, open-ended).
ARG_FIELDS: dict[str, frozenset[str] | None] = {
    "DefaultPreemption": frozenset({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}),
    "DynamicResources": frozenset({"filterTimeout", "bindingTimeout", "stepBudget", "alignment"}),
    "InterPodAffinity": frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}),
    "NodeAffinity": frozenset({"addedAffinity"}),
    "NodeResourcesBalancedAllocation": frozenset({"resources"}),
    "NodeResourcesFit": frozenset({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}),
    "PodTopologySpread": frozenset({"defaultConstraints", "defaultingType"}),
    "VolumeBinding": frozenset({"bindTimeoutSeconds", "shape"}),
    "GpuPlacement": None,
    "GpuIsolation": None,
    "GpuPacking": None,
}


class ArgumentError(ValueError):
    """A plugin argument kube-scheduler (or allot) would refuse; the message starts with its field."""


def check(name: str, args: Any) -> dict[str, Any]:
    """The args without `apiVersion`/`kind`, after the checks every plugin shares."""
    if not isinstance(args, dict):
        raise ArgumentError(f"expected a mapping, got {type(args).__name__}")
    values: dict[str, Any] = dict(args)
    api_version = values.pop("apiVersion", None)
    kind = values.pop("kind", None)
    if api_version is not None and api_version != API_VERSION:
        raise ArgumentError(f"apiVersion: expected {API_VERSION}, got {api_version!r}")
    if kind is not None and kind != f"{name}Args":
        raise ArgumentError(f"kind: args for plugin {name} were not of type {name}Args, got {kind}")
    fields = ARG_FIELDS.get(name, frozenset())
    if fields is not None:
        for key in values:
            if key not in fields:
                raise ArgumentError(
                    f'unknown field "{key}"'
                    + (
                        f" (known: {', '.join(sorted(fields))})"
                        if fields
                        else " (the plugin takes no arguments)"
                    )
                )
    return values


def integer(
    args: Mapping[str, Any], key: str, default: int, *, low: int | None = None, high: int | None = None
) -> int:
    """An integer field, in [low, high] (kube-scheduler's "not in valid range" wording)."""
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{key}: expected an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"[{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise ArgumentError(f"{key}: Invalid value: {value}: not in valid range {bounds}")
    return value


_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def duration(args: Mapping[str, Any], key: str) -> None:
    """A Go duration string (`10s`, `1m30s`), accepted and not used."""
    value = args.get(key)
    if value is not None and (not isinstance(value, str) or not _DURATION.match(value)):
        raise ArgumentError(f"{key}: expected a duration such as 10s or 1m, got {value!r}")


def preemption(args: Mapping[str, Any]) -> tuple[int, int]:
    """DefaultPreemptionArgs: (minCandidateNodesPercentage, minCandidateNodesAbsolute)."""
    percentage = integer(args, "minCandidateNodesPercentage", 10, low=0, high=100)
    absolute = integer(args, "minCandidateNodesAbsolute", 100, low=0)
    if percentage == 0 and absolute == 0:
        raise ArgumentError(
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
        )
    return percentage, absolute


def volume_binding(args: Mapping[str, Any]) -> None:
    """VolumeBindingArgs: a non-negative bindTimeoutSeconds; `shape` scores only under the
    StorageCapacityScoring gate (alpha, off), so it is accepted and not used."""
    integer(args, "bindTimeoutSeconds", 600, low=0)
    shape = args.get("shape")
    if shape is not None and not isinstance(shape, list):
        raise ArgumentError(f"shape: expected a list, got {type(shape).__name__}")
