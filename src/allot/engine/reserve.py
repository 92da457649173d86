"""Reservations: a large job waiting for a node to drain holds it; small jobs backfill only the gap.

Without reservations a job that needs a whole node waits for ever where
smaller jobs keep taking every GPU that frees up (the big-job starvation
that Slurm's and YuniKorn's reservations address). With
`EnginePolicy.reservation` set (the simulator's `fair` policy,
`allot run --reservations`):

* At the end of each cycle, if no node is held, the first waiting unit (in
  the order of `allot.engine.waiting`: fair sharing first) that needs more
  whole GPUs on one node than any node has untouched gets a node: among
  the nodes its pods failed on for room (not for labels or taints) and
  that have enough GPUs, the one with the most untouched GPUs (fewest to
  drain), then fewest pods, then the pod's tie-break order.
* While the node is held, other pods may not be placed on it (the reason
  is `node(s) held for a larger job ...`), except to *backfill*: a pod
  whose runtime estimate (`kueue.x-k8s.io/max-exec-time-seconds`, Kueue's
  maximum execution time, which stops a workload that runs longer) ends
  before the node drains, i.e. before the latest end of the pods running
  on it, each bound time plus its estimate. If a pod on the node has no
  estimate, the drain time is unknown and nothing backfills: without
  estimates there is no backfill (a job that might run past the drain
  would delay the big one).
* The hold ends when the unit is placed (on that node or any other), or
  no longer waits, or its quota no longer fits; the node's end of hold is
  a node event, which wakes the work it kept away.

Reservations are chosen from the cluster and admission state alone, so
they are the same whether waiting work is retried every cycle or only at
events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allot.admission.flavors import Mode
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.decisions import Bound, Decision
from allot.engine.policy import EnginePolicy
from allot.engine.waiting import WaitingUnit, WaitingWork
from allot.model.kueue import MAX_EXEC_TIME_LABEL
from allot.scheduling.framework import BoolArray
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.packing.occupancy import GpuOccupancy
from allot.scheduling.scheduler import Unschedulable
from allot.scheduling.status import Code

# Units holding nodes at once: the first ones in fair-sharing order that need them.
MAX_HOLDS = 2


def runtime_estimate(info: PodInfo) -> float | None:
    """The pod's runtime estimate in seconds (its maximum execution time label), or None."""
    raw = info.pod.metadata.labels.get(MAX_EXEC_TIME_LABEL)
    if raw is None:
        return None
    try:
        value = float(int(raw))
    except ValueError:
        return None
    return value if value > 0 else None


@dataclass(slots=True)
class Hold:
    """Nodes held for a waiting unit, and when they drain (None: unknown, so no backfill)."""

    unit: str
    members: frozenset[str]
    nodes: tuple[int, ...]
    mask: BoolArray
    drains: float | None = None


