"""The dashboard over the live scheduler's mirror (`allot run`, and `allot dashboard` read-only).

Snapshots are taken on the scheduler's event loop (the only thread that changes its state), on
demand, and reused while the scheduler's `generation` has not moved and the last one is younger
than `max_age` seconds (waits grow with the clock). Reasons: for `allot run`, the engine's
(`Engine.pending_reasons` over the decisions this source observed, the sentence `allot place`
prints); for a read-only mirror, the message of each pod's `PodScheduled=False` condition,
written by whichever scheduler tried it. `run_sampler` feeds the bounded history and the GPU
gauges of /metrics every `interval` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

from aiohttp import web

from allot.cluster.state import ClusterState
from allot.dashboard.decisions import DecisionLog
from allot.dashboard.history import History, Point, totals
from allot.dashboard.measures import gpu_states, pending_work
from allot.dashboard.model import Snapshot
from allot.dashboard.query import QueryError
from allot.dashboard.server import attach, attach_samplers
from allot.dashboard.snapshot import Snapshotter, running_phase
from allot.engine.decisions import CycleResult
from allot.live.scheduler import LiveScheduler

MAX_AGE = 5.0
# Seconds between the sampler's history points and gauge refreshes, and how long history is kept.
SAMPLE_INTERVAL = 15.0
RETENTION = 6 * 3600.0
# Snapshots are not taken more often than this, however fast the cluster changes, nor more
# often than once per LOOP_SHARE times the last one's duration.
MIN_INTERVAL = 0.5
LOOP_SHARE = 5.0
POD_SCHEDULED = "PodScheduled"


def condition_reasons(state: ClusterState) -> dict[str, str]:
    """Each pending pod's PodScheduled=False message, as its scheduler wrote it."""
    found: dict[str, str] = {}
    for info in state.pending():
        for condition in info.pod.status.conditions:
            if condition.type == POD_SCHEDULED and condition.status == "False" and condition.message:
                found[info.key] = condition.message
    return found


class LiveSource:
    """A `Source` over a running `LiveScheduler`; see the module docstring."""

    def __init__(
        self,
        scheduler: LiveScheduler,
        *,
        title: str = "",
        snapshotter: Snapshotter | None = None,
        history: History | None = None,
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.scheduler = scheduler
        self.watch_only = scheduler.options.watch_only
        self.mode = "watch" if self.watch_only else "live"
        self.title = title
        self.snapshotter = snapshotter if snapshotter is not None else Snapshotter()
        self.log = DecisionLog()
        self.recorded = History() if history is None else history
        self.max_age = max_age
        self.clock = clock
        self._cached: tuple[int, float, Snapshot] | None = None
        self._measured: Snapshot | None = None
        self._min_interval = MIN_INTERVAL
        scheduler.observers.append(self._observe)

    def _observe(self, result: CycleResult, now: float) -> None:
        engine = self.scheduler.engine
        if engine is None:
            return
        local = engine.admission.local_queues if engine.admission is not None else {}

        def queue_of(key: str) -> str:
            queue = local.get(key)
            return queue.spec.cluster_queue if queue is not None else ""

        self.log.observe(result, now, engine.state, queue_of)

    def version(self) -> int:
        return self.scheduler.generation

    def times(self) -> list[float]:
        return []

    def snapshot(self, at: float | None = None) -> Snapshot:
        del at  # a live cluster has only its present
        engine = self.scheduler.engine
        if engine is None or not self.scheduler.readiness.synced:
            raise QueryError("allot is still listing the cluster; try again in a moment", 503)
        now = self.clock()
        generation = self.scheduler.generation
        cached = self._cached
        if cached is not None and (
            now - cached[1] < self._min_interval
            or (cached[0] == generation and now - cached[1] < self.max_age)
        ):
            return cached[2]
        started = time.perf_counter()
        admission = None
        if self.watch_only:
            reasons = condition_reasons(engine.state)
            admission = self.scheduler.current_admission()
        else:
            reasons = engine.pending_reasons(self.log.reasons)
        snapshot = self.snapshotter.take_engine(
            engine,
            time=now,
            source=self.mode,
            title=self.title,
            reasons=reasons,
            log=None if self.watch_only else self.log,
            running=running_phase,
            admission=admission,
        )
        self._cached = (generation, now, snapshot)
        # The event loop is the scheduler's: snapshots take at most a fifth of it, however large
        # the cluster and however often it changes.
        self._min_interval = max(MIN_INTERVAL, LOOP_SHARE * (time.perf_counter() - started))
        return snapshot

    def history(self, until: float | None = None) -> list[Point]:
        return self.recorded.until(until)

    def sample(self) -> None:
        """Feed the GPU gauges of /metrics from a fresh snapshot, and the history when a point is due."""
        try:
            snapshot = self.snapshot()
        except QueryError:
            return
        if snapshot is not self._measured:
            self._measured = snapshot
            work = pending_work(snapshot)
            self.scheduler.metrics.observe_gpus(gpu_states(snapshot), work.gpus, work.gpu_hours)
        if self.recorded.due(snapshot.time):
            self.recorded.add(totals(snapshot))

    async def run_sampler(self, stop: asyncio.Event) -> None:
        """Sample every `interval` seconds (the history's) until `stop` is set."""
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.recorded.interval)


def live_dashboard(
    *,
    title: str = "",
    pool_labels: Sequence[str] = (),
    routes: bool = True,
    interval: float = SAMPLE_INTERVAL,
) -> Callable[[web.Application, LiveScheduler], None]:
    """What `allot run` and `allot dashboard` pass as `RunSettings.extend_app`: the dashboard's
    routes over the scheduler's mirror, beside /metrics, and its sampler, which every `interval`
    seconds adds a history point and refreshes the GPU gauges of /metrics (kept with
    `routes=False`, `allot run --no-dashboard`)."""

    def extend(app: web.Application, scheduler: LiveScheduler) -> None:
        source = LiveSource(
            scheduler,
            title=title,
            snapshotter=Snapshotter(pool_labels=pool_labels),
            history=History(interval=interval, retention=max(RETENTION, interval)),
        )
        if routes:
            attach(app, {source.mode: source})
        else:
            attach_samplers(app, [source])

    return extend
