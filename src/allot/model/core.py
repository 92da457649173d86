"""core/v1 records the scheduler reads and writes: Node, Pod, Namespace.

Only the fields that influence scheduling are modelled: among them container
images and host ports, the volumes that claim storage or attach disks, and a
node's cached images. Everything else in a manifest (probes, environment,
other volume kinds ...) is tolerated and dropped, as a typed client would.
Resource amounts are `Quantity` values.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import Condition, LabelSelector, Object, ObjectMeta, Record
from allot.model.quantity import Quantity

ResourceList = dict[str, Quantity]


# --- taints, tolerations, node selection ------------------------------------


class Taint(Record, frozen=True):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Toleration(Record, frozen=True):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class NodeSelectorRequirement(Record, frozen=True):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


class NodeSelectorTerm(Record, frozen=True):
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class NodeSelector(Record, frozen=True):
    """Terms are ORed; the requirements inside one term are ANDed."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class PreferredSchedulingTerm(Record, frozen=True):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(Record, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


class PodAffinityTerm(Record, frozen=True):
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    topology_key: str = ""
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


class WeightedPodAffinityTerm(Record, frozen=True):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(Record, frozen=True):
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(Record, frozen=True):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(Record, frozen=True):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


# --- pods -----------------------------------------------------------------------


class ResourceClaimReference(Record, frozen=True):
    """An entry of a container's `resources.claims`: which pod claim (and request) it uses."""

    name: str = ""
    request: str = ""


class ResourceRequirements(Record, frozen=True):
    requests: ResourceList = msgspec.field(default_factory=dict)
    limits: ResourceList = msgspec.field(default_factory=dict)
    claims: tuple[ResourceClaimReference, ...] = ()


class ContainerPort(Record, frozen=True):
    """A container port; one with a `hostPort` takes that port on its node (NodePorts)."""

    name: str = ""
    host_port: int = 0
    container_port: int = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(Record, frozen=True):
    name: str = ""
    image: str = ""
    ports: tuple[ContainerPort, ...] = ()
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    # "Always" on an init container makes it a sidecar that keeps running.
    restart_policy: str | None = None


class PodResourceClaim(Record, frozen=True):
    """`spec.resourceClaims[]`: a claim by name, or a template to generate one from."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


# --- volumes: the sources placement looks at -----------------------------------------


class PersistentVolumeClaimVolumeSource(Record, frozen=True):
    claim_name: str = ""
    read_only: bool = False


class VolumeResourceRequirements(Record, frozen=True):
    requests: ResourceList = msgspec.field(default_factory=dict)
    limits: ResourceList = msgspec.field(default_factory=dict)


class PersistentVolumeClaimSpec(Record, frozen=True):
    """What a claim asks of a volume (the PersistentVolumeClaim object is in allot.model.storage)."""

    access_modes: tuple[str, ...] = ()
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimTemplate(Record, frozen=True):
    """A generic ephemeral volume's claim: the ephemeral volume controller creates it as `<pod>-<volume>`."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class EphemeralVolumeSource(Record, frozen=True):
    volume_claim_template: PersistentVolumeClaimTemplate | None = None


class CSIVolumeSource(Record, frozen=True):
    """An inline CSI volume (counted by no attach limit, as upstream)."""

    driver: str = ""
    read_only: bool | None = None


class GCEPersistentDiskVolumeSource(Record, frozen=True):
    pd_name: str = ""
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(Record, frozen=True):
    volume_id: str = msgspec.field(default="", name="volumeID")
    fs_type: str = ""
    partition: int = 0
    read_only: bool = False


class RBDVolumeSource(Record, frozen=True):
    monitors: tuple[str, ...] = ()
    image: str = ""
    pool: str = ""
    read_only: bool = False


class ISCSIVolumeSource(Record, frozen=True):
    target_portal: str = ""
    iqn: str = ""
    lun: int = 0
    read_only: bool = False


class ImageVolumeSource(Record, frozen=True):
    """An OCI image mounted as a volume (ImageLocality counts its image)."""

    reference: str = ""
    pull_policy: str = ""


class Volume(Record, frozen=True):
    """`spec.volumes[]`: only the sources that bind, attach or pull something are modelled."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    image: ImageVolumeSource | None = None


class PodSchedulingGate(Record, frozen=True):
    """`spec.schedulingGates[]`: while any is present, no scheduler places the pod."""

    name: str = ""


class PodSpec(Record, frozen=True):
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceList = msgspec.field(default_factory=dict)
    # Pod-level resources (PodLevelResources); when set they bound the pod as a whole.
    resources: ResourceRequirements | None = None
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    scheduler_name: str = ""
    runtime_class_name: str = ""
    resource_claims: tuple[PodResourceClaim, ...] = ()
    volumes: tuple[Volume, ...] = ()
    host_network: bool = False
    node_name: str = ""
    restart_policy: str = ""
    termination_grace_period_seconds: int | None = None
    scheduling_gates: tuple[PodSchedulingGate, ...] = ()


class PodResourceClaimStatus(Record, frozen=True):
    """Which generated ResourceClaim serves a pod's template entry."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(Record, frozen=True):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(Record, frozen=True):
    """Which claim serves the pod's extended resources through DRA (DRAExtendedResource)."""

    request_mappings: tuple[ContainerExtendedResourceRequest, ...] = ()
    resource_claim_name: str = ""


class PodStatus(Record, frozen=True):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()
    nominated_node_name: str = ""
    start_time: str | None = None
    resource_claim_statuses: tuple[PodResourceClaimStatus, ...] = ()
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(Object, frozen=True):
    NAMESPACED: ClassVar[bool] = True
    KIND: ClassVar[str] = "Pod"

    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


# --- nodes ----------------------------------------------------------------------


class NodeSpec(Record, frozen=True):
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    provider_id: str = msgspec.field(default="", name="providerID")


class ContainerImage(Record, frozen=True):
    """An image the node holds (`status.images[]`), under each of its names."""

    names: tuple[str, ...] = ()
    size_bytes: int = 0


class NodeStatus(Record, frozen=True):
    capacity: ResourceList = msgspec.field(default_factory=dict)
    allocatable: ResourceList = msgspec.field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    images: tuple[ContainerImage, ...] = ()


class Node(Object, frozen=True):
    KIND: ClassVar[str] = "Node"

    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        """A node without a Ready condition is taken as ready (hand-written manifests)."""
        for condition in self.status.conditions:
            if condition.type == "Ready":
                return condition.status == "True"
        return True


class NamespaceSpec(Record, frozen=True):
    finalizers: tuple[str, ...] = ()


class NamespaceStatus(Record, frozen=True):
    phase: str = ""


class Namespace(Object, frozen=True):
    KIND: ClassVar[str] = "Namespace"

    spec: NamespaceSpec = msgspec.field(default_factory=NamespaceSpec)
    status: NamespaceStatus = msgspec.field(default_factory=NamespaceStatus)
