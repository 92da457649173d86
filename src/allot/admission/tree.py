"""The quota tree: ClusterQueues and Cohorts as one node type, and Kueue's arithmetic.

Each node holds, per (flavor, resource): its own `nominal` quota and optional
`borrowing_limit` / `lending_limit`, the `subtree_quota` (a ClusterQueue's
nominal; a Cohort's own nominal plus what each child exposes past its lending
limit) and the `usage` that counts against that subtree quota. A Cohort's
usage is only what its children use past their local (non-lendable) part,
so adding usage to a ClusterQueue bubbles the excess up the tree.

The free functions below are Kueue's `resource_node.go`, restated:

    local_quota(n)         = max(0, subtree_quota − lending_limit)   if a lending limit is set, else 0
    local_available(n)     = max(0, local_quota − usage)
    available(root)        = subtree_quota − usage
    available(n)           = local_available(n) + min(available(parent),
                               subtree_quota − local_quota − max(0, usage − local_quota) + borrowing_limit)
                             (the min only when a borrowing limit is set)
    potential_available(n) = subtree_quota at the root, else
                             min(local_quota + potential_available(parent), subtree_quota + borrowing_limit)

`available` may be negative after quota shrank under running workloads.

Every usage change goes through `QuotaTree.bump`, which records its undo in
the shared `Journal`: an uncommitted transaction restores usage exactly, so
the engine's placement what-ifs and the preemption search leave no trace.
This module knows nothing about workloads or queues.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from allot.admission.resources import FlavorResource, Usage
from allot.cluster.journal import Journal


class Node:
    """A ClusterQueue (`is_cq`) or a Cohort in the quota tree."""

    __slots__ = (
        "borrowing_limit",
        "child_cohorts",
        "child_cqs",
        "is_cq",
        "lending_limit",
        "name",
        "nominal",
        "parent",
        "subtree_quota",
        "usage",
        "usage_generation",
        "weight",
    )

    def __init__(self, name: str, *, is_cq: bool, weight: float = 1.0) -> None:
        self.name = name
        self.is_cq = is_cq
        self.weight = weight
        self.parent: Node | None = None
        self.child_cohorts: list[Node] = []
        self.child_cqs: list[Node] = []
        self.nominal: dict[FlavorResource, int] = {}
        self.borrowing_limit: dict[FlavorResource, int] = {}
        self.lending_limit: dict[FlavorResource, int] = {}
        self.subtree_quota: dict[FlavorResource, int] = {}
        self.usage: Usage = {}
        # The tree's generation when this node's usage or quotas last changed (restored on undo):
        # equal values mean the same usage here, whatever changed elsewhere.
        self.usage_generation = 0

    def __repr__(self) -> str:
        return f"<{'ClusterQueue' if self.is_cq else 'Cohort'} {self.name}>"

    def ancestors(self) -> Iterator[Node]:
        """Parent, grandparent ... root."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_cqs(self) -> Iterator[Node]:
        """Every ClusterQueue below (or equal to) this node, in name order per level."""
        if self.is_cq:
            yield self
            return
        for child in self.child_cohorts:
            yield from child.subtree_cqs()
        yield from self.child_cqs


def local_quota(node: Node, fr: FlavorResource) -> int:
    limit = node.lending_limit.get(fr)
    if limit is None:
        return 0
    return max(0, node.subtree_quota.get(fr, 0) - limit)


def local_available(node: Node, fr: FlavorResource) -> int:
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def available(node: Node, fr: FlavorResource) -> int:
    """Capacity left for `node` in `fr`, counting what it may still borrow (may be negative)."""
    quota = node.subtree_quota.get(fr, 0)
    used = node.usage.get(fr, 0)
    parent = node.parent
    if parent is None:
        return quota - used
    from_parent = available(parent, fr)
    limit = node.borrowing_limit.get(fr)
    if limit is not None:
        local = local_quota(node, fr)
        stored_in_parent = quota - local
        used_in_parent = max(0, used - local)
        from_parent = min(stored_in_parent - used_in_parent + limit, from_parent)
    return local_available(node, fr) + from_parent


def potential_available(node: Node, fr: FlavorResource) -> int:
    """The most `node` could ever use of `fr` if nothing else ran."""
    parent = node.parent
    if parent is None:
        return node.subtree_quota.get(fr, 0)
    most = local_quota(node, fr) + potential_available(parent, fr)
    limit = node.borrowing_limit.get(fr)
    if limit is not None:
        most = min(node.subtree_quota.get(fr, 0) + limit, most)
    return most


