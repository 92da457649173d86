"""Quota holds: the blocked head of the least-served queue keeps the quota that frees up until it fits.

Kueue lends a ClusterQueue's unused nominal quota to its cohort and takes it
back only by fair-sharing preemption, whose rules compare shares *after*
admission: a large workload of a queue that borrows nothing now, but would
borrow much once admitted (a 32-GPU gang of a tenant with 8 GPUs of nominal
quota), may preempt no one, and every GPU that frees up is borrowed again by
queues that already hold more. It waits while its tenant gets nothing, the
starvation that fair shares over time count against it.

With `EnginePolicy.quota_holds` (the simulator's `fair` policy, `allot run
--quota-holds`):

* At the end of each cycle, in each root cohort, the head of every
  ClusterQueue (its first pending workload in admission order) whose flavor
  assignment must take quota back (mode Preempt) is a candidate. It is
  eligible while some other queue of the cohort is more served: its DRS,
  compared where the two queues' paths meet (as fair sharing compares
  them), is above the candidate queue's. The eligible candidate of the
  least-served queue holds the cohort's quota (ties: higher priority,
  earlier, then key); a holder stays while it is eligible, so quota drained
  for it is not handed to another.
* While a workload holds, no other workload of the cohort may borrow in a
  (flavor, resource) pair it needs, from a queue as served as the holder's
  or more (its current DRS at least the holder queue's), nor in the
  holder's own queue at the same or lower priority. Workloads within their
  queue's nominal quota are never refused: that quota is guaranteed. Kueue's
  preemption rules are unchanged.
* The hold ends when the workload is admitted, leaves, is no longer its
  queue's head, no longer lacks quota (unless it waits for the nodes a
  reservation drains for it, `allot.engine.reserve`), or no queue is more
  served than its own; the refused workloads of the cohort are then woken.

Holds are chosen from the admission state alone, so they are the same
whether waiting work is retried every cycle or only at events.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.admission.events import Event, EventKind
from allot.admission.fair_sharing import DRS, compare_drs
from allot.admission.flavors import Assignment, Mode
from allot.admission.resources import FlavorResource
from allot.admission.tournament import shares_by_cohort
from allot.admission.tree import available
from allot.admission.workload import Workload
from allot.engine.policy import EnginePolicy
from allot.engine.reserve import Hold
from allot.engine.waiting import WaitingWork, _in_admission_order


@dataclass(frozen=True, slots=True)
class QuotaHold:
    """A workload holding its cohort's freed quota: the pairs it needs and its queue."""

    workload: str
    cluster_queue: str
    priority: int
    pairs: frozenset[FlavorResource]


