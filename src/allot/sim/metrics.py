"""The numbers a simulation is judged by, computed from its `SimResult` (pure functions).

Definitions (docs/simulator.md repeats them for users):

* GPU allocation %: time-weighted mean of GPU-equivalents held over GPUs
  on ready nodes (a GPU counts max(compute, memory) of what was taken).
  Compute % and memory % the same per dimension; busy %: GPUs with any
  allocation.
* Unallocated %: 100 − allocation %. Fragmented %: free share of GPUs that
  are partly taken (usable by fractional work only), over capacity.
  Idle-while-waiting %: unallocated share averaged over the time some GPU
  pod was pending (GPUs left idle while jobs waited); idle usable while
  waiting %: the same counting only the GPUs a waiting pod could run on
  (its device classes and selectors select a device of that GPU).
* Queue wait: from arrival until every pod of the job had started once;
  a job still waiting at the end counts end − arrival (a lower bound).
  Completion time (JCT): from arrival to the last pod's completion, for
  completed jobs. Percentiles p50/p95/p99 per tenant and overall.
* Fair share: `allot.sim.fairshare` (weighted max-min of contended GPUs
  given demand); the fair-share ratio is GPU time held over fair GPU time
  across the contended period; Jain's index is taken over those ratios.
* Preemptions: pods taken off their node (by priority, quota reclaim, fair
  sharing, a failed node, or a gang sibling's preemption).
* Alignment rate: of pod starts the topology model assessed, the share
  that were aligned; slowdown: mean of 1/factor − 1 over them.
* GPU-hours lost: work not done because devices were misaligned (GPU-
  equivalents held × time × (1 − alignment factor)) and because pods took
  turns on time-sliced GPUs (time-sliced GPUs × time × (1 − the pod's
  share of the turns)); the slowest pod runs by mean pace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from allot.sim.fairshare import share_ratios, usable_share_ratios
from allot.sim.recorder import normalise_reason
from allot.sim.records import JobRecord, SimResult
from allot.sim.stats import jain, percentile, time_mean

PERCENTILES = (50, 95, 99)
# Slowest pod runs listed in the summary.
SLOWEST = 5


@dataclass(frozen=True)
class Distribution:
    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None

    @classmethod
    def of(cls, values: Iterable[float]) -> Distribution:
        data = list(values)
        mean = float(np.mean(data)) if data else None
        p50, p95, p99 = (percentile(data, p) for p in PERCENTILES)
        return cls(len(data), p50, p95, p99, mean)


@dataclass(frozen=True)
class ReasonCount:
    reason: str
    count: int


@dataclass(frozen=True)
class PendingReason:
    """A (normalised) reason pods waited with, how long in total and how many pods."""

    reason: str
    pod_hours: float
    pods: int


@dataclass(frozen=True)
class SlowPod:
    """A pod run that went slowest: its mean pace (1 = full speed) and how long it ran."""

    pod: str
    tenant: str
    speed: float
    hours: float
    time_sliced: bool


@dataclass(frozen=True)
class TenantSummary:
    name: str
    weight: float
    jobs: int
    started: int
    completed: int
    wait: Distribution
    jct: Distribution
    gpu_hours: float
    fair_gpu_hours: float
    fair_share_ratio: float | None
    preempted: int
    # The same against the fair share of the GPUs the tenant's work can use (docs/simulator.md).
    usable_fair_gpu_hours: float = 0.0
    usable_fair_share_ratio: float | None = None


@dataclass(frozen=True)
class Summary:
    scenario: str
    policy: str
    seed: int
    simulated_hours: float
    wall_seconds: float
    events: int
    cycles: int
    jobs: int
    started: int
    completed: int
    gpus: float
    allocation_pct: float | None
    busy_pct: float | None
    compute_pct: float | None
    memory_pct: float | None
    unallocated_pct: float | None
    fragmented_pct: float | None
    idle_while_waiting_pct: float | None
    idle_usable_while_waiting_pct: float | None
    wait: Distribution
    jct: Distribution
    tenants: list[TenantSummary]
    contended_hours: float
    jain: float | None
    min_fair_share_ratio: float | None
    usable_jain: float | None
    min_usable_fair_share_ratio: float | None
    preemptions: int
    preemption_reasons: list[ReasonCount]
    admissions: int
    borrowing_admissions: int
    aligned_pct: float | None
    assessed_starts: int
    slowdown_pct: float | None
    pending_reasons: list[PendingReason]
    # GPU-hours of work lost to misaligned devices (GPU/NIC, CPU/NUMA) and to time-slicing's
    # shared turns, and the slowest pod runs.
    lost_misaligned_gpu_hours: float = 0.0
    lost_time_slicing_gpu_hours: float = 0.0
    slowest: list[SlowPod] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tenant(self, name: str) -> TenantSummary:
        return next(t for t in self.tenants if t.name == name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, camelCase keys (what `--output json` prints)."""
        data: dict[str, Any] = _camel(_plain(self))
        return data


def waits(jobs: Iterable[JobRecord], end: float) -> list[float]:
    """Queue waits; jobs never fully started count end − arrival."""
    return [max(0.0, (j.start if j.start is not None else end) - j.arrival) for j in jobs]


def completion_times(jobs: Iterable[JobRecord]) -> list[float]:
    return [j.finish - j.arrival for j in jobs if j.finish is not None]


