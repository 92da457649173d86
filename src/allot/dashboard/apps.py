"""Applications as the dashboard names them: a namespace, a LocalQueue, a ClusterQueue, a pod group.

An application key is `<kind>/<name>`: `namespace/team-a`, `localqueue/team-a/main`,
`clusterqueue/gpu-cq`, `podgroup/team-a/trainer`. A pod belongs to its namespace, to the
LocalQueue its `kueue.x-k8s.io/queue-name` label names (and the ClusterQueue behind it), and to
its pod group (Kueue's `kueue.x-k8s.io/pod-group-name` label, else the coscheduling
`scheduling.x-k8s.io/pod-group` label).
"""

from __future__ import annotations

from collections.abc import Mapping

from allot.model.kueue import POD_GROUP_NAME_LABEL, QUEUE_NAME_LABEL
from allot.scheduling.gang import COSCHEDULING_LABEL

NAMESPACE = "namespace"
LOCAL_QUEUE = "localqueue"
CLUSTER_QUEUE = "clusterqueue"
POD_GROUP = "podgroup"
KINDS = (NAMESPACE, LOCAL_QUEUE, CLUSTER_QUEUE, POD_GROUP)
# Kinds whose names are namespaced (namespace/name).
NAMESPACED = frozenset({LOCAL_QUEUE, POD_GROUP})


def local_queue_of(namespace: str, labels: Mapping[str, str]) -> str:
    name = labels.get(QUEUE_NAME_LABEL, "")
    return f"{namespace}/{name}" if name else ""


def group_of(namespace: str, labels: Mapping[str, str]) -> str:
    name = labels.get(POD_GROUP_NAME_LABEL) or labels.get(COSCHEDULING_LABEL) or ""
    return f"{namespace}/{name}" if name else ""


def app_keys(namespace: str, local_queue: str, cluster_queue: str, group: str) -> list[str]:
    """The application keys a pod counts towards."""
    keys = [f"{NAMESPACE}/{namespace}"]
    if local_queue:
        keys.append(f"{LOCAL_QUEUE}/{local_queue}")
    if cluster_queue:
        keys.append(f"{CLUSTER_QUEUE}/{cluster_queue}")
    if group:
        keys.append(f"{POD_GROUP}/{group}")
    return keys
