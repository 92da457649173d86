"""The kube-scheduler path of the engine: pods outside Kueue, one unit (pod or gang) at a time.

Units come from the engine's `SchedulingQueue` (`allot.engine.queueing`) in
kube-scheduler's order: priority, creation time, arrival. Each is placed
(gangs all or nothing, inside one topology domain when asked), or, when
nothing fits, default preemption of lower-priority pods is tried; a unit
that still fails waits in the queue's unschedulable set with the event
kinds its rejecting plugins declared (`allot.scheduling.hints`), and
equivalent units wait with it without a search.

`PodPath` is a part of `Engine` (a mixin): it reads the engine's state,
scheduler, policy and queue, declared below.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

from allot.cluster.claims import pod_uid
from allot.cluster.events import ALL_KINDS, ClusterEvent, ClusterEventKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.decisions import Bound, Deallocated, Decision, Evicted, Waiting
from allot.engine.policy import EnginePolicy
from allot.engine.queueing import ClassKey, OrderKey, SchedulingQueue, WaitingClass
from allot.model.kueue import Topology
from allot.model.timestamps import parse_timestamp
from allot.scheduling.diagnosis import Diagnosis
from allot.scheduling.framework import BoolArray
from allot.scheduling.gang import Gang, GangPlacement, GangUnschedulable, gang_key, gangs, place_gang
from allot.scheduling.hints import ANYWHERE, Hints
from allot.scheduling.plugins.dynamic_resources import NAME as DRA_PLUGIN
from allot.scheduling.plugins.resources_fit import dra_backed_resources
from allot.scheduling.preemption import NO_CLAIMS_STATE, Preemptor, post_filter_message
from allot.scheduling.scheduler import Outcome, Placement, Scheduler
from allot.scheduling.topology.tas import place_gang_in_topology, topology_request

PREEMPTED_BY_POD = "Preempted by a higher-priority pod"
GANG_UNIT = "gang:"
# kube-scheduler's reason for a pod that still has scheduling gates (it is not tried at all).
SCHEDULING_GATED = "SchedulingGated: waiting for scheduling gates: {gates}"


def scheduling_gates(info: PodInfo) -> str:
    """The pod's scheduling gates, comma-separated; empty when it may be scheduled."""
    return ", ".join(gate.name for gate in info.pod.spec.scheduling_gates)


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a pod or gang waits: the message, the pod that failed and its diagnosis (if any)."""

    reason: str
    pod: str
    diagnosis: Diagnosis | None
    kinds: frozenset[ClusterEventKind] = ALL_KINDS
    # For a gang: how many of its members fit (None: not known).
    placed: int | None = None
    # Claims were released for it: tried again next cycle rather than waiting for an event.
    again: bool = False


class PodPath:
    """The engine's kube-scheduler path (see the module docstring)."""

    state: ClusterState
    scheduler: Scheduler
    preemptor: Preemptor
    policy: EnginePolicy
    topologies: dict[str, Topology]
    _queue: SchedulingQueue
    _hints: Hints
    _groups: dict[str, set[str]]
    _gang_reasons: dict[str, str]
    _deferred: list[tuple[str, OrderKey]]
    _gated: set[str]
    _orphaned: set[str]
    _workload_of_pod: dict[str, str]
    _creation: dict[str, float]

    def ours(self, info: PodInfo) -> bool:
        raise NotImplementedError

    def queued(self, info: PodInfo) -> bool:
        raise NotImplementedError

    def _observe(self, now: float, position: OrderKey | None) -> None:
        raise NotImplementedError

    def _evict_pod(self, pod_key: str, reason: str, preemptor: str, now: float) -> list[Evicted]:
        raise NotImplementedError

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
        for key in sorted(self._gated):
            info = self.state.pods.get(key)
            if info is None or info.bound:
                self._gated.discard(key)
            else:
                decisions.append(Waiting(key, SCHEDULING_GATED.format(gates=scheduling_gates(info))))
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
        if self._no_longer_fits(pod_key, order, klass, (pod_key,)):
            return
        failure = self._schedule_pod(pod_key, now, decisions)
        if failure is None:
            self._queue.fitted(klass)
            return
        if failure.again:
            self._deferred.append((pod_key, order))
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
        if self._no_longer_fits(unit, order, klass, self._probes(gang.members)):
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

    def _no_longer_fits(self, unit: str, order: OrderKey, klass: ClassKey, probes: tuple[str, ...]) -> bool:
        """A unit woken by changes on some nodes that fits none of them now (pods placed since took
        the room) goes back to waiting without an attempt: every other node still rejects it."""
        nodes = self._queue.woken_by(klass)
        if not nodes:
            return False
        preempting = self.policy.preemption
        waiting = self._queue.waiting(klass)
        if unit.startswith(GANG_UNIT) and waiting is not None and waiting.missing is not None:
            if self._gang_room(unit, waiting, preempting):
                return False
        elif any(self._hints.fits_on(p, n, preempting=preempting) for p in probes for n in sorted(nodes)):
            return False
        self._queue.back_to_sleep(unit, order, klass)
        return True

    def _gang_room(self, unit: str, waiting: WaitingClass, preempting: bool) -> bool:
        """Whether the nodes changed since a gang's class failed could take the members it lacked.

        Its other members fit, at best, where they fit then (every other node is unchanged), so
        the gang can fit only if the changed nodes host the missing ones between them. Nodes
        count from the failure on: room on one node now and on another later add up. A node's
        room is counted again only when it changes (counted high, never low: binds elsewhere
        only take room)."""
        assert waiting.missing is not None
        missing = waiting.missing
        if not waiting.changed:
            return sum(waiting.room.values()) >= missing  # nothing to count again
        members = sorted(self._groups.get(unit[len(GANG_UNIT) :], ()))
        # Untouched GPUs bound the room from above at the cost of a count: when even the bounds do
        # not add up to the members missing, no member is bound to find the exact room.
        state = self.state
        pending = [state.pods[k] for k in members if k in state.pods and not state.pods[k].bound]
        requests = self._hints.whole_requests(pending)
        hints = self._hints
        rooms: dict[int, int] = {}
        bounded: list[int] = []
        for node in sorted(waiting.changed):
            bound = hints.room_bound(pending, requests, node, preempting=preempting, limit=missing)
            if bound is None:  # the count cannot tell: counted exactly
                rooms[node] = hints.members_fitting(members, node, preempting=preempting, limit=missing)
            else:
                rooms[node] = bound
                bounded.append(node)
        waiting.changed.clear()
        unchanged = sum(room for node, room in waiting.room.items() if node not in rooms)
        if unchanged + sum(rooms.values()) >= missing:
            for node in bounded:
                if rooms[node]:
                    # The exact count never exceeds the bound: binding stops there rather than
                    # trying (and failing) one member more.
                    limit = min(missing, rooms[node])
                    rooms[node] = hints.members_fitting(members, node, preempting=preempting, limit=limit)
        waiting.room.update(rooms)
        return sum(waiting.room.values()) >= missing

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
        preempting = self.policy.preemption and (
            failure.pod not in self.state.pods or self.scheduler.runs_preemption(failure.pod)
        )
        kinds = failure.kinds
        anywhere: frozenset[ClusterEventKind] = frozenset()
        if failure.diagnosis is not None:
            kinds = self._hints.wake_kinds(failure.pod, failure.diagnosis, preempting=preempting)
            anywhere = self._hints.anywhere_kinds(failure.pod, failure.diagnosis)
        elif any(self._hints.depends_on_other_nodes(p) for p in probes):
            anywhere = ANYWHERE
        self._queue.park(
            unit,
            order,
            klass,
            reason=failure.reason,
            kinds=kinds,
            anywhere=anywhere,
            preempting=preempting,
            priority=priority,
            probes=probes,
            now=now,
            missing=self._missing_members(unit, failure),
        )

    def _missing_members(self, unit: str, failure: Failure) -> int | None:
        if not unit.startswith(GANG_UNIT) or failure.placed is None:
            return None
        group = unit[len(GANG_UNIT) :]
        pending = [self.state.pods[k] for k in self._groups.get(group, ()) if k in self.state.pods]
        gang = gangs(pending).get(group)
        return gang.required - failure.placed if gang is not None else None

    def _hint(self, unit: str, waiting: WaitingClass, events: list[ClusterEvent]) -> bool:
        """Whether these events could let the class of `unit` fit (see `allot.scheduling.hints`)."""
        preempting = waiting.preempting
        if any(e.kind in waiting.anywhere for e in events):
            # Its verdict can change on nodes other than the event's (inter-pod affinity, spreading).
            return True
        useful = [
            e
            for e in events
            # A pod bound elsewhere helps only a preemptor that outranks it.
            if e.kind is not ClusterEventKind.POD_BOUND
            or (preempting and (e.priority or 0) < waiting.priority)
        ]
        if not useful:
            return False
        if unit.startswith(GANG_UNIT) and waiting.missing is not None and all(e.local for e in useful):
            return self._gang_room(unit, waiting, preempting)
        pods = self.state.pods
        pending = tuple(p for p in waiting.probes if p in pods and not pods[p].bound)
        if not pending:
            # The pods it failed with were placed since: ask the unit's own pods.
            if unit.startswith(GANG_UNIT):
                pending = self._probes(self._groups.get(unit[len(GANG_UNIT) :], ()))
            else:
                pending = (unit,)
        return any(self._hints.could_help(p, useful, preempting=preempting) for p in pending)

    def _enqueue_pod(self, pod_key: str, *, deferred: bool) -> None:
        """A pod that is pending (again) and ours goes in line, alone or with its gang."""
        info = self.state.pods.get(pod_key)
        if (
            info is None
            or info.bound
            or not self.ours(info)
            or self.queued(info)
            or pod_key in self._orphaned
        ):
            return
        if info.pod.spec.scheduling_gates:
            self._gated.add(pod_key)
            return
        # A pod of an admitted Kueue workload is placed alone: its group was admitted as a whole.
        group = gang_key(info) if pod_key not in self._workload_of_pod else None
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
            decisions.append(
                Bound(pod_key, outcome.node, outcome.allocations, outcome.score, failure=outcome.failure)
            )
            return None
        released = self._release_claims_of(pod_key)
        # Tried again next cycle without the allocation that pinned it.
        decisions.extend(released)
        decisions.append(Waiting(pod_key, outcome.message))
        return Failure(outcome.message, pod_key, outcome.diagnosis, again=bool(released))

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
        return Failure(result.reason, failed.pod_key, failed.diagnosis, placed=result.placed)

    def _park_gang(self, gang: Gang, reason: str, decisions: list[Decision]) -> None:
        for member in gang.members:
            if not self.state.pods[member].bound:
                decisions.append(Waiting(member, reason, gang.key))

    def _schedule_with_preemption(
        self, pod_key: str, now: float, *, allowed: BoolArray | None = None, allowed_reason: str = ""
    ) -> tuple[Outcome, list[Evicted]]:
        outcome = self.scheduler.schedule(pod_key, allowed=allowed, allowed_reason=allowed_reason)
        if isinstance(outcome, Placement):
            return outcome, []
        profile = self.scheduler.profile_of(pod_key)
        dra = profile is not None and profile.claims_post_filter
        rejected_by = (
            outcome.diagnosis.pre_filter.plugin if outcome.diagnosis.pre_filter is not None else None
        )
        if dra and rejected_by and self.scheduler.pre_filtered_before(pod_key, rejected_by, DRA_PLUGIN):
            diagnosis = dataclasses.replace(outcome.diagnosis, preemption=NO_CLAIMS_STATE)
            return dataclasses.replace(outcome, diagnosis=diagnosis), []
        has_claims = dra and rejected_by != DRA_PLUGIN and _has_claims(self.state, self.state.pods[pod_key])
        if not self.policy.preemption or not self.scheduler.runs_preemption(pod_key):
            if not dra:
                return outcome, []
            diagnosis = dataclasses.replace(
                outcome.diagnosis, preemption=post_filter_message(dra, has_claims, "")
            )
            return dataclasses.replace(outcome, diagnosis=diagnosis), []
        attempt = self.preemptor.attempt(pod_key, outcome)
        choice = attempt.candidate
        if choice is None:
            message = post_filter_message(dra, has_claims, attempt.message)
            diagnosis = dataclasses.replace(outcome.diagnosis, preemption=message)
            return dataclasses.replace(outcome, diagnosis=diagnosis), []
        evicted: list[Evicted] = []
        with self.state.journal.transaction() as tx:
            for victim in choice.victims:
                evicted.extend(self._evict_pod(victim, PREEMPTED_BY_POD, pod_key, now))
            retry = self.scheduler.schedule(pod_key, allowed=allowed, allowed_reason=allowed_reason)
            if isinstance(retry, Placement):
                tx.commit()
                placed = dataclasses.replace(
                    retry, victims=tuple((e.pod, e.reason) for e in evicted), failure=outcome.message
                )
                return placed, evicted
        return outcome, []


def _has_claims(state: ClusterState, info: PodInfo) -> bool:
    """Whether DynamicResources holds claims for the pod: its own, or one for the extended
    resources it asks for that a DeviceClass serves."""
    return bool(info.claims) or not dra_backed_resources(state).isdisjoint(info.requests)
