"""The fair-sharing admission order: a tournament at every cohort level.

Kueue's fair_sharing_iterator.go, restated. Each ClusterQueue nominates its
head workload with its flavor assignment. For every cohort on the path from
a head's ClusterQueue to the root, the DRS of the child subtree is computed
*after* admitting that head.
Then, bottom-up, each cohort picks among its children's nominees:

1. (FairSharingPrioritizeNonBorrowing) a nominee whose subtree at this level
   does not borrow in the (flavor, resource) pairs the workload requests
   beats one whose subtree does;
2. lower DRS after admission (`compare_drs`);
3. higher priority;
4. earlier queue-order timestamp;
5. (allot) smaller workload key, so the winner never depends on input order.

The root's winner is the next workload to consider. ClusterQueues without a
cohort are their own root. The usage a nominee would add at each level is
computed with `tree.bubbled`, not applied, so the tournament changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from allot.admission.fair_sharing import DRS, ShareCalculator, compare_drs
from allot.admission.resources import FlavorResource
from allot.admission.tree import Node, bubbled


@dataclass(frozen=True, slots=True)
class Nominee:
    key: str
    priority: int
    order_time: float
    usage: Mapping[FlavorResource, int]


# Per (ClusterQueue, identity of the usage a nominee would add): that usage, the usage generations
# of the ClusterQueue's path, and the DRS at each cohort above it. A nominee's values read nothing
# else, so equivalent workloads that share one assignment (and its usage) share one entry; the usage
# is kept in the entry, so its identity is not reused while the entry lives.
TournamentMemo = dict[
    tuple[str, int], tuple[Mapping[FlavorResource, int], tuple[int, ...], list[tuple[int, DRS]]]
]


def run_tournament(
    shares: ShareCalculator,
    root: Node,
    nominees: Mapping[str, Nominee],
    *,
    prioritize_non_borrowing: bool = True,
    memo: TournamentMemo | None = None,
) -> Nominee | None:
    """The winning nominee of `root`'s tree; `nominees` maps ClusterQueue name to its head.

    `memo` keeps each nominee's values between tournaments: a replay after one admission works
    out again only the nominees whose path's usage changed."""
    if root.is_cq:
        return nominees.get(root.name)
    values: dict[tuple[int, str], tuple[bool, DRS]] = {}
    for cq in root.subtree_cqs():
        nominee = nominees.get(cq.name)
        if nominee is None:
            continue
        path = [cq, *cq.ancestors()]
        generations = tuple(node.usage_generation for node in path)
        slot = (cq.name, id(nominee.usage))
        known = memo.get(slot) if memo is not None else None
        if known is not None and known[0] is nominee.usage and known[1] == generations:
            levels = known[2]
        else:
            levels = shares_by_cohort(shares, cq, nominee.usage)
            if memo is not None:
                memo[slot] = (nominee.usage, generations, levels)
        usage = nominee.usage
        for level, drs in levels:
            # Whether the subtree borrows in what the nominee asks for, read once per tournament
            # rather than at every comparison.
            borrows = prioritize_non_borrowing and drs.borrowing_on(usage)
            values[(level, nominee.key)] = (borrows, drs)
    less = _comparer(values)
    return _play(root, nominees, less)


def shares_by_cohort(
    shares: ShareCalculator, cq: Node, usage: Mapping[FlavorResource, int] | None
) -> list[tuple[int, DRS]]:
    """For each cohort above `cq` (by id, bottom-up), the DRS of its child on the path with `usage`
    added to `cq` (computed, not applied): what fair sharing compares at that cohort."""
    added = {id(node): extra for node, extra in bubbled(cq, usage)} if usage else {}
    levels: list[tuple[int, DRS]] = []
    child = cq
    for ancestor in cq.ancestors():
        levels.append((id(ancestor), shares.share(child, added.get(id(child)))))
        child = ancestor
    return levels


def _comparer(values: Mapping[tuple[int, str], tuple[bool, DRS]]) -> Callable[[Nominee, Nominee, Node], bool]:
    """Values hold, per (cohort, nominee), whether the nominee's subtree borrows in what it asks
    for (always false without FairSharingPrioritizeNonBorrowing) and its DRS after admission."""

    def less(a: Nominee, b: Nominee, cohort: Node) -> bool:
        a_borrows, da = values[(id(cohort), a.key)]
        b_borrows, db = values[(id(cohort), b.key)]
        if a_borrows != b_borrows:
            return not a_borrows
        order = compare_drs(da, db)
        if order:
            return order < 0
        if a.priority != b.priority:
            return a.priority > b.priority
        if a.order_time != b.order_time:
            return a.order_time < b.order_time
        return a.key < b.key

    return less


def _play(
    cohort: Node, nominees: Mapping[str, Nominee], less: Callable[[Nominee, Nominee, Node], bool]
) -> Nominee | None:
    contenders: list[Nominee] = []
    for child in cohort.child_cohorts:
        winner = _play(child, nominees, less)
        if winner is not None:
            contenders.append(winner)
    for cq in cohort.child_cqs:
        nominee = nominees.get(cq.name)
        if nominee is not None:
            contenders.append(nominee)
    if not contenders:
        return None
    best = contenders[0]
    for current in contenders[1:]:
        if less(current, best, cohort):
            best = current
    return best
