"""One scheduling cycle: admission order, quota fit, placement, preemption, decisions.

`Engine.cycle(now)` looks at every pending pod once and returns what it
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
happens (a pod leaves a node, a node comes back, quota is released): it is
not retried every cycle. The engine does no I/O and reads no clock.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

from msgspec.structs import replace

from allot.admission.events import Event, EventKind, ParkReason
from allot.admission.flavors import Mode
from allot.admission.state import AdmissionState
from allot.admission.workload import Workload, parse_timestamp
from allot.cluster.events import ALL_KINDS, ClusterEvent, ClusterEventKind
from allot.cluster.state import ClusterState, PodInfo
from allot.engine.decisions import Admitted, Bound, CycleResult, Decision, Evicted, Waiting
from allot.engine.queueing import ClassKey, OrderKey, QueueingConfig, SchedulingQueue
from allot.engine.workload_hints import PlacementWaits
from allot.model.kueue import QUEUE_NAME_LABEL, Topology
from allot.scheduling.diagnosis import Diagnosis
from allot.scheduling.framework import BoolArray
from allot.scheduling.gang import Gang, GangPlacement, GangUnschedulable, gang_key, gangs, place_gang
from allot.scheduling.hints import Hints
from allot.scheduling.preemption import Preemptor
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Outcome, Placement, Scheduler, Unschedulable
from allot.scheduling.topology.tas import place_gang_in_topology, topology_request

PREEMPTED_BY_POD = "Preempted by a higher-priority pod"
GANG_UNIT = "gang:"


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a pod or gang waits: the message, the pod that failed and its diagnosis (if any)."""

    reason: str
    pod: str
    diagnosis: Diagnosis | None
    kinds: frozenset[ClusterEventKind] = ALL_KINDS


@dataclass(frozen=True, slots=True)
class EnginePolicy:
    """How the engine orders and protects work.

    `queues`: admit pods that carry a Kueue queue label through the
    admission state (True), or treat every pod as kube-scheduler would,
    by priority then arrival (False, the "fifo-priority" baseline).
    `preemption`: whether pods outside Kueue may preempt lower priorities.
    """

    queues: bool = True
    preemption: bool = True
    # Only pods naming this scheduler are considered (as a second scheduler beside kube-scheduler); None = all.
    scheduler_name: str | None = None
    # Backoff, the unschedulable safety net, and whether hints decide retries (allot.engine.queueing).
    # Exact by default (retries only at events that could help); a live scheduler passes
    # QueueingConfig() for kube-scheduler's backoff and safety net.
    queueing: QueueingConfig = dataclasses.field(default_factory=QueueingConfig.exact)


