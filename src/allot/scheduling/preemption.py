"""Default preemption: the node and the fewest, least important victims that make a pod fit.

Follows kube-scheduler's DefaultPreemption:

1. A pod with preemptionPolicy Never does not preempt.
2. Candidate nodes are those the pod failed on for resolvable reasons
   (resources, devices), not for labels, taints or pinned claims.
3. On each candidate, in a transaction: remove every lower-priority pod
   (their claims are deallocated when no one else reserves them); if the pod
   still does not fit, the node is no candidate. Otherwise put victims back,
   most important first (budget-violating ones before the others), keeping
   each one that the pod can live with.
4. Among candidates pick, in order: fewest PodDisruptionBudget violations,
   lowest highest victim priority, lowest sum of victim priorities, fewest
   victims, most recently started highest-priority victim, node name.

A victim that belongs to a gang takes its whole gang with it (a gang is
never left partly running), and the candidate is ranked with all of them.
Only the chosen node's victims are evicted; everything tried elsewhere is
rolled back. Unlike kube-scheduler (whose DRA plugin reports device
shortage as unresolvable), nodes short of devices are candidates too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from allot.cluster.state import ClusterState, PodInfo
from allot.model.resource import AllocationResult
from allot.scheduling.disruption import allowances, matches
from allot.scheduling.gang import gangs, is_gang_member
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.status import Code, Status

PREEMPTION = "preemption"
# kube-scheduler's words for nodes where preemption cannot help, and nodes with nothing to preempt.
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[str, ...]
    violations: int
    key: tuple[int, int, int, int, int, str]


@dataclass(frozen=True, slots=True)
class Attempt:
    """A preemption attempt: the chosen candidate, or why there is none (kube-scheduler's message)."""

    candidate: Candidate | None
    message: str


def _importance(info: PodInfo) -> tuple[int, int]:
    # More important first: higher priority, then started earlier.
    return (-info.priority, info.started)


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
            for victim in lower:
                state.unbind(victim.key)
            failure = self._failure_on(pod.key, index)
            if failure is not None:
                return failure.reasons or (NOT_HELPFUL,)
            remaining = dict(budgets)
            violating, safe = [], []
            for victim in lower:
                hit = [b.key for b in state.disruption_budgets if matches(b, victim)]
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
        top = max(v.priority for v in victims)
        latest_top_start = max(v.started for v in victims if v.priority == top)
        node = state.nodes.infos[index].name
        key = (violations, top, sum(v.priority for v in victims), len(victims), -latest_top_start, node)
        return Candidate(node, tuple(sorted(v.key for v in victims)), violations, key)

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
        limit = max(len(index_of) * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE)
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
        found = 0
        for index in sorted(resolvable):
            candidate = self._victims_on(pod, index, budgets, gang_of)
            if isinstance(candidate, tuple):
                reasons[index] = candidate
                continue
            found += 1
            if best is None or candidate.key < best.key:
                best = candidate
            if found >= limit:
                break
        if best is not None:
            return Attempt(best, "")
        return Attempt(None, _summary(diagnosis.total_nodes, reasons))


def _summary(total: int, reasons: Mapping[int, tuple[str, ...]]) -> str:
    """kube-scheduler's post-filter message, "preemption: 0/N nodes are available: ...", reasons sorted.

    `reasons` covers the nodes that were tried; preemption would not help on the others.
    """
    counts = Counter(reason for node_reasons in reasons.values() for reason in dict.fromkeys(node_reasons))
    if total > len(reasons):
        counts[NOT_HELPFUL] += total - len(reasons)
    parts = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"{PREEMPTION}: 0/{total} nodes are available: {', '.join(parts)}."
