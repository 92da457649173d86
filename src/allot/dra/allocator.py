"""The public entry point: `Allocator.allocate(node, claims, allocated)`.

One `Allocator` serves many calls: it holds the device classes, the
`SliceIndex` (whose per-node pools and candidate lists stay cached), the
feature set and the CEL environment. A call on one node:

1. gathers the node's pools (cached per node);
2. validates and prepares every claim (errors here are fatal for all nodes
   and raise `AllocationError` with upstream's text);
3. searches depth-first for the first allocation of all claims together
   (or, with a scorer, for up to `max_solutions` allocations and keeps the
   best among those that take the same `firstAvailable` alternatives as
   the first);
4. builds `AllocationResult`s in upstream form, or a `Diagnosis`.

"Does not fit on this node" is not an error: it is a `NoAllocation`, whose
`node_error` carries upstream's per-node failure text when there is one
("invalid resource pools were encountered").
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from allot.cel import SelectorEnvironment, default_environment
from allot.dra.diagnosis import Diagnosis, diagnose
from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.pools import NodePools, SliceIndex
from allot.dra.requests import ClaimPlan, ClaimSpec, Preparer, claim_spec, still_valid
from allot.dra.results import ShareIdFactory, build_results, default_share_id
from allot.dra.scoring import Candidate, PickedDevice, Scorer
from allot.dra.search import BudgetExhausted, Search, Solution
from allot.dra.state import AllocatedState
from allot.model.core import Node
from allot.model.quantity import Quantity
from allot.model.resource import AllocationResult, DeviceClass, ResourceClaim

INVALID_POOLS = "invalid resource pools were encountered"
_SPEC_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Allocation:
    """Success: one result per claim, in input order."""

    results: tuple[AllocationResult, ...]
    steps: int
    score: float | None = None
    candidates: int = 1  # feasible allocations examined (1 without a scorer)


@dataclass(frozen=True, slots=True)
class NoAllocation:
    """No allocation on this node; `node_error` is upstream's per-node failure text, if any."""

    diagnosis: Diagnosis
    steps: int
    budget_exhausted: bool = False
    node_error: str | None = None

    @property
    def reason(self) -> str:
        return self.node_error or self.diagnosis.summary


_WITHOUT_CONSUMABLE_CAPACITY: list[SelectorEnvironment] = []


def _default_environment(features: Features) -> SelectorEnvironment:
    """The shared environment; without ConsumableCapacity `device.allowMultipleAllocations` is undeclared."""
    if features.consumable_capacity:
        return default_environment()
    if not _WITHOUT_CONSUMABLE_CAPACITY:
        _WITHOUT_CONSUMABLE_CAPACITY.append(SelectorEnvironment(consumable_capacity=False))
    return _WITHOUT_CONSUMABLE_CAPACITY[0]


