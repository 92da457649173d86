"""Orderings, each ending in a unique key so equal inputs give equal outputs.

* `pending_key`: the order inside a ClusterQueue (Kueue's queue ordering):
  LocalQueue usage score ascending when admission fair sharing is on, then
  priority descending, queue-order timestamp ascending, workload key.
* `entry_key`: the order of ClusterQueue heads when fair sharing is off
  (Kueue's entryOrdering): borrowing level ascending (not borrowing first),
  priority descending, timestamp ascending, key.
* `candidate_key`: preemption victims, most preemptible first (Kueue's
  CandidatesOrdering): (0) already being evicted first; (1) other
  ClusterQueues before the preemptor's; (2) with admission fair sharing, in
  the same ClusterQueue but another LocalQueue: higher LocalQueue usage
  first; (3) lower priority first; (4) most recently admitted first;
  (5) key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from allot.admission.resources import FlavorResource


@dataclass(slots=True)
class Admitted:
    """An admitted workload as preemption sees it."""

    key: str
    cluster_queue: str
    local_queue: str
    priority: int
    order_time: float
    admitted_at: float
    usage: Mapping[FlavorResource, int]
    evicting: bool = False
    # Admitted on quota kept for it (allot.engine.quota_hold): other queues take it back by
    # fair-sharing preemption only to stay within their nominal quota.
    protected: bool = False
    # `usage` restricted to the pairs a search reads, and those pairs (`World.usage_of`'s cache).
    restricted: tuple[frozenset[FlavorResource], Mapping[FlavorResource, int]] | None = field(
        default=None, compare=False, repr=False
    )

    def uses_any(self, frs: frozenset[FlavorResource]) -> bool:
        return not self.usage.keys().isdisjoint(frs)


def pending_key(
    priority: int, order_time: float, key: str, score: float = 0.0
) -> tuple[float, int, float, str]:
    return (score, -priority, order_time, key)


def entry_key(borrowing: int, priority: int, order_time: float, key: str) -> tuple[int, int, float, str]:
    return (borrowing, -priority, order_time, key)


LocalQueueUsage = Callable[[Admitted], float | None]
"""The admission-fair-sharing usage of a candidate's LocalQueue, None when AFS is off for its queue."""


def candidate_key(
    preemptor_cq: str,
    lq_usage: LocalQueueUsage | None = None,
) -> Callable[[Admitted], tuple[bool, bool, float, int, float, str]]:
    """Sort key for victims of a preemptor in `preemptor_cq`.

    Criterion (2) compares LocalQueue usage only between candidates of the
    preemptor's own ClusterQueue with AFS on; candidates of other queues all
    get 0 there, which is equivalent because (1) already separated them.
    """

    def key(candidate: Admitted) -> tuple[bool, bool, float, int, float, str]:
        in_cq = candidate.cluster_queue == preemptor_cq
        usage = 0.0
        if in_cq and lq_usage is not None:
            value = lq_usage(candidate)
            if value is not None:
                usage = -value
        return (
            not candidate.evicting,
            in_cq,
            usage,
            candidate.priority,
            -candidate.admitted_at,
            candidate.key,
        )

    return key
