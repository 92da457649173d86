"""`allot run`: the engine scheduling a real cluster as a second scheduler.

The loop, on one asyncio event loop:

1. Reflectors mirror every watched kind (`allot.live.kinds`); their events queue up.
2. Once every kind is listed, the ClusterState (and, where Kueue's objects are served, the
   AdmissionState with the workloads already running) is built from the mirror, once. From
   then on each batch of events updates it incrementally (`allot.live.cache`).
3. After a batch that changed something (or when a back-off or a failed binding ends), one
   engine cycle runs over the pending pods of allot's profiles, exactly as in the simulator
   and `allot place`: Kueue admission, gangs, DRA, topology, sharing, preemption.
4. Decisions go out without blocking the loop: bindings to the `Binder` (one task each; the
   next cycle already sees their devices taken), victims to the `Evictor`, reasons to the
   `StatusWriter`.

Only the leader (a coordination.k8s.io Lease, `--leader-elect`) runs cycles; a standby keeps
its mirror warm. SIGTERM stops the loop after the writes under way finish; nothing is left
assumed, since the state lives only in memory and is rebuilt from the API on the next start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from allot.admission.state import AdmissionState
from allot.cluster.claims import pod_uid
from allot.cluster.state import ClusterState
from allot.engine.decisions import Admitted, Bound, CycleResult, Deallocated, Evicted, Waiting
from allot.engine.engine import Engine, EnginePolicy
from allot.engine.queueing import QueueingConfig
from allot.live.binder import DEFAULT_PARALLELISM, Binder, BindResult
from allot.live.cache import BatchSummary, LiveCache
from allot.live.client import ApiClient, ApiError, NotFound
from allot.live.eviction import Evictor
from allot.live.job_admission import JobAdmission
from allot.live.kinds import CLUSTER_QUEUES, CORE_KINDS, JOBS, KUEUE_KINDS, OPTIONAL_KINDS, PODS, Kind
from allot.live.kueue import admission_from_cluster
from allot.live.kueue_guard import kueue_manager_active
from allot.live.metrics import Metrics
from allot.live.queue_status import QueueStatusWriter
from allot.live.reflector import Reflector, WatchEvent
from allot.live.status import StatusWriter
from allot.model.core import Pod
from allot.model.errors import Location
from allot.model.kueue import Topology
from allot.model.kueue_config import Configuration
from allot.model.loader import LoadedObject, Manifests
from allot.scheduling.profile import Profile

log = logging.getLogger("allot.live")

DISCOVERY_INTERVAL = 60.0
IDLE_CYCLE_INTERVAL = 5.0


@dataclass
class LiveOptions:
    """What `allot run` was asked to do (see its --help)."""

    profiles: Mapping[str, Profile]
    # Run Kueue admission where Kueue's objects are served (True), or never (False).
    kueue: bool = True
    # Kueue's Configuration (config.kueue.x-k8s.io: deviceClassMappings, fair sharing, ...), as
    # Kueue's controller manager reads it; None: its defaults.
    kueue_config: Configuration | None = None
    # Quota holds (allot.engine.quota_hold), as the simulator's `fair` policy has them; off:
    # Kueue's admission exactly.
    quota_holds: bool = False
    # Reservations (allot.engine.reserve), as in the simulator's `fair` policy; off: kube-scheduler's
    # behaviour (a large pod waits while smaller ones take every freed GPU).
    reservations: bool = False
    victim_timeout: float = 300.0
    # A failed pod's back-off: (initial, maximum) seconds (podInitialBackoffSeconds, podMaxBackoffSeconds).
    backoff: tuple[float, float] = (1.0, 10.0)
    # Bindings that write at once (see allot.live.binder).
    max_bindings_in_flight: int = DEFAULT_PARALLELISM
    # Seconds between cycles when nothing happens (safety net for time-based waits).
    idle_cycle_interval: float = IDLE_CYCLE_INTERVAL
    # Extra reflector settings, for tests (a short watch timeout exercises resumption).
    watch_timeout: int = 300
    page_size: int = 500
    discovery_interval: float = DISCOVERY_INTERVAL
    identity: str = ""
    # Mirror the cluster and never schedule or write (`allot dashboard`): every pending pod, of
    # any scheduler, is kept in the state so its wait can be shown; Kueue's own manager may run.
    watch_only: bool = False


@dataclass
class Readiness:
    synced: bool = False
    leading: bool = False
    last_cycle: float = 0.0
    errors: list[str] = field(default_factory=list)


class KueueConflict(RuntimeError):
    """Kueue's own controller manager admits the queues allot would admit."""


