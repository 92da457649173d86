"""A ClusterQueue's pending workloads: the active heap and the parked set.

Active workloads are ordered by `ordering.pending_key` (priority desc, time
asc, key); with admission fair sharing the queue keeps one heap per
LocalQueue and the head is the best LocalQueue head by (LocalQueue score,
pending key) — the same order Kueue gets by re-sorting on the score, since
all workloads of a LocalQueue share its score.

BestEffortFIFO parks a head that cannot be admitted (it leaves the heap and
waits for an event); StrictFIFO keeps it at the head and marks the queue
`blocked` by it, so nothing behind it is considered until an event unblocks
the queue or a better workload becomes the head.

A quota release wakes every workload parked for quota, but BestEffortFIFO
parks workloads of one shape alike (Kueue's equivalence hash): of each
such chain only the first in line is pushed back (`wake_chain`); the rest
are deferred, logically in line behind it, and the next is pushed when the
one woken leaves the line other than by parking for quota again (then the
chain's shape is marked inadmissible and they would all be parked alike).
A release thus costs one push per shape, not one per waiting workload.

Two indexes are kept in step with the line, so that listing it and waking
it cost its groups rather than its length: every pending workload (active or
parked) in a sorted list per group (`groups`: what the engine lists waiting
work by), and the workloads parked for quota in one per chain
(`quota_chains`: what a release wakes), the others parked apart.

Each chain also counts the reasons its members were parked with, by the
key the driver compares reasons by (`reason_key`: the text itself by
default; the simulator's report reads reasons without their numbers), so
telling the deferred workloads of a chain a new reason costs nothing when
they all carry it already.

Every change is journaled. Heap entries carry a version; removal only bumps
the version map, and stale entries are dropped when they reach the top, so
undoing a removal just restores the version (and re-pushes the entry in
case it was dropped meanwhile).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

from allot.admission.events import ParkKind, ParkReason
from allot.cluster.journal import Journal

SortKey = tuple[int, float, str]
# What two reasons are compared by: equal keys make a reason told again pointless.
ReasonKey = Callable[[str], Hashable]

_MISSING: Any = object()


def exact_reason(message: str) -> Hashable:
    return message


class PendingQueue:
    def __init__(
        self,
        name: str,
        *,
        strict: bool,
        by_local_queue: bool,
        journal: Journal,
        reason_key: ReasonKey = exact_reason,
    ) -> None:
        self.name = name
        self.strict = strict
        self.by_local_queue = by_local_queue
        self.journal = journal
        self._heaps: dict[str, list[tuple[SortKey, int]]] = {}
        self._version: dict[str, int] = {}
        self._sort: dict[str, SortKey] = {}
        self._lq: dict[str, str] = {}
        self._counter = 0
        self.parked: dict[str, ParkReason] = {}
        self.blocked: tuple[str, ParkReason] | None = None
        # Chains of workloads parked alike: the deferred ones (last in line first, so the next
        # is `pop()`), and the woken workload that stands for each chain in the heap.
        self._deferred: dict[Hashable, list[SortKey]] = {}
        self._waking: dict[str, Hashable] = {}
        # Indexes kept in step with the tables above, so that listing the line and waking it cost
        # the groups, not the backlog: every pending workload (active or parked) by group, and the
        # workloads parked for quota by chain, each in sort-key order; the others parked.
        self._group_of: dict[str, Hashable] = {}
        self._chain_of: dict[str, Hashable] = {}
        self._groups: dict[Hashable, list[SortKey]] = {}
        self._quota_chains: dict[Hashable, list[SortKey]] = {}
        self._parked_otherwise: dict[str, None] = {}
        # Per chain, how many of its workloads parked for quota carry each reason (by key); how many
        # workloads are parked otherwise, by kind.
        self.reason_key = reason_key
        self._chain_reasons: dict[Hashable, dict[Hashable, int]] = {}
        self._otherwise_kinds: dict[ParkKind, int] = {}
        # Bumped whenever `_groups` changes (undo included, as it goes through `_move`): equal
        # values mean the same line, so a listing of it can be kept.
        self.changes = 0

    def compare_reasons_by(self, reason_key: ReasonKey) -> None:
        """Compare reasons by `reason_key` from now on (the counts are taken again)."""
        self.reason_key = reason_key
        self._chain_reasons = {}
        self._otherwise_kinds = {}
        for key in self.parked:
            self._tag(self._place(key), 1)

    # --- journaled state ----------------------------------------------------------

    def _snapshot(self, key: str) -> tuple[Any, Any, Any, Any, Any, Any, Any, Any]:
        return (
            self._group_of.get(key, _MISSING),
            self._chain_of.get(key, _MISSING),
            self._version.get(key, _MISSING),
            self._sort.get(key, _MISSING),
            self._lq.get(key, _MISSING),
            self.parked.get(key, _MISSING),
            self._waking.get(key, _MISSING),
            self.blocked,
        )

    def _remember(self, key: str) -> None:
        """Record one undo step restoring everything this queue knows about `key`."""
        if not self.journal.recording:
            return
        before = self._snapshot(key)

        def undo() -> None:
            group, chain, version, sort_key, lq, parked, waking, blocked = before
            place = self._place(key)
            for table, value in (
                (self._group_of, group),
                (self._chain_of, chain),
                (self._version, version),
                (self._sort, sort_key),
                (self._lq, lq),
                (self.parked, parked),
                (self._waking, waking),
            ):
                if value is _MISSING:
                    table.pop(key, None)
                else:
                    table[key] = value
            self.blocked = blocked
            self._move(key, place)
            if version is not _MISSING:
                self._push_raw(key, version)

        self.journal.record(undo)

    def _place(self, key: str) -> _Place:
        """Where the indexes hold `key` given its state now, and what it is counted under there
        (the reason's key on the quota line, the reason's kind parked otherwise)."""
        reason = self.parked.get(key)
        tag: Hashable = None
        if reason is not None:
            if reason.kind is ParkKind.QUOTA and not self.strict:
                line = _QUOTA
                tag = self.reason_key(reason.message)
            else:
                line = _OTHERWISE
                tag = reason.kind
        elif key in self._version:
            line = _ACTIVE
        else:
            return _NOWHERE
        return (line, self._sort.get(key), self._group_of.get(key), self._chain_of.get(key), tag)

    def _tag(self, place: _Place, delta: int) -> None:
        line, _sort_key, _group, chain, tag = place
        if line == _QUOTA:
            counts = self._chain_reasons.setdefault(chain, {})
            left = counts.get(tag, 0) + delta
            if left:
                counts[tag] = left
            else:
                counts.pop(tag, None)
                if not counts:
                    del self._chain_reasons[chain]
        elif line == _OTHERWISE and isinstance(tag, ParkKind):
            kinds = self._otherwise_kinds
            kinds[tag] = kinds.get(tag, 0) + delta

    def _move(self, key: str, before: _Place) -> None:
        """Bring the indexes in step with `key`'s state after a change from where it was `before`."""
        after = self._place(key)
        if after == before:
            return
        self._tag(before, -1)
        self._tag(after, 1)
        if after[:4] == before[:4]:
            return
        self.changes += 1
        line, sort_key, group, chain, _tag = before
        if line != _NONE:
            _drop(self._groups, group, sort_key)
            if line == _QUOTA:
                _drop(self._quota_chains, chain, sort_key)
            elif line == _OTHERWISE:
                self._parked_otherwise.pop(key, None)
        line, sort_key, group, chain, _tag = after
        if line != _NONE and sort_key is not None:
            insort(self._groups.setdefault(group, []), sort_key)
            if line == _QUOTA:
                insort(self._quota_chains.setdefault(chain, []), sort_key)
            elif line == _OTHERWISE:
                self._parked_otherwise[key] = None

    def _push_raw(self, key: str, version: int) -> None:
        lq = self._lq.get(key, "")
        heap = self._heaps.setdefault(lq, [])
        heapq.heappush(heap, (self._sort[key], version))
        if len(heap) > 64 and len(heap) > 4 * len(self._version):
            self._compact()

    def _compact(self) -> None:
        """Drop stale heap entries (only entries of live versions are kept)."""
        live = self._version
        for lq, heap in self._heaps.items():
            kept = [
                item
                for item in heap
                if live.get(item[0][2]) == item[1] and self._sort.get(item[0][2]) == item[0]
            ]
            heapq.heapify(kept)
            self._heaps[lq] = kept

    # --- membership ---------------------------------------------------------------

    def __contains__(self, key: str) -> bool:
        return key in self._version or key in self.parked

    def active_count(self) -> int:
        return len(self._version)

    def parked_count(self) -> int:
        return len(self.parked)

    def pending_keys(self) -> Iterator[str]:
        yield from self._version
        yield from self.parked

    def push(
        self, key: str, local_queue: str, sort_key: SortKey, group: Hashable = None, chain: Hashable = None
    ) -> None:
        """Add (or re-add) `key` to the active heap. `group` is what `groups` lists it under and
        `chain` the workloads it parks alike with (`quota_chains`); None keeps what it had."""
        self._remember(key)
        place = self._place(key)
        self.parked.pop(key, None)
        self._sort[key] = sort_key
        if group is not None or key not in self._group_of:
            self._group_of[key] = group
        if chain is not None or key not in self._chain_of:
            self._chain_of[key] = chain
        self._lq[key] = local_queue if self.by_local_queue else ""
        self._counter += 1
        self._version[key] = self._counter
        self._move(key, place)
        self._push_raw(key, self._counter)

    def remove(self, key: str) -> None:
        """Forget `key` wherever it is (admitted, deleted)."""
        if key not in self._version and key not in self.parked:
            return
        self._remember(key)
        place = self._place(key)
        self._version.pop(key, None)
        self.parked.pop(key, None)
        self._move(key, place)
        if self.blocked is not None and self.blocked[0] == key:
            self.blocked = None
        chain = self._waking.pop(key, None)
        if chain is not None:
            self._wake_next(chain)

    def park(self, key: str, reason: ParkReason) -> Hashable | None:
        """Take a head that cannot be admitted out of line.

        StrictFIFO blocks the queue instead, except for a backoff or a
        namespace/queue problem, which Kueue parks in every queueing strategy.
        Returns the chain `key` stood for when it is parked for quota (its
        deferred workloads stay parked: they would be parked alike).
        """
        self._remember(key)
        if self.strict and reason.kind not in (ParkKind.BACKOFF, ParkKind.WAITING):
            if key in self._version:
                self.blocked = (key, reason)
            return None
        place = self._place(key)
        self._version.pop(key, None)
        self.parked[key] = reason
        self._move(key, place)
        chain = self._waking.pop(key, None)
        if chain is None:
            return None
        if reason.kind is ParkKind.QUOTA:
            return chain
        self._wake_next(chain)
        return None

    def unpark(self, key: str) -> None:
        if key in self.parked:
            self.push(key, self._lq.get(key, ""), self._sort[key])

    def wake_chains(self) -> bool:
        """Wake the first in line of every chain parked for quota and defer the others behind it
        (copies of the index's lists, not walks of them). Whether any chain was woken."""
        chains = list(self._quota_chains.items())
        for chain, members in chains:
            old = self._deferred.get(chain, _MISSING)
            self._deferred[chain] = members[:0:-1]
            if self.journal.recording:
                self.journal.record(lambda chain=chain, old=old: _restore(self._deferred, chain, old))  # type: ignore[misc]
            self._wake(members[0][2], chain)
        return bool(chains)

    def deferred(self, chain: Hashable) -> list[str]:
        """The workloads of `chain` still deferred (parked for quota), last in line first."""
        return [
            sort_key[2] for sort_key in self._deferred.get(chain, ()) if self._parked_for_quota(sort_key[2])
        ]

    def retell(self, chain: Hashable, reason: ParkReason) -> list[str]:
        """Give the deferred workloads of `chain` parked for quota `reason` where theirs has another
        key; returns them, first in line first. They stay where they are in every index: only
        the reason counts move, so one journal step undoes the lot."""
        told = self.reason_key(reason.message)
        counts = self._chain_reasons.get(chain)
        if not counts or (len(counts) == 1 and told in counts):
            return []
        parked = self.parked
        reason_key = self.reason_key
        chain_of = self._chain_of
        changed: list[tuple[str, ParkReason]] = []
        # (chain, reason key) -> change of its count, applied once at the end.
        moved: dict[tuple[Hashable, Hashable], int] = {}
        for sort_key in reversed(self._deferred.get(chain, ())):
            key = sort_key[2]
            before = parked.get(key)
            if before is None or before.kind is not ParkKind.QUOTA:
                continue
            tag = reason_key(before.message)
            if tag == told:
                continue
            parked[key] = reason
            changed.append((key, before))
            counted = chain_of.get(key)
            moved[(counted, tag)] = moved.get((counted, tag), 0) - 1
            moved[(counted, told)] = moved.get((counted, told), 0) + 1
        if not changed:
            return []
        self._count(moved, 1)
        if self.journal.recording:

            def undo() -> None:
                for key, before in changed:
                    parked[key] = before
                self._count(moved, -1)

            self.journal.record(undo)
        return [key for key, _before in changed]

    def _count(self, moved: Mapping[tuple[Hashable, Hashable], int], sign: int) -> None:
        """Apply changes of the per-chain reason counts."""
        for (chain, tag), delta in moved.items():
            if delta:
                self._tag((_QUOTA, None, None, chain, tag), delta * sign)

    def chain_reason(self, chain: Hashable) -> Hashable:
        """The reason key every workload of `chain` parked for quota carries; `MIXED` if they
        carry several, None if none is parked."""
        counts = self._chain_reasons.get(chain)
        if not counts:
            return None
        if len(counts) > 1:
            return MIXED
        return next(iter(counts))

    def parks_otherwise(self, kinds: frozenset[ParkKind]) -> bool:
        """Whether a workload parked otherwise (not for quota) has one of these kinds."""
        return any(self._otherwise_kinds.get(kind, 0) > 0 for kind in kinds)

    def _parked_for_quota(self, key: str) -> bool:
        reason = self.parked.get(key)
        return reason is not None and reason.kind is ParkKind.QUOTA

    def _wake(self, key: str, chain: Hashable) -> None:
        self.unpark(key)
        self._waking[key] = chain  # unpark remembered `key`, so an undo forgets this too

    def _wake_next(self, chain: Hashable) -> None:
        """The workload standing for `chain` left the line: the next deferred one takes its place."""
        keys = self._deferred.get(chain)
        while keys:
            sort_key = keys.pop()
            if self.journal.recording:
                self.journal.record(lambda sort_key=sort_key: keys.append(sort_key))  # type: ignore[misc]
            if self._parked_for_quota(sort_key[2]):
                self._wake(sort_key[2], chain)
                return

    def unblock(self) -> None:
        if self.blocked is not None:
            self._remember(self.blocked[0])
            self.blocked = None

    def parked_items(self) -> list[tuple[str, ParkReason]]:
        return sorted(self.parked.items())

    def sort_key(self, key: str) -> SortKey | None:
        return self._sort.get(key)

    def groups(self) -> Mapping[Hashable, list[SortKey]]:
        """Pending workloads (active or parked) by the group they were pushed with, each group in
        sort-key order (live lists: copy what must outlast a change)."""
        return self._groups

    def quota_chains(self) -> list[tuple[Hashable, list[str]]]:
        """The workloads parked for quota (BestEffortFIFO), by chain, each in line order."""
        return [
            (chain, [sort_key[2] for sort_key in members]) for chain, members in self._quota_chains.items()
        ]

    def parked_otherwise(self) -> list[tuple[str, ParkReason]]:
        """The other parked workloads (placement, back-off, waiting; in StrictFIFO any) and why."""
        return [(key, self.parked[key]) for key in self._parked_otherwise]

    # --- ordering -----------------------------------------------------------------

    def _top(self, lq: str) -> tuple[SortKey, str] | None:
        heap = self._heaps.get(lq)
        version = self._version
        while heap:
            sort_key, stamp = heap[0]
            key = sort_key[2]
            if version.get(key) == stamp and self._sort.get(key) == sort_key:
                return sort_key, key
            heapq.heappop(heap)
        return None

    def head(self, score: Callable[[str], float] | None = None) -> str | None:
        """The next workload in line (ignores `blocked`; callers decide what blocking means)."""
        if not self.by_local_queue or score is None:
            top = self._top("")
            if top is None and self.by_local_queue:
                top = self._best_by_lq(lambda _lq: 0.0)
            return top[1] if top is not None else None
        best = self._best_by_lq(score)
        return best[1] if best is not None else None

    def _best_by_lq(self, score: Callable[[str], float]) -> tuple[SortKey, str] | None:
        best: tuple[tuple[float, SortKey], str] | None = None
        for lq in list(self._heaps):
            top = self._top(lq)
            if top is None:
                continue
            rank = (score(lq), top[0])
            if best is None or rank < best[0]:
                best = (rank, top[1])
        if best is None:
            return None
        return best[0][1], best[1]

    def ordered(self, score: Callable[[str], float] | None = None) -> list[str]:
        """Active workloads in admission order (for status and tests)."""
        keys = list(self._version)
        if self.by_local_queue and score is not None:
            return sorted(keys, key=lambda k: (score(self._lq.get(k, "")), self._sort[k]))
        return sorted(keys, key=lambda k: self._sort[k])


_NONE, _ACTIVE, _QUOTA, _OTHERWISE = range(4)
# (line, sort key, group, chain, tag): which index lists hold a workload, where, and what it is
# counted under (its reason's key on the quota line, its reason's kind parked otherwise).
_Place = tuple[int, SortKey | None, Hashable, Hashable, Hashable]
_NOWHERE: _Place = (_NONE, None, None, None, None)
# A chain whose members carry several reasons.
MIXED: Hashable = object()


def _drop(index: dict[Hashable, list[SortKey]], name: Hashable, sort_key: SortKey | None) -> None:
    members = index.get(name)
    if members is None or sort_key is None:
        return
    at = bisect_left(members, sort_key)
    if at < len(members) and members[at] == sort_key:
        del members[at]
        if not members:
            del index[name]


def _restore(table: dict[Any, Any], key: Any, value: Any) -> None:
    if value is _MISSING:
        table.pop(key, None)
    else:
        table[key] = value
