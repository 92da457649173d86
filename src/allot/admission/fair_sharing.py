"""Dominant resource share (DRS): how much a ClusterQueue or Cohort borrows, weighted.

For a node n with parent p, and optionally a workload's usage w added
(Kueue's pkg/cache/scheduler/fair_sharing.go):

    borrowed_r = Σ_f max(0, usage(n,f,r) + w(f,r) − subtree_quota(n,f,r))
    lendable_r = Σ_f potential_available(p, f, r)        (over every (f, r) the tree knows)
    ratio_r    = 1000 · borrowed_r / lendable_r            (only where lendable_r > 0)
    DRS        = max_r ratio_r, ties to the alphabetically smallest r

A node without a parent, or one that borrows nothing, has DRS 0. The share
compared is DRS / weight; a zero weight that borrows is infinitely bad; the
status field `fairSharing.weightedShare` is ceil(DRS / weight), or
2^63 − 1 for a borrowing zero-weight node.

`compare_drs` is the total order Kueue's CompareDRS defines: lower means
"schedule first", higher means "preempt first". `lendable` depends only on
quotas, so it is cached per parent node until the tree's quotas change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from allot.admission.resources import FlavorResource
from allot.admission.tree import Node, potential_available

MAX_INT64 = (1 << 63) - 1


@dataclass(slots=True, eq=True)
class DRS:
    """A node's dominant resource share, with what comparisons need. Never changed once made (not
    declared frozen: the preemption search makes hundreds of thousands, and a frozen dataclass
    takes three times as long to build)."""

    weight: float = 1.0
    ratio: float = 0.0
    dominant: str = ""
    borrowing: bool = False
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def is_zero(self) -> bool:
        return self.ratio == 0

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.borrowing

    def precise(self) -> float:
        """DRS / weight, +inf for a borrowing zero-weight node."""
        if self.zero_weight_borrows:
            return math.inf
        if self.ratio == 0:
            return 0.0
        return self.ratio / self.weight

    def weighted_share(self) -> int:
        """`status.fairSharing.weightedShare`."""
        if self.zero_weight_borrows:
            return MAX_INT64
        return math.ceil(self.precise())

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        """Whether the node borrows in any (flavor, resource) the workload requests."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE_DRS = DRS(ratio=-1.0)


def compare_drs(a: DRS, b: DRS) -> int:
    """-1, 0 or 1: zero-weight borrowers are worst, otherwise by precise weighted share."""
    a_inf, b_inf = a.zero_weight_borrows, b.zero_weight_borrows
    if a_inf and b_inf:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a_inf:
        return 1
    if b_inf:
        return -1
    pa, pb = a.precise(), b.precise()
    return (pa > pb) - (pa < pb)


class ShareCalculator:
    """Computes DRS values; caches lendable capacity per parent node."""

    def __init__(self, *, cache: bool = False) -> None:
        """With `cache`, shares are kept per node until its usage changes (`Node.usage_generation`:
        a node's DRS reads only its own usage and quotas, and its parent's lendable capacity)."""
        self._lendable: dict[int, dict[str, int]] = {}
        self._cache = cache
        self._shares: dict[int, tuple[int, DRS]] = {}

    def invalidate(self) -> None:
        """Forget cached lendable capacity and shares (call after quotas change)."""
        self._lendable.clear()
        self._shares.clear()

    def lendable(self, parent: Node) -> dict[str, int]:
        cached = self._lendable.get(id(parent))
        if cached is None:
            cached = {}
            for fr in parent.root().subtree_quota:
                resource = fr[1]
                cached[resource] = cached.get(resource, 0) + potential_available(parent, fr)
            self._lendable[id(parent)] = cached
        return cached

    def share(self, node: Node, extra: Mapping[FlavorResource, int] | None = None) -> DRS:
        """DRS of `node`, with `extra` usage added to it (the node's own usage only)."""
        if extra or not self._cache:
            return self._share(node, extra)
        generation = node.usage_generation
        cached = self._shares.get(id(node))
        if cached is not None and cached[0] == generation:
            return cached[1]
        drs = self._share(node, None)
        if len(self._shares) > 4096:
            self._shares.clear()
        self._shares[id(node)] = (generation, drs)
        return drs

    def _share(self, node: Node, extra: Mapping[FlavorResource, int] | None) -> DRS:
        parent = node.parent
        if parent is None:
            return DRS(weight=node.weight)
        borrowing: dict[str, int] = {}
        borrowed: list[FlavorResource] = []
        usage = node.usage
        for fr, quota in node.subtree_quota.items():
            amount = usage.get(fr, 0) - quota
            if extra:
                amount += extra.get(fr, 0)
            if amount > 0:
                borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
                borrowed.append(fr)
        if not borrowing:
            return DRS(weight=node.weight)
        lendable = self.lendable(parent)
        ratio = 0.0
        dominant = ""
        for resource in sorted(borrowing):
            total = lendable.get(resource, 0)
            if total > 0:
                value = borrowing[resource] * 1000.0 / total
                if value > ratio:
                    ratio, dominant = value, resource
        return DRS(
            weight=node.weight,
            ratio=ratio,
            dominant=dominant,
            borrowing=True,
            borrowed=frozenset(borrowed),
        )
