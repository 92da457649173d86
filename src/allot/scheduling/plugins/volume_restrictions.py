"""VolumeRestrictions: disks that cannot be shared, and claims only one pod may use.

* A GCE persistent disk, AWS EBS volume, iSCSI target (by IQN) or Ceph RBD image (same
  monitors, pool and image) used inline by a pod already on the node rejects the node,
  unless both pods mount it read-only (never for EBS): `node(s) had no available disk`.
* A claim with access mode `ReadWriteOncePod` that a bound pod anywhere uses rejects every
  node (preempting that pod can help).

Pre-filter: a claim that does not exist is unresolvable (`persistentvolumeclaim "x" not
found`), as upstream reports it first among the volume plugins.
"""

from __future__ import annotations

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.model.core import Pod, Volume
from allot.model.storage import READ_WRITE_ONCE_POD
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import SUCCESS, Code, Status, unresolvable
from allot.scheduling.volume_claims import not_found

NAME = "VolumeRestrictions"
DISK_CONFLICT = "node(s) had no available disk"
READ_WRITE_ONCE_POD_CONFLICT = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
# The API server's default RBD pool.
_RBD_POOL = "rbd"


def _conflict(volume: Volume, other: Volume) -> bool:
    gce, other_gce = volume.gce_persistent_disk, other.gce_persistent_disk
    if (
        gce is not None
        and other_gce is not None
        and gce.pd_name == other_gce.pd_name
        and not (gce.read_only and other_gce.read_only)
    ):
        return True
    ebs, other_ebs = volume.aws_elastic_block_store, other.aws_elastic_block_store
    if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
        return True
    iscsi, other_iscsi = volume.iscsi, other.iscsi
    if (
        iscsi is not None
        and other_iscsi is not None
        and iscsi.iqn == other_iscsi.iqn
        and not (iscsi.read_only and other_iscsi.read_only)
    ):
        return True
    rbd, other_rbd = volume.rbd, other.rbd
    if rbd is not None and other_rbd is not None:
        same = (
            bool(set(rbd.monitors) & set(other_rbd.monitors))
            and (rbd.pool or _RBD_POOL) == (other_rbd.pool or _RBD_POOL)
            and rbd.image == other_rbd.image
        )
        if same and not (rbd.read_only and other_rbd.read_only):
            return True
    return False


def _disks(pod: Pod) -> list[Volume]:
    return [
        v
        for v in pod.spec.volumes
        if v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.iscsi is not None
        or v.rbd is not None
    ]


class VolumeRestrictions:
    name = NAME
    # A disk or a ReadWriteOncePod claim frees up when its pod leaves, wherever it ran.
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT, ClusterEventKind.VOLUME_CHANGED}
    wake_anywhere = frozenset({ClusterEventKind.POD_LEFT})

    def pre_filter(self, cycle: Cycle) -> Status:
        pod = cycle.pod.pod
        claims = cycle.state.storage.claims
        for volume in pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is not None and f"{pod.namespace}/{source.claim_name}" not in claims:
                return unresolvable(NAME, not_found(source.claim_name))
        return SUCCESS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        pod = cycle.pod.pod
        if not pod.spec.volumes:
            return []
        state = cycle.state
        rejections: list[Rejection] = []
        disks = _disks(pod)
        remaining = candidates
        if disks:
            busy = np.zeros_like(candidates)
            for index in np.flatnonzero(candidates):
                for other in state.pods_on(int(index)):
                    if any(_conflict(d, v) for d in disks for v in other.pod.spec.volumes):
                        busy[index] = True
                        break
            if busy.any():
                rejections.append(Rejection(DISK_CONFLICT, busy, Code.UNSCHEDULABLE))
                remaining = candidates & ~busy
        storage = state.storage
        for volume in pod.spec.volumes:
            source = volume.persistent_volume_claim
            if source is None:
                continue
            key = f"{pod.namespace}/{source.claim_name}"
            claim = storage.claims.get(key)
            if claim is None or READ_WRITE_ONCE_POD not in claim.spec.access_modes:
                continue
            if state.pod_index.claim_users(key) > 0 and remaining.any():
                rejections.append(
                    Rejection(READ_WRITE_ONCE_POD_CONFLICT, remaining.copy(), Code.UNSCHEDULABLE)
                )
                break
        return rejections
