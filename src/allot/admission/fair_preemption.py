"""Fair-sharing preemption: the LessThanOrEqualToFinalShare / LessThanInitialShare strategies.

Kueue's pkg/scheduler/preemption/fair_strategy.go and fairsharing/, restated.

Candidates: the preemptor ClusterQueue's own workloads that
`withinClusterQueue` allows, and workloads of every other ClusterQueue of the
cohort tree that borrows in a contested (flavor, resource) and that
`reclaimWithinCohort` allows; sorted by `ordering.candidate_key`.

The preemptor's usage is added first (shares are "after admission"). Target
ClusterQueues come from a walk down the tree that always enters the child
with the highest DRS (`_TargetOrdering`); nodes with DRS 0 are pruned — they
are never victims — except the preemptor's own ClusterQueue and its
ancestors. Shares are compared at the almost-lowest-common-ancestor: the two
children of the lowest cohort containing both the preemptor and the target.

* Rule S2-a, LessThanOrEqualToFinalShare: preempt victim v of target T if
  share(preemptor side with the new workload) ≤ share(T side without v).
* Rule S2-b, LessThanInitialShare: preempt if share(preemptor side) <
  share(T side) before removal — the victim's size does not matter, so the
  first candidate (lowest priority, newest) goes.
* FairSharingPreemptWithinNominal: while the preemptor's queue stays within
  nominal quota in the contested resources (counting the new workload), any
  cross-queue candidate may be reclaimed, regardless of shares.

The first configured strategy runs over all candidates; those it rejects are
retried with S2-b when both strategies are configured. Each removal is
followed by a fit check; once the preemptor fits, targets are added back in
reverse while it still fits (with borrowing). Victims of the preemptor's own
queue get InClusterQueue, reclaimed ones InCohortReclamation, the rest
InCohortFairSharing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from allot.admission.fair_sharing import DRS, NEGATIVE_DRS, compare_drs
from allot.admission.ordering import Admitted, candidate_key
from allot.admission.quota import NEVER
from allot.admission.resources import FlavorResource
from allot.admission.targets import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    Preemptor,
    Target,
    World,
    as_targets,
    fill_back,
    satisfies_policy,
    timestamp_matters,
    workload_fits,
)
from allot.admission.tree import Node, borrowing_with, bubbled, drop_at
from allot.model.kueue_config import LESS_THAN_INITIAL_SHARE

Strategy = Callable[[DRS, DRS, DRS], bool]


def less_than_or_equal_to_final_share(preemptor_new: DRS, _target_old: DRS, target_new: DRS) -> bool:
    return compare_drs(preemptor_new, target_new) <= 0


def less_than_initial_share(preemptor_new: DRS, target_old: DRS, _target_new: DRS) -> bool:
    return compare_drs(preemptor_new, target_old) < 0


def _strategy(name: str) -> Strategy:
    return less_than_initial_share if name == LESS_THAN_INITIAL_SHARE else less_than_or_equal_to_final_share


def _borrowing_in(node: Node, frs: frozenset[tuple[str, str]]) -> bool:
    return node.parent is not None and any(borrowing_with(node, fr) for fr in frs)


def find_candidates(world: World, preemptor: Preemptor) -> list[Admitted]:
    """The candidates in victim order (the same list for every preemptor alike at one usage
    generation: callers only read it). Protected workloads of other queues are candidates only
    for a preemptor that stays within its nominal quota."""
    found, protected = _cached_candidates(world, preemptor)
    if protected and not _within_nominal(world, preemptor, usage_added=False):
        own = preemptor.cluster_queue
        return [w for w in found if not w.protected or w.cluster_queue == own]
    return found


def _cached_candidates(world: World, preemptor: Preemptor) -> tuple[list[Admitted], bool]:
    """The candidates, and whether any of them is protected (worked out once per list)."""
    if preemptor.cluster_queue in world.ordered_by_time:
        found = _find_candidates(world, preemptor)
        return found, any(w.protected for w in found)
    stamp = preemptor.order_time if timestamp_matters(world.policies[preemptor.cluster_queue]) else None
    key = (preemptor.cluster_queue, preemptor.priority, stamp, preemptor.frs)
    generation = world.tree.generation
    cached = world.candidates_cache.get(key)
    if cached is not None and cached[0] == generation:
        return cached[1], cached[2]
    found = _find_candidates(world, preemptor)
    protected = any(w.protected for w in found)
    if len(world.candidates_cache) > 1024:
        world.candidates_cache.clear()
    world.candidates_cache[key] = (generation, found, protected)
    return found, protected


def _find_candidates(world: World, preemptor: Preemptor) -> list[Admitted]:
    node = world.node(preemptor.cluster_queue)
    policy = world.policies[preemptor.cluster_queue].preemption
    found: list[Admitted] = []
    if policy.within_cluster_queue != NEVER:
        for workload in world.admitted.get(node.name, {}).values():
            if satisfies_policy(policy.within_cluster_queue, preemptor, workload) and workload.uses_any(
                preemptor.frs
            ):
                found.append(workload)
    if node.parent is not None and policy.reclaim_within_cohort != NEVER:
        for cq in node.root().subtree_cqs():
            if cq is node or not _borrowing_in(cq, preemptor.frs):
                continue
            for workload in world.admitted.get(cq.name, {}).values():
                if satisfies_policy(policy.reclaim_within_cohort, preemptor, workload) and workload.uses_any(
                    preemptor.frs
                ):
                    found.append(workload)
    found.sort(key=candidate_key(preemptor.cluster_queue, world.lq_usage))
    return found


class _TargetOrdering:
    """Yields target ClusterQueues, highest DRS first, walking down from the root."""

    def __init__(self, world: World, preemptor_cq: Node, candidates: list[Admitted]) -> None:
        self.world = world
        self.preemptor_cq = preemptor_cq
        self.ancestors = {id(a) for a in preemptor_cq.ancestors()}
        self.by_cq: dict[str, list[Admitted]] = {}
        for candidate in candidates:
            self.by_cq.setdefault(candidate.cluster_queue, []).append(candidate)
        self.pruned: set[int] = set()
        self.head_key = candidate_key(preemptor_cq.name)

    def has(self, cq: Node) -> bool:
        return bool(self.by_cq.get(cq.name))

    def pop(self, cq: Node) -> Admitted:
        return self.by_cq[cq.name].pop(0)

    def drop(self, cq: Node) -> None:
        self.pruned.add(id(cq))

    def __iter__(self) -> Iterator[Node]:
        if self.preemptor_cq.parent is None:
            while self.has(self.preemptor_cq):
                yield self.preemptor_cq
            return
        root = self.preemptor_cq.root()
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: Node) -> Node | None:
        share = self.world.shares.share
        best_cq: Node | None = None
        best_cq_drs = NEGATIVE_DRS
        for cq in cohort.child_cqs:
            if id(cq) in self.pruned:
                continue
            drs = share(cq)
            if (drs.is_zero and cq is not self.preemptor_cq) or not self.has(cq):
                self.pruned.add(id(cq))
                continue
            order = compare_drs(drs, best_cq_drs)
            if order == 0 and best_cq is not None:
                new_head = self.by_cq[cq.name][0]
                current_head = self.by_cq[best_cq.name][0]
                if self.head_key(new_head) < self.head_key(current_head):
                    best_cq = cq
            elif order > 0:
                best_cq, best_cq_drs = cq, drs
        best_cohort: Node | None = None
        best_cohort_drs = NEGATIVE_DRS
        for child in cohort.child_cohorts:
            if id(child) in self.pruned:
                continue
            drs = share(child)
            if drs.is_zero and id(child) not in self.ancestors:
                self.pruned.add(id(child))
            elif compare_drs(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and compare_drs(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq

    # --- shares at the almost-lowest-common-ancestor --------------------------

    def _almost_lcas(self, target: Node) -> tuple[Node, Node]:
        lca = next(a for a in target.ancestors() if id(a) in self.ancestors)

        def below(node: Node) -> Node:
            current = node
            while current.parent is not lca:
                assert current.parent is not None
                current = current.parent
            return current

        return below(self.preemptor_cq), below(target)

    def shares(self, target: Node) -> tuple[DRS, DRS]:
        """(preemptor side's share, target side's share) at the almost-LCA level."""
        mine, theirs = self._almost_lcas(target)
        share = self.world.shares.share
        return share(mine), share(theirs)

    def target_share_without(self, target: Node, workload: Admitted) -> DRS:
        return _share_without(self.world, self._almost_lcas(target)[1], workload)


def _share_without(world: World, side: Node, workload: Admitted) -> DRS:
    """The share of `side` (the workload's ClusterQueue or a cohort above it) without the workload.
    Worked out rather than removed and rolled back: no journal, and the share cache stays."""
    drop = drop_at(world.node(workload.cluster_queue), workload.usage, side)
    return world.shares.share(side, {fr: -value for fr, value in drop.items()})


def _within_nominal(world: World, preemptor: Preemptor, *, usage_added: bool = True) -> bool:
    """Whether the preemptor's queue stays within nominal quota in the contested resources with
    the preemptor's usage (already in the tree, or counted here when `usage_added` is false)."""
    node = world.node(preemptor.cluster_queue)
    return not any(
        borrowing_with(node, fr, 0 if usage_added else preemptor.usage.get(fr, 0)) for fr in preemptor.frs
    )


def _first_strategy(
    world: World,
    preemptor: Preemptor,
    candidates: list[Admitted],
    strategy: Strategy,
    retry: list[Admitted],
) -> Iterator[tuple[Admitted, str]]:
    node = world.node(preemptor.cluster_queue)
    ordering = _TargetOrdering(world, node, candidates)
    within = world.config.fair_sharing_preempt_within_nominal and _within_nominal(world, preemptor)
    for target in ordering:
        if target is node:
            workload = ordering.pop(target)
            world.remove(workload)
            yield workload, IN_CLUSTER_QUEUE
            continue
        if within:
            workload = ordering.pop(target)
            world.remove(workload)
            yield workload, IN_COHORT_RECLAMATION
            continue
        preemptor_new, target_old = ordering.shares(target)
        if preemptor_new.zero_weight_borrows and not target_old.zero_weight_borrows:
            while ordering.has(target):
                retry.append(ordering.pop(target))
            continue
        # The tree does not change until a victim is taken, and the target's share without a
        # workload depends only on that workload's usage: candidates of one shape are judged once.
        judged: dict[tuple[tuple[FlavorResource, int], ...], bool] = {}
        while ordering.has(target):
            workload = ordering.pop(target)
            # Equal tuples mean equal usage (an unequal order only costs a second judgement).
            shape = tuple(workload.usage.items())
            verdict = judged.get(shape)
            if verdict is None:
                target_new = ordering.target_share_without(target, workload)
                verdict = judged[shape] = strategy(preemptor_new, target_old, target_new)
            if verdict:
                world.remove(workload)
                yield workload, IN_COHORT_FAIR_SHARING
                break
            retry.append(workload)


def _second_strategy(
    world: World, preemptor: Preemptor, candidates: list[Admitted]
) -> Iterator[tuple[Admitted, str]]:
    ordering = _TargetOrdering(world, world.node(preemptor.cluster_queue), candidates)
    for target in ordering:
        preemptor_new, target_old = ordering.shares(target)
        workload = ordering.pop(target)
        if less_than_initial_share(preemptor_new, target_old, target_old):
            world.remove(workload)
            yield workload, IN_COHORT_FAIR_SHARING
        ordering.drop(target)


def _strategy_targets(
    world: World, preemptor: Preemptor, candidates: list[Admitted]
) -> Iterator[tuple[Admitted, str]]:
    names = world.config.preemption_strategies
    first = _strategy(names[0])
    retry: list[Admitted] = []
    in_queue = False
    for workload, reason in _first_strategy(world, preemptor, candidates, first, retry):
        in_queue = in_queue or workload.cluster_queue == preemptor.cluster_queue
        yield workload, reason
    if in_queue and world.config.fair_sharing_reevaluate_candidates:
        again, retry = retry, []
        yield from _first_strategy(world, preemptor, again, first, retry)
    if len(names) > 1:
        yield from _second_strategy(world, preemptor, retry)


def _cannot_fit(world: World, preemptor: Preemptor, candidates: list[Admitted]) -> bool:
    """Whether the search is bound to end without a fit, told from the shares before any removal
    (true only where that is certain; false means the search must run).

    Where every candidate is in another ClusterQueue and all of them meet the preemptor's path at
    the same cohort, the preemptor's side at the almost-LCA holds no candidate, so its share
    stays what it is with the preemptor's usage added. A target's share only falls as its
    workloads go, so every strategy takes a victim only where the preemptor's share does not
    exceed the target's share now. Removing every candidate of such targets frees the most any
    search could free: if the preemptor does not fit then, it never fits.
    """
    node = world.node(preemptor.cluster_queue)
    if node.parent is None:
        return False
    if world.config.fair_sharing_preempt_within_nominal and _within_nominal(
        world, preemptor, usage_added=False
    ):
        return False
    path = [node, *node.ancestors()]
    depth = {id(n): index for index, n in enumerate(path)}
    meeting = 0
    sides: dict[str, Node] = {}
    for candidate in candidates:
        if candidate.cluster_queue in sides:
            continue
        side = world.node(candidate.cluster_queue)
        if id(side) in depth:
            return False
        while side.parent is not None and id(side.parent) not in depth:
            side = side.parent
        if side.parent is None:
            return False
        level = depth[id(side.parent)]
        if meeting and level != meeting:
            return False
        meeting = level
        sides[candidate.cluster_queue] = side
    mine = path[meeting - 1]
    added = next((delta for n, delta in bubbled(node, preemptor.usage) if n is mine), None)
    share = world.shares.share
    preemptor_share = share(mine, added)
    order = {id(side): compare_drs(preemptor_share, share(side)) for side in sides.values()}
    open_sides = {side for side, compared in order.items() if compared <= 0}
    if not open_sides:
        return True
    # What the strategies could take at most: under LessThanOrEqualToFinalShare a victim whose
    # removal leaves its side's share below the preemptor's now never qualifies later either;
    # LessThanInitialShare, when it runs second, takes at most one workload per side.
    names = world.config.preemption_strategies
    final_share_first = _strategy(names[0]) is less_than_or_equal_to_final_share
    below = {side for side, compared in order.items() if compared < 0}
    freed: dict[str, dict[FlavorResource, int]] = {}
    judged: dict[tuple[object, ...], bool] = {}
    left_over: dict[str, dict[FlavorResource, int]] = {}
    for candidate in candidates:
        side = sides[candidate.cluster_queue]
        if id(side) not in open_sides:
            continue
        if final_share_first:
            shape = (candidate.cluster_queue, *candidate.usage.items())
            taken = judged.get(shape)
            if taken is None:
                without = _share_without(world, side, candidate)
                taken = judged[shape] = compare_drs(preemptor_share, without) <= 0
        else:
            taken = id(side) in below
        if not taken:
            if len(names) > 1 and id(side) in below:
                # Bounded by the largest of each ClusterQueue of the side, which is more.
                most = left_over.setdefault(candidate.cluster_queue, {})
                for fr, value in world.usage_of(candidate).items():
                    most[fr] = max(most.get(fr, 0), value)
            continue
        total = freed.setdefault(candidate.cluster_queue, {})
        for fr, value in world.usage_of(candidate).items():
            total[fr] = total.get(fr, 0) + value
    for cq, most in left_over.items():
        total = freed.setdefault(cq, {})
        for fr, value in most.items():
            total[fr] = total.get(fr, 0) + value
    with world.tree.journal.transaction():
        for cq, usage in sorted(freed.items()):
            world.tree.remove_usage(world.node(cq), usage)
        return not workload_fits(world, preemptor, allow_borrowing=True)


def fair_targets(world: World, preemptor: Preemptor) -> list[Target] | None:
    """The targets Kueue's fair-sharing preemption picks, or None if the preemptor cannot fit."""
    candidates = find_candidates(world, preemptor)
    if not candidates:
        return None
    with world.reading_only(preemptor):
        if _cannot_fit(world, preemptor, candidates):
            return None
        return _search(world, preemptor, candidates)


def _search(world: World, preemptor: Preemptor, candidates: list[Admitted]) -> list[Target] | None:
    node = world.node(preemptor.cluster_queue)
    journal = world.tree.journal

    def fits() -> bool:
        # Shares include the preemptor's usage; the fit check must not.
        with journal.transaction():
            world.tree.remove_usage(node, preemptor.usage)
            return workload_fits(world, preemptor, allow_borrowing=True)

    chosen: list[tuple[Admitted, str]] = []
    with journal.transaction():
        world.tree.add_usage(node, preemptor.usage)
        fitted = False
        for workload, reason in _strategy_targets(world, preemptor, candidates):
            chosen.append((workload, reason))
            if fits():
                fitted = True
                break
    if not fitted:
        return None
    with journal.transaction():
        for workload, _ in chosen:
            world.remove(workload)
        return as_targets(fill_back(world, preemptor, chosen, allow_borrowing=True))
