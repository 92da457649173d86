"""Admission fair sharing: decayed LocalQueue usage that orders a ClusterQueue's queue.

Kueue (pkg/util/admissionfairsharing, pkg/cache/queue/afs) keeps, per
LocalQueue, `consumed` resources that follow the LocalQueue's admitted usage
with exponential decay, sampled every `usageSamplingInterval`:

    α(Δt)        = 1 − 0.5^(Δt / usageHalfLifeTime)
    consumed'    = (1 − α)·consumed + α·admitted_usage       (each sampling tick)
    entry penalty = α(usageSamplingInterval) · workload requests   (at admission)
    score(LQ)    = Σ_r weight_r · (consumed_r + penalty_r) / LQ weight   (+∞ if weight ≤ 0)

The penalty makes a LocalQueue that just admitted a burst go behind the
others before the next sample sees the usage; it is dropped at the next tick,
when the sampled usage includes those workloads. A half life of 0 keeps
nothing: consumed and penalties are 0.

Time is the caller's number (seconds). Ticks fall at multiples of the
sampling interval; `advance(now)` applies all ticks up to `now` in closed
form (usage is constant between the events that change it, and every such
event advances the ledger first), so the result is the same whether the
caller reports time often or rarely. Amounts are floats in Kueue's units
(CPU in cores). Every change is journaled, so an uncommitted admission takes
its penalty back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from allot.admission.config import AfsConfig
from allot.admission.resources import afs_value
from allot.cluster.journal import Journal


def alpha(elapsed: float, half_life: float) -> float:
    if half_life <= 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed / half_life)


class _Ledger:
    __slots__ = ("admitted", "consumed", "penalty", "weight")

    def __init__(self, weight: float) -> None:
        self.weight = weight
        self.consumed: dict[str, float] = {}
        self.penalty: dict[str, float] = {}
        self.admitted: dict[str, float] = {}


class AdmissionFairSharing:
    """The per-LocalQueue ledgers of every AFS-enabled ClusterQueue."""

    def __init__(self, config: AfsConfig, journal: Journal, *, start: float = 0.0) -> None:
        self.config = config
        self.journal = journal
        self._ledgers: dict[str, _Ledger] = {}
        interval = config.sampling_interval
        self._tick = math.floor(start / interval) if interval > 0 else 0

    # --- bookkeeping ------------------------------------------------------------

    def ensure(self, local_queue: str, weight: float = 1.0) -> None:
        ledger = self._ledgers.get(local_queue)
        if ledger is None:
            self._ledgers[local_queue] = _Ledger(weight)
        else:
            ledger.weight = weight

    def _ledger(self, local_queue: str) -> _Ledger:
        ledger = self._ledgers.get(local_queue)
        if ledger is None:
            ledger = self._ledgers[local_queue] = _Ledger(1.0)
        return ledger

    def _set(self, values: dict[str, float], resource: str, value: float) -> None:
        old = values.get(resource)
        if value:
            values[resource] = value
        else:
            values.pop(resource, None)
        if self.journal.recording:

            def undo() -> None:
                if old is None:
                    values.pop(resource, None)
                else:
                    values[resource] = old

            self.journal.record(undo)

    def _set_tick(self, tick: int) -> None:
        old = self._tick
        self._tick = tick
        if self.journal.recording:

            def undo() -> None:
                self._tick = old

            self.journal.record(undo)

    # --- time ---------------------------------------------------------------------

    def advance(self, now: float) -> bool:
        """Apply every sampling tick up to `now`; True if any tick passed."""
        interval = self.config.sampling_interval
        if interval <= 0:
            return False
        target = math.floor(now / interval)
        ticks = target - self._tick
        if ticks <= 0:
            return False
        keep = (
            0.0
            if self.config.half_life <= 0
            else math.pow(1.0 - alpha(interval, self.config.half_life), ticks)
        )
        for ledger in self._ledgers.values():
            resources = set(ledger.consumed) | set(ledger.admitted)
            for resource in resources:
                old = ledger.consumed.get(resource, 0.0)
                now_used = ledger.admitted.get(resource, 0.0)
                value = 0.0 if self.config.half_life <= 0 else now_used + (old - now_used) * keep
                if value != old:
                    self._set(ledger.consumed, resource, value)
            for resource in list(ledger.penalty):
                self._set(ledger.penalty, resource, 0.0)
        self._set_tick(target)
        return True

    # --- admissions ---------------------------------------------------------------

    def admitted(self, local_queue: str, requests: Mapping[str, int], now: float) -> None:
        """A workload of `local_queue` was admitted: its usage counts, plus the entry penalty."""
        self.advance(now)
        ledger = self._ledger(local_queue)
        entry = alpha(self.config.sampling_interval, self.config.half_life)
        for resource, value in requests.items():
            amount = afs_value(resource, value)
            self._set(ledger.admitted, resource, ledger.admitted.get(resource, 0.0) + amount)
            if entry:
                self._set(ledger.penalty, resource, ledger.penalty.get(resource, 0.0) + entry * amount)

    def released(self, local_queue: str, requests: Mapping[str, int], now: float) -> None:
        """A workload of `local_queue` finished or was evicted: its usage stops counting."""
        self.advance(now)
        ledger = self._ledger(local_queue)
        for resource, value in requests.items():
            left = ledger.admitted.get(resource, 0.0) - afs_value(resource, value)
            self._set(ledger.admitted, resource, left if abs(left) > 1e-9 else 0.0)

    # --- reading ------------------------------------------------------------------

    def score(self, local_queue: str) -> float:
        """The LocalQueue's weighted usage; lower goes first."""
        ledger = self._ledgers.get(local_queue)
        if ledger is None:
            return 0.0
        total = 0.0
        for resource in sorted(set(ledger.consumed) | set(ledger.penalty)):
            value = ledger.consumed.get(resource, 0.0) + ledger.penalty.get(resource, 0.0)
            total += self.config.weight_of(resource) * value
        if ledger.weight <= 0:
            return math.inf
        return total / ledger.weight

    def consumed(self, local_queue: str) -> dict[str, float]:
        """`status.fairSharing.admissionFairSharingStatus.consumedResources`."""
        ledger = self._ledgers.get(local_queue)
        return dict(sorted(ledger.consumed.items())) if ledger is not None else {}

    def penalty(self, local_queue: str) -> dict[str, float]:
        ledger = self._ledgers.get(local_queue)
        return dict(sorted(ledger.penalty.items())) if ledger is not None else {}
