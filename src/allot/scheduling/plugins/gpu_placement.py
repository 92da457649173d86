"""GpuPlacement: DRA for clusters with shared GPUs, with a placement policy choosing the node and the GPU.

It takes DynamicResources' place in a profile (disable that one): claims
are handled by a DynamicResources inside it, and three things are added.

1. Feasibility from the shared-GPU table. For a pod whose claims the
   table reads exactly (`sharing.demand`), a node fits iff it has enough
   GPUs of the request's shape with room for the request's capacity and
   open to the pod's trust domain: one array comparison over all nodes,
   and the allocator runs on the chosen node only.
2. Node scores from the policy (ScorePlugin). Ties are left to the
   scheduler's seeded per-pod tie-break (`tieBreak: scheduler`, the
   default), go to the node that sorts first by name (`tieBreak: name`: the
   FGD simulator breaks ties by node order and randomises node names per
   seed, and FGD's figures depend on it), or to a random one from the
   plugin's `seed` (`tieBreak: random`). Both nudge the scores: `random`
   by less than the gap between two of the policy's scores, `name` by a
   millionth, so that only an exact tie of the profile's total is decided
   by node order.
3. The GPU inside the node, through DynamicResources' device-choice hook:
   the policy names the GPUs it wants; the allocator is first offered
   exactly those (every other shared GPU of the node excluded) and, should
   the allocator refuse, searches freely with a scorer that prefers them.
   The trust-domain exclusion (GpuIsolation) is the allocator's device
   filter in both calls. Exclusion only removes options and the fallback
   is the unrestricted search, so the node fits exactly when upstream's
   allocator says it does.

Args: `policy` (FGD, BestFit, Packing, DotProduct, Clustering, Random;
omitted: DynamicResources' choice, plus the fast feasibility), `seed`,
`tieBreak`, `targetWorkload`, `popularityThreshold`, `stepBudget`, and
`rejectInPreFilter` (default false): reject in pre-filter a pod no node
has shared-GPU room for. The diagnosis is one line instead of one status
per node, which matters when thousands of pods fail (trace replays), but
pre-filter rejections are not preempted for, so leave it off where
preemption should make room.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from allot.cluster.events import DEVICE_EVENTS, NODE_EVENTS, ClusterEventKind
from allot.cluster.resources import CPU, MEMORY
from allot.dra import AllocatedState, Allocation, Allocator, Candidate, DeviceId, EitherFilter, NoAllocation
from allot.model.core import Node
from allot.model.resource import ResourceClaim
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.plugins.dynamic_resources import NAME as DRA_NAME
from allot.scheduling.plugins.dynamic_resources import DynamicResources
from allot.scheduling.sharing.demand import Demand, DemandReader
from allot.scheduling.sharing.isolation import Exclusion, allowed_mask, exclusion
from allot.scheduling.sharing.policies import Context, PodView, Policy, build_policy
from allot.scheduling.sharing.table import MILLI, SharedGpuTable, table_for
from allot.scheduling.status import Code, Status, error, unschedulable
from allot.scheduling.topology.choice import AlignedChoice

NAME = "GpuPlacement"
NO_ROOM = "insufficient shared GPU capacity"
OTHER_DOMAIN = "shared GPUs in use by another trust domain"
RANDOM = "random"
BY_NAME = "name"
BY_SCHEDULER = "scheduler"
TIE_BREAKS = (BY_SCHEDULER, BY_NAME, RANDOM)


@dataclass(slots=True)
class _Placement:
    demand: Demand
    view: PodView


class _Prefer:
    """A scorer for the allocator's choice hook: allocations using the wanted GPUs first, earlier ones more."""

    __slots__ = ("rank",)

    def __init__(self, devices: Sequence[DeviceId]) -> None:
        self.rank = {device: len(devices) - i for i, device in enumerate(devices)}

    def __call__(self, candidate: Candidate, /) -> float:
        return float(sum(self.rank.get(p.device_id, 0) for p in candidate.devices()))