def borrowing_with(node: Node, fr: FlavorResource, value: int = 0) -> bool:
    """Whether usage plus `value` exceeds the node's own (subtree) quota."""
    return node.usage.get(fr, 0) + value > node.subtree_quota.get(fr, 0)


def within_nominal(node: Node, frs: frozenset[FlavorResource] | set[FlavorResource]) -> bool:
    return all(node.usage.get(fr, 0) <= node.subtree_quota.get(fr, 0) for fr in frs)


def fits_in_quota(node: Node, requests: Mapping[FlavorResource, int]) -> tuple[bool, Usage]:
    """Kueue's QuantitiesFitInQuota: whether `requests` fit this node's subtree quota,
    and the part not covered by its local availability (to ask the parent for)."""
    fits = True
    remaining: Usage = {}
    for fr, value in requests.items():
        if node.usage.get(fr, 0) + value > node.subtree_quota.get(fr, 0):
            fits = False
        remaining[fr] = max(0, value - local_available(node, fr))
    return fits, remaining


def borrowed_in(root: Node) -> frozenset[FlavorResource]:
    """The (flavor, resource) pairs some node of `root`'s tree uses beyond its subtree's quota
    (what a share, `ShareCalculator`, reads: nothing else counts towards one)."""
    found: set[FlavorResource] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        usage = node.usage
        for fr, quota in node.subtree_quota.items():
            if usage.get(fr, 0) > quota:
                found.add(fr)
        pending.extend(node.child_cohorts)
        pending.extend(node.child_cqs)
    return frozenset(found)


def bubbled(cq: Node, usage: Mapping[FlavorResource, int]) -> list[tuple[Node, dict[FlavorResource, int]]]:
    """What adding `usage` to `cq` would add at `cq` and at each ancestor, without adding it.

    The same arithmetic as `QuotaTree.add_usage`: each node takes the whole
    delta, and passes up what its local (non-lendable) availability does not cover.
    """
    levels: list[tuple[Node, dict[FlavorResource, int]]] = []
    node: Node | None = cq
    delta = {fr: value for fr, value in usage.items() if value}
    while node is not None and delta:
        levels.append((node, delta))
        upward: dict[FlavorResource, int] = {}
        for fr, value in delta.items():
            rest = value - local_available(node, fr)
            if rest > 0:
                upward[fr] = rest
        node, delta = node.parent, upward
    return levels


def drop_at(cq: Node, usage: Mapping[FlavorResource, int], at: Node) -> dict[FlavorResource, int]:
    """How much `at`'s usage would fall if `usage` were removed from `cq`, without removing it.

    The same arithmetic as `QuotaTree.remove_usage`: each node gives up the delta, and passes up
    no more than what it had stored in its parent. `at` is `cq` or one of its ancestors.
    """
    drop: dict[FlavorResource, int] = {}
    for fr, value in usage.items():
        node = cq
        while value:
            if node is at:
                drop[fr] = value
                break
            stored_in_parent = node.usage.get(fr, 0) - local_quota(node, fr)
            parent = node.parent
            if stored_in_parent <= 0 or parent is None:
                break
            node, value = parent, min(value, stored_in_parent)
    return drop


def height(node: Node) -> int:
    """Distance to the furthest leaf; a cohort holding only ClusterQueues has height 1."""
    if node.is_cq:
        return 0
    best = min(len(node.child_cohorts) + len(node.child_cqs), 1)
    for child in node.child_cohorts:
        best = max(best, height(child) + 1)
    return best