class Reserving(WaitingWork):
    """The reservation phase of `Engine` and the holds the scheduler applies (a mixin)."""

    state: ClusterState
    policy: EnginePolicy
    _holds: list[Hold]
    _now: float
    _bound_at: dict[str, float]
    _reported: list[ClusterEvent]

    def _gpu_occupancy(self) -> GpuOccupancy:
        raise NotImplementedError

    def _apply_flavor(self, pod_key: str, node_filter: object) -> None:
        raise NotImplementedError

    # -- what the scheduler asks ----------------------------------------------------------------

    def held_from(self, pod_key: str) -> BoolArray | None:
        """The nodes `pod_key` may not use now: nodes held for other units, unless it backfills."""
        held: BoolArray | None = None
        info = self.state.pods.get(pod_key)
        estimate = runtime_estimate(info) if info is not None else None
        for hold in self._holds:
            if pod_key in hold.members:
                continue
            if estimate is not None and hold.drains is not None and self._now + estimate <= hold.drains:
                continue
            held = hold.mask.copy() if held is None else held | hold.mask
        return held

    # -- the phase ------------------------------------------------------------------------------

    def _reserve(self, now: float, decisions: list[Decision]) -> None:
        if not self.policy.reservation:
            return
        for decision in decisions:
            if isinstance(decision, Bound):
                self._bound_at[decision.pod] = now
        previous = {hold.unit: hold for hold in self._holds}
        size = self.state.nodes.size
        taken = np.zeros(size, dtype=np.bool_)
        holds: list[Hold] = []
        occupancy = self._gpu_occupancy()
        # Classes that got no hold in this cycle: units of the same class would get none either.
        refused: set[int] = set()
        for unit in self._waiting_units(refused.__contains__):
            if len(holds) >= MAX_HOLDS:
                break
            old = previous.get(unit.key)
            if old is not None and not (old.mask & taken).any() and self._quota_fits(unit):
                hold = old
            else:
                nodes = self._to_hold(unit, taken, occupancy)
                if nodes is None:
                    refused.add(unit.klass)
                    continue
                mask = np.zeros(size, dtype=np.bool_)
                mask[list(nodes)] = True
                hold = Hold(unit.key, frozenset(unit.members), nodes, mask)
            holds.append(hold)
            taken |= hold.mask
        released = sorted({n for h in self._holds for n in h.nodes} - {n for h in holds for n in h.nodes})
        for node in released:
            # The node is open again: what it kept away may fit now.
            self._reported.append(ClusterEvent(ClusterEventKind.NODE_CHANGED, node))
        for hold in holds:
            hold.drains = self._drain_time(hold.nodes)
        self._holds = holds

    def _quota_fits(self, unit: WaitingUnit) -> bool:
        return unit.assignment is None or unit.assignment.mode is Mode.FIT

    def _to_hold(
        self, unit: WaitingUnit, taken: BoolArray, occupancy: GpuOccupancy
    ) -> tuple[int, ...] | None:
        """The nodes to hold for a unit that needs more whole GPUs on its nodes than are untouched
        now (None when it does not, or no nodes could ever take it): see the module docstring."""
        pods = self.state.pods
        needs = sorted(((occupancy.whole_need(pods[m]), m) for m in unit.members), reverse=True)
        if not needs or not needs[0][0] or (len(needs) == 1 and needs[0][0] < 2):
            # A pod asking for one GPU takes the next one that frees up anywhere: nothing to hold.
            return None
        largest = needs[0][1]
        info = pods[largest]
        size = self.state.nodes.size
        room = {i: occupancy.untouched_for(info, i) for i in range(size) if not taken[i]}
        if _first_fit([n for n, _ in needs], room):
            return None  # it fits the room there is: it waits for something else
        candidates = self._drain_candidates(unit, largest, taken, occupancy)
        capacity = {i: occupancy.gpus(i) for i in candidates}
        chosen = _first_fit([n for n, _ in needs], capacity, order=candidates)
        return tuple(sorted(chosen)) if chosen else None

    def _drain_candidates(
        self, unit: WaitingUnit, member: str, taken: BoolArray, occupancy: GpuOccupancy
    ) -> list[int]:
        """Nodes the member failed on for room and could select GPUs on, most untouched GPUs first,
        then fewest pods, then the member's tie-break order."""
        scheduler = self.scheduler
        state = self.state
        with state.journal.transaction(), scheduler.kept_rotation():
            if unit.workload is not None and unit.assignment is not None and self.admission is not None:
                for pod_set in unit.workload.pod_sets:
                    node_filter = self.admission.node_filter(unit.assignment, pod_set.name)
                    for pod_key in sorted(pod_set.pods):
                        self._apply_flavor(pod_key, node_filter)
            outcome = scheduler.place(member)
        if not isinstance(outcome, Unschedulable):
            return []
        statuses = outcome.diagnosis.node_statuses
        if outcome.diagnosis.pre_filter is not None or not isinstance(statuses, NodeStatuses):
            return []
        info = state.pods[member]
        indices = [
            i
            for i in statuses.indices_with(Code.UNSCHEDULABLE)
            if not taken[i] and occupancy.selectable(info, i)
        ]
        if not indices:
            return []
        ties = scheduler.tie_keys(member, np.array(indices, dtype=np.int64)).tolist()
        ranked = sorted(
            zip(indices, ties, strict=True),
            key=lambda item: (-occupancy.untouched(item[0]), len(state.nodes.infos[item[0]].pods), item[1]),
        )
        return [index for index, _ in ranked]

    def _drain_time(self, nodes: tuple[int, ...]) -> float | None:
        """When every pod on the nodes will have ended by its estimate; None if one has none."""
        latest = self._now
        for node in nodes:
            for info in self.state.pods_on(node):
                estimate = runtime_estimate(info)
                bound = self._bound_at.get(info.key)
                if estimate is None or bound is None:
                    return None
                latest = max(latest, bound + estimate)
        return latest


def _first_fit(needs: list[int], room: dict[int, int], order: list[int] | None = None) -> list[int]:
    """Nodes that take every need (largest first, each on the first node with room left, nodes in
    `order` or by most room); empty if some need fits none."""
    left = dict(room)
    ranked = order if order is not None else sorted(left, key=lambda i: (-left[i], i))
    used: list[int] = []
    for need in needs:
        for node in ranked:
            if left[node] >= need:
                left[node] -= need
                if node not in used:
                    used.append(node)
                break
        else:
            return []
    return used