class _PolicyChoice:
    """DynamicResources' device chooser: the policy's GPUs on the node the pod goes to."""

    def __init__(self, plugin: GpuPlacement) -> None:
        self.plugin = plugin
        self.aligned = AlignedChoice()
        # The cycle and node being reserved; set by GpuPlacement.reserve around the call.
        self.current: tuple[Cycle, int] | None = None

    def __call__(
        self,
        allocator: Allocator,
        node: Node | None,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        *,
        exclude: Container[DeviceId] | None = None,
    ) -> Allocation | NoAllocation:
        if self.current is None:
            return allocator.allocate(node, claims, allocated, exclude=exclude)
        cycle, index = self.current
        excluded: Exclusion | None = exclusion(cycle)
        wanted = self.plugin.wanted(cycle, index)
        if not wanted:
            # Nothing shared for the policy to pick (whole GPUs, NICs): prefer aligned devices.
            return self.aligned(allocator, node, claims, allocated, exclude=excluded)
        table = self.plugin.table(cycle)
        others = {d.info.id for d in table.devices[index]} - set(wanted)
        outcome = allocator.allocate(node, claims, allocated, exclude=EitherFilter(excluded, others))
        if isinstance(outcome, Allocation):
            return outcome
        return allocator.allocate(node, claims, allocated, scorer=_Prefer(wanted), exclude=excluded)


