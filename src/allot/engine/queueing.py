"""The engine's scheduling queue: active, unschedulable and backing-off work, as kube-scheduler keeps it.

A *unit* is what the engine tries in one go: a pod, or a gang (key
`gang:<namespace>/<group>`). Units wait in one of three places:

* the **active** heap, in kube-scheduler's order (priority, creation time,
  arrival, key): tried this cycle;
* the **unschedulable** set, grouped by equivalence class: a unit that
  failed, and every unit equivalent to it (same spec, claims, priority,
  trust domain), wait there together with the event kinds that could
  change their verdict (`allot.scheduling.hints`). When such an event
  comes and its hint says it could help, the class is woken: its first
  member goes to the active heap, and each member that then fits brings
  the next one in, so a class of a thousand pods costs one try while
  nothing changes, not a thousand;
* the **backoff** heap: a woken class whose last failure is younger than
  its backoff (kube-scheduler's 1 s initial, doubling up to 10 s) waits
  there first. A class that waited `max_unschedulable` (5 minutes) is
  woken without an event, kube-scheduler's safety net.

Times are the caller's numbers; the queue reads no clock. `QueueingConfig.
exact()` turns backoff and the safety net off (the simulator: every retry
then happens at an event the hints judged, and decisions equal those of
retrying everything every cycle). `hints=False` retries every unschedulable
class every cycle, the reference the hints are tested against.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from allot.cluster.events import ClusterEvent, ClusterEventKind

# (-priority, creation time, arrival sequence, unit key): kube-scheduler's queue order.
OrderKey = tuple[int, float, int, str]
ClassKey = bytes | str
# Whether events of the kinds a class waits for could let it fit (the scheduler's hints).
# Called with the class's first waiting unit and the class (its pods to re-check may have been placed
# since), and the relevant events; whether they could let it fit.
Hint = Callable[[str, "WaitingClass", list[ClusterEvent]], bool]
# The nodes whose changes woke a class (None: something not tied to a node, or no event at all).
WakeNodes = frozenset[int] | None


@dataclass(frozen=True, slots=True)
class QueueingConfig:
    """kube-scheduler's defaults; times in the caller's units (seconds)."""

    hints: bool = True
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    # podMaxInUnschedulablePodsDuration; None: never woken without an event.
    max_unschedulable: float | None = 300.0

    @classmethod
    def exact(cls, *, hints: bool = True) -> QueueingConfig:
        """No backoff and no safety net: retries only when an event could help (simulations)."""
        return cls(hints=hints, initial_backoff=0.0, max_backoff=0.0, max_unschedulable=None)

    def backoff(self, attempts: int) -> float:
        if self.initial_backoff <= 0 or attempts <= 0:
            return 0.0
        return float(min(self.max_backoff, self.initial_backoff * 2.0 ** (attempts - 1)))


@dataclass(slots=True)
class WaitingClass:
    """Units of one equivalence class waiting for an event."""

    reason: str
    kinds: frozenset[ClusterEventKind]
    preempting: bool
    priority: int
    # Pods to re-check on a changed node (one per distinct pod class of the unit).
    probes: tuple[str, ...]
    since: float
    attempts: int
    # Gangs: members that did not fit when the class failed (None: not a gang, or not known).
    missing: int | None = None
    # Kinds among `kinds` whose events can change its verdict on nodes other than theirs.
    anywhere: frozenset[ClusterEventKind] = frozenset()
    members: list[tuple[OrderKey, str]] = field(default_factory=list)
    # Gangs: nodes changed by events of its kinds whose room is not counted yet, and the room
    # (members each could host) counted on nodes changed since the class failed.
    changed: set[int] = field(default_factory=set)
    room: dict[int, int] = field(default_factory=dict)


class SchedulingQueue:
    """Active heap, unschedulable classes and backoff; see the module docstring."""

    def __init__(self, config: QueueingConfig) -> None:
        self.config = config
        self._active: list[tuple[OrderKey, str]] = []
        self._queued: set[str] = set()
        self._parked: dict[ClassKey, WaitingClass] = {}
        self._class_of: dict[str, ClassKey] = {}
        # Classes woken this cycle: a member that fits brings in the next one.
        self._awake: set[ClassKey] = set()
        # Classes woken mid-cycle whose earlier members are retried next cycle.
        self._next_cycle: set[ClassKey] = set()
        # (due, class key's type, class key): keys are bytes (equivalence classes) or str (pods,
        # gangs), which do not compare, and classes parked in one cycle fall due at one time.
        self._backoff: list[tuple[float, bool, ClassKey]] = []
        self._attempts: dict[ClassKey, int] = {}
        self._woken_by: dict[ClassKey, WakeNodes] = {}

    # -- membership ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._queued) + sum(len(c.members) for c in self._parked.values())

    def activate(self, unit: str, order: OrderKey) -> None:
        """Put a unit in line for this cycle (new, changed, or pending again)."""
        self._unpark(unit)
        if unit not in self._queued:
            self._queued.add(unit)
            heapq.heappush(self._active, (order, unit))

    def pop(self) -> tuple[OrderKey, str] | None:
        while self._active:
            order, unit = heapq.heappop(self._active)
            if unit in self._queued:
                self._queued.discard(unit)
                return order, unit
        return None

    def parked_class(self, klass: ClassKey) -> str | None:
        """The reason a class waits, if it is unschedulable and was not woken this cycle."""
        parked = self._parked.get(klass)
        if parked is None or klass in self._awake:
            return None
        return parked.reason

    def join(self, unit: str, order: OrderKey, klass: ClassKey) -> None:
        """Wait with an unschedulable class without being tried (an equivalent unit just failed)."""
        parked = self._parked[klass]
        bisect.insort(parked.members, (order, unit))
        self._class_of[unit] = klass

    def waiting(self, klass: ClassKey) -> WaitingClass | None:
        return self._parked.get(klass)

    def woken_by(self, klass: ClassKey) -> WakeNodes:
        """The nodes whose changes woke this class this cycle, when only node changes did."""
        return self._woken_by.get(klass) if klass in self._awake else None

    def back_to_sleep(self, unit: str, order: OrderKey, klass: ClassKey) -> None:
        """A woken unit that no longer fits the nodes that woke it: its class waits on, unchanged."""
        parked = self._parked.get(klass)
        self._awake.discard(klass)
        if parked is None:
            return
        bisect.insort(parked.members, (order, unit))
        self._class_of[unit] = klass

    def park(
        self,
        unit: str,
        order: OrderKey,
        klass: ClassKey,
        *,
        reason: str,
        kinds: frozenset[ClusterEventKind],
        preempting: bool,
        priority: int,
        probes: tuple[str, ...],
        now: float,
        missing: int | None = None,
        anywhere: frozenset[ClusterEventKind] = frozenset(),
    ) -> None:
        """A unit failed: it and its class wait for an event of `kinds` (of `anywhere`: wherever
        it happens, all nodes may have changed for it)."""
        self._awake.discard(klass)
        attempts = self._attempts.get(klass, 0) + 1
        self._attempts[klass] = attempts
        parked = self._parked.get(klass)
        if parked is None:
            parked = self._parked[klass] = WaitingClass(
                reason, kinds, preempting, priority, probes, now, attempts
            )
        else:
            parked.reason, parked.kinds, parked.preempting = reason, kinds, preempting
            parked.probes, parked.since, parked.attempts = probes, now, attempts
        parked.missing = missing
        parked.anywhere = anywhere
        parked.changed = set()
        parked.room = {}
        bisect.insort(parked.members, (order, unit))
        self._class_of[unit] = klass

    def fitted(self, klass: ClassKey | None) -> None:
        """A unit of `klass` was placed: the next member of a woken class gets its turn."""
        if klass is None:
            return
        self._attempts.pop(klass, None)
        if klass in self._awake:
            self._release_head(klass, None)

    # -- waking ----------------------------------------------------------------------

    def begin_cycle(self, now: float) -> None:
        """Classes due now: woken mid-cycle last time, backoff over, or waiting too long."""
        self._awake.clear()
        self._woken_by.clear()
        due = sorted(self._next_cycle, key=repr)
        self._next_cycle.clear()
        while self._backoff and self._backoff[0][0] <= now:
            due.append(heapq.heappop(self._backoff)[2])
        limit = self.config.max_unschedulable
        if not self.config.hints:
            due.extend(self._parked)
        elif limit is not None:
            due.extend(k for k, c in self._parked.items() if now - c.since >= limit)
        for klass in due:
            self._wake(klass, None, now)

    def observe(self, events: list[ClusterEvent], hint: Hint, position: OrderKey | None, now: float) -> None:
        """Wake the classes these events could help; mid-cycle (`position` set) only later members now."""
        if not events or not self._parked:
            return
        kinds = {e.kind for e in events}
        for klass in list(self._parked):
            parked = self._parked.get(klass)
            if parked is None or not (parked.kinds & kinds):
                continue
            relevant = [e for e in events if e.kind in parked.kinds]
            if parked.missing is not None:
                parked.changed.update(
                    e.node
                    for e in relevant
                    if e.local and e.node is not None and e.kind not in parked.anywhere
                )
            if not parked.members:
                continue
            awake = klass in self._awake
            known = self._woken_by.get(klass)
            if awake and known is None:
                continue  # its released member will be tried on every node
            nodes: WakeNodes = None
            if all(e.local and e.kind not in parked.anywhere for e in relevant):
                nodes = frozenset(e.node for e in relevant if e.node is not None)
            if awake and nodes is not None and known is not None and nodes <= known:
                continue
            if not hint(parked.members[0][1], parked, relevant):
                continue
            if awake:
                # Its released member has not had its turn yet: the nodes it may check at its turn
                # grow by these (a member woken for room that others took may find room here).
                self._widen(klass, nodes)
                continue
            self._wake(klass, position, now, nodes)

    def _widen(self, klass: ClassKey, nodes: WakeNodes) -> None:
        known = self._woken_by.get(klass)
        self._woken_by[klass] = None if known is None or nodes is None else known | nodes

    def _wake(self, klass: ClassKey, position: OrderKey | None, now: float, nodes: WakeNodes = None) -> None:
        parked = self._parked.get(klass)
        if parked is None:
            return
        if klass in self._awake:
            self._widen(klass, nodes)
        else:
            self._woken_by[klass] = nodes
        wait = self.config.backoff(parked.attempts)
        if position is None and wait > 0 and now < parked.since + wait:
            heapq.heappush(self._backoff, (parked.since + wait, isinstance(klass, str), klass))
            return
        if position is not None and parked.members and parked.members[0][0] <= position:
            self._next_cycle.add(klass)
        self._awake.add(klass)
        self._release_head(klass, position)

    def _release_head(self, klass: ClassKey, position: OrderKey | None) -> None:
        parked = self._parked.get(klass)
        if parked is None:
            return
        members = parked.members
        start = 0 if position is None else bisect.bisect_right(members, (position, "\uffff"))
        if start < len(members):
            order, unit = members.pop(start)
            del self._class_of[unit]
            self._queued.add(unit)
            heapq.heappush(self._active, (order, unit))
        if not members:
            del self._parked[klass]
            self._awake.discard(klass)

    def _unpark(self, unit: str) -> None:
        klass = self._class_of.pop(unit, None)
        if klass is None:
            return
        parked = self._parked[klass]
        parked.members = [m for m in parked.members if m[1] != unit]
        if not parked.members:
            del self._parked[klass]

    def forget(self, units: Iterable[str]) -> None:
        """Units that are gone (deleted, bound elsewhere)."""
        for unit in units:
            self._queued.discard(unit)
            self._unpark(unit)

    def next_wakeup(self) -> float | None:
        """When the queue wants a cycle without an event (backoff over, safety net); None: never."""
        times = [self._backoff[0][0]] if self._backoff else []
        limit = self.config.max_unschedulable
        if limit is not None and self.config.hints and self._parked:
            times.append(min(c.since for c in self._parked.values()) + limit)
        return min(times) if times else None
