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

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from allot.cluster.state import ClusterState, PodInfo
from allot.model.resource import AllocationResult
from allot.scheduling.disruption import allowances, matches
from allot.scheduling.gang import gangs, is_gang_member
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.status import Code

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[str, ...]
    violations: int
    key: tuple[int, int, int, int, int, str]


def _importance(info: PodInfo) -> tuple[int, int]:
    # More important first: higher priority, then started earlier.
    return (-info.priority, info.started)


class Preemptor:
    """Finds preemption victims for pods the scheduler could not place."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.state: ClusterState = scheduler.state

    def _fits_on(self, pod_key: str, index: int) -> bool:
        mask = np.zeros(self.state.nodes.size, dtype=np.bool_)
        mask[index] = True
        return isinstance(self.scheduler.place(pod_key, allowed=mask), Placement)

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
    ) -> Candidate | None:
        state = self.state
        lower = sorted(
            (p for p in state.pods_on(index) if p.priority < pod.priority),
            key=lambda p: (*_importance(p), p.key),
        )
        if not lower:
            return None
        with state.journal.transaction():
            captured = {p.key: self._captured(p) for p in lower}
            for victim in lower:
                state.unbind(victim.key)
            if not self._fits_on(pod.key, index):
                return None
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
            return None
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
        state = self.state
        pod = state.pods[pod_key]
        if pod.pod.spec.preemption_policy == "Never":
            return None
        index_of = state.nodes.index
        resolvable = [
            index_of[name]
            for name, status in failure.diagnosis.node_statuses.items()
            if status.code == Code.UNSCHEDULABLE and name in index_of
        ]
        if failure.diagnosis.pre_filter is not None or not resolvable:
            return None
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
            if candidate is None:
                continue
            found += 1
            if best is None or candidate.key < best.key:
                best = candidate
            if found >= limit:
                break
        return best