def lowest_subtree_that_fits(cq: Node, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """Kueue's FindHeightOfLowestSubtreeThatFits: the borrowing level of `value`.

    Returns (height of the lowest subtree whose quota covers the request, 0 if
    the ClusterQueue's own nominal does; whether that subtree is smaller than
    the whole tree, i.e. reclaiming inside it has a hierarchical advantage).
    """
    if cq.parent is None or not borrowing_with(cq, fr, value):
        return 0, cq.parent is not None
    remaining = value - local_available(cq, fr)
    for ancestor in cq.ancestors():
        if not borrowing_with(ancestor, fr, remaining):
            return height(ancestor), ancestor.parent is not None
        remaining -= local_available(ancestor, fr)
    return height(cq.root()), False


class QuotaTree:
    """All nodes, and the only code that changes usage (journaled)."""

    def __init__(self, journal: Journal | None = None) -> None:
        self.journal = journal if journal is not None else Journal()
        self.cqs: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        # A fresh, never reused number after every usage change, and the previous
        # number again when the change is undone: equal generations mean equal usage,
        # so caches keyed on it survive rolled-back what-ifs and are never stale.
        self.generation = 0
        self._next_generation = 1

    def roots(self) -> list[Node]:
        """Root cohorts and ClusterQueues without a cohort, by name."""
        found = [n for n in self.cohorts.values() if n.parent is None]
        found += [n for n in self.cqs.values() if n.parent is None]
        return sorted(found, key=lambda n: (n.is_cq, n.name))

    # --- building ---------------------------------------------------------------

    def recompute(self) -> None:
        """Subtree quotas from nominal quotas, and cohort usage from ClusterQueue usage.

        Run after building or after quotas change; the arithmetic is Kueue's
        updateCohortResourceNode (not journaled: quota changes are not what-ifs).
        """
        for root in self.roots():
            _recompute(root)
        self._new_generation()
        for node in (*self.cohorts.values(), *self.cqs.values()):
            node.usage_generation = self.generation

    def _new_generation(self) -> None:
        self.generation = self._next_generation
        self._next_generation += 1

    def touch(self) -> None:
        """Start a new generation without a usage change (something caches depend on changed)."""
        generation = self.generation
        self._new_generation()
        if self.journal.recording:
            tree = self

            def undo() -> None:
                tree.generation = generation

            self.journal.record(undo)

    # --- usage ------------------------------------------------------------------

    def bump(self, node: Node, fr: FlavorResource, delta: int) -> None:
        usage = node.usage
        old = usage.get(fr)
        new = (old or 0) + delta
        if new:
            usage[fr] = new
        else:
            usage.pop(fr, None)
        generation = self.generation
        node_generation = node.usage_generation
        self._new_generation()
        node.usage_generation = self.generation
        if self.journal.recording:
            self.journal.record(_Restore(self, node, fr, old, generation, node_generation))

    def add_usage(self, cq: Node, usage: Mapping[FlavorResource, int]) -> None:
        """Charge `usage` to a ClusterQueue; the excess over each local part bubbles up."""
        for fr, value in usage.items():
            if value:
                self._add(cq, fr, value)

    def remove_usage(self, cq: Node, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            if value:
                self._remove(cq, fr, value)

    def _add(self, node: Node, fr: FlavorResource, value: int) -> None:
        while True:
            spare = local_available(node, fr)
            self.bump(node, fr, value)
            parent = node.parent
            if parent is None or value <= spare:
                return
            node, value = parent, value - spare

    def _remove(self, node: Node, fr: FlavorResource, value: int) -> None:
        while True:
            stored_in_parent = node.usage.get(fr, 0) - local_quota(node, fr)
            self.bump(node, fr, -value)
            parent = node.parent
            if stored_in_parent <= 0 or parent is None:
                return
            node, value = parent, min(value, stored_in_parent)


class _Restore:
    """Undo step for one usage cell and the generations before it (a class: cheaper than a closure)."""

    __slots__ = ("fr", "generation", "node", "node_generation", "old", "tree")

    def __init__(
        self,
        tree: QuotaTree,
        node: Node,
        fr: FlavorResource,
        old: int | None,
        generation: int,
        node_generation: int,
    ) -> None:
        self.tree = tree
        self.node = node
        self.fr = fr
        self.old = old
        self.generation = generation
        self.node_generation = node_generation

    def __call__(self) -> None:
        usage = self.node.usage
        if self.old is None:
            usage.pop(self.fr, None)
        else:
            usage[self.fr] = self.old
        self.node.usage_generation = self.node_generation
        self.tree.generation = self.generation


def _recompute(node: Node) -> None:
    if node.is_cq:
        node.subtree_quota = dict(node.nominal)
        return
    node.subtree_quota = dict(node.nominal)
    node.usage = {}
    for child in (*node.child_cohorts, *node.child_cqs):
        _recompute(child)
        for fr, quota in child.subtree_quota.items():
            node.subtree_quota[fr] = node.subtree_quota.get(fr, 0) + quota - local_quota(child, fr)
        for fr, used in child.usage.items():
            excess = max(0, used - local_quota(child, fr))
            if excess:
                node.usage[fr] = node.usage.get(fr, 0) + excess
