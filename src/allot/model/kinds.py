"""Which record type serves which apiVersion and kind."""

from __future__ import annotations

from allot.model.base import Object
from allot.model.batch import Job
from allot.model.core import Namespace, Node, Pod
from allot.model.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    WorkloadPriorityClass,
)
from allot.model.kueue_config import Configuration
from allot.model.resource import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from allot.model.runtime import RuntimeClass
from allot.model.scheduling import PodDisruptionBudget, PriorityClass
from allot.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from allot.model.workloads import ReplicaSet, ReplicationController, Service, StatefulSet

OBJECT_TYPES: tuple[type[Object], ...] = (
    Node,
    Pod,
    Namespace,
    PriorityClass,
    PodDisruptionBudget,
    RuntimeClass,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    DeviceTaintRule,
    ResourceFlavor,
    ClusterQueue,
    LocalQueue,
    Cohort,
    WorkloadPriorityClass,
    Topology,
    Configuration,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
    Job,
)

_BY_GROUP_KIND: dict[tuple[str, str], type[Object]] = {(t.API_GROUP, t.KIND): t for t in OBJECT_TYPES}


def split_api_version(api_version: str) -> tuple[str, str]:
    """`resource.k8s.io/v1` -> (`resource.k8s.io`, `v1`); `v1` -> (``, `v1`)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def lookup(api_version: str, kind: str) -> type[Object] | None:
    """The record type for a group and kind allot models, whatever the version; None if not modelled."""
    group, _ = split_api_version(api_version)
    return _BY_GROUP_KIND.get((group, kind))


def supported_versions(cls: type[Object]) -> list[str]:
    return [f"{cls.API_GROUP}/{v}" if cls.API_GROUP else v for v in cls.API_VERSIONS]
