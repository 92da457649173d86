"""A pod's PersistentVolumeClaims and what the volume plugins need to know about them.

Shared by VolumeBinding, VolumeZone, NodeVolumeLimits and VolumeRestrictions: which claim
each volume uses (a generic ephemeral volume's is `<pod>-<volume>` and must be owned by the
pod), looking claims up with kube-scheduler's error wording, and the CSI driver and volume handle a claim attaches as
(in-tree GCE PD and AWS EBS volumes counted as their CSI drivers, as CSI migration does).
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.cluster.claims import pod_uid
from allot.cluster.state import ClusterState
from allot.model.core import Pod, Volume
from allot.model.storage import PersistentVolumeClaim

# In-tree provisioners and their CSI drivers (CSI migration, GA for these).
MIGRATED_PROVISIONERS = {
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
GCE_PD_DRIVER = MIGRATED_PROVISIONERS["kubernetes.io/gce-pd"]
AWS_EBS_DRIVER = MIGRATED_PROVISIONERS["kubernetes.io/aws-ebs"]


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """A volume of the pod that uses a claim."""

    volume: str
    claim_name: str
    ephemeral: bool


def claim_refs(pod: Pod) -> list[ClaimRef]:
    refs: list[ClaimRef] = []
    for volume in pod.spec.volumes:
        if volume.persistent_volume_claim is not None:
            refs.append(ClaimRef(volume.name, volume.persistent_volume_claim.claim_name, False))
        elif volume.ephemeral is not None:
            refs.append(ClaimRef(volume.name, f"{pod.name}-{volume.name}", True))
    return refs


def not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def not_owned(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """Why a generic ephemeral volume's claim cannot be used by the pod (not created for it)."""
    uid = pod_uid(pod)
    if any(ref.uid == uid and ref.controller for ref in claim.metadata.owner_references):
        return None
    return f"PVC {claim.namespace}/{claim.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def lookup(state: ClusterState, pod: Pod, ref: ClaimRef) -> PersistentVolumeClaim | None:
    return state.storage.claims.get(f"{pod.namespace}/{ref.claim_name}")


def inline_attachment(volume: Volume) -> tuple[str, str] | None:
    """An inline in-tree volume counted as its CSI driver's attachment (driver, handle)."""
    if volume.gce_persistent_disk is not None:
        return GCE_PD_DRIVER, volume.gce_persistent_disk.pd_name
    if volume.aws_elastic_block_store is not None:
        return AWS_EBS_DRIVER, volume.aws_elastic_block_store.volume_id
    return None


def claim_attachment(state: ClusterState, claim: PersistentVolumeClaim) -> tuple[str, str] | None:
    """The CSI driver and volume handle a claim attaches as (kube-scheduler's getCSIDriverInfo):
    its bound volume's, or, unbound, its class's provisioner and a placeholder handle."""
    storage = state.storage
    volume = storage.volumes.get(claim.spec.volume_name) if claim.spec.volume_name else None
    if volume is not None:
        if volume.spec.csi is not None:
            return volume.spec.csi.driver, volume.spec.csi.volume_handle
        if volume.spec.gce_persistent_disk is not None:
            return GCE_PD_DRIVER, volume.spec.gce_persistent_disk.pd_name
        if volume.spec.aws_elastic_block_store is not None:
            return AWS_EBS_DRIVER, volume.spec.aws_elastic_block_store.volume_id
        return None
    class_name = claim.storage_class
    storage_class = storage.classes.get(class_name) if class_name else None
    if storage_class is None:
        return None
    driver = MIGRATED_PROVISIONERS.get(storage_class.provisioner, storage_class.provisioner)
    return driver, f"pending-{claim.namespace}/{claim.name}"
