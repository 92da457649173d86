"""From Kueue objects to the quota tree and per-ClusterQueue policies.

`build_quota(cluster_queues, cohorts, journal)` turns ClusterQueue and Cohort
records into a `QuotaTree` plus a `QueuePolicy` per ClusterQueue (resource
groups, queueing strategy, preemption, flavor fungibility, admission scope,
namespace selector). A cohort named only by a ClusterQueue's `cohortName` or
a Cohort's `parentName` exists implicitly with no quota of its own, as in
Kueue. A cohort tree with a cycle is kept out of the tree: its ClusterQueues
get an `inactive` reason naming the cycle and admit nothing, which is what
Kueue does until the cycle is removed. Structural mistakes (a resource in two
groups, an unknown flavor ...) are reported by `allot.admission.validate`;
here they are tolerated the way Kueue's cache tolerates them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from allot.admission.resources import FlavorResource, quota_amount
from allot.admission.tree import Node, QuotaTree
from allot.cluster.journal import Journal
from allot.model.base import LabelSelector
from allot.model.kueue import ClusterQueue, Cohort, ResourceGroup, fair_weight

NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
ANY = "Any"
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"
STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"
USAGE_BASED_AFS = "UsageBasedAdmissionFairSharing"

# v1beta1 spellings of MayStopSearch.
_STOP_SPELLINGS = {"Borrow", "Preempt", MAY_STOP_SEARCH}


@dataclass(frozen=True, slots=True)
class ResourceGroupPolicy:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PreemptionPolicy:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None

    @property
    def borrow_within_cohort_forbidden(self) -> bool:
        return self.borrow_within_cohort == NEVER


@dataclass(frozen=True, slots=True)
class FungibilityPolicy:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """What a ClusterQueue's spec says about admission, version-independent."""

    name: str
    cohort: str = ""
    resource_groups: tuple[ResourceGroupPolicy, ...] = ()
    queueing_strategy: str = BEST_EFFORT_FIFO
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)
    fungibility: FungibilityPolicy = field(default_factory=FungibilityPolicy)
    admission_fair_sharing: bool = False
    namespace_selector: LabelSelector | None = None
    inactive: str | None = None
    group_of: Mapping[str, ResourceGroupPolicy] = field(default_factory=lambda: MappingProxyType({}))

    def group_for(self, resource: str) -> ResourceGroupPolicy | None:
        return self.group_of.get(resource)

    @property
    def strict_fifo(self) -> bool:
        return self.queueing_strategy == STRICT_FIFO


def _fungibility_value(value: str) -> str:
    return MAY_STOP_SEARCH if value in _STOP_SPELLINGS else value


def policy_of(cq: ClusterQueue, *, inactive: str | None = None) -> QueuePolicy:
    spec = cq.spec
    groups = tuple(
        ResourceGroupPolicy(tuple(g.covered_resources), tuple(f.name for f in g.flavors))
        for g in spec.resource_groups
    )
    group_of: dict[str, ResourceGroupPolicy] = {}
    for group in groups:
        for resource in group.covered:
            group_of.setdefault(resource, group)
    preemption = PreemptionPolicy()
    if spec.preemption is not None:
        borrow = spec.preemption.borrow_within_cohort
        preemption = PreemptionPolicy(
            within_cluster_queue=spec.preemption.within_cluster_queue or NEVER,
            reclaim_within_cohort=spec.preemption.reclaim_within_cohort or NEVER,
            borrow_within_cohort=(borrow.policy or NEVER) if borrow is not None else NEVER,
            max_priority_threshold=borrow.max_priority_threshold if borrow is not None else None,
        )
    fungibility = FungibilityPolicy()
    if spec.flavor_fungibility is not None:
        ff = spec.flavor_fungibility
        fungibility = FungibilityPolicy(
            when_can_borrow=_fungibility_value(ff.when_can_borrow or MAY_STOP_SEARCH),
            when_can_preempt=_fungibility_value(ff.when_can_preempt or TRY_NEXT_FLAVOR),
            preference=ff.preference,
        )
    stop = spec.stop_policy
    if inactive is None and stop not in (None, "", "None"):
        inactive = f"ClusterQueue {cq.name} is stopped (stopPolicy {stop})"
    afs = spec.admission_scope is not None and spec.admission_scope.admission_mode == USAGE_BASED_AFS
    return QueuePolicy(
        name=cq.name,
        cohort=cq.cohort_ref,
        resource_groups=groups,
        queueing_strategy=spec.queueing_strategy or BEST_EFFORT_FIFO,
        preemption=preemption,
        fungibility=fungibility,
        admission_fair_sharing=afs,
        namespace_selector=spec.namespace_selector,
        inactive=inactive,
        group_of=MappingProxyType(group_of),
    )


