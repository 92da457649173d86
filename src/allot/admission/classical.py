"""Classic preemption: withinClusterQueue, reclaimWithinCohort, borrowWithinCohort.

Kueue's hierarchical classical preemption (pkg/scheduler/preemption/classical),
restated. Candidates come in three lists:

* same-queue candidates: admitted workloads of the preemptor's ClusterQueue
  that `withinClusterQueue` allows preempting;
* hierarchy candidates: workloads in other ClusterQueues of a subtree where
  the preemptor's request fits the subtree's quota (the preemptor has a
  hierarchical claim to that quota), allowed by `reclaimWithinCohort`;
* priority candidates: the other cohort workloads `reclaimWithinCohort`
  allows, which may be taken only if the preemptor ends up not borrowing,
  unless `borrowWithinCohort` permits preempting them while borrowing
  (lower priority, and at most `maxPriorityThreshold`).

Only ClusterQueues and cohorts above their quota in a contested (flavor,
resource) give candidates. Each list is sorted by `ordering.candidate_key`;
workloads already being evicted go first. The search then removes candidates
in order while they are still valid (their queue still borrows) until the
preemptor fits, with or without borrowing depending on the attempt, and
finally adds targets back in reverse while it still fits.

Victim reasons: InClusterQueue, InCohortReclamation (hierarchical or
without borrowing), InCohortReclaimWhileBorrowing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from allot.admission.ordering import Admitted, candidate_key
from allot.admission.quota import NEVER
from allot.admission.targets import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    Preemptor,
    Target,
    World,
    as_targets,
    fill_back,
    satisfies_policy,
    workload_fits,
)
from allot.admission.tree import Node, fits_in_quota, within_nominal


class Variant(enum.IntEnum):
    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4

    @property
    def reason(self) -> str:
        if self is Variant.WITHIN_CQ:
            return IN_CLUSTER_QUEUE
        if self is Variant.RECLAIM_WHILE_BORROWING:
            return IN_COHORT_RECLAIM_WHILE_BORROWING
        return IN_COHORT_RECLAMATION


@dataclass(slots=True)
class _Candidate:
    workload: Admitted
    lca: Node | None
    variant: Variant


def _above_threshold(candidate: int, incoming: int, threshold: int | None) -> bool:
    if candidate >= incoming:
        return True
    if threshold is None:
        return False
    return candidate > threshold


class _Search:
    def __init__(self, world: World, preemptor: Preemptor) -> None:
        self.world = world
        self.preemptor = preemptor
        self.node = world.node(preemptor.cluster_queue)
        self.policy = world.policies[preemptor.cluster_queue].preemption

    def classify(self, workload: Admitted, advantage: bool) -> Variant:
        same = workload.cluster_queue == self.preemptor.cluster_queue
        policy = self.policy.within_cluster_queue if same else self.policy.reclaim_within_cohort
        if not satisfies_policy(policy, self.preemptor, workload):
            return Variant.NEVER
        if not workload.uses_any(self.preemptor.frs):
            return Variant.NEVER
        if same:
            return Variant.WITHIN_CQ
        if advantage:
            return Variant.HIERARCHICAL_RECLAIM
        if self.policy.borrow_within_cohort_forbidden:
            return Variant.RECLAIM_WITHOUT_BORROWING
        if _above_threshold(workload.priority, self.preemptor.priority, self.policy.max_priority_threshold):
            return Variant.RECLAIM_WITHOUT_BORROWING
        return Variant.RECLAIM_WHILE_BORROWING

    def from_cq(self, cq: Node, lca: Node | None, advantage: bool) -> list[_Candidate]:
        found = []
        for workload in self.world.admitted.get(cq.name, {}).values():
            variant = self.classify(workload, advantage)
            if variant is not Variant.NEVER:
                found.append(_Candidate(workload, lca, variant))
        return found

    def in_subtree(
        self, cohort: Node, subtree_root: Node, skip: Node | None, advantage: bool, out: list[_Candidate]
    ) -> None:
        frs = self.preemptor.frs
        for child in cohort.child_cohorts:
            if child is skip or within_nominal(child, frs):
                continue
            self.in_subtree(child, subtree_root, skip, advantage, out)
        for cq in cohort.child_cqs:
            if cq is self.node or within_nominal(cq, frs):
                continue
            out.extend(self.from_cq(cq, subtree_root, advantage))

    def collect(self) -> tuple[list[_Candidate], list[_Candidate], list[_Candidate]]:
        same: list[_Candidate] = []
        if self.policy.within_cluster_queue != NEVER:
            same = self.from_cq(self.node, None, False)
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if self.node.parent is not None and self.policy.reclaim_within_cohort != NEVER:
            advantage, remaining = fits_in_quota(self.node, self.preemptor.usage)
            previous: Node | None = None
            for ancestor in self.node.ancestors():
                target = hierarchy if advantage else by_priority
                self.in_subtree(ancestor, ancestor, previous, advantage, target)
                fits, remaining = fits_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        key = candidate_key(self.preemptor.cluster_queue, self.world.lq_usage)
        for group in (same, hierarchy, by_priority):
            group.sort(key=lambda c: key(c.workload))
        return same, hierarchy, by_priority

    def valid(self, candidate: _Candidate, borrow: bool) -> bool:
        workload = candidate.workload
        if workload.cluster_queue == self.preemptor.cluster_queue:
            return True
        if borrow and candidate.variant is Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        cq = self.world.node(workload.cluster_queue)
        frs = self.preemptor.frs
        if within_nominal(cq, frs):
            return False
        for node in cq.ancestors():
            if node is candidate.lca:
                break
            if within_nominal(node, frs):
                return False
        return True

    def under_nominal(self) -> bool:
        """Usage strictly below nominal in every contested (flavor, resource)."""
        usage, nominal = self.node.usage, self.node.nominal
        return all(usage.get(fr, 0) < nominal.get(fr, 0) for fr in self.preemptor.frs)


def classical_targets(world: World, preemptor: Preemptor) -> list[Target] | None:
    """The targets Kueue's classical preemption picks, or None if the preemptor cannot fit."""
    search = _Search(world, preemptor)
    same, hierarchy, by_priority = search.collect()
    ordered = [c for group in (hierarchy, by_priority, same) for c in group if c.workload.evicting]
    ordered += [c for group in (hierarchy, by_priority, same) for c in group if not c.workload.evicting]
    forbidden = search.policy.borrow_within_cohort_forbidden
    attempts: tuple[bool, ...]
    if (not hierarchy and not by_priority) or (forbidden and not search.under_nominal()):
        attempts = (True,)
    elif forbidden and not hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    journal = world.tree.journal
    for borrow in attempts:
        with journal.transaction():
            chosen: list[tuple[Admitted, str]] = []
            for candidate in ordered:
                if not search.valid(candidate, borrow):
                    continue
                world.remove(candidate.workload)
                chosen.append((candidate.workload, candidate.variant.reason))
                if workload_fits(world, preemptor, allow_borrowing=borrow):
                    return as_targets(fill_back(world, preemptor, chosen, allow_borrowing=borrow))
    return None
