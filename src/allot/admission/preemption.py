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
from allot.admission.resources import FlavorResource
from allot.admission.targets import Preemptor, Target, World, timestamp_matters
from allot.admission.tree import available, bubbled, lowest_subtree_that_fits


def preemption_targets(world: World, preemptor: Preemptor) -> list[Target] | None:
    """Workloads to evict so `preemptor` fits; None when no set of victims makes it fit."""
    if not preemptor.frs:
        return None
    if world.config.fair_sharing:
        return fair_targets(world, preemptor)
    return classical_targets(world, preemptor)


def _oracle_key(
    world: World, cluster_queue: str, fr: FlavorResource, quantity: int, priority: int, order_time: float
) -> tuple[object, ...]:
    # Equal heads share the answer until usage changes.
    stamp = order_time if timestamp_matters(world.policies[cluster_queue]) else None
    return (cluster_queue, fr, quantity, priority, stamp)


def oracle_for(world: World, *, key: str, cluster_queue: str, priority: int, order_time: float) -> Oracle:
    """The preemption oracle the flavor assigner consults for one workload."""

    def simulate(fr: FlavorResource, quantity: int) -> tuple[Possibility, int]:
        cache_key = _oracle_key(world, cluster_queue, fr, quantity, priority, order_time)
        cached = world.oracle_cache.get(cache_key)
        generation = world.tree.generation
        if cached is not None and cached[0] == generation:
            return cached[1]  # type: ignore[return-value]
        result, targets = _simulate(fr, quantity)
        if len(world.oracle_cache) > 4096:
            world.oracle_cache.clear()
        world.oracle_cache[cache_key] = (generation, result, targets)
        return result

    def _simulate(fr: FlavorResource, quantity: int) -> tuple[tuple[Possibility, int], list[Target] | None]:
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
            return (Possibility.NO_CANDIDATES, borrow), targets
        victims = [world.admitted[t.cluster_queue][t.workload_key] for t in targets]
        # Only `fr` is read once they are gone.
        with world.tree.journal.transaction(), world.reading_only(preemptor):
            for victim in victims:
                world.remove(victim)
            borrow, _ = lowest_subtree_that_fits(node, fr, quantity)
        if any(t.cluster_queue == cluster_queue for t in targets):
            return (Possibility.PREEMPT, borrow), targets
        return (Possibility.RECLAIM, borrow), targets

    return simulate


def assignment_targets(world: World, preemptor: Preemptor) -> list[Target] | None:
    """`preemption_targets` for a workload's whole assignment, taken from the oracle's search for
    its one contested (flavor, resource) when that search is the same one.

    It is the same under fair sharing when the rest of the workload's usage changes no share on
    the preemptor's path (no node there borrows in it, even with it added) and fits already: the
    shares, the target order, every strategy verdict and every fit check then read alike.
    """
    if world.config.fair_sharing and len(preemptor.frs) == 1:
        (contested,) = preemptor.frs
        cached = world.oracle_cache.get(
            _oracle_key(
                world,
                preemptor.cluster_queue,
                contested,
                preemptor.usage.get(contested, 0),
                preemptor.priority,
                preemptor.order_time,
            )
        )
        if cached is not None and cached[0] == world.tree.generation:
            rest = {fr: value for fr, value in preemptor.usage.items() if fr != contested and value}
            if _changes_no_share(world, preemptor.cluster_queue, rest):
                targets = cached[2]
                return None if targets is None else list(targets)
    return preemption_targets(world, preemptor)


def _changes_no_share(world: World, cluster_queue: str, usage: dict[FlavorResource, int]) -> bool:
    node = world.node(cluster_queue)
    if any(value > available(node, fr) for fr, value in usage.items()):
        return False
    for level, delta in bubbled(node, usage):
        if level.parent is None:
            continue
        for fr, value in delta.items():
            if level.usage.get(fr, 0) + value > level.subtree_quota.get(fr, 0):
                return False
    return True
