"""Kueue admission over a live cluster: queues from the API, running workloads counted.

allot replaces Kueue's admission for the pods it schedules: it reads ClusterQueues,
LocalQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses and Topologies as Kueue
defines them. The admission state is built the way every driver builds it
(`AdmissionState.from_cluster`): a workload whose pods already run — admitted before allot
started, by allot before a restart, or by allot a moment ago with its binding still being
written — counts as admitted on the flavor of its nodes, so quota and fair sharing start from
what really runs. A Job allot admitted counts as admitted on the flavors recorded on it
(`allot.live.job_admission`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from msgspec.structs import replace

from allot.admission.state import AdmissionState
from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.model.errors import Location
from allot.model.loader import LoadedObject, Manifests

log = logging.getLogger("allot.live.kueue")


def admission_from_cluster(
    queues: Manifests,
    state: ClusterState,
    *,
    skip: Callable[[Pod], bool] = lambda pod: False,
) -> AdmissionState:
    """The admission state of the Kueue objects in `queues` over `state`'s pods, as the state
    holds them (assumed bindings included: their pods are running as far as quota goes).

    Jobs among `queues` that run on an admission allot recorded count as admitted on its flavors;
    `skip` leaves out pods that are not workloads of their own (a Job's pods and placeholders: the
    Job is the workload)."""
    manifests = Manifests(entries=list(queues.entries))
    where = Location(file="state")
    for info in state.pods.values():
        pod = info.pod
        if skip(pod):
            continue
        if info.node is not None and pod.spec.node_name != state.nodes.infos[info.node].name:
            pod = replace(pod, spec=replace(pod.spec, node_name=state.nodes.infos[info.node].name))
        manifests.entries.append(LoadedObject(pod, where))
    return AdmissionState.from_cluster(manifests, state)