class QuotaHolding(WaitingWork):
    """The quota-hold phase of `Engine` and the check admission asks (a mixin)."""

    policy: EnginePolicy
    _quota_holds: dict[str, QuotaHold]
    _share_memo: dict[str, tuple[int, dict[int, DRS]]]
    _holds: list[Hold]

    # -- what admission asks ----------------------------------------------------------------

    def quota_refusal(self, workload: Workload, assignment: Assignment) -> str | None:
        """Why `workload` may not borrow now (a hold for another workload), or None."""
        admission = self.admission
        if not self._quota_holds or admission is None or not assignment.borrows:
            return None
        cq = assignment.cluster_queue
        hold = self._quota_holds.get(admission.tree.cqs[cq].root().name)
        if hold is None or hold.workload == workload.key:
            return None
        if not any(value > 0 and fr in hold.pairs for fr, value in assignment.usage.items()):
            return None
        if cq == hold.cluster_queue:
            if workload.priority > hold.priority:
                return None
        elif self._compare(cq, hold.cluster_queue) < 0:
            return None  # less served than the holder's queue
        # One text whoever holds, but for the holder's key in parentheses (which reports drop when
        # they group reasons): a deep line told the reason again at every new holder costs a walk.
        return (
            f"quota held for a workload of a less-served ClusterQueue ({hold.workload}): "
            "no borrowing until it is admitted"
        )

    def holds_quota(self, workload_key: str) -> bool:
        """Whether `workload_key` is admitted on quota kept for it (admitted protected)."""
        return any(hold.workload == workload_key for hold in self._quota_holds.values())

    def _release_quota_hold(self, workload_key: str) -> None:
        """`workload_key` was admitted: its hold ends now, so the workloads it kept out may borrow."""
        for root, hold in list(self._quota_holds.items()):
            if hold.workload == workload_key:
                del self._quota_holds[root]
                self._wake_refused(hold)

    # -- the phase --------------------------------------------------------------------------

    def _hold_quota(self) -> None:
        admission = self.admission
        if not self.policy.quota_holds or admission is None:
            return
        tree = admission.tree
        heads: dict[str, list[tuple[str, Workload]]] = {}
        for cq in sorted(self._snapshot().queued):
            head = self._head(cq)
            # Only a queue that someone is more served than may hold: the others' heads need no
            # flavor assignment (with its preemption oracle) here.
            top = tree.cqs[cq].root()
            if head is not None and not top.is_cq and self._someone_more_served(cq, top.name):
                heads.setdefault(top.name, []).append((cq, head))
        previous = self._quota_holds
        chosen: dict[str, QuotaHold] = {}
        for root, found in sorted(heads.items()):
            old = previous.get(root)
            kept = next((c for c in found if old is not None and c[1].key == old.workload), None)
            if kept is not None and old is not None:
                assignment = admission.assign(kept[1])
                if self._blocked(kept[1], assignment) and self._could_fill(kept[0], root, assignment):
                    chosen[root] = old
                    continue
            # Least served first: the first head that lacks quota others could give back holds.
            for cq, workload in sorted(found, key=lambda c: self._rank(c[0], c[1])):
                assignment = admission.assign(workload)
                if assignment.mode is Mode.PREEMPT and self._could_fill(cq, root, assignment):
                    pairs = assignment.needs_preemption() or frozenset(
                        fr for fr, value in assignment.usage.items() if value > 0
                    )
                    chosen[root] = QuotaHold(workload.key, cq, workload.priority, pairs)
                    break
        self._quota_holds = chosen
        for root, hold in previous.items():
            if chosen.get(root) != hold:
                self._wake_refused(hold)

    def _head(self, cq: str) -> Workload | None:
        """The queue's first pending workload in admission order."""
        for key, _klass in _in_admission_order(self._snapshot().queued[cq], set(), lambda _k: False):
            workload = self._unplaced_pending(key)
            if workload is not None:
                return workload
        return None

    def _blocked(self, workload: Workload, assignment: Assignment) -> bool:
        """It lacks quota, or has it and waits for nodes a reservation drains for it."""
        if assignment.mode is Mode.PREEMPT:
            return True
        return assignment.mode is Mode.FIT and any(h.unit == workload.key for h in self._holds)

    def _someone_more_served(self, cq: str, root: str) -> bool:
        admission = self.admission
        assert admission is not None
        return any(
            other.name != cq and self._compare(other.name, cq) > 0
            for other in admission.tree.cohorts[root].subtree_cqs()
        )

    def _could_fill(self, cq: str, root: str, assignment: Assignment) -> bool:
        """What the other queues borrow could cover what the assignment lacks (quota within their
        nominal is theirs to keep)."""
        admission = self.admission
        assert admission is not None
        node = admission.tree.cqs[cq]
        others = [o for o in admission.tree.cohorts[root].subtree_cqs() if o.name != cq]
        for fr in assignment.needs_preemption():
            lacking = assignment.usage.get(fr, 0) - available(node, fr)
            lent = sum(max(0, o.usage.get(fr, 0) - o.subtree_quota.get(fr, 0)) for o in others)
            if lacking > lent:
                return False
        return True

    def _rank(self, cq: str, workload: Workload) -> tuple[float, int, float, str]:
        """Least served first (its DRS under the root), then priority, queue order time, key."""
        admission = self.admission
        assert admission is not None
        levels = list(self._shares(cq).values())
        share = levels[-1].precise() if levels else 0.0
        return (share, -workload.priority, admission.entries[workload.key].order_time, workload.key)

    def _shares(self, cq: str) -> dict[int, DRS]:
        """The queue's DRS at each cohort above it (by cohort id, bottom-up), kept while the tree's
        usage generation lasts (generations are never reused; an undone change restores its own)."""
        admission = self.admission
        assert admission is not None
        generation = admission.tree.generation
        known = self._share_memo.get(cq)
        if known is not None and known[0] == generation:
            return known[1]
        levels = dict(shares_by_cohort(admission.shares, admission.tree.cqs[cq], None))
        self._share_memo[cq] = (generation, levels)
        return levels

    def _compare(self, a: str, b: str) -> int:
        """Queue `a`'s DRS against `b`'s where their paths meet (0 when they do not)."""
        theirs = self._shares(b)
        for cohort, drs in self._shares(a).items():
            if cohort in theirs:
                return compare_drs(drs, theirs[cohort])
        return 0

    def _wake_refused(self, hold: QuotaHold) -> None:
        admission = self.admission
        if admission is not None and hold.cluster_queue in admission.tree.cqs:
            admission.notify(Event(EventKind.QUOTA_CHANGED, cluster_queue=hold.cluster_queue))
