"""The kinds the live scheduler watches: where each is served and how it decodes.

Core, storage, pod-owner and DRA kinds are always watched (storage for the volume plugins;
Services, ReplicationControllers, ReplicaSets and StatefulSets for default topology
spreading, as kube-scheduler watches them; ResourceClaimTemplates for what a queued pod's
claims charge and Jobs for Kueue's Job integration); Kueue's kinds and DeviceTaintRules only where the API
server serves them (discovered at start and checked again periodically, so a Kueue installed
later is picked up). Objects decode into allot's records with the same conversion and
defaulting the manifest loader applies, so an object read from the API equals the same object
read from `kubectl get -o yaml` output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from allot.model.base import Object
from allot.model.batch import Job
from allot.model.codec import decode
from allot.model.conversion import to_v1_shape
from allot.model.core import Namespace, Node, Pod
from allot.model.defaults import apply_defaults
from allot.model.kueue import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    WorkloadPriorityClass,
)
from allot.model.resource import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from allot.model.scheduling import PodDisruptionBudget, PriorityClass
from allot.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from allot.model.workloads import ReplicaSet, ReplicationController, Service, StatefulSet

_O = TypeVar("_O", bound=Object)


@dataclass(frozen=True, slots=True)
class Kind:
    """One watched resource: its record type, API group, plural and whether it must be served."""

    model: type[Object]
    plural: str
    # Versions to try, most preferred first; the first one the server serves is used.
    versions: tuple[str, ...]
    required: bool = True

    @property
    def group(self) -> str:
        return self.model.API_GROUP

    @property
    def name(self) -> str:
        return self.model.KIND

    @property
    def namespaced(self) -> bool:
        return self.model.NAMESPACED

    def path(self, version: str, *, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The URL path of the collection, or of one object (and a subresource of it)."""
        base = f"/apis/{self.group}/{version}" if self.group else f"/api/{version}"
        if namespace and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


PODS = Kind(Pod, "pods", ("v1",))
NODES = Kind(Node, "nodes", ("v1",))
NAMESPACES = Kind(Namespace, "namespaces", ("v1",))
PRIORITY_CLASSES = Kind(PriorityClass, "priorityclasses", ("v1",))
DISRUPTION_BUDGETS = Kind(PodDisruptionBudget, "poddisruptionbudgets", ("v1",))
DEVICE_CLASSES = Kind(DeviceClass, "deviceclasses", ("v1",))
RESOURCE_CLAIMS = Kind(ResourceClaim, "resourceclaims", ("v1",))
RESOURCE_SLICES = Kind(ResourceSlice, "resourceslices", ("v1",))
RESOURCE_CLAIM_TEMPLATES = Kind(ResourceClaimTemplate, "resourceclaimtemplates", ("v1",))
JOBS = Kind(Job, "jobs", ("v1",))
PERSISTENT_VOLUME_CLAIMS = Kind(PersistentVolumeClaim, "persistentvolumeclaims", ("v1",))
PERSISTENT_VOLUMES = Kind(PersistentVolume, "persistentvolumes", ("v1",))
STORAGE_CLASSES = Kind(StorageClass, "storageclasses", ("v1",))
CSI_NODES = Kind(CSINode, "csinodes", ("v1",))
SERVICES = Kind(Service, "services", ("v1",))
REPLICATION_CONTROLLERS = Kind(ReplicationController, "replicationcontrollers", ("v1",))
REPLICA_SETS = Kind(ReplicaSet, "replicasets", ("v1",))
STATEFUL_SETS = Kind(StatefulSet, "statefulsets", ("v1",))
DEVICE_TAINT_RULES = Kind(DeviceTaintRule, "devicetaintrules", ("v1beta2", "v1alpha3"), required=False)
RESOURCE_FLAVORS = Kind(ResourceFlavor, "resourceflavors", ("v1beta2", "v1beta1"), required=False)
CLUSTER_QUEUES = Kind(ClusterQueue, "clusterqueues", ("v1beta2", "v1beta1"), required=False)
LOCAL_QUEUES = Kind(LocalQueue, "localqueues", ("v1beta2", "v1beta1"), required=False)
COHORTS = Kind(Cohort, "cohorts", ("v1beta2", "v1beta1", "v1alpha1"), required=False)
WORKLOAD_PRIORITY_CLASSES = Kind(
    WorkloadPriorityClass, "workloadpriorityclasses", ("v1beta2", "v1beta1"), required=False
)
TOPOLOGIES = Kind(Topology, "topologies", ("v1beta2", "v1beta1", "v1alpha1"), required=False)

CORE_KINDS: tuple[Kind, ...] = (
    NODES,
    PODS,
    NAMESPACES,
    PRIORITY_CLASSES,
    DISRUPTION_BUDGETS,
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    RESOURCE_CLAIM_TEMPLATES,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    CSI_NODES,
    SERVICES,
    REPLICATION_CONTROLLERS,
    REPLICA_SETS,
    STATEFUL_SETS,
)
# Storage: what the volume plugins read; workloads: what default topology spreading reads.
STORAGE_KINDS = (PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, CSI_NODES)
WORKLOAD_KINDS = (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS)
OPTIONAL_KINDS: tuple[Kind, ...] = (
    DEVICE_TAINT_RULES,
    RESOURCE_FLAVORS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    COHORTS,
    WORKLOAD_PRIORITY_CLASSES,
    TOPOLOGIES,
)
KUEUE_KINDS = (RESOURCE_FLAVORS, CLUSTER_QUEUES, LOCAL_QUEUES, COHORTS, WORKLOAD_PRIORITY_CLASSES, TOPOLOGIES)


class DecodeError(ValueError):
    """An object from the API that allot's records cannot hold (a bug or an API allot does not know)."""


def decode_object(raw: dict[str, Any], model: type[_O], api_version: str) -> _O:
    """An API object (a list item carries no apiVersion/kind: they are filled in) as a record."""
    if "kind" not in raw:
        raw = {"apiVersion": api_version, "kind": model.KIND, **raw}
    try:
        return apply_defaults(decode(to_v1_shape(raw), model))
    except msgspec.ValidationError as error:
        metadata = raw.get("metadata") or {}
        name = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}".lstrip("/")
        raise DecodeError(f"{model.KIND} {name}: {error}") from None
