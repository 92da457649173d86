"""Queueing hints for Kueue workloads that fit their quota but not the nodes.

Admission parks a workload whose quota fits but whose pods could not all be
placed (`ParkKind.PLACEMENT`). Kueue itself never places, so when to try
again is allot's choice; these are the same hints the engine uses for pods
(`allot.scheduling.hints`), asked for the workload's pods:

* an event without a node (devices in shared pools, claims, slices,
  classes), or a node added: try again;
* the workload was parked with quota to preempt (its placement ran after
  evicting quota victims): any pod leaving, node change or quota change
  could change which victims and which room, so try again;
* a workload whose pods other pods can keep from a node (inter-pod
  affinity, spreading, volumes, or bound pods with anti-affinity): any pod
  bound, leaving or changing, or node change, anywhere: try again;
* otherwise its quota fit outright, so placement depended on the nodes
  alone: a pod leaving node n or n changing helps only if one of its pods
  now fits n; and a quota change helps only if its flavor assignment is no
  longer the one it failed with (asked once per quota generation and per
  Kueue equivalence class, not per workload).

A workload requeued also requeues every waiting workload ahead of it in its
queue (same ClusterQueue, and same LocalQueue where admission fair sharing
orders by LocalQueue): Kueue's cycle offers a queue's *head* to the fair
sharing tournament, so a workload that will fail still decides, as the
head, which queue wins; skipping it would let the one behind it compete in
its place and change the order. Those requeued only for their place in line
and whose group is known to fail are parked again without a placement try;
those already offered in this cycle stay parked, as they would had every
workload been in line since the cycle began. Every speaker of a group is
judged before any is requeued, so a group whose speaker was taken back into
line by another's wake is still woken.

Workloads with the same ClusterQueue, LocalQueue, Kueue equivalence
(priority and pod-set shapes), flavor assignment (mode and flavors) and pod
classes form a *group*: they fit or fail alike, whatever the nodes. That
holds for workloads that must preempt too: the same quota gives them the
same victims (their timestamps join the group where an equal-priority newer
workload may be preempted, as the victims then depend on it). A group waits
as one: woken, its first member (in queue order) is requeued; each member
admitted requeues the next, and so does a member whose turn ends otherwise
than failing in the group again (parked for quota, admitted by a
consolidation move, deleted); a workload of a group that failed and was not
woken since waits without a placement attempt. A wake lasts until the group
fails again, across cycles: the consolidation phase observes its moves
after the admission phase, and the group it wakes is tried next cycle.

`hints=False` requeues every parked workload every cycle, one by one, with
no group short cut: the reference the hints are tested against.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from allot.admission.flavors import Assignment, Mode
from allot.admission.queues import SortKey
from allot.admission.state import AdmissionState
from allot.admission.targets import timestamp_matters
from allot.cluster.events import NODE_EVENTS, NODE_LOCAL, POD_EVENTS, ClusterEvent, ClusterEventKind

# Kinds that can give a placement-parked workload room: the rest (binds, arrivals) cannot.
_HELPFUL = frozenset(ClusterEventKind) - {ClusterEventKind.POD_BOUND, ClusterEventKind.POD_ADDED}
# Kinds that can change a verdict on every node for pods placed by other pods.
_ANYWHERE = NODE_EVENTS | POD_EVENTS


Group = tuple[object, ...]
# A workload's line (ClusterQueue, LocalQueue or "") and its place in it (the queue's sort key).
Line = tuple[str, str]


@dataclass(slots=True)
class _Wait:
    cluster_queue: str
    shape: tuple[object, ...]
    # Workloads that fit quota outright, grouped (None: waits alone, e.g. it had to preempt).
    group: Group | None
    # One pod per distinct pod class of the workload: what a node change is re-checked with.
    probes: tuple[str, ...]
    preempting: bool
    assignment: tuple[object, ...]
    generation: int
    line: Line
    place: SortKey
    # Where it stands in its group (`_groups`: order time, key).
    order_time: float = 0.0
    # Its pods can be kept from a node by pods elsewhere: pod and node events anywhere wake it.
    anywhere: bool = False


def assignment_signature(assignment: Assignment) -> tuple[object, ...]:
    """What placement depends on in an assignment: its mode and each pod set's flavors."""
    flavors = tuple(sorted((ps.name, tuple(sorted(ps.flavor_names()))) for ps in assignment.pod_sets))
    return (assignment.mode, flavors)


