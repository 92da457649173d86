"""What the preemption searches share: inputs, outputs and the what-if primitives.

A preemption search runs on the live quota tree inside journal transactions
that are always rolled back: removing a candidate's usage, asking whether
the preemptor fits, adding it back. Nothing of the search survives it, so
`preemption_targets` is a pure function of the state it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from allot.admission.config import AdmissionConfig
from allot.admission.fair_sharing import ShareCalculator
from allot.admission.ordering import Admitted, LocalQueueUsage
from allot.admission.quota import ANY, LOWER_OR_NEWER_EQUAL_PRIORITY, LOWER_PRIORITY, QueuePolicy
from allot.admission.resources import FlavorResource
from allot.admission.tree import Node, QuotaTree, available, borrowed_in, borrowing_with

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

HUMAN_READABLE_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


@dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict so the preemptor fits, with Kueue's Preempted reason."""

    workload_key: str
    reason: str
    cluster_queue: str

    def message(self, preemptor_key: str) -> str:
        return (
            f"Preempted to accommodate a workload ({preemptor_key}) due to "
            f"{HUMAN_READABLE_REASONS.get(self.reason, self.reason)}"
        )


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The pending workload that needs room, and what it would use."""

    key: str
    cluster_queue: str
    priority: int
    order_time: float
    usage: Mapping[FlavorResource, int]
    frs: frozenset[FlavorResource]


@dataclass(slots=True)
class World:
    """Everything a preemption search reads; only `tree` usage changes, and only inside rollbacks."""

    tree: QuotaTree
    policies: Mapping[str, QueuePolicy]
    admitted: Mapping[str, Mapping[str, Admitted]]
    shares: ShareCalculator
    config: AdmissionConfig
    lq_usage: LocalQueueUsage | None = None
    # Preemption-oracle answers and the targets they came from, valid while the tree's usage
    # generation is unchanged.
    oracle_cache: dict[tuple[object, ...], tuple[int, object, list[Target] | None]] = field(
        default_factory=dict
    )

    # While a fair-sharing search runs (`reading_only`): the (flavor, resource) pairs it can read.
    relevant: frozenset[FlavorResource] | None = None
    # Fair-sharing candidates by (queue, priority, timestamp where it matters, pairs), valid while
    # the usage generation is unchanged; not kept for the queues in `ordered_by_time`, whose
    # candidates are ordered by LocalQueue usage that changes with time (admission fair sharing).
    # With each list, whether any of its workloads is protected (`Admitted.protected`).
    candidates_cache: dict[tuple[object, ...], tuple[int, list[Admitted], bool]] = field(default_factory=dict)
    ordered_by_time: frozenset[str] = frozenset()

    def node(self, cluster_queue: str) -> Node:
        return self.tree.cqs[cluster_queue]

    def usage_of(self, candidate: Admitted) -> Mapping[FlavorResource, int]:
        """The candidate's usage the running search reads (all of it outside a search)."""
        relevant = self.relevant
        if relevant is None:
            return candidate.usage
        cached = candidate.restricted
        if cached is not None and cached[0] == relevant:
            return cached[1]
        usage = {fr: value for fr, value in candidate.usage.items() if fr in relevant}
        candidate.restricted = (relevant, usage)
        return usage

    def remove(self, candidate: Admitted) -> None:
        self.tree.remove_usage(self.tree.cqs[candidate.cluster_queue], self.usage_of(candidate))

    def add(self, candidate: Admitted) -> None:
        self.tree.add_usage(self.tree.cqs[candidate.cluster_queue], self.usage_of(candidate))

    @contextmanager
    def reading_only(self, preemptor: Preemptor) -> Iterator[None]:
        """Inside: victims leave the tree only in what a fair-sharing search for `preemptor` reads,
        its own (flavor, resource) pairs and those borrowed somewhere in its tree. Shares read only
        what is borrowed, and removing usage never makes a node borrow, so the rest cannot change
        a share, a fit or a verdict; leaving it saves most of the search's bookkeeping."""
        previous = self.relevant
        root = self.tree.cqs[preemptor.cluster_queue].root()
        self.relevant = frozenset(preemptor.usage) | borrowed_in(root)
        try:
            yield
        finally:
            self.relevant = previous


def timestamp_matters(policy: QueuePolicy) -> bool:
    """Whether a preemptor's timestamp can change its victims in this ClusterQueue: only where an
    equal-priority newer workload may be preempted (LowerOrNewerEqualPriority). Elsewhere the
    victims depend on the preemptor only through its queue, priority and usage."""
    preemption = policy.preemption
    return LOWER_OR_NEWER_EQUAL_PRIORITY in (
        preemption.within_cluster_queue,
        preemption.reclaim_within_cohort,
    )


def satisfies_policy(policy: str, preemptor: Preemptor, candidate: Admitted) -> bool:
    """Kueue's SatisfiesPreemptionPolicy for withinClusterQueue / reclaimWithinCohort values."""
    if policy == LOWER_PRIORITY:
        return preemptor.priority > candidate.priority
    lower = preemptor.priority > candidate.priority
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        newer = preemptor.priority == candidate.priority and preemptor.order_time < candidate.order_time
        return lower or newer
    return policy == ANY


def workload_fits(world: World, preemptor: Preemptor, *, allow_borrowing: bool) -> bool:
    node = world.node(preemptor.cluster_queue)
    for fr, value in preemptor.usage.items():
        if not allow_borrowing and borrowing_with(node, fr, value):
            return False
        if value > max(0, available(node, fr)):
            return False
    return True


def fill_back(
    world: World,
    preemptor: Preemptor,
    targets: list[tuple[Admitted, str]],
    *,
    allow_borrowing: bool,
    fits: Callable[[], bool] | None = None,
) -> list[tuple[Admitted, str]]:
    """Minimise: with all targets removed, add them back in reverse (but the last) while the preemptor still fits."""
    check = fits or (lambda: workload_fits(world, preemptor, allow_borrowing=allow_borrowing))
    kept = list(targets)
    for index in range(len(kept) - 2, -1, -1):
        candidate = kept[index][0]
        world.add(candidate)
        if check():
            kept[index] = kept[-1]
            kept.pop()
        else:
            world.remove(candidate)
    return kept


def as_targets(chosen: Sequence[tuple[Admitted, str]]) -> list[Target]:
    return [Target(c.key, reason, c.cluster_queue) for c, reason in chosen]
