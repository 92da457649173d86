"""Flavor assignment: which ResourceFlavor each pod set gets, and how it would fit.

Kueue's flavorassigner, restated. For every pod set and every requested
resource, the resource's group in the ClusterQueue is found (all resources of
one group get the same flavor) and its flavors are tried in order:

1. A flavor whose taints the pod set does not tolerate, or whose node labels
   its node selection rules out, is skipped with a reason.
2. Each requested resource of the group is checked against quota
   (`fits_resource_quota`): more than the ClusterQueue could ever get ⇒ NoFit;
   within `available` ⇒ Fit, at the borrowing level of the lowest cohort
   subtree whose quota covers it (0: within nominal); otherwise preemption
   may help if the request is within nominal, or reclaiming has a
   hierarchical advantage, or the queue may preempt while borrowing — then
   the preemption oracle (the real preemption search, run as a what-if) says
   whether targets exist (Preempt / Reclaim / no candidates).
3. `flavorFungibility` decides whether to stop at this flavor
   (`should_try_next`); otherwise the best flavor seen so far wins
   (`is_preferred`: noFit < no candidates < preempt < reclaim < fit, with
   borrowing level as the first or second key per `preference`).

Earlier pod sets' assignments count against later ones (a pod set may borrow
in one flavor per resource). The result's mode is the worst of its pod sets:
NoFit < Preempt < Fit. Messages are Kueue's, e.g. "insufficient unused quota
for nvidia.com/gpu in flavor h100, 4 more needed".
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from allot.admission.flavor_match import selector_matches, taint_string, untolerated_taint
from allot.admission.quota import (
    NEVER,
    PREEMPTION_OVER_BORROWING,
    TRY_NEXT_FLAVOR,
    FungibilityPolicy,
    QueuePolicy,
    ResourceGroupPolicy,
)
from allot.admission.resources import PODS, FlavorResource, Usage, format_amount
from allot.admission.tree import Node, available, lowest_subtree_that_fits, potential_available
from allot.admission.workload import PodSet, Workload
from allot.model.core import Taint, Toleration
from allot.model.kueue import ResourceFlavor


class Mode(enum.IntEnum):
    """How an assignment fits, worst first (Kueue's FlavorAssignmentMode)."""

    NO_FIT = 0
    """Not enough quota even if everything else were preempted, or not allowed to preempt."""
    PREEMPT = 1
    """Fits only after preempting (or reclaiming) admitted workloads."""
    FIT = 2
    """Fits in unused quota now, possibly by borrowing."""


class Possibility(enum.Enum):
    """What the preemption oracle found for one (flavor, resource)."""

    NO_CANDIDATES = "NoCandidates"
    PREEMPT = "Preempt"
    RECLAIM = "Reclaim"


Oracle = Callable[[FlavorResource, int], tuple[Possibility, int]]
"""(flavor resource, quantity) → (possibility, borrowing level after the preemptions)."""


class _Fit(enum.IntEnum):
    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def mode(self) -> Mode:
        if self is _Fit.NO_FIT:
            return Mode.NO_FIT
        if self is _Fit.FIT:
            return Mode.FIT
        return Mode.PREEMPT


_FROM_POSSIBILITY = {
    Possibility.NO_CANDIDATES: _Fit.NO_CANDIDATES,
    Possibility.PREEMPT: _Fit.PREEMPT,
    Possibility.RECLAIM: _Fit.RECLAIM,
}


@dataclass(frozen=True, slots=True)
class _Granular:
    fit: _Fit
    level: int  # borrowing level: 0 = within the ClusterQueue's nominal quota


_WORST = _Granular(_Fit.NO_FIT, 1 << 62)
_BEST = _Granular(_Fit.FIT, 0)


def is_preferred(a: _Granular, b: _Granular, fungibility: FungibilityPolicy) -> bool:
    """Whether a is a better way to fit than b under the ClusterQueue's preference."""
    if a.fit is _Fit.NO_FIT:
        return False
    if b.fit is _Fit.NO_FIT:
        return True
    a_none, b_none = a.fit is _Fit.NO_CANDIDATES, b.fit is _Fit.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if fungibility.preference == PREEMPTION_OVER_BORROWING:
        if a.level != b.level:
            return a.level < b.level
        return a.fit > b.fit
    if a.fit != b.fit:
        return a.fit > b.fit
    return a.level < b.level


def should_try_next(mode: _Granular, fungibility: FungibilityPolicy) -> bool:
    if mode.fit in (_Fit.NO_FIT, _Fit.NO_CANDIDATES):
        return True
    if mode.fit in (_Fit.PREEMPT, _Fit.RECLAIM) and fungibility.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode.level != 0 and fungibility.when_can_borrow == TRY_NEXT_FLAVOR


@dataclass(frozen=True, slots=True)
class FlavorChoice:
    flavor: str
    mode: Mode
    borrow: int = 0


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    count: int
    flavors: Mapping[str, FlavorChoice]
    requests: Mapping[str, int]
    reasons: tuple[str, ...] = ()
    # Worked out once: the admission cycle asks an assignment's mode many times.
    mode: Mode = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.reasons:
            mode = Mode.FIT
        elif not self.flavors:
            mode = Mode.NO_FIT
        else:
            mode = min(choice.mode for choice in self.flavors.values())
        object.__setattr__(self, "mode", mode)

    def flavor_names(self) -> tuple[str, ...]:
        return tuple(sorted({choice.flavor for choice in self.flavors.values()}))


@dataclass(frozen=True, slots=True)
class Assignment:
    """The flavors of a workload in one ClusterQueue and the quota it would take."""

    cluster_queue: str
    pod_sets: tuple[PodSetAssignment, ...]
    usage: Mapping[FlavorResource, int] = field(default_factory=lambda: MappingProxyType({}))
    borrowing: int = 0
    reason: str = ""
    mode: Mode = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mode = Mode.NO_FIT if not self.pod_sets or self.reason else min(ps.mode for ps in self.pod_sets)
        object.__setattr__(self, "mode", mode)

    @property
    def borrows(self) -> bool:
        return self.borrowing > 0

    def needs_preemption(self) -> frozenset[FlavorResource]:
        """(flavor, resource) pairs assigned in Preempt mode."""
        return frozenset(
            (choice.flavor, resource)
            for ps in self.pod_sets
            for resource, choice in ps.flavors.items()
            if choice.mode is Mode.PREEMPT
        )

    def message(self) -> str:
        if self.reason:
            return self.reason
        parts = []
        for ps in self.pod_sets:
            if ps.mode is Mode.FIT:
                continue
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}")
        return "; ".join(parts)

    def pod_set(self, name: str) -> PodSetAssignment | None:
        for ps in self.pod_sets:
            if ps.name == name:
                return ps
        return None


