"""Prometheus metrics of the live scheduler, with kube-scheduler's names where one exists.

kube-scheduler's: `scheduler_schedule_attempts_total{result,profile}`,
`scheduler_scheduling_attempt_duration_seconds{result,profile}`, `scheduler_pending_pods{queue}`,
`scheduler_preemption_victims`, `scheduler_preemption_attempts_total`. allot's own (prefix
`allot_`): cycle duration, bindings and their latency, API requests, informer relists,
quota usage and fair share per ClusterQueue, and GPUs per node pool and model (ready, allocated,
in use, stranded, unhealthy) with the GPUs pending pods ask for: those the dashboard measures
(`observe_gpus`, fed by its sampler). Each scheduler has its own registry, so tests and
simulations never share counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from allot.admission.jobs import is_placeholder
from allot.engine.decisions import Admitted, Bound, CycleResult, Waiting
from allot.live.status import NOT_QUEUED

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from allot.engine.engine import Engine
    from allot.live.binder import BindResult
    from allot.live.cache import LiveCache
    from allot.live.reflector import Reflector

_LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30)


class Metrics:
    """The live scheduler's metrics; `exposition()` is what /metrics serves."""

    def __init__(self, profile: str = "allot") -> None:
        self.profile = profile
        self.registry = CollectorRegistry()
        r = self.registry
        self.attempts = Counter(
            "scheduler_schedule_attempts", "Scheduling attempts by result (scheduled, unschedulable, error).",
            ["result", "profile"], registry=r,
        )  # fmt: skip
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Engine time per scheduled or unschedulable pod (a cycle's time shared by its attempts).",
            ["result", "profile"], buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.pending = Gauge(
            "scheduler_pending_pods", "Pending pods by queue: active, backoff, unschedulable, gated.",
            ["queue"], registry=r,
        )  # fmt: skip
        self.victims = Histogram(
            "scheduler_preemption_victims",
            "Victims per preemption.",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=r,
        )
        self.preemptions = Counter("scheduler_preemption_attempts", "Preemptions carried out.", registry=r)
        self.cycle_duration = Histogram(
            "allot_cycle_duration_seconds",
            "Wall time of one engine cycle.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.bindings = Counter("allot_bindings", "Bindings written, by result.", ["result"], registry=r)
        self.binding_duration = Histogram(
            "allot_binding_duration_seconds", "From decision to Binding created (claims included).",
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.admissions = Counter(
            "allot_admitted_workloads",
            "Kueue workloads admitted, by ClusterQueue.",
            ["cluster_queue"],
            registry=r,
        )
        self.in_flight = Gauge(
            "allot_bindings_in_flight", "Bindings decided and not yet confirmed.", registry=r
        )
        self.quota_usage = Gauge(
            "allot_cluster_queue_resource_usage", "Quota in use per ClusterQueue, flavor and resource.",
            ["cluster_queue", "flavor", "resource"], registry=r,
        )  # fmt: skip
        self.fair_share = Gauge(
            "allot_cluster_queue_weighted_share", "Kueue's weighted share of each ClusterQueue.",
            ["cluster_queue"], registry=r,
        )  # fmt: skip
        self.informer = Gauge(
            "allot_informer_lists", "Lists per watched kind since start, by why (start, gone: 410 after compaction).",
            ["kind", "reason"], registry=r,
        )  # fmt: skip
        self.reconnects = Gauge(
            "allot_informer_reconnects",
            "Watches restarted after the server could not be reached.",
            ["kind"],
            registry=r,
        )
        self.api_requests = Gauge(
            "allot_api_requests", "API requests since start, by verb.", ["verb"], registry=r
        )
        self.gpus = Gauge(
            "allot_gpus", "GPUs per node pool and model, by state: total, ready (on a ready node, healthy), "
            "allocated, in_use (running pods), stranded (free share of partly used GPUs), unhealthy; "
            "GPU-equivalents.",
            ["pool", "model", "state"], registry=r,
        )  # fmt: skip
        self.jobs = Gauge(
            "allot_kueue_jobs", "Queued batch/v1 Jobs allot follows, by state: queued, starting, admitted, "
            "stopping.", ["state"], registry=r,
        )  # fmt: skip
        self.job_writes = Gauge(
            "allot_kueue_job_writes", "Jobs started and stopped (suspended again) since start.", ["action"],
            registry=r,
        )  # fmt: skip
        self.pending_gpus = Gauge(
            "allot_pending_pod_gpus", "GPU-equivalents the pending pods ask for.", registry=r
        )
        self.gpu_hours_waiting = Gauge(
            "allot_pending_gpu_hours", "GPUs asked by pending pods times how long each has waited, in hours.",
            registry=r,
        )  # fmt: skip
        self._victims_this_cycle = 0

    def exposition(self) -> bytes:
        return bytes(generate_latest(self.registry))

    # -- events from the scheduler ---------------------------------------------------------

    def cycle(self, seconds: float, result: CycleResult) -> None:
        self.cycle_duration.observe(seconds)
        bound = [d for d in result.decisions if isinstance(d, Bound)]
        # A pod kube-scheduler keeps out of its queue (gates, missing claims) is no attempt.
        waiting = [d for d in result.decisions if isinstance(d, Waiting) and not NOT_QUEUED.search(d.reason)]
        tried = len(bound) + len(waiting)
        share = seconds / tried if tried else 0.0
        for _ in bound:
            self.attempts.labels("scheduled", self.profile).inc()
            self.attempt_duration.labels("scheduled", self.profile).observe(share)
        for _ in waiting:
            self.attempts.labels("unschedulable", self.profile).inc()
            self.attempt_duration.labels("unschedulable", self.profile).observe(share)
        if self._victims_this_cycle:
            self.victims.observe(self._victims_this_cycle)
            self.preemptions.inc()
        self._victims_this_cycle = 0

    def victim(self) -> None:
        self._victims_this_cycle += 1

    def binding(self, result: BindResult) -> None:
        self.bindings.labels("ok" if result.ok else "failed").inc()
        if result.ok:
            self.binding_duration.observe(result.seconds)

    def admitted(self, decision: Admitted) -> None:
        self.admissions.labels(decision.cluster_queue).inc()

    def observe_informers(self, reflectors: Iterable[Reflector], requests: Mapping[str, int]) -> None:
        for reflector in reflectors:
            kind = reflector.kind.plural
            self.informer.labels(kind, "start").set(reflector.lists - reflector.relists_after_gone)
            self.informer.labels(kind, "gone").set(reflector.relists_after_gone)
            self.reconnects.labels(kind).set(reflector.reconnects)
        for verb, count in requests.items():
            self.api_requests.labels(verb).set(count)

    def observe_jobs(self, phases: Mapping[str, int], started: int, stopped: int) -> None:
        for state in ("queued", "starting", "admitted", "stopping"):
            self.jobs.labels(state).set(phases.get(state, 0))
        self.job_writes.labels("started").set(started)
        self.job_writes.labels("stopped").set(stopped)

    def observe_state(self, cache: LiveCache, engine: Engine) -> None:
        """Gauges read from the state after a cycle (cheap: counts over pods and claims)."""
        state = cache.state
        if state is None:
            return
        # A suspended Job's placeholders are not pods of the API: they are counted as Jobs.
        real = [i for i in state.pending() if not is_placeholder(i.pod)]
        gated = sum(1 for i in real if i.pod.spec.scheduling_gates)
        pending = len(real) - gated
        self.pending.labels("active").set(pending)
        self.pending.labels("gated").set(gated)
        self.pending.labels("backoff").set(len(cache.held))
        self.in_flight.set(len(cache.flights))
        admission = engine.admission
        if admission is not None:
            status = admission.status()
            for cq in status.cluster_queues:
                for flavor in cq.flavors:
                    for resource in flavor.resources:
                        self.quota_usage.labels(cq.name, flavor.name, resource.name).set(resource.total)
                if cq.weighted_share is not None:
                    self.fair_share.labels(cq.name).set(cq.weighted_share)

    def observe_gpus(
        self, by_pool: Mapping[tuple[str, str], Mapping[str, float]], pending: float, gpu_hours: float
    ) -> None:
        """The cluster's GPUs by (pool, model) and state, and the pending pods' ask (the dashboard's)."""
        self.gpus.clear()
        for (pool, model), states in sorted(by_pool.items()):
            for state, value in sorted(states.items()):
                self.gpus.labels(pool, model, state).set(value)
        self.pending_gpus.set(pending)
        self.gpu_hours_waiting.set(gpu_hours)
