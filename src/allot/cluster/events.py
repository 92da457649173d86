"""Cluster events: what changed, in the words queueing hints use to decide who to retry.

A pod (or gang, or Kueue workload) that could not be placed waits until
something happens that could change its verdict (kube-scheduler's
queueing hints, Kueue's requeue-on-event). `ClusterEvent` names that
something: a kind and, where it is known, the node it happened on, the
priority of the pod involved, and the Kueue scope (flavor, ClusterQueue,
cohort).

The ClusterState emits the events it sees itself (a pod added, bound or
leaving a node, a node's readiness changing); drivers report the rest
(claims, slices and device classes changed, quota and queue changes)
through `Engine.notify`. Node-local events carry the node's index in the
node table; an event without a node is about the whole cluster.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ClusterEventKind(enum.Enum):
    NODE_ADDED = "NodeAdded"
    # Readiness, labels, taints, allocatable or unschedulable changed.
    NODE_CHANGED = "NodeChanged"
    NODE_REMOVED = "NodeRemoved"
    POD_ADDED = "PodAdded"
    # A pod's record changed (labels, gates, claims, priority): it is tried again as it is now.
    POD_UPDATED = "PodUpdated"
    POD_BOUND = "PodBound"
    # A pod left its node: it completed, was deleted, preempted or evicted.
    POD_LEFT = "PodLeft"
    CLAIM_CHANGED = "ClaimChanged"
    SLICE_CHANGED = "SliceChanged"
    CLASS_CHANGED = "DeviceClassChanged"
    # PersistentVolumeClaims, PersistentVolumes, StorageClasses or CSINodes changed.
    VOLUME_CHANGED = "VolumeChanged"
    # Services, ReplicaSets, StatefulSets or ReplicationControllers changed (default spreading).
    WORKLOADS_CHANGED = "WorkloadsChanged"
    # Kueue: quota released or limits changed (scope: cluster_queue / cohort).
    QUOTA_CHANGED = "QuotaChanged"
    WORKLOAD_FINISHED = "WorkloadFinished"
    QUEUES_CHANGED = "QueuesChanged"


# Events that happen on one node: a hint can look at that node alone.
NODE_LOCAL = frozenset(
    {
        ClusterEventKind.NODE_ADDED,
        ClusterEventKind.NODE_CHANGED,
        ClusterEventKind.POD_BOUND,
        ClusterEventKind.POD_LEFT,
    }
)
# Events that change what nodes offer (capacity, labels, taints, devices).
NODE_EVENTS = frozenset({ClusterEventKind.NODE_ADDED, ClusterEventKind.NODE_CHANGED})
DEVICE_EVENTS = frozenset(
    {ClusterEventKind.CLAIM_CHANGED, ClusterEventKind.SLICE_CHANGED, ClusterEventKind.CLASS_CHANGED}
)
# Pods taking, leaving or changing their place: what other pods' affinity and spreading count.
POD_EVENTS = frozenset({ClusterEventKind.POD_BOUND, ClusterEventKind.POD_LEFT, ClusterEventKind.POD_UPDATED})
ALL_KINDS = frozenset(ClusterEventKind)


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """Something that happened. `node` is a node-table index (None: not tied to one node);
    `priority` is the priority of the pod bound or gone; `pod` names it. Empty Kueue scopes
    mean "anywhere"."""

    kind: ClusterEventKind
    node: int | None = None
    priority: int | None = None
    pod: str = ""
    flavor: str = ""
    cluster_queue: str = ""
    cohort: str = ""

    @property
    def local(self) -> bool:
        return self.node is not None and self.kind in NODE_LOCAL
