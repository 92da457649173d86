"""One scheduling cycle: admission order, quota fit, placement, preemption, decisions.

`Engine.cycle(now)` tries the work that is due and returns what it
decided, having applied it to the ClusterState (and AdmissionState):

1. Workloads submitted to Kueue queues, in admission order (fair sharing,
   admission fair sharing, priority, time): a workload is admitted only
   when its quota fits (possibly after preempting other workloads, as
   Kueue decides) **and** all its pods are placed on nodes of its flavor —
   one transaction, so quota is never held by unplaceable work.
2. Pods outside Kueue, as kube-scheduler would: by priority, then creation
   time, then arrival;
   gangs all-or-nothing; when nothing fits, default preemption of
   lower-priority pods.

A pod or workload that fails waits until something that could help
happens, kube-scheduler's queueing hints: the ClusterState reports what
changed (pods added, bound, leaving; nodes changing) as `ClusterEvent`s,
drivers report the rest through `notify`, and only work whose rejecting
plugins declared such an event, and that the event could let fit, is tried
again (`allot.engine.queueing`, `allot.scheduling.hints`,
`allot.engine.workload_hints`; Kueue's own requeue rules stay in
`allot.admission`). A cycle therefore costs what changed, not the length
of the queue. `EnginePolicy.queueing` sets backoff, the unschedulable
safety net (`next_wakeup`) and a hints-off mode for checking. The engine
does no I/O and reads no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from msgspec.structs import replace

from allot.admission.events import Event, EventKind, ParkReason
from allot.admission.fair_sharing import DRS
from allot.admission.flavors import Assignment, Mode
from allot.admission.standing import queue_position, workload_pods
from allot.admission.state import AdmissionState
from allot.admission.targets import Target
from allot.admission.workload import Workload
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.consolidate import Consolidating
from allot.engine.decisions import Admitted, Bound, CycleResult, Decision, Evicted, Waiting
from allot.engine.futile import FutilePreemptions
from allot.engine.pod_path import PodPath
from allot.engine.policy import EnginePolicy
from allot.engine.queueing import OrderKey, QueueingConfig, SchedulingQueue
from allot.engine.quota_hold import QuotaHold, QuotaHolding
from allot.engine.reserve import Hold, Reserving
from allot.engine.waiting import QueuedClass, WaitingSnapshot
from allot.engine.workload_hints import PlacementWaits
from allot.model.kueue import QUEUE_NAME_LABEL, Topology
from allot.scheduling.gang import Gang, GangUnschedulable
from allot.scheduling.hints import Hints
from allot.scheduling.packing.consolidation import Consolidator
from allot.scheduling.packing.occupancy import GpuOccupancy
from allot.scheduling.preemption import Preemptor
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.topology.tas import topology_request

# Cluster events that are also Kueue's requeue events.
_ADMISSION_KINDS = {
    ClusterEventKind.QUOTA_CHANGED: EventKind.QUOTA_CHANGED,
    ClusterEventKind.QUEUES_CHANGED: EventKind.QUEUES_CHANGED,
    ClusterEventKind.WORKLOAD_FINISHED: EventKind.WORKLOAD_FINISHED,
    ClusterEventKind.NODE_ADDED: EventKind.NODES_CHANGED,
}


class Engine(PodPath, Consolidating, Reserving, QuotaHolding):
    """Decides where pending work goes; see the module docstring for the cycle."""

    def __init__(
        self,
        state: ClusterState,
        *,
        admission: AdmissionState | None = None,
        profiles: dict[str, Profile] | None = None,
        policy: EnginePolicy | None = None,
        fallback_profile: str | None = None,
        topologies: Iterable[Topology] = (),
        seed: int = 0,
    ) -> None:
        """`seed` varies the tie-breaks among equally good nodes (`allot.scheduling.tie_break`)."""
        self.state = state
        self.policy = policy if policy is not None else EnginePolicy()
        self.admission = admission if self.policy.queues else None
        if self.admission is not None and self.admission.journal is not state.journal:
            raise ValueError("the admission state must share the cluster state's journal")
        self.scheduler = Scheduler(state, profiles, fallback=fallback_profile, seed=seed)
        # Kueue Topology objects, for gangs that ask for a topology level (TAS).
        self.topologies: dict[str, Topology] = {t.name: t for t in sorted(topologies, key=lambda t: t.name)}
        self.preemptor = Preemptor(self.scheduler)
        # Moves that place waiting work (allot.engine.consolidate); None unless the policy asks.
        consolidation = self.policy.consolidation
        self._occupancy: GpuOccupancy | None = None
        self._consolidator = (
            Consolidator(
                self.scheduler,
                self._gpu_occupancy,
                max_moves=consolidation.max_moves,
                max_nodes=consolidation.max_nodes,
            )
            if consolidation is not None
            else None
        )
        self._unmovable_classes: dict[int, int] = {}
        # A node held for a large waiting job, when pods were bound, and the cycle's time
        # (allot.engine.reserve); the scheduler asks `held_from` when reservations are on.
        self._holds: list[Hold] = []
        # Per root cohort, the workload its freed quota is kept for (allot.engine.quota_hold).
        self._quota_holds: dict[str, QuotaHold] = {}
        self._share_memo: dict[str, tuple[int, dict[int, DRS]]] = {}
        # The waiting work listed once per cycle for consolidation and reservations (engine/waiting.py).
        self._waiting_snapshot: WaitingSnapshot | None = None
        self._queued_cache: dict[str, tuple[int, list[QueuedClass]]] = {}
        self._class_numbers: dict[object, int] = {}
        self._outside_kueue: dict[str, None] | None = None
        self._bound_at: dict[str, float] = {}
        self._now = 0.0
        if self.policy.reservation:
            self.scheduler.holds = self
        # Pods outside Kueue wait here (active, unschedulable, backing off); see allot.engine.queueing.
        self._queue = SchedulingQueue(self.policy.queueing)
        self._hints = Hints(self.scheduler, self._gpu_occupancy)
        # Pod group -> its pods outside Kueue; a gang's last reason, by unit.
        self._groups: dict[str, set[str]] = {}
        self._gang_reasons: dict[str, str] = {}
        # Pods that became pending during a cycle, tried from the next one.
        self._deferred: list[tuple[str, OrderKey]] = []
        # Pods with scheduling gates: not tried until a driver says they changed (`retry`).
        self._gated: set[str] = set()
        # Events drivers reported (`notify`), seen at the next cycle.
        self._reported: list[ClusterEvent] = []
        # The reason the pods of each pending workload were last told (Waiting decisions): a
        # workload parked behind an equivalent one for the same reason in every cycle is not told
        # again, so a backlog of thousands costs nothing per cycle in decisions (drivers keep the
        # last reason they were told).
        # Keyed by workload, with the Workload object told: a workload submitted afresh (its pods
        # re-created) is a new object and is told again.
        self._told: dict[str, tuple[str, Workload]] = {}
        # Queued (Kueue) pods that arrived since the last cycle, in arrival order.
        self._arrived_queued: list[str] = []
        # Preempting placements that failed, skipped while they would fail alike (with hints only).
        self._futile = (
            FutilePreemptions() if self.admission is not None and self.policy.queueing.hints else None
        )
        # Kueue workloads that fit quota but not the nodes, and the hints that wake them.
        self._placement_waits = (
            PlacementWaits(
                self.admission,
                self.scheduler.fits_on,
                self._probe_class,
                hints=self.policy.queueing.hints,
                depends_on_others=self._hints.depends_on_other_nodes,
            )
            if self.admission is not None
            else None
        )
        # Pods of admitted Kueue workloads, and their specs before Kueue edited them.
        self._workload_of_pod: dict[str, str] = {}
        self._original: dict[str, object] = {}
        self._submitted: set[str] = set()
        # Admitted workloads whose quota outlives their pods (a Job's: its pods come and go until
        # the Job finishes); released only by `workload_finished` or an eviction.
        self._held: set[str] = set()
        # Pods that joined an admitted workload (`adopt`), and those of them whose workload lost
        # its admission: they wait, unscheduled, for their owner to act (a Job is suspended).
        self._adopted: set[str] = set()
        self._orphaned: set[str] = set()
        # Pod creation times (seconds), parsed once.
        self._creation: dict[str, float] = {}
        if self.admission is not None:
            # Workloads that already ran when the admission state was built (restored running).
            for pod_key, workload in workload_pods(self.admission.entries, admitted_only=True).items():
                if pod_key in state.pods:
                    self._workload_of_pod[pod_key] = workload
                    self._submitted.add(pod_key)
        state.listen_for_events()
        for info in state.pending():
            self._enqueue_pod(info.key, deferred=False)
            if self.ours(info) and self.queued(info):
                self._arrived_queued.append(info.key)

    # -- bookkeeping the drivers call --------------------------------------------------

    def ours(self, info: PodInfo) -> bool:
        name = self.policy.scheduler_name
        return name is None or info.pod.spec.scheduler_name == name

    def queued(self, info: PodInfo) -> bool:
        """Whether the pod is handled by admission (it names a Kueue queue and admission is on).

        A pending pod of a workload already admitted (a running group that lost a pod) is not:
        it is scheduled like any pod, as kube-scheduler schedules the pods Kueue admitted.
        """
        if self.admission is None or QUEUE_NAME_LABEL not in info.pod.metadata.labels:
            return False
        return info.bound or info.key not in self._workload_of_pod

    def submit_new_workloads(self, now: float) -> None:
        """Turn queued pods that arrived since the last cycle into Kueue workloads."""
        if self.admission is None:
            return
        self._observe(now, None)
        arrived, self._arrived_queued = self._arrived_queued, []
        pods = self.state.pods
        fresh = [
            info.pod
            for key in arrived
            if (info := pods.get(key)) is not None
            and not info.bound
            and self.queued(info)
            and not info.pod.spec.scheduling_gates
            and key not in self._submitted
            and key not in self._workload_of_pod
        ]
        if not fresh:
            return
        # Judged against what was submitted before this call (not a copy: the set holds every
        # waiting workload's pods, so copying it per arrival grew with the backlog).
        added: set[str] = set()
        for workload in self.admission.workloads_from_pods(fresh):
            if all(p in self._submitted and p not in added for p in workload.pods):
                continue
            self.admission.submit(workload, now)
            added.update(p for p in workload.pods if p not in self._submitted)
            self._submitted.update(workload.pods)

    def workload_finished(self, workload_key: str, now: float) -> None:
        """All pods of an admitted workload completed (or its owner, a Job, finished): release its quota."""
        self._held.discard(workload_key)
        if self.admission is None:
            return
        for pod, workload in list(self._workload_of_pod.items()):
            if workload == workload_key:
                del self._workload_of_pod[pod]
                self._submitted.discard(pod)
        self.admission.finish(workload_key, now)
        self._told.pop(workload_key, None)

    def workload_withdrawn(self, workload_key: str, now: float) -> None:
        """A workload's owner left the queue (a Job deleted, finished, or suspended to queue again
        afresh): its quota is released if it was admitted, it leaves its queue if it waited. Its
        pods stay in the state; the driver removes those that go."""
        self._held.discard(workload_key)
        admission = self.admission
        if admission is None or workload_key not in admission.entries:
            return
        if admission.is_admitted(workload_key):
            self.workload_finished(workload_key, now)
            return
        for pod in admission.entries[workload_key].workload.pods:
            self._submitted.discard(pod)
        self._forget_workload(workload_key)
        admission.remove(workload_key, now)

    def adopt(self, pod_key: str, workload_key: str) -> None:
        """A pod joins an admitted workload (a pod its owner created after admission, such as a
        Job's): it is placed like any pod, without admission, and counts among the workload's
        pods. Unknown pods or workloads that are not admitted are ignored."""
        if (
            self.admission is None
            or not self.admission.is_admitted(workload_key)
            or pod_key not in self.state.pods
        ):
            return
        self._workload_of_pod[pod_key] = workload_key
        self._submitted.add(pod_key)
        self._adopted.add(pod_key)
        self._orphaned.discard(pod_key)
        if not self.state.pods[pod_key].bound:
            self.retry(pod_key)

    def hold_until_finished(self, workload_key: str) -> None:
        """Keep an admitted workload's quota while it has no pods, until `workload_finished` (a
        Job between one pod's end and its controller's next pod)."""
        self._held.add(workload_key)

    def workload_of(self, pod_key: str) -> str:
        return self._workload_of_pod.get(pod_key, "")

    def evict(self, pod_key: str, reason: str, now: float) -> list[Evicted]:
        """Take a bound pod off its node (a node failed, a driver stops it); a pod of an
        admitted Kueue workload takes its whole workload with it. Returns every pod evicted."""
        return self._evict_pod(pod_key, reason, "", now)

    def retry(self, pod_key: str) -> None:
        """A waiting pod changed (its spec, labels, gates or claims): try it in the next cycle."""
        self._gated.discard(pod_key)
        self._queue.forget([pod_key])
        self._enqueue_pod(pod_key, deferred=False)
        info = self.state.pods.get(pod_key)
        if info is not None and self.ours(info) and self.queued(info) and pod_key not in self._submitted:
            self._arrived_queued.append(pod_key)

    def pod_deleted(self, pod_key: str, now: float | None = None) -> None:
        """A pod left the cluster for good (deleted, or completed): forget what the engine remembered
        of it, so a new pod with the same name starts afresh (drivers call this after removing it
        from the state). Its Kueue workload follows it: one admitted releases its quota once none of
        its pods is left; one pending is withdrawn, and its remaining pods queue again as a new
        workload (a pod group short of a pod waits for it, as in Kueue)."""
        self._queue.forget([pod_key])
        self._gated.discard(pod_key)
        for members in self._groups.values():
            members.discard(pod_key)
        self._creation.pop(pod_key, None)
        self._adopted.discard(pod_key)
        self._orphaned.discard(pod_key)
        if self.admission is not None and pod_key in self._submitted:
            self._workload_lost(pod_key, now)
        self._submitted.discard(pod_key)
        self._original.pop(pod_key, None)

    def _workload_lost(self, pod_key: str, now: float | None) -> None:
        admission = self.admission
        assert admission is not None
        admitted = self._workload_of_pod.pop(pod_key, None)
        if admitted is not None:
            if (
                not self._pods_of_workload(admitted)
                and admission.is_admitted(admitted)
                and admitted not in self._held
            ):
                self._forget_workload(admitted)
                admission.remove(admitted, now)
            return
        entry = next((e for e in admission.entries.values() if pod_key in e.workload.pods), None)
        if entry is None:
            return
        self._forget_workload(entry.workload.key)
        admission.remove(entry.workload.key, now)
        pods = self.state.pods
        for other in sorted(entry.workload.pods):
            info = pods.get(other)
            if other != pod_key and info is not None and not info.bound:
                self._submitted.discard(other)
                self._arrived_queued.append(other)

    def _forget_workload(self, workload_key: str) -> None:
        """Drop what the engine remembered of a workload while it waited (it was admitted, or it left
        admission)."""
        self._told.pop(workload_key, None)
        if self._placement_waits is not None:
            self._placement_waits.turn_ended(workload_key)
        if self._futile is not None:
            self._futile.forget(workload_key)

    def pending_reasons(self, last: Mapping[str, str]) -> dict[str, str]:
        """Every pending pod this engine schedules, with why it waits.

        `last` holds the reasons of the latest Waiting decisions the caller saw. For a pod of a
        queued workload, admission's own account comes first (why it is parked, or that it is
        invalid or incomplete), then `last`, then where it stands in its queue: pods behind a
        queue's head are never tried in a cycle, so no decision names them.
        """
        admission = self.admission
        workloads = workload_pods(admission.entries) if admission is not None else {}
        reasons: dict[str, str] = {}
        for info in self.state.pending():
            if not self.ours(info):
                continue
            key = info.key
            workload = workloads.get(key) if self.queued(info) else None
            if admission is None or workload is None:
                reasons[key] = last.get(key) or "not tried yet"
                continue
            reasons[key] = (
                admission.pending_reason(workload) or last.get(key) or queue_position(admission, workload)
            )
        return reasons

    # -- the cycle --------------------------------------------------------------------------

    def cycle(self, now: float = 0.0) -> CycleResult:
        decisions: list[Decision] = []
        self._now = now
        self._forget_waiting()
        self._queue.begin_cycle(now)
        if self._placement_waits is not None:
            self._placement_waits.begin_cycle()
        self._observe(now, None)
        if self.admission is not None:
            self.submit_new_workloads(now)
            self.admission.advance(now)
            self._admit_workloads(now, decisions)
        self._schedule_pods(now, decisions)
        self._consolidate(now, decisions)
        self._reserve(now, decisions)
        self._hold_quota()
        return CycleResult(tuple(decisions))

    def _gpu_occupancy(self) -> GpuOccupancy:
        if self._occupancy is None:
            self._occupancy = GpuOccupancy(self.state)
        return self._occupancy

    def _observe(self, now: float, position: OrderKey | None) -> None:
        """Take the state's committed events: new or pending-again pods join the queue, hints wake the rest."""
        events = self.state.take_events()
        if self._reported:
            events = [*events, *self._reported]
            self._reported.clear()
        if not events:
            return
        self._saw_events(events)
        for event in events:
            if event.kind in (ClusterEventKind.POD_ADDED, ClusterEventKind.POD_UPDATED):
                self._note_pod(event.pod)
            if event.kind is ClusterEventKind.POD_UPDATED:
                self.retry(event.pod)
            if event.kind in (ClusterEventKind.POD_ADDED, ClusterEventKind.POD_LEFT):
                self._enqueue_pod(event.pod, deferred=position is not None)
            if event.kind is ClusterEventKind.POD_ADDED and self.admission is not None:
                info = self.state.pods.get(event.pod)
                if info is not None and self.ours(info) and self.queued(info):
                    self._arrived_queued.append(event.pod)
        self._queue.observe(events, self._hint, position, now)
        if self._placement_waits is not None:
            self._placement_waits.observe(events)
        if self._futile is not None:
            self._futile.observe(events)

    def _evict_pod(self, pod_key: str, reason: str, preemptor: str, now: float) -> list[Evicted]:
        """Unbind a victim; a pod of an admitted workload takes its whole workload with it."""
        workload = self._workload_of_pod.get(pod_key)
        if workload is not None and self.admission is not None:
            return self._evict_workload(workload, reason, preemptor, now)
        self.state.unbind(pod_key)
        return [Evicted(pod_key, reason, preemptor)]

    # -- Kueue path -----------------------------------------------------------------------

    def _evict_workload(self, workload_key: str, reason: str, preemptor: str, now: float) -> list[Evicted]:
        evicted = self._take_off_nodes(workload_key, reason, preemptor)
        self._release_workload(workload_key, reason, now)
        return evicted

    def _pods_of_workload(self, workload_key: str) -> list[str]:
        return sorted(p for p, w in self._workload_of_pod.items() if w == workload_key)

    def _take_off_nodes(self, workload_key: str, reason: str, preemptor: str) -> list[Evicted]:
        """Unbind an admitted workload's pods (the nodes' side of an eviction; quota is untouched)."""
        evicted: list[Evicted] = []
        for pod_key in self._pods_of_workload(workload_key):
            if self.state.pods.get(pod_key) is not None and self.state.pods[pod_key].bound:
                self.state.unbind(pod_key)
                evicted.append(Evicted(pod_key, reason, preemptor))
        return evicted

    def _release_workload(self, workload_key: str, reason: str, now: float) -> None:
        """The admission side of an eviction: its pods back to their spec before admission, its quota
        released and the workload pending again."""
        assert self.admission is not None
        for pod_key in self._pods_of_workload(workload_key):
            original = self._original.get(pod_key)
            if original is not None and pod_key in self.state.pods:
                self.state.replace_pod(pod_key, original)  # type: ignore[arg-type]
            self._forget_pod(pod_key)
            if pod_key in self._adopted and pod_key not in self._orphaned:
                self._orphan(pod_key)
        self.admission.evict(workload_key, reason, now)

    def _orphan(self, pod_key: str) -> None:
        """An adopted pod whose workload lost its admission waits unscheduled; journaled."""
        self._orphaned.add(pod_key)
        self.state.journal.record(lambda: self._orphaned.discard(pod_key))

    def _forget_pod(self, pod_key: str) -> None:
        """Drop a pod's workload membership, journaled so a rolled-back preemption restores it."""
        workload = self._workload_of_pod.pop(pod_key)
        original = self._original.pop(pod_key, None)

        def undo() -> None:
            self._workload_of_pod[pod_key] = workload
            if original is not None:
                self._original[pod_key] = original

        self.state.journal.record(undo)

    def _admit_workloads(self, now: float, decisions: list[Decision]) -> None:
        admission = self.admission
        assert admission is not None
        journal = self.state.journal
        waits = self._placement_waits
        for candidate in admission.candidates(now):
            workload = candidate.workload
            if waits is not None:
                waits.forget(workload.key)
            assignment = admission.assign(workload)
            if assignment.mode == Mode.NO_FIT:
                reason = assignment.reason or "; ".join(r for ps in assignment.pod_sets for r in ps.reasons)
                admission.park(workload, ParkReason.quota(reason))
                if waits is not None:
                    waits.turn_ended(workload.key)
                self._tell_waiting(decisions, workload, reason)
                continue
            refusal = self.quota_refusal(workload, assignment)
            if refusal is not None:
                admission.park(workload, ParkReason.quota(refusal))
                if waits is not None:
                    waits.turn_ended(workload.key)
                self._tell_waiting(decisions, workload, refusal)
                continue
            probes = self._probes(workload.pods)
            group = waits.group_of(workload.key, assignment, probes) if waits is not None else None
            known = waits.waiting_reason(group) if waits is not None else None
            if waits is not None and known is not None:
                # Workloads of its group fail alike and nothing since could help: it waits unplaced.
                admission.park(workload, ParkReason.placement(known))
                waits.park(workload.key, assignment, probes, known)
                self._tell_waiting(decisions, workload, known)
                continue
            failure = ""
            with journal.transaction() as tx:
                evicted: list[Evicted] = []
                targets: list[Target] | None = None
                if assignment.mode == Mode.PREEMPT:
                    targets = admission.preemption_targets(workload, assignment)
                    if not targets:
                        failure = (
                            f"quota: {assignment.message() or 'not enough quota'}; "
                            "no workload can be preempted to make room"
                        )
                    elif (repeated := self._futile_repeat(workload, assignment, targets, probes)) is not None:
                        failure = repeated
                    else:
                        # The victims leave their nodes first; their quota is released only once
                        # the preemptor is placed (placement does not read quota, and most
                        # failed attempts then cost no requeue of the queues the release wakes).
                        for target in targets:
                            evicted.extend(
                                self._take_off_nodes(
                                    target.workload_key, target.message(workload.key), workload.key
                                )
                            )
                placements: list[Placement] = []
                if not failure:
                    placed = self._place_workload(workload, assignment)
                    if isinstance(placed, str):
                        failure = placed
                    else:
                        placements = placed
                if not failure:
                    for target in targets or ():
                        self._release_workload(target.workload_key, target.message(workload.key), now)
                    admission.admit(workload, assignment, now, protected=self.holds_quota(workload.key))
                    tx.commit()
            if failure:
                quota = failure.startswith("quota:")
                admission.park(
                    workload, ParkReason.quota(failure) if quota else ParkReason.placement(failure)
                )
                if waits is not None and quota:
                    waits.turn_ended(workload.key)
                elif waits is not None:
                    waits.park(workload.key, assignment, probes, failure)
                if not quota and targets and self._futile is not None:
                    self._futile.failed(workload, assignment, (t.workload_key for t in targets), failure)
                self._tell_waiting(decisions, workload, failure)
                self._observe(now, None)
                continue
            decisions.extend(evicted)
            if waits is not None:
                waits.admitted(workload.key, group)
            self._admitted(workload, candidate.cluster_queue, assignment, placements, decisions)
            self._observe(now, None)
        self._report_parked_in_cycle(decisions)
        if self._futile is not None and len(self._futile) > 2 * len(admission.entries) + 64:
            self._futile.keep_only(lambda key: key in admission.entries)

    def _futile_repeat(
        self, workload: Workload, assignment: Assignment, targets: list[Target], probes: tuple[str, ...]
    ) -> str | None:
        """The reason of the last failed placement with these victims, if it would fail alike now."""
        if self._futile is None or any(self._hints.depends_on_other_nodes(p) for p in probes):
            return None
        return self._futile.repeat(
            workload,
            assignment,
            [t.workload_key for t in targets],
            probes,
            self._fits_without,
            self._nodes_of,
        )

    def _nodes_of(self, workload_keys: Iterable[str]) -> set[int]:
        nodes: set[int] = set()
        for key in workload_keys:
            for pod_key in self._pods_of_workload(key):
                info = self.state.pods.get(pod_key)
                if info is not None and info.node is not None:
                    nodes.add(info.node)
        return nodes

    def _fits_without(self, probes: Sequence[str], nodes: Sequence[int], victims: Sequence[str]) -> bool:
        """Whether one of the pods fits one of the nodes once the victims' pods are off their nodes
        (only the pods on those nodes are taken off: a pod's fit on a node depends on that node alone
        for the workloads this is asked about)."""
        asked = set(nodes)
        leaving: dict[int, list[str]] = {}
        for victim in victims:
            for pod_key in self._pods_of_workload(victim):
                info = self.state.pods.get(pod_key)
                if info is not None and info.node in asked:
                    leaving.setdefault(info.node, []).append(pod_key)
        # A count of whole GPUs, with every GPU of the leaving pods freed, rules most nodes out
        # before anything is taken off them or a filter runs.
        hints = self._hints
        hopeful = [n for n in nodes if any(not hints.short_of_gpus(p, n, leaving.get(n, ())) for p in probes)]
        if not hopeful:
            return False
        with self.state.journal.transaction():
            for index in hopeful:
                for pod_key in leaving.get(index, ()):
                    self.state.unbind(pod_key)
            return any(
                not hints.short_of_gpus(p, n) and self.scheduler.fits_on(p, n)
                for p in probes
                for n in hopeful
            )

    def _report_parked_in_cycle(self, decisions: list[Decision]) -> None:
        """Waiting decisions for the workloads the admission cycle parked without offering them,
        so every pending pod of a queued workload is told why it waits (drivers write it)."""
        admission = self.admission
        assert admission is not None
        parked, admission.parked_in_cycle = admission.parked_in_cycle, []
        for key in parked:
            entry = admission.entries.get(key)
            reason = admission.pending_reason(key)
            if entry is None or reason is None:
                continue
            self._tell_waiting(decisions, entry.workload, reason, again=False)

    def _tell_waiting(
        self, decisions: list[Decision], workload: Workload, reason: str, *, again: bool = True
    ) -> None:
        """Waiting decisions for a workload's pods. A workload tried in this cycle is told every
        time (a scheduling attempt: metrics and FailedScheduling events count it); one only parked
        behind an equivalent workload (`again=False`) is told only when its reason changed."""
        told = self._told
        before = told.get(workload.key)
        if (
            not again
            and before is not None
            and before[1] is workload
            and self._same_reason(before[0], reason)
        ):
            return
        if len(told) > 1024 and self.admission is not None and len(told) > 2 * len(self.admission.entries):
            entries = self.admission.entries
            for key in [k for k in told if k not in entries]:
                del told[key]
        told[workload.key] = (reason, workload)
        decisions.extend(Waiting(p, reason, workload.key) for p in workload.pods)

    def _same_reason(self, told: str, reason: str) -> bool:
        if told == reason:
            return True
        admission = self.admission
        return admission is not None and admission.reason_key(told) == admission.reason_key(reason)

    def _admitted(
        self,
        workload: Workload,
        cluster_queue: str,
        assignment: Assignment,
        placements: list[Placement],
        decisions: list[Decision],
    ) -> None:
        """A workload was admitted with its pods placed: remember its pods, say so."""
        for placement in placements:
            self._workload_of_pod[placement.pod_key] = workload.key
            decisions.append(
                Bound(placement.pod_key, placement.node, placement.allocations, placement.score, workload.key)
            )
        flavors = {
            f"{ps.name}/{resource}": choice.flavor
            for ps in assignment.pod_sets
            for resource, choice in sorted(ps.flavors.items())
        }
        decisions.append(Admitted(workload.key, cluster_queue, flavors, assignment.borrows))
        self._forget_workload(workload.key)
        if self._quota_holds:
            self._release_quota_hold(workload.key)

    def _place_workload(self, workload: Workload, assignment: object) -> list[Placement] | str:
        """Place every pod of the workload on its flavor's nodes; a reason string if any does not fit."""
        admission = self.admission
        assert admission is not None
        state = self.state
        placements: list[Placement] = []
        for pod_set in workload.pod_sets:
            node_filter = admission.node_filter(assignment, pod_set.name)  # type: ignore[arg-type]
            for pod_key in sorted(pod_set.pods):
                self._apply_flavor(pod_key, node_filter)
            members = tuple(sorted(pod_set.pods))
            gang = Gang(f"{workload.key}/{pod_set.name}", members, len(members), len(members))
            if topology_request(state, gang) is not None:
                topology = self._flavor_topology(assignment, pod_set.name)
                result = self._place_gang(gang, 0.0, [], topology, preempt=False)
                if isinstance(result, GangUnschedulable):
                    return result.reason
                placements.extend(result.placements)
                continue
            for pod_key in members:
                if state.pods.get(pod_key) is None:
                    return f"pod {pod_key} of workload {workload.key} does not exist"
                outcome = self.scheduler.schedule(pod_key)
                if isinstance(outcome, Unschedulable):
                    return f"pod {pod_key}: {outcome.message}"
                placements.append(outcome)
        return placements

    def _apply_flavor(self, pod_key: str, node_filter: object) -> None:
        """Kueue injects the flavor's node labels and tolerations into admitted pods; journaled."""
        info = self.state.pods.get(pod_key)
        labels = getattr(node_filter, "node_labels", {})
        tolerations = getattr(node_filter, "tolerations", ())
        if info is None or (not labels and not tolerations):
            return
        spec = info.pod.spec
        edited = replace(
            info.pod,
            spec=replace(
                spec,
                node_selector={**spec.node_selector, **labels},
                tolerations=(*spec.tolerations, *tolerations),
            ),
        )
        self._original.setdefault(pod_key, info.pod)
        self.state.replace_pod(pod_key, edited)

    def _flavor_topology(self, assignment: object, pod_set: str) -> Topology | None:
        """The Topology named by the pod set's flavor (`spec.topologyName`), if any."""
        assert self.admission is not None
        for ps in getattr(assignment, "pod_sets", ()):
            if ps.name != pod_set:
                continue
            for choice in ps.flavors.values():
                flavor = self.admission.flavors.get(choice.flavor)
                name = flavor.spec.topology_name if flavor is not None else None
                if name and name in self.topologies:
                    return self.topologies[name]
        return None

    def next_wakeup(self) -> float | None:
        """When waiting work is due without an event (backoff over, safety net): the driver should
        run a cycle then. None with the default exact queueing."""
        return self._queue.next_wakeup()

    def notify(self, event: ClusterEvent | Event) -> None:
        """What a driver saw that the ClusterState cannot know: claims, slices or device classes
        changed, quota or queues changed, a node added elsewhere (`ClusterEvent`); or a Kueue
        admission `Event`. Waiting work that such an event could help is tried again next cycle.
        The state's own changes (pods added, bound, leaving; nodes ready) need no report."""
        if isinstance(event, Event):
            if self.admission is not None:
                self.admission.notify(event)
            return
        self._reported.append(event)
        admission_kind = _ADMISSION_KINDS.get(event.kind)
        if admission_kind is not None and self.admission is not None:
            self.admission.notify(
                Event(
                    admission_kind,
                    cluster_queue=event.cluster_queue,
                    cohort=event.cohort,
                    flavor=event.flavor,
                )
            )


__all__ = [
    "ClusterEvent",
    "ClusterEventKind",
    "Engine",
    "EnginePolicy",
    "Event",
    "EventKind",
    "QueueingConfig",
]
