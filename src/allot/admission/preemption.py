"""Preemption entry points: the targets for an assignment, and the flavor oracle.

`preemption_targets` picks classic or fair-sharing preemption the way Kueue's
Preemptor does (fair sharing on ⇒ fair strategies). `oracle_for` gives the
flavor assigner its preemption oracle: the same search for a single (flavor,
resource), reporting whether targets exist, whether any is in the
preemptor's own ClusterQueue (Preempt) or only elsewhere (Reclaim), and the
borrowing level once they are gone. Both are pure: every what-if is rolled
back.
"""

from __future__ import annotations

from types import MappingProxyType

from allot.admission.classical import classical_targets
from allot.admission.fair_preemption import fair_targets
from allot.admission.flavors import Oracle, Possibility
from allot.admission.quota import LOWER_OR_NEWER_EQUAL_PRIORITY, QueuePolicy
from allot.admission.resources import FlavorResource
from allot.admission.targets import Preemptor, Target, World
from allot.admission.tree import lowest_subtree_that_fits


def preemption_targets(world: World, preemptor: Preemptor) -> list[Target] | None:
    """Workloads to evict so `preemptor` fits; None when no set of victims makes it fit."""
    if not preemptor.frs:
        return None
    if world.config.fair_sharing:
        return fair_targets(world, preemptor)
    return classical_targets(world, preemptor)


def timestamp_matters(policy: QueuePolicy) -> bool:
    """Whether a preemptor's timestamp can change its victims in this ClusterQueue: only where an
    equal-priority newer workload may be preempted (LowerOrNewerEqualPriority). Elsewhere the
    victims depend on the preemptor only through its queue, priority and usage."""
    preemption = policy.preemption
    return LOWER_OR_NEWER_EQUAL_PRIORITY in (
        preemption.within_cluster_queue,
        preemption.reclaim_within_cohort,
    )


def oracle_for(world: World, *, key: str, cluster_queue: str, priority: int, order_time: float) -> Oracle:
    """The preemption oracle the flavor assigner consults for one workload."""

    # Equal heads share the answer until usage changes.
    stamp = order_time if timestamp_matters(world.policies[cluster_queue]) else None

    def simulate(fr: FlavorResource, quantity: int) -> tuple[Possibility, int]:
        cache_key = (cluster_queue, fr, quantity, priority, stamp)
        cached = world.oracle_cache.get(cache_key)
        generation = world.tree.generation
        if cached is not None and cached[0] == generation:
            return cached[1]  # type: ignore[return-value]
        result = _simulate(fr, quantity)
        if len(world.oracle_cache) > 4096:
            world.oracle_cache.clear()
        world.oracle_cache[cache_key] = (generation, result)
        return result

    def _simulate(fr: FlavorResource, quantity: int) -> tuple[Possibility, int]:
        preemptor = Preemptor(
            key=key,
            cluster_queue=cluster_queue,
            priority=priority,
            order_time=order_time,
            usage=MappingProxyType({fr: quantity}),
            frs=frozenset({fr}),
        )
        node = world.node(cluster_queue)
        targets = preemption_targets(world, preemptor)
        if not targets:
            borrow, _ = lowest_subtree_that_fits(node, fr, quantity)
            return Possibility.NO_CANDIDATES, borrow
        victims = [world.admitted[t.cluster_queue][t.workload_key] for t in targets]
        with world.tree.journal.transaction():
            for victim in victims:
                world.remove(victim)
            borrow, _ = lowest_subtree_that_fits(node, fr, quantity)
        if any(t.cluster_queue == cluster_queue for t in targets):
            return Possibility.PREEMPT, borrow
        return Possibility.RECLAIM, borrow

    return simulate
