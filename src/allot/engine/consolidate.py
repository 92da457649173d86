"""The engine's consolidation phase: waiting work placed by moving a few running pods.

Runs at the end of every cycle when `EnginePolicy.consolidation` is set
(the simulator's `fair` policy; off by default and in kube-scheduler's
place). The search itself is `allot.scheduling.packing.consolidation`;
here is what is tried and when:

* Units, in a fixed order: Kueue workloads pending whose quota fits now
  (flavor assignment `Fit`: a move never admits what Kueue would not),
  ClusterQueues with the lowest fair-sharing value (DRS) first and each
  queue in its admission order; then pods and gangs outside Kueue in
  kube-scheduler's order (priority, creation). Workloads and gangs that
  ask for a topology domain are left alone.
* Movable pods: bound by this engine, of no higher priority than the unit,
  and alone in their unit (a one-pod workload, a pod outside any gang): a
  gang member moved alone would stall its gang.
* Bounds per cycle: at most `max_units` units tried and `max_moves` pods
  moved. A unit class (same queue, shape and priority) that found no moves
  is tried again only once the cluster has more untouched GPUs than it had
  then, or a node changed: moves only rearrange room, they make none.
* Every move is an eviction with its reason (`moved to node N to make room
  for U (consolidation)`) followed by the pod bound on its new node; the
  simulator restarts the moved pod keeping its checkpointed work, as after
  a preemption.

The phase reads the pending work from the cluster and admission state,
never from the queues' parked sets, so it decides the same whether waiting
work is retried at every cycle or only at events (queueing hints); the
evictions and binds it makes are ordinary cluster events that wake
whatever they could help.
"""

from __future__ import annotations

from collections import Counter

from allot.admission.flavors import Assignment
from allot.admission.state import AdmissionState
from allot.admission.workload import Workload
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.decisions import Bound, Decision, Evicted
from allot.engine.policy import EnginePolicy
from allot.engine.queueing import OrderKey, SchedulingQueue
from allot.engine.waiting import GANG_UNIT, WaitingUnit, WaitingWork
from allot.scheduling.gang import Gang, gang_key
from allot.scheduling.packing.consolidation import Consolidation, Consolidator
from allot.scheduling.scheduler import Placement, Scheduler
from allot.scheduling.topology.tas import topology_request

# Node changes can make moves possible anywhere: every class is tried again.
NODE_CHANGES = frozenset(
    {ClusterEventKind.NODE_ADDED, ClusterEventKind.NODE_CHANGED, ClusterEventKind.NODE_REMOVED}
)


class Consolidating(WaitingWork):
    """The consolidation phase of `Engine` (a mixin; see the module docstring)."""

    state: ClusterState
    scheduler: Scheduler
    policy: EnginePolicy
    admission: AdmissionState | None
    _queue: SchedulingQueue
    _workload_of_pod: dict[str, str]
    _consolidator: Consolidator | None
    # Unit classes that found no moves, with the untouched GPUs the cluster had then.
    _unmovable_classes: dict[int, int]

    def _apply_flavor(self, pod_key: str, node_filter: object) -> None:
        raise NotImplementedError

    def _observe(self, now: float, position: OrderKey | None) -> None:
        raise NotImplementedError

    def _admitted(
        self,
        workload: Workload,
        cluster_queue: str,
        assignment: Assignment,
        placements: list[Placement],
        decisions: list[Decision],
    ) -> None:
        raise NotImplementedError

    def _saw_events(self, events: list[ClusterEvent]) -> None:
        """A node changed: classes that found no moves may find some now."""
        if any(e.kind in NODE_CHANGES for e in events):
            self._unmovable_classes.clear()

    def _consolidate(self, now: float, decisions: list[Decision]) -> None:
        config = self.policy.consolidation
        consolidator = self._consolidator
        if config is None or consolidator is None:
            return
        self._observe(now, None)
        # Pods per admitted workload: only pods of one-pod workloads move.
        sizes = Counter(self._workload_of_pod.values())
        moves_left = config.max_moves
        occupancy = consolidator.occupancy()
        if not any(occupancy.free(i) > 0 for i in range(self.state.nodes.size)):
            return  # no GPU has room: moves could only shuffle full nodes
        untouched = [occupancy.untouched_total()]

        def hopeless(klass: int) -> bool:
            # The class found no moves when the cluster had as many untouched GPUs as now, or more.
            failed = self._unmovable_classes.get(klass)
            return failed is not None and failed >= untouched[0]

        for tried, unit in enumerate(self._waiting_units(hopeless)):
            if tried >= config.max_units or moves_left <= 0:
                break
            moved = self._consolidate_unit(unit, moves_left, sizes, now, decisions)
            if moved is None:
                self._unmovable_classes[unit.klass] = untouched[0]
            else:
                moves_left -= moved
                untouched[0] = consolidator.occupancy().untouched_total()
            self._observe(now, None)

    # -- one unit --------------------------------------------------------------------------

    def _movable(self, priority: int, sizes: Counter[str], info: PodInfo) -> bool:
        if not info.bound or info.priority > priority or not self.ours(info):
            return False
        workload = self._workload_of_pod.get(info.key)
        if workload is not None:
            return sizes[workload] == 1
        return gang_key(info) is None

    def _consolidate_unit(
        self, unit: WaitingUnit, budget: int, sizes: Counter[str], now: float, decisions: list[Decision]
    ) -> int | None:
        """Place the unit with moves; the number of pods moved, or None when it could not be done."""
        consolidator = self._consolidator
        assert consolidator is not None
        state = self.state
        workload, assignment = unit.workload, unit.assignment
        if topology_request(state, _gang_of(unit)) is not None:
            return None
        result: Consolidation | None = None
        with state.journal.transaction() as tx:
            if workload is not None and assignment is not None:
                admission = self.admission
                assert admission is not None
                for pod_set in workload.pod_sets:
                    node_filter = admission.node_filter(assignment, pod_set.name)
                    for pod_key in sorted(pod_set.pods):
                        self._apply_flavor(pod_key, node_filter)
            result = consolidator.place(
                unit.members, lambda info: self._movable(unit.priority, sizes, info), budget=budget
            )
            if result is None:
                return None
            if workload is not None and assignment is not None:
                assert self.admission is not None
                self.admission.admit(workload, assignment, now, protected=self.holds_quota(workload.key))
            tx.commit()
        for move in result.moves:
            decisions.append(Evicted(move.pod, move.reason(unit.key), unit.members[0]))
            placement = move.placement
            decisions.append(
                Bound(
                    move.pod,
                    placement.node,
                    placement.allocations,
                    placement.score,
                    self._workload_of_pod.get(move.pod, ""),
                )
            )
        self._queue.forget([move.pod for move in result.moves])
        if workload is not None and assignment is not None:
            self._admitted(workload, assignment.cluster_queue, assignment, list(result.placements), decisions)
        else:
            self._queue.forget([unit.key, *unit.members])
            group = unit.key[len(GANG_UNIT) :] if unit.key.startswith(GANG_UNIT) else ""
            for placement in result.placements:
                decisions.append(
                    Bound(placement.pod_key, placement.node, placement.allocations, placement.score, group)
                )
        return len(result.moves)


def _gang_of(unit: WaitingUnit) -> Gang:
    return Gang(unit.key, unit.members, len(unit.members), len(unit.members))
