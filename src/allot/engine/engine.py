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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from msgspec.structs import replace

from allot.admission.events import Event, EventKind, ParkReason
from allot.admission.flavors import Mode
from allot.admission.standing import queue_position, workload_pods
from allot.admission.state import AdmissionState
from allot.admission.workload import Workload
from allot.cluster.claims import pod_uid
from allot.cluster.state import ClusterState, PodInfo
from allot.engine.decisions import Admitted, Bound, CycleResult, Deallocated, Decision, Evicted, Waiting
from allot.model.kueue import QUEUE_NAME_LABEL, Topology
from allot.model.timestamps import parse_timestamp
from allot.scheduling.framework import BoolArray
from allot.scheduling.gang import Gang, GangPlacement, GangUnschedulable, gangs, place_gang
from allot.scheduling.preemption import Preemptor
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Outcome, Placement, Scheduler, Unschedulable
from allot.scheduling.topology.tas import place_gang_in_topology, topology_request

PREEMPTED_BY_POD = "Preempted by a higher-priority pod"
# kube-scheduler's reason for a pod that still has scheduling gates (it is not tried at all).
SCHEDULING_GATED = "SchedulingGated: waiting for scheduling gates: {gates}"


def scheduling_gates(info: PodInfo) -> str:
    """The pod's scheduling gates, comma-separated; empty when it may be scheduled."""
    return ", ".join(gate.name for gate in info.pod.spec.scheduling_gates)


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
        # pod -> the `releases` count when it last failed; retried only after something left.
        self._parked: dict[str, tuple[int, str]] = {}
        # Pods of admitted Kueue workloads, and their specs before Kueue edited them.
        self._workload_of_pod: dict[str, str] = {}
        self._original: dict[str, object] = {}
        self._submitted: set[str] = set()
        # Pod creation times (seconds), parsed once.
        self._creation: dict[str, float] = {}
        if self.admission is not None:
            # Workloads that already ran when the admission state was built (restored running).
            for pod_key, workload in workload_pods(self.admission.entries, admitted_only=True).items():
                if pod_key in state.pods:
                    self._workload_of_pod[pod_key] = workload
                    self._submitted.add(pod_key)

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
        fresh = [
            info.pod
            for info in self.state.pending()
            if self.ours(info)
            and self.queued(info)
            and not info.pod.spec.scheduling_gates
            and info.key not in self._submitted
            and info.key not in self._workload_of_pod
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

    def evict(self, pod_key: str, reason: str, now: float) -> list[Evicted]:
        """Take a bound pod off its node (a node failed, a driver stops it); a pod of an
        admitted Kueue workload takes its whole workload with it. Returns every pod evicted."""
        return self._evict_pod(pod_key, reason, "", now)

    def retry(self, pod_key: str) -> None:
        """A waiting pod changed (its spec, labels or claims): try it in the next cycle."""
        self._parked.pop(pod_key, None)

    def pod_deleted(self, pod_key: str) -> None:
        """A pod left the cluster for good: forget what the engine remembered of it, so a new pod
        with the same name starts afresh (drivers call this after removing it from the state)."""
        self._parked.pop(pod_key, None)
        self._creation.pop(pod_key, None)
        self._submitted.discard(pod_key)
        self._original.pop(pod_key, None)

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
        state = self.state
        pending = []
        for info in state.pending():
            if not self.ours(info):
                continue
            gates = scheduling_gates(info)
            if gates:
                decisions.append(Waiting(info.key, SCHEDULING_GATED.format(gates=gates)))
            elif not self.queued(info):
                pending.append(info)
        if not pending:
            return
        # A pod of an admitted Kueue workload is placed alone: its group was admitted as a whole.
        groups = gangs(i for i in pending if i.key not in self._workload_of_pod)
        member_of = {key: gang for gang in groups.values() for key in gang.members}
        done_gangs: set[str] = set()
        # Equivalence class -> (releases, reason) of a pod of that class that failed this cycle.
        failed_classes: dict[bytes, tuple[int, str]] = {}
        for info in self._order(pending):
            if info.node is not None:
                continue
            parked = self._parked.get(info.key)
            if parked is not None and parked[0] == state.releases:
                decisions.append(Waiting(info.key, parked[1]))
                continue
            gang = member_of.get(info.key)
            if gang is not None:
                if gang.key in done_gangs:
                    continue
                done_gangs.add(gang.key)
                gang_class = self._gang_class(gang)
                failed = failed_classes.get(gang_class) if gang_class is not None else None
                previous = self._parked.get(info.key)
                if failed is not None and failed[0] == state.releases and previous is not None:
                    # A gang like this one just failed and nothing left since: it waits, for the
                    # reason it was given when last tried (reasons name the gang's own pods).
                    self._park_gang(gang, previous[1], decisions)
                    continue
                reason = self._schedule_gang(gang, now, decisions)
                if reason is not None and gang_class is not None:
                    failed_classes[gang_class] = (state.releases, reason)
                continue
            # Pods are visited by priority, so the pods bound since an equivalent pod failed have
            # its priority and are no victims: only a release can make this one fit.
            equivalence = self.scheduler.equivalence_class(info.key)
            failed = failed_classes.get(equivalence) if equivalence is not None else None
            if failed is not None and failed[0] == state.releases:
                self._park(info.key, failed[1])
                decisions.append(Waiting(info.key, failed[1]))
                continue
            reason = self._schedule_pod(info.key, now, decisions)
            if reason is not None and equivalence is not None:
                failed_classes[equivalence] = (state.releases, reason)

    def _schedule_pod(self, pod_key: str, now: float, decisions: list[Decision]) -> str | None:
        """Place (or preempt for) one pod; the reason it waits, or None once bound."""
        outcome, victims = self._schedule_with_preemption(pod_key, now)
        if isinstance(outcome, Placement):
            self._parked.pop(pod_key, None)
            decisions.extend(victims)
            decisions.append(Bound(pod_key, outcome.node, outcome.allocations, outcome.score))
            return None
        released = self._release_claims_of(pod_key)
        if released:
            # Tried again next cycle without the allocation that pinned it.
            decisions.extend(released)
        else:
            self._park(pod_key, outcome.message)
        decisions.append(Waiting(pod_key, outcome.message))
        return outcome.message

    def _release_claims_of(self, pod_key: str) -> list[Deallocated]:
        """Allocated claims that only this pending, unschedulable pod reserves (or nobody does)."""
        info = self.state.pods[pod_key]
        uid = pod_uid(info.pod)
        released: list[Deallocated] = []
        for _, claim_key in info.claims:
            claim = self.state.claims.get(claim_key)
            if claim is None or claim.status.allocation is None:
                continue
            if any(ref.uid != uid for ref in claim.status.reserved_for):
                continue
            self.state.release_claim(claim_key, pod_key)
            released.append(Deallocated(claim_key, pod_key))
        return released

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

    def _schedule_gang(self, gang: Gang, now: float, decisions: list[Decision]) -> str | None:
        """Place (or preempt for) a whole gang; the reason it waits, or None once bound."""
        victims: list[Evicted] = []
        result = self._place_gang(gang, now, victims)
        if isinstance(result, GangPlacement):
            decisions.extend(victims)
            for placement in result.placements:
                self._parked.pop(placement.pod_key, None)
                decisions.append(
                    Bound(placement.pod_key, placement.node, placement.allocations, placement.score, gang.key)
                )
            return None
        self._park_gang(gang, result.reason, decisions)
        return result.reason

    def _park_gang(self, gang: Gang, reason: str, decisions: list[Decision]) -> None:
        for member in gang.members:
            if not self.state.pods[member].bound:
                self._park(member, reason)
                decisions.append(Waiting(member, reason, gang.key))

    def _park(self, pod_key: str, reason: str) -> None:
        self._parked[pod_key] = (self.state.releases, reason)

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
        for candidate in admission.candidates(now):
            workload = candidate.workload
            assignment = admission.assign(workload)
            if assignment.mode == Mode.NO_FIT:
                reason = assignment.reason or "; ".join(r for ps in assignment.pod_sets for r in ps.reasons)
                admission.park(workload, ParkReason.quota(reason))
                decisions.extend(Waiting(p, reason, workload.key) for p in workload.pods)
                continue
            failure = ""
            with journal.transaction() as tx:
                evicted: list[Evicted] = []
                if assignment.mode == Mode.PREEMPT:
                    targets = admission.preemption_targets(workload, assignment)
                    if not targets:
                        failure = (
                            f"quota: {assignment.message() or 'not enough quota'}; "
                            "no workload can be preempted to make room"
                        )
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
                kind = ParkReason.quota if failure.startswith("quota:") else ParkReason.placement
                admission.park(workload, kind(failure))
                decisions.extend(Waiting(p, failure, workload.key) for p in workload.pods)
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
