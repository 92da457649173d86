"""Workloads that already run: counted as admitted, on the flavor of their nodes.

`allot queues` reads a cluster dump where Kueue admitted some workloads long
ago; their pods are bound to nodes. `restore_running` records such a
workload as admitted without checking quota (Kueue's cache counts running
workloads the same way, so usage may exceed quota after quotas shrank).
Each resource group gets the first flavor whose `nodeLabels` all appear in
the labels of a node the workload runs on, else the group's first flavor.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol

from allot.admission.entry import QueueEntry
from allot.admission.errors import AdmissionError
from allot.admission.flavors import Assignment, FlavorChoice, Mode, PodSetAssignment
from allot.admission.resources import PODS, FlavorResource, Usage
from allot.admission.view import AdmissionView
from allot.admission.workload import Workload
from allot.model.kueue import ResourceFlavor


class RunningHost(AdmissionView, Protocol):
    """What restoring a running workload needs of the admission state (AdmissionState is one)."""

    @property
    def flavors(self) -> Mapping[str, ResourceFlavor]: ...

    def submit(self, workload: Workload, now: float | None = None) -> None: ...
    def _record_admission(
        self, entry: QueueEntry, usage: Mapping[FlavorResource, int], now: float
    ) -> None: ...


def running_flavor(
    names: tuple[str, ...], flavors: Mapping[str, ResourceFlavor], node_labels: Mapping[str, str] | None
) -> str:
    if node_labels is not None:
        for name in names:
            found = flavors.get(name)
            labels = found.spec.node_labels if found is not None else {}
            if all(node_labels.get(k) == v for k, v in labels.items()):
                return name
    return names[0]


def restore_running(
    state: RunningHost, workload: Workload, now: float, *, node_labels: Mapping[str, str] | None = None
) -> Assignment:
    """Record `workload` as admitted (see module docs); raises AdmissionError if it has no queue."""
    state.submit(workload, now)
    entry = state.entries[workload.key]
    cq = entry.cluster_queue
    if cq is None or entry.waiting is not None:
        reason = entry.waiting.message if entry.waiting else "no ClusterQueue"
        raise AdmissionError(f"workload {workload.key} cannot be restored: {reason}")
    policy = state.policies[cq]
    pod_sets = []
    usage: Usage = {}
    for pod_set in workload.pod_sets:
        requests = pod_set.total()
        if policy.group_for(PODS) is not None:
            requests[PODS] = pod_set.count
        chosen: dict[str, FlavorChoice] = {}
        for resource in sorted(requests):
            group = policy.group_for(resource)
            if group is None or not requests[resource] or resource in chosen:
                continue
            name = running_flavor(group.flavors, state.flavors, node_labels)
            for covered in group.covered:
                if covered in requests:
                    chosen[covered] = FlavorChoice(name, Mode.FIT)
        for resource, choice in chosen.items():
            fr = (choice.flavor, resource)
            usage[fr] = usage.get(fr, 0) + requests[resource]
        pod_sets.append(
            PodSetAssignment(
                pod_set.name, pod_set.count, MappingProxyType(chosen), MappingProxyType(requests)
            )
        )
    state._record_admission(entry, usage, now)
    return Assignment(cq, tuple(pod_sets), MappingProxyType(usage))