class Engine:
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
    ) -> None:
        self.state = state
        self.policy = policy if policy is not None else EnginePolicy()
        self.admission = admission if self.policy.queues else None
        if self.admission is not None and self.admission.journal is not state.journal:
            raise ValueError("the admission state must share the cluster state's journal")
        self.scheduler = Scheduler(state, profiles, fallback=fallback_profile)
        # Kueue Topology objects, for gangs that ask for a topology level (TAS).
        self.topologies: dict[str, Topology] = {t.name: t for t in sorted(topologies, key=lambda t: t.name)}
        self.preemptor = Preemptor(self.scheduler)
        # Pods outside Kueue wait here (active, unschedulable, backing off); see allot.engine.queueing.
        self._queue = SchedulingQueue(self.policy.queueing)
        self._hints = Hints(self.scheduler)
        # Pod group -> its pods outside Kueue; a gang's last reason, by unit.
        self._groups: dict[str, set[str]] = {}
        self._gang_reasons: dict[str, str] = {}
        # Pods that became pending during a cycle, tried from the next one.
        self._deferred: list[tuple[str, OrderKey]] = []
        # Queued (Kueue) pods that arrived since the last cycle, in arrival order.
        self._arrived_queued: list[str] = []
        # Kueue workloads that fit quota but not the nodes, and the hints that wake them.
        self._placement_waits = (
            PlacementWaits(
                self.admission,
                self.scheduler.fits_on,
                self._probe_class,
                hints=self.policy.queueing.hints,
            )
            if self.admission is not None
            else None
        )
        # Pods of admitted Kueue workloads, and their specs before Kueue edited them.
        self._workload_of_pod: dict[str, str] = {}
        self._original: dict[str, object] = {}
        self._submitted: set[str] = set()
        # Pod creation times (seconds), parsed once.
        self._creation: dict[str, float] = {}
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
        """Whether the pod is handled by admission (it names a Kueue queue and admission is on)."""
        return self.admission is not None and QUEUE_NAME_LABEL in info.pod.metadata.labels

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
            and key not in self._submitted
            and key not in self._workload_of_pod
        ]
        if not fresh:
            return
        known = {k for k in self._submitted}
        for workload in self.admission.workloads_from_pods(fresh):
            if all(p in known for p in workload.pods):
                continue
            self.admission.submit(workload, now)
            self._submitted.update(workload.pods)

    def workload_finished(self, workload_key: str, now: float) -> None:
        """All pods of an admitted workload completed: release its quota."""
        if self.admission is None:
            return
        for pod, workload in list(self._workload_of_pod.items()):
            if workload == workload_key:
                del self._workload_of_pod[pod]
                self._submitted.discard(pod)
        self.admission.finish(workload_key, now)

    def workload_of(self, pod_key: str) -> str:
        return self._workload_of_pod.get(pod_key, "")

    # -- the cycle --------------------------------------------------------------------------

    def cycle(self, now: float = 0.0) -> CycleResult:
        decisions: list[Decision] = []
        self._queue.begin_cycle(now)
        if self._placement_waits is not None:
            self._placement_waits.begin_cycle()
        self._observe(now, None)
        if self.admission is not None:
            self.submit_new_workloads(now)
            self.admission.advance(now)
            self._admit_workloads(now, decisions)
        self._schedule_pods(now, decisions)
        return CycleResult(tuple(decisions))

    # -- kube-scheduler path ----------------------------------------------------------------

    def _order(self, pending: Iterable[PodInfo]) -> list[PodInfo]:
        """kube-scheduler's queue order: priority, then when the pod was created, then arrival here."""
        return sorted(pending, key=lambda i: (-i.priority, self._created(i), i.sequence, i.key))

    def _created(self, info: PodInfo) -> float:
        # Pods without a creation timestamp (simulated ones) keep their arrival order among themselves.
        created = self._creation.get(info.key)
        if created is None:
            parsed = parse_timestamp(info.pod.metadata.creation_timestamp)
            created = self._creation[info.key] = parsed if parsed is not None else math.inf
        return created

    def _schedule_pods(self, now: float, decisions: list[Decision]) -> None:
        """Pods outside Kueue, in queue order; only units the queue holds active are tried."""
        queue = self._queue
        self._observe(now, None)
        for unit, order in self._deferred:
            queue.activate(unit, order)
        self._deferred.clear()
        while (popped := queue.pop()) is not None:
            order, unit = popped
            if unit.startswith(GANG_UNIT):
                self._try_gang(unit, order, now, decisions)
            else:
                self._try_pod(unit, order, now, decisions)
            self._observe(now, order)

    def _try_pod(self, pod_key: str, order: OrderKey, now: float, decisions: list[Decision]) -> None:
        info = self.state.pods.get(pod_key)
        if info is None or info.bound:
            return
        equivalence = self.scheduler.equivalence_class(pod_key)
        klass: ClassKey = equivalence if equivalence is not None else pod_key
        waiting = self._queue.parked_class(klass)
        if waiting is not None:
            # An equivalent pod failed and nothing since could help: it would fail alike.
            self._queue.join(pod_key, order, klass)
            decisions.append(Waiting(pod_key, waiting))
            return
        failure = self._schedule_pod(pod_key, now, decisions)
        if failure is None:
            self._queue.fitted(klass)
            return
        self._park_unit(pod_key, order, klass, failure, (pod_key,), info.priority, now)

    def _try_gang(self, unit: str, order: OrderKey, now: float, decisions: list[Decision]) -> None:
        group = unit[len(GANG_UNIT) :]
        pending = [
            self.state.pods[k]
            for k in sorted(self._groups.get(group, ()))
            if k in self.state.pods and not self.state.pods[k].bound
        ]
        found = gangs(pending).get(group)
        if found is None:
            return
        gang = found
        gang_class = self._gang_class(gang)
        klass: ClassKey = gang_class if gang_class is not None else unit
        waiting = self._queue.parked_class(klass)
        previous = self._gang_reasons.get(unit)
        if waiting is not None and previous is not None:
            # A gang like this one failed and nothing since could help: it waits, for the reason
            # it was given when last tried (reasons name the gang's own pods).
            self._queue.join(unit, order, klass)
            self._park_gang(gang, previous, decisions)
            return
        failure = self._schedule_gang(gang, now, decisions)
        if failure is None:
            self._gang_reasons.pop(unit, None)
            self._queue.fitted(klass)
            return
        self._gang_reasons[unit] = failure.reason
        probes = self._probes(gang.members)
        priority = max(self.state.pods[m].priority for m in gang.members)
        self._park_unit(unit, order, klass, failure, probes, priority, now)

    def _probes(self, members: Iterable[str]) -> tuple[str, ...]:
        """One pending pod per distinct class among `members`: the pods a hint re-checks."""
        chosen: dict[object, str] = {}
        for key in sorted(members):
            info = self.state.pods.get(key)
            if info is None or info.bound:
                continue
            equivalence = self.scheduler.equivalence_class(key)
            chosen.setdefault(equivalence if equivalence is not None else key, key)
        return tuple(chosen.values())

    def _park_unit(
        self,
        unit: str,
        order: OrderKey,
        klass: ClassKey,
        failure: Failure,
        probes: tuple[str, ...],
        priority: int,
        now: float,
    ) -> None:
        preempting = self.policy.preemption
        kinds = failure.kinds
        if failure.diagnosis is not None:
            kinds = self._hints.wake_kinds(failure.pod, failure.diagnosis, preempting=preempting)
        self._queue.park(
            unit,
            order,
            klass,
            reason=failure.reason,
            kinds=kinds,
            preempting=preempting,
            priority=priority,
            probes=probes,
            now=now,
        )

    def _hint(
        self, probes: tuple[str, ...], events: list[ClusterEvent], preempting: bool, priority: int
    ) -> bool:
        """Whether these events could let one of the probed pods fit (see `allot.scheduling.hints`)."""
        useful = [
            e
            for e in events
            # A pod bound elsewhere helps only a preemptor that outranks it.
            if e.kind is not ClusterEventKind.POD_BOUND or (preempting and (e.priority or 0) < priority)
        ]
        if not useful:
            return False
        return any(self._hints.could_help(p, useful, preempting=preempting) for p in probes)

    def _observe(self, now: float, position: OrderKey | None) -> None:
        """Take the state's committed events: new or pending-again pods join the queue, hints wake the rest."""
        events = self.state.take_events()
        if not events:
            return
        for event in events:
            if event.kind in (ClusterEventKind.POD_ADDED, ClusterEventKind.POD_LEFT):
                self._enqueue_pod(event.pod, deferred=position is not None)
            if event.kind is ClusterEventKind.POD_ADDED and self.admission is not None:
                info = self.state.pods.get(event.pod)
                if info is not None and self.ours(info) and self.queued(info):
                    self._arrived_queued.append(event.pod)
        self._queue.observe(events, self._hint, position, now)
        if self._placement_waits is not None:
            self._placement_waits.observe(events)

    def _enqueue_pod(self, pod_key: str, *, deferred: bool) -> None:
        """A pod that is pending (again) and ours goes in line, alone or with its gang."""
        info = self.state.pods.get(pod_key)
        if info is None or info.bound or not self.ours(info) or self.queued(info):
            return
        group = gang_key(info)
        unit = pod_key
        if group is not None:
            self._groups.setdefault(group, set()).add(pod_key)
            unit = GANG_UNIT + group
            members = [self.state.pods[k] for k in self._groups[group] if k in self.state.pods]
            order = min(self._order_key(m) for m in members if not m.bound or m.key == pod_key)
        else:
            order = self._order_key(info)
        if deferred:
            # Pods that became pending during a cycle are tried from the next one, as before.
            self._deferred.append((unit, order))
        else:
            self._queue.activate(unit, order)

    def _probe_class(self, pod_key: str) -> object:
        equivalence = self.scheduler.equivalence_class(pod_key)
        return equivalence if equivalence is not None else pod_key

    def _order_key(self, info: PodInfo) -> OrderKey:
        return (-info.priority, self._created(info), info.sequence, info.key)

    def _schedule_pod(self, pod_key: str, now: float, decisions: list[Decision]) -> Failure | None:
        """Place (or preempt for) one pod; why it waits, or None once bound."""
        outcome, victims = self._schedule_with_preemption(pod_key, now)
        if isinstance(outcome, Placement):
            decisions.extend(victims)
            decisions.append(Bound(pod_key, outcome.node, outcome.allocations, outcome.score))
            return None
        decisions.append(Waiting(pod_key, outcome.message))
        return Failure(outcome.message, pod_key, outcome.diagnosis)

    def _topology_with(self, level: str) -> Topology | None:
        """The Topology (first by name) that has `level` among its levels."""
        for topology in self.topologies.values():
            if any(lvl.node_label == level for lvl in topology.spec.levels):
                return topology
        return None

    def _place_gang(
        self,
        gang: Gang,
        now: float,
        victims: list[Evicted],
        topology: Topology | None = None,
        *,
        preempt: bool = True,
    ) -> GangPlacement | GangUnschedulable:
        """All-or-nothing, inside one topology domain when the pods ask for a level (Kueue TAS).

        Kueue workloads pass `preempt=False`: their preemption is decided by
        admission, on quota, before placement.
        """

        def one(pod_key: str) -> Outcome:
            if not preempt:
                return self.scheduler.schedule(pod_key)
            outcome, evicted = self._schedule_with_preemption(pod_key, now)
            victims.extend(evicted)
            return outcome

        request = topology_request(self.state, gang)
        if request is None:
            return place_gang(self.state, gang, one)
        topology = topology if topology is not None else self._topology_with(request.level)
        if topology is None:
            return GangUnschedulable(
                gang.key, f"pod group {gang.key}: no Topology has the level {request.level}"
            )

        def one_in(pod_key: str, mask: BoolArray, reason: str) -> Outcome:
            if not preempt:
                return self.scheduler.schedule(pod_key, allowed=mask, allowed_reason=reason)
            outcome, evicted = self._schedule_with_preemption(
                pod_key, now, allowed=mask, allowed_reason=reason
            )
            victims.extend(evicted)
            return outcome

        return place_gang_in_topology(
            self.state, self.scheduler, gang, topology, request=request, schedule_one=one_in
        )

    def _gang_class(self, gang: Gang) -> bytes | None:
        """Gangs of one class fit or fail alike: equal sizes and equivalent members (None: no class)."""
        classes = []
        for member in gang.members:
            equivalence = self.scheduler.equivalence_class(member)
            if equivalence is None:
                return None
            classes.append(equivalence)
        return repr((gang.required, gang.declared, sorted(classes))).encode()

    def _schedule_gang(self, gang: Gang, now: float, decisions: list[Decision]) -> Failure | None:
        """Place (or preempt for) a whole gang; why it waits, or None once bound."""
        victims: list[Evicted] = []
        result = self._place_gang(gang, now, victims)
        if isinstance(result, GangPlacement):
            decisions.extend(victims)
            for placement in result.placements:
                decisions.append(
                    Bound(placement.pod_key, placement.node, placement.allocations, placement.score, gang.key)
                )
            return None
        self._park_gang(gang, result.reason, decisions)
        failed = result.failed
        if failed is None:
            # Incomplete: only a new member can change that, and a new member requeues the gang.
            return Failure(result.reason, gang.members[0], None, frozenset({ClusterEventKind.POD_ADDED}))
        return Failure(result.reason, failed.pod_key, failed.diagnosis)

    def _park_gang(self, gang: Gang, reason: str, decisions: list[Decision]) -> None:
        for member in gang.members:
            if not self.state.pods[member].bound:
                decisions.append(Waiting(member, reason, gang.key))

    def _schedule_with_preemption(
        self, pod_key: str, now: float, *, allowed: BoolArray | None = None, allowed_reason: str = ""
    ) -> tuple[Outcome, list[Evicted]]:
        outcome = self.scheduler.schedule(pod_key, allowed=allowed, allowed_reason=allowed_reason)
        if isinstance(outcome, Placement) or not self.policy.preemption:
            return outcome, []
        attempt = self.preemptor.attempt(pod_key, outcome)
        choice = attempt.candidate
        if choice is None:
            diagnosis = dataclasses.replace(outcome.diagnosis, preemption=attempt.message)
            return dataclasses.replace(outcome, diagnosis=diagnosis), []
        evicted: list[Evicted] = []
        with self.state.journal.transaction() as tx:
            for victim in choice.victims:
                evicted.extend(self._evict_pod(victim, PREEMPTED_BY_POD, pod_key, now))
            retry = self.scheduler.schedule(pod_key, allowed=allowed, allowed_reason=allowed_reason)
            if isinstance(retry, Placement):
                tx.commit()
                return dataclasses.replace(retry, victims=tuple((e.pod, e.reason) for e in evicted)), evicted
        return outcome, []

    def _evict_pod(self, pod_key: str, reason: str, preemptor: str, now: float) -> list[Evicted]:
        """Unbind a victim; a pod of an admitted workload takes its whole workload with it."""
        workload = self._workload_of_pod.get(pod_key)
        if workload is not None and self.admission is not None:
            return self._evict_workload(workload, reason, preemptor, now)
        self.state.unbind(pod_key)
        return [Evicted(pod_key, reason, preemptor)]

    # -- Kueue path -----------------------------------------------------------------------

    def _evict_workload(self, workload_key: str, reason: str, preemptor: str, now: float) -> list[Evicted]:
        assert self.admission is not None
        evicted: list[Evicted] = []
        for pod_key in sorted(p for p, w in self._workload_of_pod.items() if w == workload_key):
            if self.state.pods.get(pod_key) is not None and self.state.pods[pod_key].bound:
                self.state.unbind(pod_key)
                evicted.append(Evicted(pod_key, reason, preemptor))
            original = self._original.get(pod_key)
            if original is not None and pod_key in self.state.pods:
                self.state.replace_pod(pod_key, original)  # type: ignore[arg-type]
            self._forget_pod(pod_key)
        self.admission.evict(workload_key, reason, now)
        return evicted

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
                decisions.extend(Waiting(p, reason, workload.key) for p in workload.pods)
                continue
            probes = self._probes(workload.pods)
            group = waits.group_of(workload.key, assignment, probes) if waits is not None else None
            known = waits.waiting_reason(group) if waits is not None else None
            if waits is not None and known is not None:
                # Workloads of its group fail alike and nothing since could help: it waits unplaced.
                admission.park(workload, ParkReason.placement(known))
                waits.park(workload.key, assignment, probes, known)
                decisions.extend(Waiting(p, known, workload.key) for p in workload.pods)
                continue
            failure = ""
            with journal.transaction() as tx:
                evicted: list[Evicted] = []
                if assignment.mode == Mode.PREEMPT:
                    targets = admission.preemption_targets(workload, assignment)
                    if not targets:
                        failure = "quota: not enough quota, and no workload can be preempted to make room"
                    else:
                        for target in targets:
                            evicted.extend(
                                self._evict_workload(
                                    target.workload_key, target.message(workload.key), workload.key, now
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
                    admission.admit(workload, assignment, now)
                    tx.commit()
            if failure:
                quota = failure.startswith("quota:")
                admission.park(
                    workload, ParkReason.quota(failure) if quota else ParkReason.placement(failure)
                )
                if not quota and waits is not None:
                    waits.park(workload.key, assignment, probes, failure)
                decisions.extend(Waiting(p, failure, workload.key) for p in workload.pods)
                self._observe(now, None)
                continue
            decisions.extend(evicted)
            for placement in placements:
                self._workload_of_pod[placement.pod_key] = workload.key
                decisions.append(
                    Bound(
                        placement.pod_key,
                        placement.node,
                        placement.allocations,
                        placement.score,
                        workload.key,
                    )
                )
            flavors = {
                f"{ps.name}/{resource}": choice.flavor
                for ps in assignment.pod_sets
                for resource, choice in sorted(ps.flavors.items())
            }
            decisions.append(Admitted(workload.key, candidate.cluster_queue, flavors, assignment.borrows))
            if waits is not None:
                waits.admitted(workload.key, group)
            self._observe(now, None)

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

    def notify(self, event: Event) -> None:
        if self.admission is not None:
            self.admission.notify(event)


__all__ = ["Engine", "EnginePolicy", "Event", "EventKind"]
