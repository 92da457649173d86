"""Kueue admission over a live cluster: queues from the API, running workloads counted.

allot replaces Kueue's admission for the pods it schedules: it reads ClusterQueues,
LocalQueues, Cohorts, ResourceFlavors, WorkloadPriorityClasses and Topologies as Kueue
defines them, and a workload whose pods already run (admitted before allot started, or by
allot before a restart) is counted as admitted on the flavor of its nodes, so quota and
fair sharing start from what really runs.
"""

from __future__ import annotations

import dataclasses

from allot.admission.errors import AdmissionError
from allot.admission.state import AdmissionState
from allot.admission.workload import Workload, workload_key_of
from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.model.loader import Manifests


def admission_from_cluster(manifests: Manifests, state: ClusterState) -> AdmissionState:
    """The admission state of the Kueue objects in `manifests`, sharing `state`'s journal, with
    the workloads whose pods are bound in `state` restored as admitted."""
    admission = AdmissionState.from_manifests(manifests, journal=state.journal)
    pods: list[Pod] = [info.pod for info in state.pods.values()]
    running: dict[str, tuple[Pod, str]] = {}
    for info in state.bound():
        key = workload_key_of(info.pod)
        if key is not None and info.node is not None:
            running.setdefault(key, (info.pod, state.nodes.infos[info.node].name))
    for workload in admission.workloads_from_pods(pods):
        found = running.get(workload.key)
        if found is None:
            continue
        node = state.nodes.infos[state.nodes.index[found[1]]].node
        try:
            admission.restore(_complete(workload), workload.created, node_labels=dict(node.metadata.labels))
        except AdmissionError:
            continue
    return admission


def _complete(workload: Workload) -> Workload:
    """A running group is admitted as a whole, even if some of its pods are gone."""
    return workload if workload.incomplete is None else dataclasses.replace(workload, incomplete=None)