def no_fit(cluster_queue: str, reason: str) -> Assignment:
    """An assignment that is NoFit for a reason outside quota (queue missing, invalid workload ...)."""
    return Assignment(cluster_queue, (), reason=reason)


@dataclass(frozen=True, slots=True)
class FlavorNodeFilter:
    """What placement must honour on the nodes of the assigned flavor(s).

    Nodes must carry every `node_labels` entry; the pod also tolerates
    `tolerations` (Kueue injects the flavor's tolerations into admitted pods);
    `node_taints` are the flavor's declared node taints, for information.
    """

    node_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


def flavor_node_filter(flavors: ResourceFlavor | Iterable[ResourceFlavor]) -> FlavorNodeFilter:
    """The node restriction of one flavor, or the union for a pod set's flavors."""
    items = [flavors] if isinstance(flavors, ResourceFlavor) else list(flavors)
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    tolerations: list[Toleration] = []
    for flavor in items:
        labels.update(flavor.spec.node_labels)
        taints.extend(t for t in flavor.spec.node_taints if t not in taints)
        tolerations.extend(t for t in flavor.spec.tolerations if t not in tolerations)
    return FlavorNodeFilter(MappingProxyType(labels), tuple(taints), tuple(tolerations))


class FlavorAssigner:
    """Assigns flavors for one workload in one ClusterQueue against the current tree."""

    def __init__(
        self,
        *,
        policy: QueuePolicy,
        node: Node,
        flavors: Mapping[str, ResourceFlavor],
        oracle: Oracle,
        fair_sharing: bool,
    ) -> None:
        self.policy = policy
        self.node = node
        self.flavors = flavors
        self.oracle = oracle
        self.fair_sharing = fair_sharing

    def assign(self, workload: Workload) -> Assignment:
        usage: Usage = {}
        borrowing = 0
        results: list[PodSetAssignment] = []
        covers_pods = self.policy.group_for(PODS) is not None
        for pod_set in workload.pod_sets:
            requests = pod_set.total()
            if covers_pods:
                requests[PODS] = pod_set.count
            chosen, reasons = self._assign_pod_set(pod_set, requests, usage)
            results.append(
                PodSetAssignment(
                    name=pod_set.name,
                    count=pod_set.count,
                    flavors=MappingProxyType(chosen),
                    requests=MappingProxyType(requests),
                    reasons=tuple(reasons),
                )
            )
            for resource, choice in chosen.items():
                fr = (choice.flavor, resource)
                usage[fr] = usage.get(fr, 0) + requests[resource]
                borrowing = max(borrowing, choice.borrow)
            if not chosen and requests:
                break
        return Assignment(self.policy.name, tuple(results), MappingProxyType(usage), borrowing)

    def _assign_pod_set(
        self, pod_set: PodSet, requests: Mapping[str, int], usage: Usage
    ) -> tuple[dict[str, FlavorChoice], list[str]]:
        chosen: dict[str, FlavorChoice] = {}
        reasons: list[str] = []
        for resource in sorted(requests):
            if not requests[resource] or resource in chosen:
                continue
            group = self.policy.group_for(resource)
            if group is None:
                return {}, [f"resource {resource} unavailable in ClusterQueue"]
            found, found_reasons = self._find_flavor(pod_set, group, requests, usage)
            if not found:
                return {}, found_reasons
            chosen.update(found)
            reasons.extend(found_reasons)
        return chosen, reasons

    def _flavor_mismatch(self, pod_set: PodSet, name: str) -> str | None:
        flavor = self.flavors.get(name)
        if flavor is None:
            return f"flavor {name} not found"
        spec = flavor.spec
        taint = untolerated_taint(spec.node_taints, (*pod_set.tolerations, *spec.tolerations))
        if taint is not None:
            return f"untolerated taint {taint_string(taint)} in flavor {name}"
        if not selector_matches(pod_set.node_selector, pod_set.required_affinity, spec.node_labels):
            return f"flavor {name} doesn't match node affinity"
        return None

    def _find_flavor(
        self,
        pod_set: PodSet,
        group: ResourceGroupPolicy,
        requests: Mapping[str, int],
        usage: Usage,
    ) -> tuple[dict[str, FlavorChoice], list[str]]:
        wanted = sorted(r for r in group.covered if requests.get(r))
        fungibility = self.policy.fungibility
        reasons: list[str] = []
        best: dict[str, FlavorChoice] | None = None
        best_mode = _WORST
        for name in group.flavors:
            mismatch = self._flavor_mismatch(pod_set, name)
            if mismatch is not None:
                reasons.append(mismatch)
                continue
            candidate: dict[str, FlavorChoice] = {}
            mode = _BEST
            for resource in wanted:
                fr = (name, resource)
                fit, borrow, why = self.fits_resource_quota(fr, usage.get(fr, 0), requests[resource])
                reasons.extend(why)
                this = _Granular(fit, borrow)
                if is_preferred(mode, this, fungibility):
                    mode = this
                if mode.fit is _Fit.NO_FIT:
                    break
                candidate[resource] = FlavorChoice(name, fit.mode, borrow)
            if not should_try_next(mode, fungibility):
                best, best_mode = candidate, mode
                break
            if is_preferred(mode, best_mode, fungibility):
                best, best_mode = candidate, mode
        if best is None:
            return {}, reasons
        if best_mode.fit is _Fit.FIT:
            return best, []
        return best, reasons

    def fits_resource_quota(
        self, fr: FlavorResource, assumed: int, request: int
    ) -> tuple[_Fit, int, list[str]]:
        """How `request` (on top of `assumed` from earlier pod sets) fits quota for `fr`."""
        node = self.node
        value = assumed + request
        free = max(0, available(node, fr))
        most = potential_available(node, fr)
        flavor, resource = fr
        if value > most:
            return (
                _Fit.NO_FIT,
                0,
                [
                    f"insufficient quota for {resource} in flavor {flavor}, previously considered "
                    f"podsets requests ({format_amount(resource, assumed)}) + current podset request "
                    f"({format_amount(resource, request)}) > maximum capacity ({format_amount(resource, most)})"
                ],
            )
        borrow, may_reclaim = lowest_subtree_that_fits(node, fr, value)
        if value <= free:
            return _Fit.FIT, borrow, []
        reason = (
            f"insufficient unused quota for {resource} in flavor {flavor}, "
            f"{format_amount(resource, value - free)} more needed"
        )
        if node.nominal.get(fr, 0) >= value or may_reclaim or self._can_preempt_while_borrowing():
            possibility, borrow_after = self.oracle(fr, value)
            return _FROM_POSSIBILITY[possibility], borrow_after, [reason]
        return _Fit.NO_FIT, borrow, [reason]

    def _can_preempt_while_borrowing(self) -> bool:
        preemption = self.policy.preemption
        if preemption.borrow_within_cohort != NEVER:
            return True
        return self.fair_sharing and preemption.reclaim_within_cohort != NEVER
