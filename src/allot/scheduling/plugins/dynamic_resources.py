"""DynamicResources: a pod's ResourceClaims must be allocatable on the node.

Pre-filter resolves the pod's claims: an allocated claim pins the pod to the
claim's node selector and must still have room in `reservedFor`; an
unallocated claim needs its device classes to exist. The node filter runs
the DRA allocator for the unallocated claims on one node at a time and keeps
the allocation it found; reserve hands the chosen node's allocation to the
cycle, and the scheduler writes it into the claims when it binds.

Score (Kubernetes 1.35+): nodes where the pod's `firstAvailable` requests
are satisfied by earlier alternatives score higher, with upstream's formula
and normalisation (`allot.scheduling.prioritized_list`), from the
allocation the node filter found there (upstream's first answer). With a
`scorer` (allot's allocation-choice hook) the node score is instead that
scorer's value of the node's best allocation, scaled 0-100.

Argument `alignment` (default `preferred`): on the chosen node, reserve lets
`allot.scheduling.topology.choice.AlignedChoice` pick the best-aligned
device set among the feasible ones (same PCIe root > same NUMA node >
apart); `none` keeps upstream's first-found allocation, the baseline.

Unlike kube-scheduler, a node whose devices are all taken is reported as
`UNSCHEDULABLE` (not unresolvable): preempting the pods holding the devices
can make room, and allot's preemption deallocates victims' claims. Argument
`preemptForDevices: false` reports it as kube-scheduler does (unresolvable,
so preemption never runs to free devices).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from allot.cluster.claims import EXTENDED_CLAIM_ENTRY, pod_uid
from allot.cluster.events import DEVICE_EVENTS, NODE_EVENTS, ClusterEventKind
from allot.dra import Allocation, AllocationError, Allocator, NoAllocation, Scorer
from allot.dra.nodes import selector_matches
from allot.dra.results import for_other_claims
from allot.model.core import NodeSelector, PodExtendedResourceClaimStatus
from allot.model.resource import MAX_RESERVED_FOR, ResourceClaim
from allot.scheduling.dra_index import DeviceIndex, ShapeIndex
from allot.scheduling.extended_resources import (
    extended_claim,
    requested,
    resource_classes,
)
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.prioritized_list import (
    MAX_NODE_SCORE,
    allocation_rank,
    claim_rank,
    has_alternatives,
    normalize,
)
from allot.scheduling.sharing.isolation import exclusion
from allot.scheduling.status import SUCCESS, Code, Status, error, unresolvable, unschedulable
from allot.scheduling.topology.choice import AlignedChoice, DeviceChooser

NAME = "DynamicResources"
# `alignment` argument: prefer topology-aligned device sets (allot) or take upstream's first found.
ALIGNMENT_PREFERRED = "preferred"
ALIGNMENT_NONE = "none"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"


@dataclass(slots=True)
class _PodClaims:
    """What pre-filter worked out for the pod, reused by the other extension points."""

    to_allocate: list[ResourceClaim] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    pinned: list[NodeSelector] = field(default_factory=list)
    outcomes: dict[int, Allocation] = field(default_factory=dict)
    # Free devices needed per indexed request shape (a necessary condition on every node).
    needs: list[tuple[ShapeIndex, int]] = field(default_factory=list)
    # The counts decide feasibility exactly: the allocator runs on the chosen node only.
    exact: bool = False
    # Identifies the claims' specs, for reusing verdicts across identical nodes.
    signature: bytes = b""
    scores: dict[int, float] = field(default_factory=dict)
    # Prioritized-list score: what allocated claims add on every node, and each node's raw total.
    base_rank: int = 0
    ranks: dict[int, int] = field(default_factory=dict)
    # Some claim to allocate has prioritized alternatives (then the node filter runs on every node).
    alternatives: bool = False
    # Extended resources DRA can serve: (container index, container, resource, count), and the class map.
    extended: list[tuple[int, str, str, int]] = field(default_factory=list)
    served: Mapping[str, str] = field(default_factory=dict)
    # The extended-resource claim per set of resources the node's device plugins lack.
    extended_claims: dict[frozenset[str], tuple[ResourceClaim, tuple[Any, ...]] | None] = field(
        default_factory=dict
    )


def _request_classes(claim: ResourceClaim) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for request in claim.spec.devices.requests:
        if request.exactly is not None:
            pairs.append((request.name, request.exactly.device_class_name))
        for sub in request.first_available:
            pairs.append((f"{request.name}/{sub.name}", sub.device_class_name))
    return pairs


class DynamicResources:
    name = NAME
    # Devices free up when a pod leaves; claims, slices and classes change what can be allocated.
    wake_on = NODE_EVENTS | DEVICE_EVENTS | {ClusterEventKind.POD_LEFT}

    def __init__(
        self,
        *,
        scorer: Scorer | None = None,
        step_budget: int = 100_000,
        chooser: DeviceChooser | None = None,
        preempt_for_devices: bool = True,
    ) -> None:
        self.scorer = scorer
        # False: kube-scheduler's verdict, a node short of devices is unresolvable (never preempted on);
        # preemption's dry run then also leaves the victims' devices allocated (Profile.preempts_for_devices).
        self.shortage = Code.UNSCHEDULABLE if preempt_for_devices else Code.UNRESOLVABLE
        self.step_budget = step_budget
        # Picks the devices on the node the pod goes to (topology alignment); filtering and
        # node scores do not use it, so it costs one call per placed pod.
        self.chooser = chooser
        self._allocators: dict[int, Allocator] = {}
        self._indexes: dict[int, DeviceIndex] = {}
        # (claims, node hardware, used devices) -> (feasible, score, prioritized rank); see NodeLayout.
        self._verdicts: dict[tuple[bytes, bytes, object], tuple[Status, float, int]] = {}
        # (node name, the problem as in _verdicts) -> the chooser's allocation there.
        self._choices: dict[tuple[str, tuple[bytes, bytes, object]], Allocation] = {}
        self._served: tuple[object, Mapping[str, str]] | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> DynamicResources:
        budget = args.get("stepBudget", 100_000)
        if not isinstance(budget, int) or budget <= 0:
            raise ValueError("DynamicResources.stepBudget: expected a positive integer")
        alignment = args.get("alignment", ALIGNMENT_PREFERRED)
        if alignment not in (ALIGNMENT_PREFERRED, ALIGNMENT_NONE):
            raise ValueError(
                f"DynamicResources.alignment: expected {ALIGNMENT_PREFERRED} or {ALIGNMENT_NONE}, got {alignment!r}"
            )
        chooser = AlignedChoice() if alignment == ALIGNMENT_PREFERRED else None
        preempt = args.get("preemptForDevices", True)
        if not isinstance(preempt, bool):
            raise ValueError("DynamicResources.preemptForDevices: expected true or false")
        return cls(step_budget=budget, chooser=chooser, preempt_for_devices=preempt)

    def allocator(self, cycle: Cycle) -> Allocator:
        state = cycle.state
        allocator = self._allocators.get(id(state))
        if (
            allocator is None
            or allocator.slices is not state.slices
            or allocator.classes is not state.classes
        ):
            allocator = Allocator(
                state.classes, state.slices, features=state.features, step_budget=self.step_budget
            )
            self._allocators = {id(state): allocator}
        return allocator

    def index(self, cycle: Cycle) -> DeviceIndex:
        state = cycle.state
        allocator = self.allocator(cycle)
        index = self._indexes.get(id(state))
        if index is None or index.allocator is not allocator or index.state is not state:
            for stale in self._indexes.values():
                stale.detach()
            index = DeviceIndex(state, allocator)
            self._indexes = {id(state): index}
            # New slices or classes: a kept answer may no longer be the allocator's.
            self._verdicts.clear()
            self._choices.clear()
        return index

    def _plan_counts(self, cycle: Cycle, data: _PodClaims) -> None:
        """Which free-device counts every node must have, and whether they are the whole story."""
        index = self.index(cycle)
        needs: dict[int, tuple[ShapeIndex, int]] = {}
        exact = True
        for claim in data.to_allocate:
            devices = claim.spec.devices
            if devices.constraints:
                exact = False
            for request in devices.requests:
                exactly = request.exactly
                if exactly is None or exactly.allocation_mode != "ExactCount" or exactly.count is None:
                    exact = False
                    continue
                if exactly.admin_access or (exactly.capacity is not None and exactly.capacity.requests):
                    exact = False
                    continue
                selectors = tuple(s.cel.expression if s.cel is not None else "" for s in exactly.selectors)
                shape = None if "" in selectors else index.shape(exactly.device_class_name, selectors)
                if shape is None:
                    exact = False
                    continue
                exact = exact and shape.exact
                _, count = needs.get(id(shape), (shape, 0))
                needs[id(shape)] = (shape, count + exactly.count)
        data.needs = list(needs.values())
        data.exact = exact and len(needs) == 1

    def _data(self, cycle: Cycle) -> _PodClaims:
        data = cycle.data.get(NAME)
        assert isinstance(data, _PodClaims)
        return data

    def pre_filter(self, cycle: Cycle) -> Status:
        info = cycle.pod
        data = _PodClaims()
        cycle.data[NAME] = data
        if info.missing:
            return unresolvable(NAME, *info.missing)
        uid = pod_uid(info.pod)
        seen: set[str] = set()
        for _, key in info.claims:
            if key in seen:
                continue
            seen.add(key)
            claim = cycle.state.claims[key]
            allocation = claim.status.allocation
            if allocation is not None:
                reserved = claim.status.reserved_for
                if len(reserved) >= MAX_RESERVED_FOR and all(r.uid != uid for r in reserved):
                    return unschedulable(NAME, IN_USE)
                if allocation.node_selector is not None:
                    data.pinned.append(allocation.node_selector)
                data.base_rank += claim_rank(claim, allocation)
                continue
            for request, class_name in _request_classes(claim):
                if class_name and class_name not in cycle.state.classes:
                    return unresolvable(NAME, f"request {request}: device class {class_name} does not exist")
            data.to_allocate.append(claim)
            data.keys.append(key)
        served = self._served_resources(cycle)
        data.extended = requested(info.pod, served) if served else []
        data.served = served
        if data.to_allocate:
            data.alternatives = has_alternatives(data.to_allocate)
            self._plan_counts(cycle, data)
            data.signature = msgspec.msgpack.encode([c.spec for c in data.to_allocate], enc_hook=str)
        return SUCCESS

    def _served_resources(self, cycle: Cycle) -> Mapping[str, str]:
        classes = cycle.state.classes
        if self._served is None or self._served[0] is not classes:
            self._served = (classes, resource_classes(classes.values()))
        return self._served[1]

    def _extended_for(
        self, cycle: Cycle, data: _PodClaims, index: int
    ) -> tuple[ResourceClaim, tuple[Any, ...]] | None:
        """The extended-resource claim this node needs: for the resources its device plugins do not offer."""
        if not data.extended:
            return None
        table = cycle.state.nodes
        missing = frozenset(
            r
            for _, _, r, _ in data.extended
            if r not in table.allocatable or table.allocatable[r][index] == 0
        )
        if missing not in data.extended_claims:
            data.extended_claims[missing] = extended_claim(cycle.pod.pod, data.extended, data.served, missing)
        return data.extended_claims[missing]

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        data = self._data(cycle)
        rejections: list[Rejection] = []
        if data.needs:
            short = np.zeros_like(candidates)
            for shape, count in data.needs:
                short |= shape.free < count
            short &= candidates
            if short.any():
                rejections.append(Rejection(CANNOT_ALLOCATE, short, self.shortage))
                candidates = candidates & ~short
        if not data.pinned:
            return rejections
        rejected = np.zeros_like(candidates)
        for index in np.flatnonzero(candidates):
            node = cycle.state.nodes.infos[int(index)].node
            for selector in data.pinned:
                try:
                    ok = selector_matches(selector, node)
                except AllocationError:
                    ok = False
                if not ok:
                    rejected[index] = True
                    break
        if rejected.any():
            rejections.append(Rejection(NOT_AVAILABLE, rejected, Code.UNRESOLVABLE))
        return rejections

    def needs_node_filter(self, cycle: Cycle) -> bool:
        data = self._data(cycle)
        if data.extended:
            return True
        return bool(data.to_allocate) and not (data.exact and self.scorer is None)

    def filter_node(self, cycle: Cycle, index: int) -> Status:
        data = self._data(cycle)
        extended = self._extended_for(cycle, data, index)
        if not data.to_allocate and extended is None:
            return SUCCESS
        verdict_key = self._problem(cycle, data, index, extended)
        if verdict_key is not None:
            verdict = self._verdicts.get(verdict_key)
            if verdict is not None:
                data.scores[index] = verdict[1]
                data.ranks[index] = verdict[2]
                return verdict[0]
        status, score = self._allocate(cycle, data, index)
        if verdict_key is not None and status.code is not Code.ERROR:
            if len(self._verdicts) > 100_000:
                self._verdicts.clear()
            self._verdicts[verdict_key] = (status, score, data.ranks.get(index, 0))
        return status

    def _problem(
        self,
        cycle: Cycle,
        data: _PodClaims,
        index: int,
        extended: tuple[ResourceClaim, tuple[Any, ...]] | None,
    ) -> tuple[bytes, bytes, object] | None:
        """What the allocator is asked on this node, as a key equal for every node and pod that poses
        it the same problem (None: not captured by a key). A node with GPUs closed to the pod's
        trust domain is always decided afresh."""
        device_index = self.index(cycle)
        layout = device_index.layout(index)
        if layout.signature is None:
            return None
        closed = exclusion(cycle)
        if closed is not None and closed.blocks(index):
            return None
        signature = data.signature
        if extended is not None:
            signature += msgspec.msgpack.encode(extended[0].spec, enc_hook=str)
        return signature, layout.signature, device_index.usage(layout)

    def _chosen(
        self,
        cycle: Cycle,
        data: _PodClaims,
        index: int,
        claims: list[ResourceClaim],
        extended: tuple[ResourceClaim, tuple[Any, ...]] | None,
    ) -> tuple[tuple[str, tuple[bytes, bytes, object]] | None, Allocation | None]:
        """The chooser's earlier answer to the same problem on the same node, given to these claims."""
        problem = self._problem(cycle, data, index, extended)
        if problem is None:
            return None, None
        key = (cycle.state.nodes.infos[index].name, problem)
        known = self._choices.get(key)
        if known is None:
            return key, None
        results = for_other_claims(known.results, claims, self.allocator(cycle).share_ids)
        return key, Allocation(results, known.steps, known.score, known.candidates)

    def _allocate(
        self, cycle: Cycle, data: _PodClaims, index: int, *, choose: bool = False
    ) -> tuple[Status, float]:
        node = cycle.state.nodes.infos[index].node
        claims = list(data.to_allocate)
        extended = self._extended_for(cycle, data, index)
        if extended is not None:
            claims.append(extended[0])
        allocator = self.allocator(cycle)
        allocated = cycle.state.allocated
        # GPUs another trust domain shares (GpuIsolation): treated as taken, so that the pod gets
        # a GPU open to it where the node has one, instead of one that reserve would refuse.
        excluded = exclusion(cycle)
        try:
            if choose and self.chooser is not None:
                # The chooser searches and compares many allocations: its answer is kept per
                # node and problem, and given to the next pod that poses the same one there.
                choice_key, known = self._chosen(cycle, data, index, claims, extended)
                if known is not None:
                    outcome: Allocation | NoAllocation = known
                else:
                    outcome = self.chooser(allocator, node, claims, allocated, exclude=excluded)
                    if choice_key is not None and isinstance(outcome, Allocation):
                        if len(self._choices) > 100_000:
                            self._choices.clear()
                        self._choices[choice_key] = outcome
            else:
                outcome = allocator.allocate(node, claims, allocated, scorer=self.scorer, exclude=excluded)
        except AllocationError as failure:
            return error(NAME, failure.message), 0.0
        if isinstance(outcome, NoAllocation):
            if outcome.node_error:
                return unschedulable(NAME, outcome.node_error), 0.0
            if outcome.budget_exhausted:
                return unschedulable(NAME, "timed out trying to allocate devices"), 0.0
            return Status(self.shortage, (CANNOT_ALLOCATE,), NAME), 0.0
        data.outcomes[index] = outcome
        data.scores[index] = outcome.score or 0.0
        if not choose:
            new = outcome.results[: len(data.keys)]
            data.ranks[index] = data.base_rank + allocation_rank(data.to_allocate, new)
        return SUCCESS, data.scores[index]

    def reserve(self, cycle: Cycle, index: int) -> Status:
        data = self._data(cycle)
        extended = self._extended_for(cycle, data, index)
        if not data.to_allocate and extended is None:
            return SUCCESS
        outcome = data.outcomes.get(index) if self.chooser is None else None
        if outcome is None:
            status, _ = self._allocate(cycle, data, index, choose=True)
            if not status.ok:
                return status
            outcome = data.outcomes[index]
        for key, result in zip(data.keys, outcome.results[: len(data.keys)], strict=True):
            cycle.allocations[key] = result
        if extended is not None:
            claim, mappings = extended
            cycle.new_claims[EXTENDED_CLAIM_ENTRY] = claim
            cycle.allocations[claim.key] = outcome.results[-1]
            cycle.served_by_claims = frozenset(m.resource_name for m in mappings)
            cycle.extended = PodExtendedResourceClaimStatus(
                request_mappings=mappings, resource_claim_name=claim.name
            )
        return SUCCESS

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        data = self._data(cycle)
        if self.scorer is None:
            if not data.to_allocate or not (data.base_rank or data.alternatives):
                return np.zeros(nodes.size)
            if not data.alternatives:
                # Only claims allocated before took alternatives: the same on every node.
                return np.full(nodes.size, float(MAX_NODE_SCORE))
            # A wrapper that decided feasibility from counts (GpuPlacement) may skip the filter.
            return normalize([data.ranks.get(int(i), data.base_rank) for i in nodes])
        if not data.outcomes:
            return np.zeros(nodes.size)
        raw = np.array(
            [data.outcomes[int(i)].score or 0.0 if int(i) in data.outcomes else 0.0 for i in nodes],
            dtype=np.float64,
        )
        low, high = raw.min(), raw.max()
        if high <= low:
            return np.zeros(nodes.size)
        result: FloatArray = np.floor((raw - low) * 100 / (high - low))
        return result
