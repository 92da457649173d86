"""kueue.x-k8s.io records: ResourceFlavor, ClusterQueue, LocalQueue, Cohort,
WorkloadPriorityClass and Topology, as Kueue serves them in v1beta1 and v1beta2.

The two versions differ in a few field names (v1beta1 `spec.cohort` became
v1beta2 `spec.cohortName`; a Cohort's `spec.parent` became `spec.parentName`).
Both spellings decode; the `cohort_ref` / `parent_ref` properties give the
one that was set, so nothing above this module cares which version a
manifest used.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import Condition, LabelSelector, Object, Record
from allot.model.core import Taint, Toleration
from allot.model.quantity import Quantity

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")

# Labels and annotations Kueue reads from pods and jobs.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
POD_GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
# A workload's maximum execution time in seconds: Kueue stops it after that long.
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
POD_GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
PODSET_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"


class ResourceFlavorSpec(Record, frozen=True):
    node_labels: dict[str, str] = msgspec.field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None


class ResourceFlavor(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "ResourceFlavor"
    API_VERSIONS: ClassVar[tuple[str, ...]] = KUEUE_VERSIONS

    spec: ResourceFlavorSpec = msgspec.field(default_factory=ResourceFlavorSpec)


class ResourceQuota(Record, frozen=True):
    name: str = ""
    nominal_quota: Quantity | None = None
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Record, frozen=True):
    name: str = ""
    resources: tuple[ResourceQuota, ...] = ()


class ResourceGroup(Record, frozen=True):
    covered_resources: tuple[str, ...] = ()
    flavors: tuple[FlavorQuotas, ...] = ()


class BorrowWithinCohort(Record, frozen=True):
    policy: str = "Never"
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(Record, frozen=True):
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None
    within_cluster_queue: str = "Never"


class FlavorFungibility(Record, frozen=True):
    """v1beta2 spells the "stop here" policy `MayStopSearch`; v1beta1 spelled it
    `Borrow` (whenCanBorrow) and `Preempt` (whenCanPreempt). Both decode; the
    admission layer reads them as the same policy."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None


class FairSharing(Record, frozen=True):
    weight: Quantity | None = None


def fair_weight(fair_sharing: FairSharing | None) -> float:
    """`spec.fairSharing.weight` as a float, 1 when unset (the API default)."""
    if fair_sharing is None or fair_sharing.weight is None:
        return 1.0
    return fair_sharing.weight.as_approximate_float()


class AdmissionScope(Record, frozen=True):
    admission_mode: str = ""


class ClusterQueueSpec(Record, frozen=True):
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None  # v1beta1
    cohort_name: str | None = None  # v1beta2
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility | None = None
    preemption: ClusterQueuePreemption | None = None
    stop_policy: str | None = None
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None
    admission_checks: tuple[str, ...] = ()  # v1beta1 only
    admission_checks_strategy: AdmissionChecksStrategy | None = None


class ResourceUsage(Record, frozen=True):
    name: str = ""
    total: Quantity | None = None
    borrowed: Quantity | None = None


class FlavorUsage(Record, frozen=True):
    name: str = ""
    resources: tuple[ResourceUsage, ...] = ()


class AdmissionFairSharingStatus(Record, frozen=True):
    consumed_resources: dict[str, Quantity] = msgspec.field(default_factory=dict)
    last_update: str | None = None


class FairSharingStatus(Record, frozen=True):
    weighted_share: int = 0
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = None


class AdmissionCheckStrategyRule(Record, frozen=True):
    name: str = ""
    on_flavors: tuple[str, ...] = ()


class AdmissionChecksStrategy(Record, frozen=True):
    admission_checks: tuple[AdmissionCheckStrategyRule, ...] = ()


class ClusterQueueStatus(Record, frozen=True):
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    fair_sharing: FairSharingStatus | None = None
    conditions: tuple[Condition, ...] = ()


class ClusterQueue(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "ClusterQueue"
    API_VERSIONS: ClassVar[tuple[str, ...]] = KUEUE_VERSIONS

    spec: ClusterQueueSpec = msgspec.field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus = msgspec.field(default_factory=ClusterQueueStatus)

    @property
    def cohort_ref(self) -> str:
        """The cohort this queue belongs to, whichever API version named it ("" if none)."""
        return self.spec.cohort_name or self.spec.cohort or ""


class LocalQueueSpec(Record, frozen=True):
    cluster_queue: str = ""
    stop_policy: str | None = None
    fair_sharing: FairSharing | None = None

    @property
    def weight(self) -> float:
        """The admission-fair-sharing weight (default 1)."""
        return fair_weight(self.fair_sharing)


class LocalQueueStatus(Record, frozen=True):
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()  # v1beta2
    flavor_usage: tuple[FlavorUsage, ...] = ()  # v1beta1 spelling of flavorsUsage
    fair_sharing: FairSharingStatus | None = None
    conditions: tuple[Condition, ...] = ()


class LocalQueue(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "LocalQueue"
    NAMESPACED: ClassVar[bool] = True
    API_VERSIONS: ClassVar[tuple[str, ...]] = KUEUE_VERSIONS

    spec: LocalQueueSpec = msgspec.field(default_factory=LocalQueueSpec)
    status: LocalQueueStatus = msgspec.field(default_factory=LocalQueueStatus)


class CohortSpec(Record, frozen=True):
    parent: str | None = None  # v1alpha1 spelling
    parent_name: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing: FairSharing | None = None


class CohortStatus(Record, frozen=True):
    fair_sharing: FairSharingStatus | None = None


class Cohort(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "Cohort"
    API_VERSIONS: ClassVar[tuple[str, ...]] = (*KUEUE_VERSIONS, "v1alpha1")

    spec: CohortSpec = msgspec.field(default_factory=CohortSpec)
    status: CohortStatus = msgspec.field(default_factory=CohortStatus)

    @property
    def parent_ref(self) -> str:
        return self.spec.parent_name or self.spec.parent or ""


class WorkloadPriorityClass(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "WorkloadPriorityClass"
    API_VERSIONS: ClassVar[tuple[str, ...]] = KUEUE_VERSIONS

    value: int = 0
    description: str = ""


class TopologyLevel(Record, frozen=True):
    node_label: str = ""


class TopologySpec(Record, frozen=True):
    levels: tuple[TopologyLevel, ...] = ()


class Topology(Object, frozen=True):
    API_GROUP: ClassVar[str] = KUEUE_GROUP
    KIND: ClassVar[str] = "Topology"
    API_VERSIONS: ClassVar[tuple[str, ...]] = (*KUEUE_VERSIONS, "v1alpha1")

    spec: TopologySpec = msgspec.field(default_factory=TopologySpec)
