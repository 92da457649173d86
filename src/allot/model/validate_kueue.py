"""kueue.x-k8s.io validation: ClusterQueue, LocalQueue, Cohort, ResourceFlavor,
WorkloadPriorityClass and Topology.

Kueue checks its objects twice: the CRD schema (enums, list sizes, CEL
rules) and its webhooks (pkg/webhooks). Both are folded in here, with the
webhooks' wording where they have one. Field spellings differ between
versions (v1beta1 `cohort`, v1beta2 `cohortName`); a spelling that does not
exist in the manifest's version is reported, since a strict API server
would refuse it rather than silently drop the cohort. Nothing here raises.
Cycles in the cohort tree need all objects and are left to allot.admission.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.model.core import Taint, Toleration
from allot.model.errors import Location, ManifestError
from allot.model.kinds import split_api_version
from allot.model.kueue import (
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    Topology,
    WorkloadPriorityClass,
)
from allot.model.validate_common import INT32, OMIT, Problems, dns_subdomain, qualified_name
from allot.model.validate_core import check_taints, check_tolerations
from allot.model.validate_registry import register

QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
BORROW_WITHIN_COHORT = ("Never", "LowerPriority")
# v1beta2 renamed Borrow and Preempt to MayStopSearch.
WHEN_CAN_BORROW = {"v1beta1": ("Borrow", "TryNextFlavor"), "v1beta2": ("MayStopSearch", "TryNextFlavor")}
WHEN_CAN_PREEMPT = {"v1beta1": ("Preempt", "TryNextFlavor"), "v1beta2": ("MayStopSearch", "TryNextFlavor")}
FUNGIBILITY_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
ADMISSION_MODES = ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing")
HOSTNAME_LABEL = "kubernetes.io/hostname"

MAX_RESOURCE_GROUPS = 16
MAX_COVERED_RESOURCES = 64
MAX_FLAVORS_PER_GROUP = 64
MAX_FLAVOR_NODE_LABELS = 8
MAX_FLAVOR_TAINTS = 8
MAX_FLAVOR_TOLERATIONS = 8
MAX_TOPOLOGY_LEVELS = {"v1alpha1": 8}  # later versions allow 16
MAX_TOPOLOGY_LEVELS_DEFAULT = 16
MAX_NODE_LABEL_LENGTH = 316


def _version(api_version: str) -> str:
    return split_api_version(api_version)[1]


def _reference(problems: Problems, path: str, name: str) -> None:
    """Names of other Kueue objects: DNS subdomains (the CRDs' pattern)."""
    problems.each(path, name, dns_subdomain(name))


def _fair_sharing(problems: Problems, path: str, fair_sharing: FairSharing | None) -> None:
    if fair_sharing is not None and fair_sharing.weight is not None:
        problems.nonnegative(f"{path}.weight", fair_sharing.weight)


def _spelling(
    problems: Problems, version: str, *, old: tuple[str, str | None], new: tuple[str, str | None]
) -> None:
    """Report the field name the manifest's version does not have (v1beta1 `old`, later `new`)."""
    (old_name, old_value), (new_name, new_value) = old, new
    wrong, right = (new_name, old_name) if version == "v1beta1" else (old_name, new_name)
    wrong_value = new_value if version == "v1beta1" else old_value
    if wrong_value is not None:
        problems.forbidden(f"spec.{wrong}", f"not a field in {version}; use spec.{right}")


def check_resource_groups(
    problems: Problems, groups: Sequence[ResourceGroup], *, can_borrow: bool, lending_within_nominal: bool
) -> None:
    """Quotas of a ClusterQueue or Cohort; limits only make sense with somewhere to borrow from."""
    path = "spec.resourceGroups"
    if not problems.limit(path, groups, MAX_RESOURCE_GROUPS):
        return
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    limit_detail = "must be nil when cohort is empty"
    for g, group in enumerate(groups):
        at = f"{path}[{g}]"
        covered = group.covered_resources
        if not covered:
            problems.required(f"{at}.coveredResources")
        elif problems.limit(f"{at}.coveredResources", covered, MAX_COVERED_RESOURCES):
            for r, name in enumerate(covered):
                problems.each(f"{at}.coveredResources[{r}]", name, qualified_name(name))
                if name in seen_resources:
                    problems.duplicate(f"{at}.coveredResources[{r}]", name)
                seen_resources.add(name)
        if not group.flavors:
            problems.required(f"{at}.flavors")
        if not problems.limit(f"{at}.flavors", group.flavors, MAX_FLAVORS_PER_GROUP):
            continue
        for f, flavor in enumerate(group.flavors):
            flavor_at = f"{at}.flavors[{f}]"
            _reference(problems, f"{flavor_at}.name", flavor.name)
            if flavor.name in seen_flavors:
                problems.duplicate(f"{flavor_at}.name", flavor.name)
            seen_flavors.add(flavor.name)
            if len(flavor.resources) != len(covered):
                problems.invalid(
                    f"{flavor_at}.resources",
                    OMIT,
                    "must have the same number of resources as the coveredResources",
                )
            for r, quota in enumerate(flavor.resources[: len(covered)]):
                quota_at = f"{flavor_at}.resources[{r}]"
                if quota.name != covered[r]:
                    problems.invalid(
                        f"{quota_at}.name", quota.name, "must match the name in coveredResources"
                    )
                if quota.nominal_quota is None:
                    problems.required(f"{quota_at}.nominalQuota")
                else:
                    problems.nonnegative(f"{quota_at}.nominalQuota", quota.nominal_quota)
                for name, value in (
                    ("borrowingLimit", quota.borrowing_limit),
                    ("lendingLimit", quota.lending_limit),
                ):
                    if value is None:
                        continue
                    if not can_borrow:
                        problems.invalid(f"{quota_at}.{name}", value, limit_detail)
                    problems.nonnegative(f"{quota_at}.{name}", value)
                lending, nominal = quota.lending_limit, quota.nominal_quota
                if (
                    lending_within_nominal
                    and lending is not None
                    and nominal is not None
                    and lending > nominal
                ):
                    problems.invalid(
                        f"{quota_at}.lendingLimit", lending, "must be less than or equal to the nominalQuota"
                    )


@register(ClusterQueue)
def validate_cluster_queue(cq: ClusterQueue, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = cq.spec
    version = _version(cq.api_version)
    _spelling(problems, version, old=("cohort", spec.cohort), new=("cohortName", spec.cohort_name))
    if cq.cohort_ref:
        _reference(problems, "spec.cohortName" if spec.cohort_name else "spec.cohort", cq.cohort_ref)
    check_resource_groups(
        problems, spec.resource_groups, can_borrow=bool(cq.cohort_ref), lending_within_nominal=True
    )
    problems.enum("spec.queueingStrategy", spec.queueing_strategy, QUEUEING_STRATEGIES)
    if spec.stop_policy is not None:
        problems.enum("spec.stopPolicy", spec.stop_policy, STOP_POLICIES)
    problems.label_selector("spec.namespaceSelector", spec.namespace_selector)
    preemption = spec.preemption
    if preemption is not None:
        problems.enum(
            "spec.preemption.reclaimWithinCohort", preemption.reclaim_within_cohort, RECLAIM_WITHIN_COHORT
        )
        problems.enum(
            "spec.preemption.withinClusterQueue", preemption.within_cluster_queue, WITHIN_CLUSTER_QUEUE
        )
        borrow = preemption.borrow_within_cohort
        if borrow is not None:
            problems.enum("spec.preemption.borrowWithinCohort.policy", borrow.policy, BORROW_WITHIN_COHORT)
            if borrow.max_priority_threshold is not None:
                problems.int_range(
                    "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
                    borrow.max_priority_threshold,
                    INT32,
                )
            if preemption.reclaim_within_cohort == "Never" and borrow.policy != "Never":
                problems.invalid(
                    "spec.preemption", OMIT, "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
                )
    fungibility = spec.flavor_fungibility
    if fungibility is not None:
        borrow_values = WHEN_CAN_BORROW.get(version, WHEN_CAN_BORROW["v1beta2"])
        preempt_values = WHEN_CAN_PREEMPT.get(version, WHEN_CAN_PREEMPT["v1beta2"])
        problems.enum("spec.flavorFungibility.whenCanBorrow", fungibility.when_can_borrow, borrow_values)
        problems.enum("spec.flavorFungibility.whenCanPreempt", fungibility.when_can_preempt, preempt_values)
        if fungibility.preference is not None:
            problems.enum(
                "spec.flavorFungibility.preference", fungibility.preference, FUNGIBILITY_PREFERENCES
            )
            if (
                fungibility.when_can_borrow != "TryNextFlavor"
                or fungibility.when_can_preempt != "TryNextFlavor"
            ):
                problems.invalid(
                    "spec.flavorFungibility.preference",
                    fungibility.preference,
                    "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
                )
    _fair_sharing(problems, "spec.fairSharing", spec.fair_sharing)
    if spec.admission_scope is not None:
        problems.enum(
            "spec.admissionScope.admissionMode", spec.admission_scope.admission_mode, ADMISSION_MODES
        )
    return problems.errors


@register(LocalQueue)
def validate_local_queue(lq: LocalQueue, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    if not lq.spec.cluster_queue:
        problems.required("spec.clusterQueue")
    else:
        _reference(problems, "spec.clusterQueue", lq.spec.cluster_queue)
    if lq.spec.stop_policy is not None:
        problems.enum("spec.stopPolicy", lq.spec.stop_policy, STOP_POLICIES)
    _fair_sharing(problems, "spec.fairSharing", lq.spec.fair_sharing)
    return problems.errors


@register(Cohort)
def validate_cohort(cohort: Cohort, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = cohort.spec
    version = _version(cohort.api_version)
    if version != "v1alpha1" and spec.parent is not None:
        problems.forbidden("spec.parent", f"not a field in {version}; use spec.parentName")
    parent = cohort.parent_ref
    field = "spec.parentName" if spec.parent_name else "spec.parent"
    if parent:
        _reference(problems, field, parent)
        if parent == cohort.name:
            problems.invalid(field, parent, "a cohort cannot be its own parent")
    # Kueue does not cap a cohort's lending at its own nominal quota (enforceNominalGreaterThanLending=false).
    check_resource_groups(
        problems, spec.resource_groups, can_borrow=bool(parent), lending_within_nominal=False
    )
    _fair_sharing(problems, "spec.fairSharing", spec.fair_sharing)
    return problems.errors


@register(WorkloadPriorityClass)
def validate_workload_priority_class(wpc: WorkloadPriorityClass, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    problems.int_range("value", wpc.value, INT32)
    return problems.errors


@register(Topology)
def validate_topology(topology: Topology, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    levels = topology.spec.levels
    limit = MAX_TOPOLOGY_LEVELS.get(_version(topology.api_version), MAX_TOPOLOGY_LEVELS_DEFAULT)
    if not levels:
        problems.required("spec.levels", "a topology needs at least one level")
    elif problems.limit("spec.levels", levels, limit):
        seen: set[str] = set()
        for i, level in enumerate(levels):
            at = f"spec.levels[{i}].nodeLabel"
            label = level.node_label
            if not label:
                problems.required(at)
                continue
            if len(label) > MAX_NODE_LABEL_LENGTH:
                problems.too_long(at, MAX_NODE_LABEL_LENGTH)
            problems.each(at, label, qualified_name(label))
            if label in seen:
                problems.duplicate(at, label)
            seen.add(label)
            if label == HOSTNAME_LABEL and i != len(levels) - 1:
                problems.invalid(
                    at,
                    label,
                    "the kubernetes.io/hostname label can only be used at the lowest level of topology",
                )
    return problems.errors


def _flavor_taints(problems: Problems, taints: Sequence[Taint]) -> None:
    if problems.limit("spec.nodeTaints", taints, MAX_FLAVOR_TAINTS):
        check_taints(problems, "spec.nodeTaints", taints)


def _flavor_tolerations(problems: Problems, tolerations: Sequence[Toleration]) -> None:
    if problems.limit("spec.tolerations", tolerations, MAX_FLAVOR_TOLERATIONS):
        check_tolerations(problems, "spec.tolerations", tolerations)


@register(ResourceFlavor)
def validate_resource_flavor(flavor: ResourceFlavor, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = flavor.spec
    if problems.limit("spec.nodeLabels", spec.node_labels, MAX_FLAVOR_NODE_LABELS):
        problems.labels("spec.nodeLabels", spec.node_labels)
    _flavor_taints(problems, spec.node_taints)
    _flavor_tolerations(problems, spec.tolerations)
    if spec.topology_name is not None:
        _reference(problems, "spec.topologyName", spec.topology_name)
        if not spec.node_labels:
            problems.required("spec.nodeLabels", "at least one nodeLabel is required when topology is set")
    return problems.errors