class Allocator:
    """Allocates devices for claims on one node at a time, with upstream 1.35 semantics."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: SliceIndex,
        *,
        features: Features | None = None,
        selectors: SelectorEnvironment | None = None,
        step_budget: int = 100_000,
        symmetry_pruning: bool = True,
        max_solutions: int = 64,
        share_ids: ShareIdFactory = default_share_id,
    ) -> None:
        self.classes = classes
        self.slices = slices
        self.features = features if features is not None else Features.all()
        self.selectors = selectors if selectors is not None else _default_environment(self.features)
        self.step_budget = step_budget
        self.symmetry_pruning = symmetry_pruning
        self.max_solutions = max_solutions
        self.share_ids = share_ids
        # Validated claims by object identity: the scheduler asks for the same claims
        # on many nodes. Claims are immutable records, so identity implies content.
        self._specs: dict[int, ClaimSpec] = {}

    def _claim_specs(self, claims: Sequence[ResourceClaim]) -> list[ClaimSpec]:
        specs: list[ClaimSpec] = []
        cache = self._specs
        for claim in claims:
            spec = cache.get(id(claim))
            if spec is None or spec.claim is not claim or not still_valid(spec, self.classes):
                if len(cache) >= _SPEC_CACHE_SIZE:
                    cache.clear()
                spec = cache[id(claim)] = claim_spec(claim, self.classes, self.features)
            specs.append(spec)
        return specs

    def pools(self, node: Node | None) -> NodePools:
        """The pools `node` sees (cached)."""
        return self.slices.gather(node, self.features)

    def allocate(
        self,
        node: Node | None,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        *,
        scorer: Scorer | None = None,
        exclude: Container[DeviceId] | None = None,
    ) -> Allocation | NoAllocation:
        """Allocate all `claims` together on `node`; raises AllocationError for bad input.

        `exclude` (a policy's device filter, e.g. GPU-sharing isolation) lists
        devices the search must treat as held by someone else, exactly as if
        another claim had them exclusively. It only ever removes options, so
        an allocation found with it is one upstream could have found too.
        """
        features = self.features
        pools = self.slices.gather(node, features)
        plans = Preparer(features, pools, self.selectors, allocated).prepare(self._claim_specs(claims))
        search = Search(
            plans,
            allocated,
            features,
            budget=self.step_budget,
            pruning=self.symmetry_pruning,
            max_solutions=self.max_solutions if scorer is not None else 1,
            excluded=exclude,
        )
        exhausted = False
        try:
            search.run()
        except BudgetExhausted:
            exhausted = True
        if search.solutions:
            solution, score = self._choose(plans, search.solutions, scorer)
            results = build_results(plans, solution, node, features, self.share_ids)
            return Allocation(
                results=results, steps=search.steps, score=score, candidates=len(search.solutions)
            )
        diagnosis = diagnose(
            plans,
            pools,
            allocated,
            features,
            steps=search.steps,
            budget_exhausted=exhausted,
            budget=self.step_budget,
        )
        node_error = INVALID_POOLS if not exhausted and pools.any_invalid else None
        return NoAllocation(
            diagnosis=diagnosis, steps=search.steps, budget_exhausted=exhausted, node_error=node_error
        )

    @staticmethod
    def _choose(
        plans: list[ClaimPlan], solutions: list[Solution], scorer: Scorer | None
    ) -> tuple[Solution, float | None]:
        if scorer is None:
            return solutions[0], None
        best, best_score = solutions[0], scorer(candidate(plans, solutions[0], 0))
        for index, solution in enumerate(solutions[1:], start=1):
            if solution.chosen != solutions[0].chosen:
                # A scorer chooses devices, never other prioritized alternatives than upstream's
                # first answer took: the user's order of preference stands.
                continue
            score = scorer(candidate(plans, solution, index))
            if score > best_score:  # ties keep the earlier one
                best, best_score = solution, score
        return best, best_score


def candidate(plans: list[ClaimPlan], solution: Solution, index: int) -> Candidate:
    """The scorer's view of one solution."""
    claims: list[tuple[PickedDevice, ...]] = []
    for claim_index, (plan, picks) in enumerate(zip(plans, solution.picks, strict=True)):
        picked: list[PickedDevice] = []
        for pick in picks:
            info = pick.device.info
            consumed: dict[str, Quantity] | None = None
            if pick.amounts:
                consumed = {
                    name: Quantity(amount, info.device.capacity[name].value.format)
                    for name, amount in zip(info.capacities.names, pick.amounts, strict=True)
                }
            picked.append(
                PickedDevice(
                    claim_index=claim_index,
                    claim=plan.claim,
                    request=pick.request.full_name,
                    device_id=info.id,
                    device=info.device,
                    slice=info.slice,
                    shared=pick.device.shared,
                    admin_access=pick.request.admin,
                    consumed_capacity=consumed,
                )
            )
        claims.append(tuple(picked))
    return Candidate(index=index, claims=tuple(claims))
