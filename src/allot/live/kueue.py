"""Kueue admission over a live cluster: queues from the API, running workloads counted.

allot replaces Kueue's admission for the pods it schedules: it reads ClusterQueues,
LocalQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses and Topologies as Kueue
defines them. The admission state is built the way every driver builds it
(`AdmissionState.from_cluster`): a workload whose pods already run — admitted before allot
started, by allot before a restart, or by allot a moment ago with its binding still being
written — counts as admitted on the flavor of its nodes, so quota and fair sharing start from
what really runs.
"""

from __future__ import annotations

from msgspec.structs import replace

from allot.admission.state import AdmissionState
from allot.cluster.state import ClusterState
from allot.model.errors import Location
from allot.model.loader import LoadedObject, Manifests


def admission_from_cluster(queues: Manifests, state: ClusterState) -> AdmissionState:
    """The admission state of the Kueue objects in `queues` over `state`'s pods, as the state
    holds them (assumed bindings included: their pods are running as far as quota goes)."""
    manifests = Manifests(entries=list(queues.entries))
    where = Location(file="state")
    for info in state.pods.values():
        pod = info.pod
        if info.node is not None and pod.spec.node_name != state.nodes.infos[info.node].name:
            pod = replace(pod, spec=replace(pod.spec, node_name=state.nodes.infos[info.node].name))
        manifests.entries.append(LoadedObject(pod, where))
    return AdmissionState.from_cluster(manifests, state)