class PlacementWaits:
    """Workloads parked for placement, and the judgement of which events wake them."""

    def __init__(
        self,
        admission: AdmissionState,
        fits_on: Callable[[str, int], bool],
        probe_class: Callable[[str], object],
        *,
        hints: bool = True,
        depends_on_others: Callable[[str], bool] = lambda pod: False,
    ) -> None:
        self.admission = admission
        self.fits_on = fits_on
        self.probe_class = probe_class
        self.depends_on_others = depends_on_others
        self.hints = hints
        self._waits: dict[str, _Wait] = {}
        self._class_texts: dict[object, str] = {}
        # group -> (order time, key) of its waiting members; the reason the group failed with.
        self._groups: dict[Group, list[tuple[float, str]]] = {}
        self._reasons: dict[Group, str] = {}
        # Groups woken and not failed since: a member admitted requeues the next, and a member that
        # comes to the head of its queue is tried. A wake outlives the cycle it came in (the
        # consolidation phase wakes groups after the admission phase; they are tried next cycle).
        self._awake: set[Group] = set()
        # Members a group's wake requeued, until their turn ends (parked, admitted or gone).
        self._woken: dict[str, Group] = {}
        self._generation = admission.tree.generation
        # Waiting workloads outside any group.
        self._solo: set[str] = set()
        # Every waiting workload by line, in queue order: (place, key).
        self._lines: dict[Line, list[tuple[SortKey, str]]] = {}
        # Workloads parked since the cycle began: already offered in this cycle.
        self._offered: set[str] = set()
        # How many waiting workloads have pods other pods can keep from a node (`_Wait.anywhere`).
        self._anywhere = 0
        admission.wake_placement = False

    def __len__(self) -> int:
        return len(self._waits)

    def group_of(self, key: str, assignment: Assignment, probes: tuple[str, ...]) -> Group | None:
        """The group of a pending workload with this assignment (None when it does not fit quota)."""
        entry = self.admission.entries.get(key)
        if entry is None or entry.cluster_queue is None or assignment.mode is Mode.NO_FIT:
            return None
        classes = tuple(sorted(self._class_text(self.probe_class(p)) for p in probes))
        # Victims depend on the preemptor's queue, priority and usage, and on its timestamp only
        # where an equal-priority newer workload may be preempted.
        stamp = entry.order_time if self._stamped(assignment) else None
        return (
            entry.cluster_queue,
            entry.local_queue,
            entry.equivalence(),
            assignment_signature(assignment),
            classes,
            stamp,
        )

    def _class_text(self, klass: object) -> str:
        """A probe class as text (classes are bytes or pod keys, which do not sort together), kept:
        an encoded class is long, and the same few are asked for at every park."""
        known = self._class_texts.get(klass)
        if known is None:
            if len(self._class_texts) >= 100_000:
                self._class_texts.clear()
            known = self._class_texts[klass] = repr(klass)
        return known

    def _stamped(self, assignment: Assignment) -> bool:
        return assignment.mode is Mode.PREEMPT and timestamp_matters(
            self.admission.policies[assignment.cluster_queue]
        )

    def waiting_reason(self, group: Group | None) -> str | None:
        """Why a workload of `group` would fail now, if its group failed and was not woken since."""
        if group is None or group in self._awake:
            return None
        return self._reasons.get(group) if self._groups.get(group) else None

    def park(self, key: str, assignment: Assignment, probes: tuple[str, ...], reason: str) -> None:
        entry = self.admission.entries[key]
        assert entry.cluster_queue is not None
        group = self.group_of(key, assignment, probes)
        self.forget(key)
        self._pass_turn(key, unless=group)
        queue = self.admission.queues[entry.cluster_queue]
        line = (entry.cluster_queue, entry.local_queue if queue.by_local_queue else "")
        place = queue.sort_key(key)
        assert place is not None, f"{key} is pending but not in its queue"
        bisect.insort(self._lines.setdefault(line, []), (place, key))
        self._offered.add(key)
        self._waits[key] = _Wait(
            cluster_queue=entry.cluster_queue,
            shape=entry.equivalence(),
            group=group,
            probes=probes,
            preempting=assignment.mode is Mode.PREEMPT,
            assignment=assignment_signature(assignment),
            generation=self.admission.tree.generation,
            line=line,
            place=place,
            order_time=entry.order_time,
            anywhere=any(self.depends_on_others(p) for p in probes),
        )
        if self._waits[key].anywhere:
            self._anywhere += 1
        if group is None:
            self._solo.add(key)
        else:
            self._awake.discard(group)
            self._reasons[group] = reason
            bisect.insort(self._groups.setdefault(group, []), (entry.order_time, key))

    def forget(self, key: str) -> None:
        wait = self._waits.pop(key, None)
        self._solo.discard(key)
        if wait is None:
            return
        if wait.anywhere:
            self._anywhere -= 1
        waiting = self._lines[wait.line]
        del waiting[bisect.bisect_left(waiting, (wait.place, key))]
        if not waiting:
            del self._lines[wait.line]
        if wait.group is None:
            return
        members = self._groups.get(wait.group, [])
        at = bisect.bisect_left(members, (wait.order_time, key))
        if at < len(members) and members[at] == (wait.order_time, key):
            del members[at]
        if not members:
            self._groups.pop(wait.group, None)
            self._reasons.pop(wait.group, None)
            self._awake.discard(wait.group)

    def admitted(self, key: str, group: Group | None) -> None:
        """A workload was admitted: the next member of its woken group gets its turn."""
        self.forget(key)
        self._pass_turn(key, unless=group)
        if group is not None and group in self._awake:
            self._wake_head(group)

    def turn_ended(self, key: str) -> None:
        """A workload no longer waits for room (parked for quota, admitted by a move, deleted): if a
        wake had requeued it, the next member of its group gets the turn it would have passed on."""
        self.forget(key)
        self._pass_turn(key)

    def _pass_turn(self, key: str, unless: Group | None = None) -> None:
        # A turn that ended in `unless` (the group failed again or admitted it) passes on there.
        woken = self._woken.pop(key, None)
        if woken is not None and woken != unless and woken in self._awake:
            self._wake_head(woken)

    def begin_cycle(self) -> None:
        self._offered.clear()
        if not self.hints:
            for key in sorted(self._waits):
                self.forget(key)
                self.admission.requeue(key)

    def observe(self, events: list[ClusterEvent]) -> None:
        """Requeue the waiting workloads these events could help."""
        if not self._waits:
            return
        helpful = [e for e in events if e.kind in _HELPFUL]
        moved = self._anywhere > 0 and any(e.kind in _ANYWHERE for e in events)
        generation = self.admission.tree.generation
        if not helpful and not moved and generation == self._generation:
            return
        self._generation = generation
        anywhere = any(not e.local or e.kind is ClusterEventKind.NODE_ADDED for e in helpful)
        nodes = sorted({e.node for e in helpful if e.kind in NODE_LOCAL and e.node is not None})
        fits: dict[tuple[object, int], bool] = {}
        assignments: dict[tuple[str, tuple[object, ...]], tuple[object, ...]] = {}
        # One member speaks for its group: they fit or fail alike.
        # Awake groups too: the member a wake requeued may have been admitted or changed group
        # without the chain reaching the others.
        speakers = [members[0][1] for members in self._groups.values()]
        # Judge every speaker before requeueing any: a requeue also takes the workloads ahead of it
        # in line out of their groups, and a group whose speaker left before its turn was never judged.
        woken: list[tuple[str, Group | None]] = []
        for key in sorted({*self._solo, *speakers}):
            wait = self._waits[key]
            if (
                anywhere
                or (wait.anywhere and moved)
                or (wait.preempting and (helpful or wait.generation != generation))
            ):
                woken.append((key, wait.group))
                continue
            if wait.generation != generation and self._assignment_changed(key, wait, assignments):
                woken.append((key, wait.group))
                continue
            wait.generation = generation
            if nodes and any(self._fits(p, n, fits) for p in wait.probes for n in nodes):
                woken.append((key, wait.group))
        for key, group in woken:
            self._wake(key, group)

    def _fits(self, pod: str, node: int, cache: dict[tuple[object, int], bool]) -> bool:
        klass = (self.probe_class(pod), node)
        found = cache.get(klass)
        if found is None:
            found = cache[klass] = self.fits_on(pod, node)
        return found

    def _assignment_changed(
        self, key: str, wait: _Wait, cache: dict[tuple[str, tuple[object, ...]], tuple[object, ...]]
    ) -> bool:
        group = (wait.cluster_queue, wait.shape)
        signature = cache.get(group)
        if signature is None:
            entry = self.admission.entries.get(key)
            if entry is None:
                return True
            signature = cache[group] = assignment_signature(self.admission.assign(entry.workload))
        return signature != wait.assignment

    def _wake(self, key: str, group: Group | None) -> None:
        if group is not None:
            # The group wakes even if its speaker is already back in line (taken with one behind it).
            self._awake.add(group)
            self._wake_head(group)
        elif key in self._waits:
            self._requeue(key)

    def _wake_head(self, group: Group) -> None:
        members = self._groups.get(group)
        if not members:
            return
        head = members[0][1]
        self._requeue(head)
        self._woken[head] = group

    def _requeue(self, key: str) -> None:
        """Back in line: `key` and every waiting workload ahead of it in its queue."""
        wait = self._waits[key]
        waiting = self._lines[wait.line]
        # Those ahead that were offered in this cycle already stay parked, as they would have
        # been had everything been in line since the cycle began.
        ahead = [
            k for _, k in waiting[: bisect.bisect_left(waiting, (wait.place, key))] if k not in self._offered
        ]
        for k in [*ahead, key]:
            self.forget(k)
            self.admission.requeue(k)
