"""Workloads that already run: counted as admitted, on the flavor of their nodes.

A cluster dump holds workloads Kueue admitted long ago; their pods are bound
to nodes (or Running). `restore_running` records such a workload as
admitted without checking quota (Kueue's cache counts running workloads the
same way, so usage may exceed quota after quotas shrank). Each resource
group gets the first flavor whose `nodeLabels` all appear in the labels of a
node the workload runs on, else the group's first flavor.

`restore_running_pods` does this for every running workload among a
cluster's pods; building an admission state from manifests calls it, so
every driver (planner, simulator, `allot queues`) starts from the usage of
what already runs. A running pod group is admitted as a whole even when the
dump misses some of its pods. A workload that cannot be restored (its
LocalQueue is missing, it is invalid) stays submitted as pending, with its
reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Protocol

from allot.admission.entry import QueueEntry
from allot.admission.errors import AdmissionError
from allot.admission.flavors import Assignment, FlavorChoice, Mode, PodSetAssignment
from allot.admission.resources import PODS, FlavorResource, Usage
from allot.admission.view import AdmissionView
from allot.admission.workload import Workload, workload_key_of
from allot.model.core import Pod
from allot.model.kueue import ResourceFlavor

# Pods in these phases hold no quota.
TERMINAL_PHASES = ("Succeeded", "Failed")


class RunningHost(AdmissionView, Protocol):
    """What restoring a running workload needs of the admission state (AdmissionState is one)."""

    @property
    def flavors(self) -> Mapping[str, ResourceFlavor]: ...

    def submit(self, workload: Workload, now: float | None = None) -> None: ...
    def workloads_from_pods(self, pods: Iterable[Pod]) -> list[Workload]: ...
    def _record_admission(
        self,
        entry: QueueEntry,
        usage: Mapping[FlavorResource, int],
        now: float,
        *,
        admitted_at: float | None = None,
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
    state: RunningHost,
    workload: Workload,
    now: float,
    *,
    node_labels: Mapping[str, str] | None = None,
    admitted_at: float | None = None,
    flavors: Mapping[str, str] | None = None,
) -> Assignment:
    """Record `workload` as admitted (see module docs); raises AdmissionError if it has no queue.

    `admitted_at` (default `now`) is when Kueue admitted it, for preemption's "most recently
    admitted first". `flavors` names the flavor of some resources outright (resource -> flavor, as
    recorded when allot admitted the workload); a name the resource's group does not list is
    ignored.
    """
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
            name = (flavors or {}).get(resource, "")
            if name not in group.flavors:
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
    state._record_admission(entry, usage, now, admitted_at=admitted_at)
    return Assignment(cq, tuple(pod_sets), MappingProxyType(usage))


def is_running(pod: Pod) -> bool:
    """Whether the pod holds its workload's quota: bound to a node or Running, and not finished."""
    if pod.status.phase in TERMINAL_PHASES:
        return False
    return bool(pod.spec.node_name) or pod.status.phase == "Running"


def restore_running_pods(
    state: RunningHost,
    pods: Iterable[Pod],
    node_labels: Mapping[str, Mapping[str, str]],
    now: float,
) -> list[str]:
    """Restore every workload with a running pod among `pods` (see module docs); the keys restored.

    `node_labels` gives each node's labels by name, for the flavor of a workload's resources.
    A workload counts as admitted when it was created, or at `now` if that is earlier (the
    caller's clock may not be the pods' own).
    """
    live = [pod for pod in pods if pod.status.phase not in TERMINAL_PHASES]
    running: dict[str, Pod] = {}
    for pod in live:
        key = workload_key_of(pod)
        if key is not None and is_running(pod):
            running.setdefault(key, pod)
    if not running:
        return []
    restored: list[str] = []
    for workload in state.workloads_from_pods(live):
        member = running.get(workload.key)
        if member is None:
            continue
        whole = dataclasses.replace(workload, incomplete=None)
        try:
            restore_running(
                state,
                whole,
                now,
                node_labels=node_labels.get(member.spec.node_name),
                admitted_at=min(workload.created, now),
            )
        except AdmissionError:
            continue
        restored.append(workload.key)
    return restored
