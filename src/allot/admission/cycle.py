"""One admission cycle: which pending workload the engine should consider next.

Kueue's scheduler loop, steps 1, 3 and 4 (pkg/scheduler/scheduler.go):

1. Heads: each active ClusterQueue offers its head. A head is *nominated*
   with its flavor assignment; a head whose assignment is NoFit, or that is
   equivalent to a workload already found inadmissible (BestEffortFIFO), is
   parked on the spot and the next one is offered.
2. Order: with fair sharing, every cohort tree plays a tournament
   (`allot.admission.tournament`) and the trees' winners are compared by
   (borrowing level, priority, timestamp, key); without fair sharing all
   heads are compared that way (Kueue's entryOrdering, with the key added).
3. The winner is yielded. When the generator resumes, a queue whose head was
   admitted, parked or removed offers its next head; a queue whose head is
   still waiting (the engine looked but did not decide) is done for this
   cycle, as Kueue considers one head per queue per cycle.

Only queues touched since the last step are re-examined, and only cohort
trees whose heads or usage changed replay their tournament, so a step costs
O(changed queues), not O(all pending).

This module is the cycle half of `CycleHost` and reads its internals;
it changes the state only through the state's own parking method.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple, Protocol

from allot.admission.entry import QueueEntry
from allot.admission.events import ParkReason
from allot.admission.flavors import Assignment, Mode
from allot.admission.ordering import entry_key
from allot.admission.queues import PendingQueue
from allot.admission.tournament import Nominee, TournamentMemo, run_tournament
from allot.admission.view import AdmissionView
from allot.admission.workload import Workload


class CycleHost(AdmissionView, Protocol):
    """What a cycle reads and changes of the admission state (AdmissionState is one)."""

    _touched: set[str]
    parked_in_cycle: list[str]

    @property
    def queues(self) -> Mapping[str, PendingQueue]: ...
    @property
    def _root_of(self) -> Mapping[str, str]: ...
    @property
    def _inadmissible(self) -> Mapping[str, dict[tuple[object, ...], ParkReason]]: ...

    def _score(self, local_queue: str) -> float: ...
    def _park_entry(self, entry: QueueEntry, reason: ParkReason) -> None: ...
    def _assignment(self, entry: QueueEntry) -> Assignment: ...


PENDING = "Pending"


class Candidate(NamedTuple):
    """A pending workload offered for admission, with the assignment it was nominated with."""

    workload: Workload
    cluster_queue: str
    nomination: Assignment


def run_cycle(state: CycleHost) -> Iterator[Candidate]:
    cycle = _Cycle(state)
    state._touched.update(state.queues)
    while True:
        dirty_roots = cycle.refresh_heads()
        if not cycle.heads:
            return
        key = cycle.pick(dirty_roots)
        entry = state.entries[key]
        cq = entry.cluster_queue
        assert cq is not None
        yield Candidate(entry.workload, cq, cycle.nominations[key])
        state._touched.add(cq)
        after = state.entries.get(key)
        queue = state.queues[cq]
        waiting = after is not None and after.state == PENDING and key in queue and key not in queue.parked
        if waiting and (queue.blocked is None or queue.blocked[0] != key):
            cycle.done.add(cq)


class _Cycle:
    def __init__(self, state: CycleHost) -> None:
        self.state = state
        self.done: set[str] = set()
        self.heads: dict[str, str] = {}
        self.nominations: dict[str, Assignment] = {}
        self.winners: dict[str, str | None] = {}
        self.memo: TournamentMemo = {}

    def refresh_heads(self) -> set[str]:
        """Recompute the head of every touched queue; returns the roots whose heads changed."""
        state = self.state
        touched, state._touched = state._touched, set()
        dirty: set[str] = set()
        for name in sorted(touched):
            old = self.heads.pop(name, None)
            head = None if name in self.done else self._nominated_head(name)
            if head is not None:
                self.heads[name] = head
            if head is not None or old is not None:
                dirty.add(state._root_of[name])
        return dirty

    def _nominated_head(self, name: str) -> str | None:
        state = self.state
        if state.policies[name].inactive:
            return None
        queue = state.queues[name]
        score = state._score if queue.by_local_queue else None
        while True:
            key = queue.head(score)
            if key is None:
                return None
            if queue.blocked is not None and queue.blocked[0] == key:
                return None
            if key in self.nominations:
                return key
            entry = state.entries[key]
            marks = state._inadmissible[name]
            if marks and not queue.strict:
                known = marks.get(entry.equivalence())
                if known is not None:
                    state._park_entry(entry, known)
                    state.parked_in_cycle.append(key)
                    continue
            assignment = state._assignment(entry)
            if assignment.mode is Mode.NO_FIT:
                state._park_entry(entry, ParkReason.quota(assignment.message()))
                state.parked_in_cycle.append(key)
                continue
            self.nominations[key] = assignment
            return key

    def pick(self, dirty_roots: set[str]) -> str:
        state = self.state
        nominations: Mapping[str, Assignment] = self.nominations
        ranks: dict[str, tuple[int, int, float, str]] = {}
        for key in self.heads.values():
            entry = state.entries[key]
            ranks[key] = entry_key(nominations[key].borrowing, entry.workload.priority, entry.order_time, key)
        if not state.config.fair_sharing:
            return min(ranks.values())[3]
        winners = self.winners
        by_root: dict[str, dict[str, Nominee]] = {}
        for cq, key in self.heads.items():
            root = state._root_of[cq]
            if root not in dirty_roots and root in winners:
                continue
            entry = state.entries[key]
            by_root.setdefault(root, {})[cq] = Nominee(
                key, entry.workload.priority, entry.order_time, nominations[key].usage
            )
        for root in dirty_roots:
            if root not in by_root:
                winners.pop(root, None)
        for root, nominees in by_root.items():
            node = state.tree.cohorts.get(root) or state.tree.cqs[root]
            winner = run_tournament(
                state.shares,
                node,
                nominees,
                prioritize_non_borrowing=state.config.fair_sharing_prioritize_non_borrowing,
                memo=self.memo,
            )
            winners[root] = winner.key if winner is not None else None
        return min(ranks[k] for k in winners.values() if k is not None)[3]