def _pct(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return 100.0 * numerator / denominator


def idle_while_waiting(result: SimResult) -> tuple[float | None, float | None]:
    """(% of the GPUs idle, % idle that a waiting pod could use), averaged over the time GPU pods
    waited; None when none ever did."""
    s = result.samples
    t = s.time
    if not len(t):
        return None, None
    mask = s.waiting > 1e-9
    weight = (np.append(t[1:], result.end) - t)[mask]
    capacity = float((s.capacity[mask] * weight).sum())
    if not mask.any() or weight.sum() <= 0 or capacity <= 0:
        return None, None
    free = np.maximum(s.capacity - s.allocated, 0.0)[mask]
    usable = np.minimum(s.wanted_free[mask], free)
    return 100.0 * float((free * weight).sum()) / capacity, 100.0 * float((usable * weight).sum()) / capacity


def summarize(result: SimResult, *, top_reasons: int = 8) -> Summary:
    s = result.samples
    end = result.end
    t = s.time
    capacity = time_mean(t, s.capacity, end)

    def share(values: np.ndarray) -> float | None:
        return _pct(time_mean(t, values, end), capacity)

    allocation = share(s.allocated)
    idle, idle_usable = idle_while_waiting(result)
    held, fair, contended_seconds = share_ratios(
        t, end, s.capacity, s.tenant_demand, s.tenant_allocated, result.weights
    )
    usable_held, usable_fair, _ = usable_share_ratios(
        t, end, result.demand_classes, s.tenant_allocated, result.weights
    )
    gpu_seconds = (
        (s.tenant_allocated * (np.append(t[1:], end) - t)[:, None]).sum(axis=0)
        if len(t)
        else np.zeros(len(result.tenants))
    )
    preempted = Counter(p.tenant for p in result.preemptions)
    tenants: list[TenantSummary] = []
    ratios: list[float] = []
    usable_ratios: list[float] = []
    for i, name in enumerate(result.tenants):
        jobs = [j for j in result.jobs if j.tenant == name]
        ratio = float(held[i] / fair[i]) if fair[i] > 1e-9 else None
        if ratio is not None:
            ratios.append(ratio)
        usable_ratio = float(usable_held[i] / usable_fair[i]) if usable_fair[i] > 1e-9 else None
        if usable_ratio is not None:
            usable_ratios.append(usable_ratio)
        tenants.append(
            TenantSummary(
                name=name,
                weight=result.weights[i],
                jobs=len(jobs),
                started=sum(1 for j in jobs if j.start is not None),
                completed=sum(1 for j in jobs if j.finish is not None),
                wait=Distribution.of(waits(jobs, end)),
                jct=Distribution.of(completion_times(jobs)),
                gpu_hours=float(gpu_seconds[i]) / 3600.0,
                fair_gpu_hours=float(fair[i]) / 3600.0,
                fair_share_ratio=ratio,
                preempted=preempted.get(name, 0),
                usable_fair_gpu_hours=float(usable_fair[i]) / 3600.0,
                usable_fair_share_ratio=usable_ratio,
            )
        )
    assessed = [b for b in result.binds if b.aligned is not None]
    aligned = sum(1 for b in assessed if b.aligned)
    slowdown = 100.0 * float(np.mean([1.0 / b.factor - 1.0 for b in assessed])) if assessed else None
    reasons = sorted(result.pending_reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top_reasons]
    slow = sorted(
        (r for r in result.runs if r.end > r.start and r.speed < 1.0 - 1e-6),
        key=lambda r: (r.speed, -(r.end - r.start), r.pod, r.start),
    )[:SLOWEST]
    return Summary(
        scenario=result.scenario,
        policy=result.policy,
        seed=result.seed,
        simulated_hours=end / 3600.0,
        wall_seconds=result.wall_seconds,
        events=result.events,
        cycles=result.cycles,
        jobs=len(result.jobs),
        started=sum(1 for j in result.jobs if j.start is not None),
        completed=sum(1 for j in result.jobs if j.finish is not None),
        gpus=float(capacity or 0.0),
        allocation_pct=allocation,
        busy_pct=share(s.busy),
        compute_pct=share(s.compute),
        memory_pct=share(s.memory),
        unallocated_pct=None if allocation is None else 100.0 - allocation,
        fragmented_pct=share(s.fragmented),
        idle_while_waiting_pct=idle,
        idle_usable_while_waiting_pct=idle_usable,
        wait=Distribution.of(waits(result.jobs, end)),
        jct=Distribution.of(completion_times(result.jobs)),
        tenants=tenants,
        contended_hours=contended_seconds / 3600.0,
        jain=jain(ratios),
        min_fair_share_ratio=min(ratios) if ratios else None,
        usable_jain=jain(usable_ratios),
        min_usable_fair_share_ratio=min(usable_ratios) if usable_ratios else None,
        preemptions=len(result.preemptions),
        preemption_reasons=[
            ReasonCount(r, n)
            for r, n in Counter(normalise_reason(p.reason) for p in result.preemptions).most_common()
        ],
        admissions=len(result.admissions),
        borrowing_admissions=sum(1 for a in result.admissions if a.borrowing),
        aligned_pct=_pct(aligned, len(assessed)) if assessed else None,
        assessed_starts=len(assessed),
        slowdown_pct=slowdown,
        pending_reasons=[PendingReason(r, v[0] / 3600.0, v[1]) for r, v in reasons],
        lost_misaligned_gpu_hours=sum(r.lost_misaligned for r in result.runs) / 3600.0,
        lost_time_slicing_gpu_hours=sum(r.lost_contention for r in result.runs) / 3600.0,
        slowest=[SlowPod(r.pod, r.tenant, r.speed, (r.end - r.start) / 3600.0, r.time_sliced) for r in slow],
        notes=list(result.notes),
    )


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel_key(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _camel_key(key: str) -> str:
    if "_" not in key:
        return key
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
