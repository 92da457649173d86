"""NodeVolumeLimits: a node attaches at most as many volumes per CSI driver as its CSINode allows.

The volumes a pod attaches are its claims' (a bound claim as its PersistentVolume's CSI
driver and volume handle; an unbound one as its StorageClass's provisioner) and its inline
GCE PD and AWS EBS disks, both counted as their CSI drivers, as CSI migration does. On a
node, the distinct volumes of the pods there plus the pod's new ones must not exceed
`spec.drivers[].allocatable.count` of the node's CSINode for any driver; a node without a
CSINode, or a driver without a count, has no limit. A volume the node already has does not
count again.

A claim that does not exist is unresolvable; an ephemeral volume's claim must be owned by
the pod.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import Code, Status, error, unresolvable
from allot.scheduling.volume_claims import (
    claim_attachment,
    claim_refs,
    inline_attachment,
    lookup,
    not_found,
    not_owned,
)

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"


def attachments(state: ClusterState, pod: Pod, *, strict: bool) -> dict[str, str] | Status:
    """The pod's attachable volumes, unique name -> driver; with `strict` (the incoming pod) a
    missing or foreign claim is an error, for pods already placed it is skipped."""
    found: dict[str, str] = {}
    refs = {ref.volume: ref for ref in claim_refs(pod)}
    for volume in pod.spec.volumes:
        ref = refs.get(volume.name)
        if ref is None:
            inline = inline_attachment(volume)
            if inline is not None:
                found[f"{inline[0]}/{inline[1]}"] = inline[0]
            continue
        claim = lookup(state, pod, ref)
        if claim is None:
            if strict:
                return unresolvable(
                    NAME, f"looking up PVC {pod.namespace}/{ref.claim_name}: {not_found(ref.claim_name)}"
                )
            continue
        if ref.ephemeral:
            problem = not_owned(pod, claim)
            if problem is not None:
                return error(NAME, problem)
        attachment = claim_attachment(state, claim)
        if attachment is not None and attachment[0] and attachment[1]:
            found[f"{attachment[0]}/{attachment[1]}"] = attachment[0]
    return found


class NodeVolumeLimits:
    name = NAME
    # Room appears when a pod leaves; CSINodes and claims change limits and attachments.
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT, ClusterEventKind.VOLUME_CHANGED}

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        state = cycle.state
        pod = cycle.pod.pod
        if not pod.spec.volumes:
            return []
        new = attachments(state, pod, strict=True)
        if isinstance(new, Status):
            return [Rejection(new.message(), candidates.copy(), new.code)]
        if not new:
            return []
        over = np.zeros_like(candidates)
        csi_nodes = state.storage.csi_nodes
        for index in np.flatnonzero(candidates):
            info = state.nodes.infos[int(index)]
            csi_node = csi_nodes.get(info.name)
            if csi_node is None:
                continue
            limits = {
                d.name: d.allocatable.count
                for d in csi_node.spec.drivers
                if d.allocatable is not None and d.allocatable.count is not None
            }
            if not limits:
                continue
            attached: dict[str, str] = {}
            for other in state.pods_on(int(index)):
                found = attachments(state, other.pod, strict=False)
                if isinstance(found, dict):
                    attached.update(found)
            adding = Counter(driver for name, driver in new.items() if name not in attached)
            have = Counter(attached.values())
            over[index] = any(
                driver in limits and have[driver] + count > limits[driver] for driver, count in adding.items()
            )
        return [Rejection(REASON, over, Code.UNSCHEDULABLE)] if over.any() else []
