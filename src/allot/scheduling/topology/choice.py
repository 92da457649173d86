"""Preferred alignment: choosing, among the feasible allocations on a node, the best aligned one.

`AlignedChoice` is DynamicResources' device chooser when its `alignment`
argument is `preferred` (the default). On the node the scheduler picked:

1. the planner (`planner.plan`) proposes device sets, best aligned first;
2. each proposal is offered to the allocator by excluding every other
   candidate device of the planned requests; the allocator checks
   everything (selectors, constraints, counters, capacity, taints) and the
   first proposal it accepts is kept; a perfectly aligned one (every pair
   as close as it can be) is the answer;
3. otherwise (nothing accepted, nothing plannable: All mode, prioritized
   alternatives; or the best accepted is short of perfect) the allocator
   enumerates feasible allocations (bounded, upstream's own first answer
   among them) and `AlignmentScorer` picks the best; the better of that
   and step 2's wins.

Exclusion only removes options and step 3 is the unrestricted search, so
allot finds an allocation exactly when upstream's allocator does, and one
at least as well aligned; only which one differs. On a node whose devices
publish no topology attributes the chooser steps aside: upstream's order,
at upstream's cost.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Protocol

from allot.dra import (
    AllocatedState,
    Allocation,
    AllocationError,
    Allocator,
    Candidate,
    DeviceId,
    EitherFilter,
    NoAllocation,
    NodePools,
)
from allot.model.core import Node
from allot.model.resource import ResourceClaim
from allot.scheduling.topology.alignment import alignment_value, unit_alignment
from allot.scheduling.topology.places import place_of
from allot.scheduling.topology.planner import PERFECT, plan
from allot.scheduling.topology.view import NodeView, ViewBuilder, try_view


class DeviceChooser(Protocol):
    """Allocates `claims` on `node` like `Allocator.allocate`, choosing among the feasible results;
    devices in `exclude` (a device filter, e.g. GPU-sharing isolation) are never chosen."""

    def __call__(
        self,
        allocator: Allocator,
        node: Node | None,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        *,
        exclude: Container[DeviceId] | None = None,
    ) -> Allocation | NoAllocation: ...


class AlignmentScorer:
    """Scores an allocation: its alignment value first (x1000), then minus the aligned pairs it breaks."""

    def __init__(self, view: NodeView | None = None) -> None:
        self.view = view
        self.pairs_before = view.pairs() if view is not None else 0

    def __call__(self, candidate: Candidate, /) -> float:
        picked = [p for p in candidate.devices() if not p.admin_access]
        alignment = unit_alignment([place_of(p.driver, p.device) for p in picked])
        value = 3.0 if alignment is None else alignment_value(alignment.level, alignment.score)
        broken = 0
        if self.view is not None:
            taken = {p.device_id for p in picked if not p.shared}
            broken = self.pairs_before - self.view.pairs(taken)
        return 1000.0 * value - broken


class AlignedChoice:
    """The `alignment: preferred` chooser (see the module docstring)."""

    def __init__(self) -> None:
        self._builder: ViewBuilder | None = None
        self._known: dict[int, tuple[NodePools, bool]] = {}

    def _topology(self, allocator: Allocator, node: Node | None) -> bool:
        """Whether any device the node sees publishes a PCIe root or NUMA node (cached per node pools)."""
        pools = allocator.pools(node)
        known = self._known.get(id(pools))
        if known is None or known[0] is not pools:
            if len(self._known) > 100_000:
                self._known.clear()
            aware = any(place_of(d.info.id.driver, d.info.device).known for d in pools.devices)
            known = self._known[id(pools)] = (pools, aware)
        return known[1]

    def builder(self, allocator: Allocator) -> ViewBuilder:
        if self._builder is None or self._builder.allocator is not allocator:
            self._builder = ViewBuilder(allocator)
        return self._builder

    def __call__(
        self,
        allocator: Allocator,
        node: Node | None,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        *,
        exclude: Container[DeviceId] | None = None,
    ) -> Allocation | NoAllocation:
        """`exclude`: a device filter the caller applies (GPU-sharing isolation), honoured by every search."""
        if not self._topology(allocator, node):
            return allocator.allocate(node, claims, allocated, exclude=exclude)
        view = try_view(self.builder(allocator), node, claims, allocated)
        chosen: tuple[float, Allocation] | None = None
        perfect = False
        if view is not None:
            candidates = view.candidate_ids()
            for proposal in plan(view):
                try:
                    outcome = allocator.allocate(
                        node, claims, allocated, exclude=EitherFilter(exclude, candidates - proposal.devices)
                    )
                except AllocationError:
                    # A selector error on a device upstream's order might never reach:
                    # leave the verdict to the unrestricted search.
                    break
                if isinstance(outcome, Allocation):
                    chosen = (1000.0 * proposal.value - proposal.broken, outcome)
                    perfect = proposal.value >= PERFECT
                    break
        if chosen is not None and perfect:
            return chosen[1]
        # Short of perfect: the bounded enumeration starts with upstream's own answer, so the
        # better of the two is never worse aligned than upstream.
        searched = allocator.allocate(node, claims, allocated, scorer=AlignmentScorer(view), exclude=exclude)
        if chosen is None or not isinstance(searched, Allocation):
            return searched if chosen is None else chosen[1]
        return searched if (searched.score or 0.0) > chosen[0] else chosen[1]