class GpuPlacement:
    name = NAME
    # GPU room appears when a pod leaves; devices change with slices and claims.
    wake_on = NODE_EVENTS | DEVICE_EVENTS | {ClusterEventKind.POD_LEFT}

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        seed: int = 0,
        tie_break: str = BY_SCHEDULER,
        step_budget: int = 100_000,
        reject_in_pre_filter: bool = False,
    ) -> None:
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"{NAME}.tieBreak: expected one of {', '.join(TIE_BREAKS)}, got {tie_break!r}")
        self.policy = policy
        self.tie_break = tie_break
        self.reject_in_pre_filter = reject_in_pre_filter
        self.rng = np.random.default_rng(seed)
        self.choice = _PolicyChoice(self)
        self.dra = DynamicResources(step_budget=step_budget, chooser=self.choice)
        self._reader: DemandReader | None = None
        self._context: Context | None = None
        # (state, its slices, table) of the last cycle: the table lookup is on every extension point.
        self._table: tuple[object, object, SharedGpuTable] | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> GpuPlacement:
        budget = args.get("stepBudget", 100_000)
        if not isinstance(budget, int) or budget <= 0:
            raise ValueError(f"{NAME}.stepBudget: expected a positive integer")
        seed = args.get("seed", 0)
        if not isinstance(seed, int):
            raise ValueError(f"{NAME}.seed: expected an integer")
        name = args.get("policy")
        policy = build_policy(str(name), args) if name else None
        return cls(
            policy=policy,
            seed=seed,
            tie_break=str(args.get("tieBreak", BY_SCHEDULER)),
            step_budget=budget,
            reject_in_pre_filter=bool(args.get("rejectInPreFilter", False)),
        )

    # -- shared state ------------------------------------------------------------------------

    def table(self, cycle: Cycle) -> SharedGpuTable:
        cached = self._table
        if cached is not None and cached[0] is cycle.state and cached[1] is cycle.state.slices:
            return cached[2]
        table = table_for(cycle.state, self.dra.allocator(cycle))
        self._table = (cycle.state, cycle.state.slices, table)
        return table

    def context(self, cycle: Cycle) -> Context:
        table = self.table(cycle)
        context = self._context
        if context is None or context.table is not table:
            nodes = cycle.state.nodes

            def cpu_free(rows: IntArray) -> IntArray:
                free: IntArray = nodes.allocatable[CPU][rows] - nodes.requested[CPU][rows]
                return free

            cpu_max = int(nodes.allocatable[CPU].max()) if nodes.size else 1
            gpu_max = int(table.valid.sum(axis=1).max()) * MILLI if nodes.size else MILLI
            context = self._context = Context(
                table, cpu_free, max(cpu_max, 1), max(gpu_max, MILLI), self.rng, nodes.allocatable[CPU].copy()
            )
            self._reader = DemandReader(table)
        return context

    def _placement(self, cycle: Cycle) -> _Placement | None:
        found = cycle.data.get(NAME)
        return found if isinstance(found, _Placement) else None

    def wanted(self, cycle: Cycle, index: int) -> list[DeviceId]:
        """The devices the policy wants for the pod on node `index` (none without a policy)."""
        placement = self._placement(cycle)
        if self.policy is None or placement is None or placement.demand.request is None:
            return []
        context = self.context(cycle)
        devices = context.table.devices[index]
        slots = self.policy.choose(context, placement.view, index)
        return [devices[g].info.id for g in slots if 0 <= g < len(devices)]

    # -- extension points -------------------------------------------------------------------

    def pre_filter(self, cycle: Cycle) -> Status:
        if DRA_NAME in cycle.data:
            # Both would allocate the pod's claims; the profile must keep only this one.
            return error(
                NAME, "GpuPlacement replaces DynamicResources: disable DynamicResources in this profile"
            )
        status = self.dra.pre_filter(cycle)
        if not status.ok:
            return status
        context = self.context(cycle)
        table = context.table
        assert self._reader is not None
        unallocated = [
            claim
            for _, key in cycle.pod.claims
            if (claim := cycle.state.claims.get(key)) is not None and claim.status.allocation is None
        ]
        demand = self._reader.demand(unallocated, cycle.pod.nonzero[0])
        if getattr(cycle.data.get(DRA_NAME), "extended", None):
            # Extended resources served through DRA add a claim per node: the allocator decides.
            demand = Demand(demand.cpu, demand.request, exact=False)
        needs = None
        fit: BoolArray = np.zeros(table.valid.shape, dtype=np.bool_)
        if demand.request is not None:
            shape = self._reader.shape(demand.request)
            needs = table.needs(demand.request.capacity_key, demand.request.capacity)
            if shape is not None:
                fit = table.usable(shape.mask, needs)
        if table.saturated and demand.exact:
            # Amounts past the table's exact range (saturated): the allocator decides feasibility.
            demand = Demand(demand.cpu, demand.request, exact=False)
        # Trust domains are read in filter_mask, once every pre-filter (GpuIsolation's too) has run.
        cycle.data[NAME] = _Placement(demand, PodView(demand, needs, fit))
        if self.reject_in_pre_filter and demand.exact and not self._room_anywhere(cycle, fit, demand.count):
            return unschedulable(NAME, NO_ROOM + " on every node")
        observe = getattr(self.policy, "observe", None)
        if observe is not None:
            observe(cycle.pod.key, demand)
        return status

    @staticmethod
    def _room_anywhere(cycle: Cycle, fit: BoolArray, count: int) -> bool:
        """A necessary condition for fitting: some node has the GPUs and the CPU and memory."""
        nodes = cycle.state.nodes
        room = fit.sum(axis=1) >= count
        for resource in (CPU, MEMORY):
            wanted = cycle.pod.requests.get(resource, 0)
            if wanted:
                room &= nodes.free(resource) >= wanted
        return bool(room.any())

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        rejections = self.dra.filter_mask(cycle, candidates)
        placement = self._placement(cycle)
        if placement is None:
            return rejections
        view = placement.view
        view.allowed = allowed_mask(cycle, view.fit.shape)
        view._usable = None
        if not placement.demand.exact:
            return rejections
        for rejection in rejections:
            candidates = candidates & ~rejection.nodes
        count = placement.demand.count
        short = candidates & (view.fit.sum(axis=1) < count)
        if short.any():
            rejections.append(Rejection(NO_ROOM, short, Code.UNSCHEDULABLE))
        if view.allowed is not None:
            closed = candidates & ~short & (view.usable.sum(axis=1) < count)
            if closed.any():
                rejections.append(Rejection(OTHER_DOMAIN, closed, Code.UNSCHEDULABLE))
        return rejections

    def needs_node_filter(self, cycle: Cycle) -> bool:
        placement = self._placement(cycle)
        if placement is not None and placement.demand.exact:
            return False
        return self.dra.needs_node_filter(cycle)

    def filter_node(self, cycle: Cycle, index: int) -> Status:
        return self.dra.filter_node(cycle, index)

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        placement = self._placement(cycle)
        if self.policy is None or placement is None:
            return self.dra.score(cycle, nodes)
        scores = self.policy.node_scores(self.context(cycle), placement.view, nodes)
        if self.tie_break == RANDOM:
            # Below the gap between two integer scores, so only ties are reordered; float
            # scores get a nudge too small to matter except between equals.
            scale = 0.5 if self.policy.integer_scores else 1e-9
            scores = scores + self.rng.random(nodes.size) * scale
        elif self.tie_break == BY_NAME:
            # Node order (`nodes` ascend by index, i.e. name): a nudge far below any gap between
            # the profile's summed scores, so only an exact tie of the total is decided by it.
            scores = scores + (1.0 - np.arange(nodes.size, dtype=np.float64) / max(nodes.size, 1)) * 1e-6
        result: FloatArray = scores
        return result

    def reserve(self, cycle: Cycle, index: int) -> Status:
        self.choice.current = (cycle, index)
        try:
            return self.dra.reserve(cycle, index)
        finally:
            self.choice.current = None