def _load_quotas(node: Node, groups: Iterable[ResourceGroup]) -> None:
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                fr: FlavorResource = (flavor.name, quota.name)
                node.nominal[fr] = quota_amount(quota.name, quota.nominal_quota)
                if quota.borrowing_limit is not None:
                    node.borrowing_limit[fr] = quota_amount(quota.name, quota.borrowing_limit)
                if quota.lending_limit is not None:
                    node.lending_limit[fr] = quota_amount(quota.name, quota.lending_limit)


def cohort_cycles(parent_of: Mapping[str, str]) -> dict[str, list[str]]:
    """For each cohort on or below a cycle of `parentName` links, the cycle (in link order)."""
    cycles: dict[str, list[str]] = {}
    for start in sorted(parent_of):
        path: list[str] = []
        seen: dict[str, int] = {}
        name: str | None = start
        while name is not None and name not in seen and name not in cycles:
            seen[name] = len(path)
            path.append(name)
            name = parent_of.get(name) or None
        if name is None:
            continue
        cycle = cycles[name] if name in cycles else path[seen[name] :]
        if name not in cycles:
            first = min(cycle)
            at = cycle.index(first)
            cycle = cycle[at:] + cycle[:at]
        for member in path:
            cycles.setdefault(member, cycle)
    return cycles


def build_quota(
    cluster_queues: Iterable[ClusterQueue],
    cohorts: Iterable[Cohort] = (),
    journal: Journal | None = None,
) -> tuple[QuotaTree, dict[str, QueuePolicy]]:
    """The quota tree and policies for these objects (usage all zero)."""
    tree = QuotaTree(journal)
    cohort_objects = {c.name: c for c in cohorts}
    queues = sorted(cluster_queues, key=lambda q: q.name)
    parent_of = {name: obj.parent_ref for name, obj in cohort_objects.items() if obj.parent_ref}
    cycles = cohort_cycles(parent_of)

    def cohort_node(name: str) -> Node:
        node = tree.cohorts.get(name)
        if node is None:
            obj = cohort_objects.get(name)
            weight = fair_weight(obj.spec.fair_sharing) if obj is not None else 1.0
            node = Node(name, is_cq=False, weight=weight)
            if obj is not None:
                _load_quotas(node, obj.spec.resource_groups)
            tree.cohorts[name] = node
        return node

    for name in sorted(cohort_objects):
        cohort_node(name)
    for name in sorted(parent_of):
        if name in cycles:
            continue  # a cohort in (or under) a cycle is left unlinked
        child, parent = cohort_node(name), cohort_node(parent_of[name])
        child.parent = parent
        parent.child_cohorts.append(child)

    policies: dict[str, QueuePolicy] = {}
    for cq in queues:
        node = Node(cq.name, is_cq=True, weight=fair_weight(cq.spec.fair_sharing))
        _load_quotas(node, cq.spec.resource_groups)
        tree.cqs[cq.name] = node
        inactive = None
        if cq.cohort_ref:
            cycle = cycles.get(cq.cohort_ref)
            if cycle is not None:
                inactive = f"cohort {cq.cohort_ref} is in a cycle: {' -> '.join([*cycle, cycle[0]])}"
            else:
                parent = cohort_node(cq.cohort_ref)
                node.parent = parent
                parent.child_cqs.append(node)
        policies[cq.name] = policy_of(cq, inactive=inactive)
    for node in tree.cohorts.values():
        node.child_cohorts.sort(key=lambda n: n.name)
        node.child_cqs.sort(key=lambda n: n.name)
    tree.recompute()
    return tree, policies
