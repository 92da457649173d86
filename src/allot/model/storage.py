"""Storage objects placement reads: PersistentVolumeClaims and PersistentVolumes (core/v1),
StorageClasses and CSINodes (storage.k8s.io/v1).

The claim's spec (`PersistentVolumeClaimSpec`) lives in `allot.model.core`, where pods'
generic ephemeral volumes use it too. Only what VolumeBinding, VolumeZone, NodeVolumeLimits
and VolumeRestrictions look at is modelled; the rest of a manifest is dropped.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import Object, Record
from allot.model.core import (
    AWSElasticBlockStoreVolumeSource,
    GCEPersistentDiskVolumeSource,
    NodeSelector,
    PersistentVolumeClaimSpec,
    ResourceList,
)

# Annotations the scheduler and the PV controller share (k8s.io/component-helpers/storage/volume).
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
# The class of a claim or volume, before `storageClassName` existed; it wins when present.
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
# A StorageClass provisioner that provisions nothing (local volumes are made by hand).
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def _class_of(obj: Object, spec_class: str | None) -> str:
    annotated = obj.metadata.annotations.get(ANN_STORAGE_CLASS)
    return annotated if annotated is not None else spec_class or ""


class PersistentVolumeClaimStatus(Record, frozen=True):
    phase: str = ""
    access_modes: tuple[str, ...] = ()
    capacity: ResourceList = msgspec.field(default_factory=dict)


class PersistentVolumeClaim(Object, frozen=True):
    KIND: ClassVar[str] = "PersistentVolumeClaim"
    NAMESPACED: ClassVar[bool] = True

    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)

    @property
    def storage_class(self) -> str:
        """The claim's class: the beta annotation, else `spec.storageClassName` ("" for none)."""
        return _class_of(self, self.spec.storage_class_name)


class ObjectReference(Record, frozen=True):
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""


class VolumeNodeAffinity(Record, frozen=True):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(Record, frozen=True):
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False


class PersistentVolumeSpec(Record, frozen=True):
    capacity: ResourceList = msgspec.field(default_factory=dict)
    access_modes: tuple[str, ...] = ()
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None


class PersistentVolumeStatus(Record, frozen=True):
    phase: str = ""


class PersistentVolume(Object, frozen=True):
    KIND: ClassVar[str] = "PersistentVolume"

    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)

    @property
    def storage_class(self) -> str:
        return _class_of(self, self.spec.storage_class_name)


class TopologySelectorLabelRequirement(Record, frozen=True):
    key: str = ""
    values: tuple[str, ...] = ()


class TopologySelectorTerm(Record, frozen=True):
    match_label_expressions: tuple[TopologySelectorLabelRequirement, ...] = ()


class StorageClass(Object, frozen=True):
    API_GROUP: ClassVar[str] = "storage.k8s.io"
    KIND: ClassVar[str] = "StorageClass"

    provisioner: str = ""
    parameters: dict[str, str] = msgspec.field(default_factory=dict)
    reclaim_policy: str | None = None
    # The API server defaults it to Immediate (allot.model.defaults).
    volume_binding_mode: str | None = None
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()

    @property
    def is_default(self) -> bool:
        return self.metadata.annotations.get(ANN_DEFAULT_CLASS) == "true"


class VolumeNodeResources(Record, frozen=True):
    count: int | None = None


class CSINodeDriver(Record, frozen=True):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: tuple[str, ...] = ()
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(Record, frozen=True):
    drivers: tuple[CSINodeDriver, ...] = ()


class CSINode(Object, frozen=True):
    """The CSI drivers on a node (named like the node) and how many volumes each may attach there."""

    API_GROUP: ClassVar[str] = "storage.k8s.io"
    KIND: ClassVar[str] = "CSINode"

    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)