class LiveScheduler:
    """See the module docstring. `run(stop)` returns when `stop` is set."""

    def __init__(self, client: ApiClient, options: LiveOptions, *, metrics: Metrics | None = None) -> None:
        self.client = client
        self.options = options
        self.names = frozenset(options.profiles)
        self.metrics = metrics if metrics is not None else Metrics()
        self.reflectors: dict[Kind, Reflector] = {}
        self._reflector_tasks: dict[Kind, asyncio.Task[None]] = {}
        self.cache = LiveCache({}, is_ours=self.is_ours)
        self.engine: Engine | None = None
        self.readiness = Readiness()
        self._events: list[WatchEvent] = []
        self._wake = asyncio.Event()
        self._cycle_needed = True
        self.status = StatusWriter(
            client,
            events_client=client.sibling(),
            reporting_controller=self._controller_name(),
            instance=options.identity or None,
        )
        self.evictor = Evictor(
            client, scheduler_name=self._controller_name(), on_failed=self._victim_survived
        )
        self.queue_status = QueueStatusWriter(client)
        # Kueue's Job integration: suspended Jobs admitted through placeholder pods.
        self.jobs = JobAdmission(
            client,
            self.cache,
            scheduler_names=self.names,
            on_change=self.wake,
            report=self.status.job_event,
            current_engine=lambda: self.engine,
        )
        self.jobs.victim_timeout = options.victim_timeout
        self.binder = Binder(
            client,
            self.cache,
            on_done=self._bound,
            victim_timeout=options.victim_timeout,
            parallelism=options.max_bindings_in_flight,
        )
        self.may_schedule: Callable[[], bool] = lambda: not options.watch_only
        self.cycles = 0
        self.last_step = 0.0
        # Bumped whenever the state may have changed (a batch of events, a cycle, a binding's end):
        # readers of the state (the dashboard) rebuild their views only when it moved.
        self.generation = 0
        # Called with each cycle's result and time, after its decisions went out (the dashboard).
        self.observers: list[Callable[[CycleResult, float], None]] = []
        # Why the scheduler stopped on its own (a conflict it must not run through), if it did.
        self.fatal: Exception | None = None

    def _controller_name(self) -> str:
        return sorted(self.names)[0] if self.names else "allot"

    def is_ours(self, pod: Pod) -> bool:
        if self.options.watch_only:
            return True
        # A queued Job's pods wait for allot to admit the Job (they appear only when someone
        # started it without an admission, or a moment before allot suspends it again).
        return pod.spec.scheduler_name in self.names and not self.jobs.holds_back(pod)

    # -- mirror ----------------------------------------------------------------------------

    def wake(self) -> None:
        """Run a cycle soon (leadership gained, a timer, a test)."""
        self._cycle_needed = True
        self._wake.set()

    def _sink(self, event: WatchEvent) -> None:
        self._events.append(event)
        self._wake.set()

    async def _served_version(self, kind: Kind) -> str | None:
        """The first of the kind's versions the server serves, or None."""
        return await self._served(kind.group, kind.versions, kind.plural)

    async def _served(self, group: str, versions: tuple[str, ...], plural: str) -> str | None:
        for version in versions:
            base = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                body = await self.client.get(base)
            except NotFound:
                continue
            if any(r.get("name") == plural for r in body.get("resources") or ()):
                return version
        return None

    async def _check_kueue_manager(self) -> None:
        """Stop (KueueConflict) if Kueue's own controller manager admits the queues allot serves."""
        if self.options.watch_only or not self._kueue_present():
            return
        queues = set(self.reflectors[CLUSTER_QUEUES].store)
        version = await self._served("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloads")
        reason = await kueue_manager_active(self.client, workload_version=version, queues=queues)
        if reason is not None:
            raise KueueConflict(
                f"{reason}: allot replaces Kueue's admission for the pods it schedules; stop Kueue's "
                "controller manager (or run allot with --no-kueue)"
            )

    async def _start_reflectors(self, kinds: tuple[Kind, ...]) -> list[Kind]:
        started: list[Kind] = []
        for kind in kinds:
            if kind in self.reflectors and self.reflectors[kind].served:
                continue
            version = await self._served_version(kind)
            if version is None:
                if kind.required:
                    raise RuntimeError(f"the API server does not serve {kind.group or 'core'} {kind.plural}")
                continue
            reflector = Reflector(
                self.client, kind, version, self._sink,
                page_size=self.options.page_size, watch_timeout=self.options.watch_timeout,
            )  # fmt: skip
            self.reflectors[kind] = reflector
            self._reflector_tasks[kind] = asyncio.get_running_loop().create_task(
                reflector.run(), name=f"reflector {kind.plural}"
            )
            started.append(kind)
        self.cache.stores = {k: r.store for k, r in self.reflectors.items()}
        return started

    async def _discover_later(self, stop: asyncio.Event) -> None:
        """Kinds installed after start (Kueue's CRDs) are picked up."""
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.options.discovery_interval)
                return
            except TimeoutError:
                pass
            try:
                started = await self._start_reflectors(OPTIONAL_KINDS)
            except ApiError as error:
                log.warning("discovery failed: %s", error)
                continue
            if started:
                log.info("now watching %s", ", ".join(k.plural for k in started))
                await asyncio.gather(*(self.reflectors[k].synced.wait() for k in started))
                self._rebuild_admission()
            try:
                await self._check_kueue_manager()
            except KueueConflict as conflict:
                log.error("%s", conflict)
                self.fatal = conflict
                stop.set()
                return

    # -- building the engine ---------------------------------------------------------------

    def _manifests(self, kinds: tuple[Kind, ...]) -> Manifests:
        manifests = Manifests()
        for kind in kinds:
            reflector = self.reflectors.get(kind)
            if reflector is None:
                continue
            for key in sorted(reflector.store):
                manifests.entries.append(
                    LoadedObject(reflector.store[key], Location(file=f"api:{kind.plural}"))
                )
        return manifests

    def _kueue_present(self) -> bool:
        reflector = self.reflectors.get(CLUSTER_QUEUES)
        return self.options.kueue and reflector is not None and bool(reflector.store)

    def _build_engine(self) -> Engine:
        self.jobs.enabled = self._kueue_present() and not self.options.watch_only
        self.cache.build()
        return self._build_engine_keeping_state()

    def _admission(self, state: ClusterState) -> AdmissionState:
        # Pods come from the state (assumed bindings included), the rest from the API; Jobs
        # allot admitted are workloads of their own, on the flavors recorded on them.
        kinds = tuple(k for k in KUEUE_KINDS + CORE_KINDS if k not in (PODS, JOBS))
        manifests = self._manifests(kinds)
        if self.options.kueue_config is not None:
            manifests.entries.append(LoadedObject(self.options.kueue_config, Location(file="--kueue-config")))
        manifests.entries.extend(
            LoadedObject(job, Location(file="api:jobs")) for job in self.jobs.handled_jobs()
        )
        return admission_from_cluster(manifests, state, skip=self.jobs.is_job_pod)

    def current_admission(self) -> AdmissionState | None:
        """Admission as the cluster stands now, built afresh from the mirror (what a read-only
        mirror shows: its engine runs no cycle, so it never admits or finishes anything)."""
        state = self.cache.state
        if state is None or not self._kueue_present():
            return None
        return self._admission(state)

    def _rebuild_admission(self) -> None:
        """Kueue's objects changed (or appeared): a fresh admission state over the same cluster."""
        if self.engine is None or (self.engine.admission is None and not self._kueue_present()):
            return
        self.jobs.enabled = self._kueue_present() and not self.options.watch_only
        self.engine = self._build_engine_keeping_state()
        self._cycle_needed = True
        log.info("Kueue's objects changed: admission rebuilt")

    def _build_engine_keeping_state(self) -> Engine:
        state = self.cache.state_or_fail()
        admission = self._admission(state) if self._kueue_present() else None
        topologies = self._manifests(KUEUE_KINDS).of_kind(Topology)
        engine = Engine(
            state,
            admission=admission,
            profiles=dict(self.options.profiles),
            # kube-scheduler's backoff and unschedulable safety net (`_next_timeout` honours them).
            policy=EnginePolicy(
                queues=admission is not None,
                quota_holds=self.options.quota_holds,
                reservation=self.options.reservations,
                queueing=QueueingConfig(
                    initial_backoff=self.options.backoff[0], max_backoff=self.options.backoff[1]
                ),
            ),
            topologies=topologies,
        )
        self.jobs.after_build(engine)
        self.jobs.sync(engine, time.time())
        return engine

    # -- the loop --------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        self.status.start()
        await self._start_reflectors(CORE_KINDS + OPTIONAL_KINDS)
        await asyncio.gather(*(r.synced.wait() for r in self.reflectors.values()))
        self._events.clear()
        await self._check_kueue_manager()
        self.engine = self._build_engine()
        self.readiness.synced = True
        log.info("synced: %d nodes, %d pods", self.cache.state_or_fail().nodes.size,
                 len(self.cache.state_or_fail().pods))  # fmt: skip
        discovery = asyncio.get_running_loop().create_task(self._discover_later(stop), name="discovery")
        try:
            await self._loop(stop)
        finally:
            discovery.cancel()
            await self.shutdown()

    async def _loop(self, stop: asyncio.Event) -> None:
        stopper = asyncio.get_running_loop().create_task(stop.wait())
        try:
            while not stop.is_set():
                timeout = self._next_timeout()
                waker = asyncio.get_running_loop().create_task(self._wake.wait())
                await asyncio.wait({waker, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                waker.cancel()
                if stop.is_set():
                    return
                self._wake.clear()
                self.step(time.time())
        finally:
            stopper.cancel()

    def _next_timeout(self) -> float:
        timeout = self.options.idle_cycle_interval
        release = self.cache.next_release()
        if release is not None:
            timeout = min(timeout, max(release - time.time(), 0.0))
        wakeup = self.engine.next_wakeup() if self.engine is not None else None
        if wakeup is not None:
            timeout = min(timeout, max(wakeup - time.time(), 0.0))
        return timeout

    def step(self, now: float) -> CycleResult | None:
        """Apply what arrived, then (when something could have changed) one engine cycle."""
        engine = self.engine
        if engine is None:
            return None
        self.last_step = time.monotonic()
        events, self._events = self._events, []
        summary = self.cache.apply(events)
        if summary.changed:
            self.generation += 1
        self._after_batch(summary, now)
        # A change to Kueue's objects rebuilt the engine: this cycle is the new one's.
        engine = self.engine
        assert engine is not None
        if self.cache.release_held(now):
            self._cycle_needed = True
        if not self.may_schedule():
            return None
        if (
            not (self._cycle_needed or summary.changed)
            and now - self.readiness.last_cycle < self.options.idle_cycle_interval
        ):
            return None
        self._cycle_needed = False
        started, cpu = time.perf_counter(), time.process_time()
        result = engine.cycle(now)
        cpu = time.process_time() - cpu
        self.cycles += 1
        self.readiness.last_cycle = now
        self.metrics.cycle(time.perf_counter() - started, result)
        log.debug(
            "cycle %d: %d events, %d bound, %d evicted, %d waiting (%.1f ms, %.1f ms CPU)",
            self.cycles, len(events), len(result.bound), len(result.evicted), len(result.waiting),
            (time.perf_counter() - started) * 1000, cpu * 1000,
        )  # fmt: skip
        self._dispatch(result, now)
        if result.decisions:
            self.generation += 1
        for observe in self.observers:
            observe(result, now)
        self.metrics.observe_state(self.cache, engine)
        self.metrics.observe_jobs(self.jobs.phases(), self.jobs.started, self.jobs.stopped)
        self.metrics.observe_informers(self.reflectors.values(), self.client.requests)
        if engine.admission is not None:
            versions = {kind.plural: r.version for kind, r in self.reflectors.items()}
            self.queue_status.update(engine.admission, versions)
        return result

    def _after_batch(self, summary: BatchSummary, now: float) -> None:
        engine = self.engine
        assert engine is not None
        for key in summary.pods_removed:
            engine.pod_deleted(key, now)
            self.status.forget(key)
        for key in sorted(summary.pods_changed):
            engine.retry(key)
        if summary.kueue_changed:
            self._rebuild_admission()
            engine = self.engine
            assert engine is not None
        if summary.jobs_changed or self.jobs.dirty:
            self.jobs.sync(engine, now, summary.jobs_changed)
        for key in summary.pods_added:
            self.jobs.pod_arrived(key, engine)
        if summary.flights_aborted:
            self._cycle_needed = True

    def _dispatch(self, result: CycleResult, now: float) -> None:
        state = self.cache.state_or_fail()
        engine = self.engine
        assert engine is not None
        jobs = self.jobs
        victims: dict[str, list[str]] = {}
        # Placeholders stand in for a suspended Job's pods: nothing of theirs is written.
        placeholders = {
            d.pod for d in result.decisions if isinstance(d, (Evicted, Bound)) and jobs.is_placeholder(d.pod)
        }
        for decision in result.decisions:
            if isinstance(decision, Evicted) and decision.pod not in placeholders:
                victims.setdefault(decision.preemptor, []).append(decision.pod)
        for decision in result.decisions:
            if isinstance(decision, Evicted):
                jobs.evicted(decision.pod, engine, now, decision.reason)
                if decision.pod not in placeholders:
                    self._evict(decision)
            elif isinstance(decision, Bound) and decision.pod in placeholders:
                continue
            elif isinstance(decision, Bound):
                mine = victims.get(decision.pod, [])
                flight = self.cache.begin_flight(decision.pod, decision.node, victims=mine, now=now)
                if mine:
                    pod = state.pods[decision.pod].pod
                    # As kube-scheduler: the preemptor is told why it did not fit, and nominated.
                    if decision.failure:
                        self.status.waiting(pod, decision.failure, nominated=decision.node)
                    else:
                        self.status.nominated(pod, decision.node)
                self.binder.start(flight)
            elif isinstance(decision, Waiting):
                info = state.pods.get(decision.pod)
                if jobs.is_placeholder(decision.pod):
                    jobs.waiting(decision.pod, decision.reason)
                elif info is not None and info.node is None:
                    self.status.waiting(info.pod, decision.reason)
            elif isinstance(decision, Admitted):
                self.metrics.admitted(decision)
                # Kueue preemptions name the preempting workload.
                jobs.admitted(decision, engine, now, victims.get(decision.workload, ()))
            elif isinstance(decision, Deallocated):
                info = state.pods.get(decision.pod)
                if info is not None and not jobs.is_placeholder(decision.pod):
                    self.binder.release(decision.claim, pod_uid(info.pod))

    def _evict(self, decision: Evicted) -> None:
        pod = self.cache.stores.get(PODS, {}).get(decision.pod)
        self.cache.evict(decision.pod)
        assert self.engine is not None
        self.engine.pod_deleted(decision.pod)
        self.metrics.victim()
        if isinstance(pod, Pod):
            self.evictor.evict(pod, "preempting to accommodate a higher priority pod")

    def _victim_survived(self, pod_key: str) -> None:
        self.cache.unevict(pod_key)
        self._cycle_needed = True
        self._wake.set()

    def _bound(self, result: BindResult) -> None:
        self.metrics.binding(result)
        self.generation += 1
        state = self.cache.state_or_fail()
        if result.ok:
            self.cache.succeeded(result.pod)
            info = state.pods.get(result.pod)
            if info is not None:
                self.status.scheduled(info.pod, result.node)
            return
        info = state.pods.get(result.pod)
        if info is not None:
            self.status.waiting(info.pod, result.reason)
        initial, maximum = self.options.backoff
        self.cache.hold(result.pod, time.time(), initial=initial, maximum=maximum)
        self._cycle_needed = True
        self._wake.set()

    async def shutdown(self) -> None:
        """Stop watching; let the writes under way finish; nothing stays assumed."""
        for reflector in self.reflectors.values():
            reflector.stop()
        for task in self._reflector_tasks.values():
            task.cancel()
        await asyncio.gather(*self._reflector_tasks.values(), return_exceptions=True)
        await self.binder.drain()
        await self.evictor.drain()
        await self.jobs.drain()
        await self.status.stop(flush=True)
        await self.queue_status.stop()
