"""Default preemption: the node and the fewest, least important victims that make a pod fit.

Follows kube-scheduler's DefaultPreemption:

1. A pod with preemptionPolicy Never does not preempt.
2. Candidate nodes are those the pod failed on for resolvable reasons
   (resources, devices), not for labels, taints or pinned claims. They are
   tried from an offset (kube-scheduler's is random; allot's comes from the
   pod's seeded tie-break key) until enough candidates are found: 10 % of
   those nodes and at least 100, one of them violating no budget.
3. On each candidate, in a transaction: remove every lower-priority pod
   (their claims are deallocated when no one else reserves them); if the pod
   still does not fit, the node is no candidate. Otherwise put victims back,
   most important first (higher priority, then earlier start; budget-violating
   ones before the others), keeping each one that the pod can live with.
4. Among candidates pick, in kube-scheduler's order (pickOneNodeForPreemption):
   fewest PodDisruptionBudget violations; lowest highest victim priority;
   lowest sum of victim priorities, each counted as priority + 2^31; fewest
   victims; the node whose highest-priority victims started latest, judged
   by the earliest of them. What is still tied goes to the lowest tie-break
   key of (seed, pod, node) (kube-scheduler: the first it met).

Start times are `status.startTime`; a pod without one (bound here, never
started on a kubelet) counts as started after all of those, in the order
allot bound them (kube-scheduler takes "now" for it).

A victim that belongs to a gang takes its whole gang with it (a gang is
never left partly running), and the candidate is ranked with all of them.
Only the chosen node's victims are evicted; everything tried elsewhere is
rolled back. Unlike kube-scheduler (whose DRA plugin reports device
shortage as unresolvable), nodes short of devices are candidates too, and
a victim's devices count as freed. With `preemptForDevices: false`
(DynamicResources' argument) both are as in kube-scheduler v1.36: device
shortage is unresolvable, and in the dry run the victims leave their node
but their claims stay allocated, so no victim is taken for its devices.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.resource import AllocationResult
from allot.model.timestamps import parse_timestamp
from allot.scheduling.disruption import allowances, counts_against
from allot.scheduling.gang import gangs, is_gang_member
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.status import Code, Status

PREEMPTION = "preemption"
# What DynamicResources' post-filter says (it runs before preemption) when the pod has no claim, and
# when it has some but none to deallocate.
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
STILL_NOT_SCHEDULABLE = "still not schedulable"
# DynamicResources' post-filter when its pre-filter never ran (an earlier pre-filter rejected the
# pod as unresolvable): it finds no cycle state and fails with the state's error, and
# kube-scheduler then runs no other post-filter (no preemption).
NO_CLAIMS_STATE = "not found"
# kube-scheduler's words for nodes where preemption cannot help, and nodes with nothing to preempt.
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
# kube-scheduler lifts every priority to >= 0 before summing (math.MaxInt32 + 1).
PRIORITY_OFFSET = 2**31

StartOrder = tuple[float, int]
RankKey = tuple[int, int, int, int, float, int, int]


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[str, ...]
    violations: int
    # Lower is better: the criteria of the module docs, in order, then the tie-break key.
    key: RankKey


@dataclass(frozen=True, slots=True)
class Attempt:
    """A preemption attempt: the chosen candidate, or why there is none (kube-scheduler's message)."""

    candidate: Candidate | None
    message: str


def start_order(info: PodInfo) -> StartOrder:
    """When the pod started, comparable: `status.startTime`, else after those, in bind order."""
    started = parse_timestamp(info.pod.status.start_time)
    if started is not None:
        return (started, 0)
    return (math.inf, info.started)


def _importance(info: PodInfo) -> tuple[int, float, int]:
    # More important first: higher priority, then started earlier (kube-scheduler's MoreImportantPod).
    return (-info.priority, *start_order(info))


def rank_key(victims: list[PodInfo], violations: int, tie: int) -> RankKey:
    """pickOneNodeForPreemption's criteria as one ascending key (see the module docs)."""
    top = max(v.priority for v in victims)
    earliest_top = min(start_order(v) for v in victims if v.priority == top)
    total = sum(v.priority + PRIORITY_OFFSET for v in victims)
    # Latest start wins: negate both parts of the start order.
    return (violations, top, total, len(victims), -earliest_top[0], -earliest_top[1], tie)


class Preemptor:
    """Finds preemption victims for pods the scheduler could not place."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.state: ClusterState = scheduler.state

    def _fits_on(self, pod_key: str, index: int) -> bool:
        return self._failure_on(pod_key, index) is None

    def _failure_on(self, pod_key: str, index: int) -> Status | None:
        """Why the pod does not fit on node `index` as things are now; None when it fits."""
        mask = np.zeros(self.state.nodes.size, dtype=np.bool_)
        mask[index] = True
        outcome = self.scheduler.place(pod_key, allowed=mask)
        if isinstance(outcome, Placement):
            return None
        diagnosis = outcome.diagnosis
        if diagnosis.pre_filter is not None:
            return diagnosis.pre_filter
        name = self.state.nodes.infos[index].name
        return diagnosis.node_statuses.get(name, Status(Code.UNSCHEDULABLE, (NOT_HELPFUL,)))

    def _captured(self, info: PodInfo) -> dict[str, AllocationResult]:
        claims = self.state.claims
        return {
            key: claims[key].status.allocation  # type: ignore[misc]
            for _, key in info.claims
            if key in claims and claims[key].status.allocation is not None
        }

    def _restore(self, info: PodInfo, index: int, captured: Mapping[str, AllocationResult]) -> None:
        claims = self.state.claims
        missing = {k: a for k, a in captured.items() if k in claims and claims[k].status.allocation is None}
        self.state.bind(info.key, self.state.nodes.infos[index].name, missing)

    def _victims_on(
        self,
        pod: PodInfo,
        index: int,
        budgets: dict[str, int],
        gang_of: Callable[[], Mapping[str, tuple[str, ...]]],
    ) -> Candidate | tuple[str, ...]:
        """The candidate on node `index`, or the reasons it is none (as kube-scheduler reports them)."""
        state = self.state
        lower = sorted(
            (p for p in state.pods_on(index) if p.priority < pod.priority),
            key=lambda p: (*_importance(p), p.key),
        )
        if not lower:
            return (NO_VICTIMS,)
        with state.journal.transaction():
            captured = {p.key: self._captured(p) for p in lower}
            # Without device preemption (kube-scheduler's view) the victims leave the node but keep
            # their devices.
            keep_claims = not self.scheduler.preemption_frees_devices(pod.key)
            for victim in lower:
                state.unbind(victim.key, keep_claims=keep_claims)
            failure = self._failure_on(pod.key, index)
            if failure is not None:
                return failure.reasons or (NOT_HELPFUL,)
            remaining = dict(budgets)
            violating, safe = [], []
            for victim in lower:
                hit = [b.key for b in state.disruption_budgets if counts_against(b, victim)]
                if any(remaining.get(k, 0) <= 0 for k in hit):
                    violating.append(victim)
                else:
                    safe.append(victim)
                for k in hit:
                    remaining[k] = remaining.get(k, 0) - 1
            victims: list[PodInfo] = []
            violations = 0
            for victim, violates in [(v, True) for v in violating] + [(v, False) for v in safe]:
                with state.journal.transaction() as attempt:
                    self._restore(victim, index, captured[victim.key])
                    if self._fits_on(pod.key, index):
                        attempt.commit()
                        continue
                victims.append(victim)
                violations += int(violates)
        if not victims:
            return (NO_VICTIMS,)
        expanded = {v.key for v in victims}
        for victim in victims:
            if is_gang_member(victim):
                expanded.update(k for k in gang_of().get(victim.key, ()) if state.pods[k].bound)
        victims = [state.pods[k] for k in sorted(expanded)]
        node = state.nodes.infos[index].name
        tie = int(self.scheduler.tie_keys(pod.key, np.array([index], dtype=np.int64))[0])
        key = rank_key(victims, violations, tie)
        return Candidate(node, tuple(sorted(v.key for v in victims)), violations, key)

    def _dry_run_order(self, pod_key: str, nodes: list[int]) -> list[int]:
        """The candidate nodes in the order they are tried: name order, rotated by the pod's own offset."""
        ordered = sorted(nodes)
        offset = int(self.scheduler.tie_keys(pod_key, np.array(ordered[:1], dtype=np.int64))[0]) % len(
            ordered
        )
        return ordered[offset:] + ordered[:offset]

    def preempt(self, pod_key: str, failure: Unschedulable) -> Candidate | None:
        """The best preemption for a pod that fit nowhere, or None; changes nothing."""
        return self.attempt(pod_key, failure).candidate

    def attempt(self, pod_key: str, failure: Unschedulable) -> Attempt:
        """Like `preempt`; when there is no candidate, also kube-scheduler's account of why."""
        state = self.state
        pod = state.pods[pod_key]
        if pod.pod.spec.preemption_policy == "Never":
            return Attempt(None, f"{PREEMPTION}: not eligible due to preemptionPolicy=Never.")
        index_of = state.nodes.index
        diagnosis = failure.diagnosis
        statuses = diagnosis.node_statuses
        if isinstance(statuses, NodeStatuses):
            resolvable = statuses.indices_with(Code.UNSCHEDULABLE)
        else:
            resolvable = [
                index_of[name]
                for name, status in statuses.items()
                if status.code == Code.UNSCHEDULABLE and name in index_of
            ]
        # Per node tried, why it is no candidate; every other node: preemption would not help.
        reasons: dict[int, tuple[str, ...]] = {}
        if diagnosis.pre_filter is not None or not resolvable:
            return Attempt(None, _summary(diagnosis.total_nodes, reasons))
        lowest = state.lowest_bound_priority()
        if lowest is None or lowest >= pod.priority:
            # Nothing of lower priority runs anywhere: each node would say so when tried.
            return Attempt(None, _summary(diagnosis.total_nodes, dict.fromkeys(resolvable, (NO_VICTIMS,))))
        # kube-scheduler's calculateNumCandidates (the profile's DefaultPreemptionArgs), over the
        # nodes preemption could help on.
        profile = self.scheduler.profile_of(pod_key)
        percentage, absolute = (
            profile.preemption_candidates
            if profile is not None
            else (MIN_CANDIDATE_NODES_PERCENTAGE, MIN_CANDIDATE_NODES_ABSOLUTE)
        )
        limit = max(len(resolvable) * percentage // 100, absolute)
        budgets = allowances(state)
        gang_index: dict[str, tuple[str, ...]] | None = None

        def gang_of() -> Mapping[str, tuple[str, ...]]:
            # Built on first need: most victims belong to no gang, and the scan covers every bound pod.
            nonlocal gang_index
            if gang_index is None:
                bound = (p for p in state.pods.values() if p.bound)
                gang_index = {k: g.members for g in gangs(bound).values() for k in g.members}
            return gang_index

        best: Candidate | None = None
        found = without_violations = 0
        for index in self._dry_run_order(pod.key, resolvable):
            candidate = self._victims_on(pod, index, budgets, gang_of)
            if isinstance(candidate, tuple):
                reasons[index] = candidate
                continue
            found += 1
            without_violations += candidate.violations == 0
            if best is None or candidate.key < best.key:
                best = candidate
            if without_violations and found >= limit:
                break
        if best is not None:
            return Attempt(best, "")
        return Attempt(None, _summary(diagnosis.total_nodes, reasons))


def post_filter_message(dra: bool, has_claims: bool, preemption: str) -> str:
    """kube-scheduler's post-filter account: DynamicResources' (when its post-filter runs: `dra`)
    and then preemption's (when it ran), joined as its framework joins post-filter reasons.
    `has_claims`: DynamicResources' pre-filter took in claims for the pod (its own, or one for
    extended resources served by DRA); it has not when its pre-filter rejected the pod."""
    if not dra:
        return preemption
    note = STILL_NOT_SCHEDULABLE if has_claims else NO_CLAIMS_TO_DEALLOCATE
    return f"{note}, {preemption}" if preemption else f"{note}."


def _summary(total: int, reasons: Mapping[int, tuple[str, ...]]) -> str:
    """kube-scheduler's post-filter message, "preemption: 0/N nodes are available: ...", reasons sorted.

    `reasons` covers the nodes that were tried; preemption would not help on the others.
    """
    counts = Counter(reason for node_reasons in reasons.values() for reason in dict.fromkeys(node_reasons))
    if total > len(reasons):
        counts[NOT_HELPFUL] += total - len(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"{PREEMPTION}: 0/{total} nodes are available: {', '.join(parts)}."
