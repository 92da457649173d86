"""The discrete-event simulator: a virtual clock driving the engine.

`Simulation(...).run()` replays a `Workload` on a cluster under one
`Policy` and returns a `SimResult`. The loop:

1. Pop every event of the next instant (`EventQueue.pop_batch`): node
   failures, completions, node repairs, arrivals, in that order.
2. Apply them to the ClusterState: arriving jobs add their pods (claims are
   generated from templates), completed pods are removed (and a Kueue
   workload whose pods all completed is finished), a failed node's pods
   are evicted and requeued.
3. If anything changed, run one engine cycle and apply its decisions: a
   bound pod starts its run and schedules its completion at
   now + work left / throughput factor; an evicted pod's run is cancelled
   (its completion event becomes stale) and its work restarts, keeping
   `checkpoint` × the work it did. A cycle that evicted something is
   followed by another at the same instant, so victims are retried.
4. Record a sample and report progress.

Gangs: all pods of a gang start in one cycle and run at the speed of the
slowest member; when a member of a gang that Kueue does not manage is
preempted, the simulator stops its siblings too (the job restarts as a
whole, as a real training job would). Kueue workloads are evicted whole by
the engine already.

The same inputs always give the same result: the heap's tie-break is
(time, kind, per-simulation sequence), pods are added in job order, and
the engine is deterministic.
"""

from __future__ import annotations

import math
import time as wallclock
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from allot.admission.state import AdmissionState
from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.dra import DeviceId
from allot.engine.decisions import Admitted, Bound, CycleResult, Evicted, Waiting
from allot.engine.engine import Engine, EnginePolicy
from allot.engine.policy import ConsolidationConfig
from allot.engine.queueing import QueueingConfig
from allot.engine.reserve import runtime_estimate
from allot.model.core import Node
from allot.model.errors import Location
from allot.model.kueue import ClusterQueue
from allot.model.loader import LoadedObject, Manifests
from allot.model.resource import ResourceSlice
from allot.scheduling.profile import DEFAULT_SCHEDULER_NAME, Profile
from allot.sim.clock import EventQueue
from allot.sim.events import EventKind, SimEvent
from allot.sim.inventory import PLUGIN_GPU_RESOURCE, GpuInventory
from allot.sim.policies import Policy
from allot.sim.recorder import Recorder
from allot.sim.records import SimResult
from allot.sim.topology import ThroughputModel, default_model, sharing_factor
from allot.sim.workload import Job, Workload, make_pods

NODE_DOWN_REASON = "node failed"
GANG_RESTART_REASON = "a pod of its gang was preempted"
MAX_CYCLES_PER_INSTANT = 8
# Work never drops to zero through checkpoints: a restarted pod runs at least this long.
MIN_WORK = 1.0

Progress = Callable[[float], None]


class SimulationError(RuntimeError):
    """The simulation found the cluster in a state it must never reach (an invariant broke)."""


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """A node fails at `down` and (unless `up` is None) comes back at `up`."""

    node: str
    down: float
    up: float | None = None


@dataclass(frozen=True, slots=True)
class SimOptions:
    """`horizon`: stop at this time (None: when no event is left). `checkpoint`: the
    fraction of its work a preempted pod keeps (0: restart from scratch)."""

    horizon: float | None = None
    checkpoint: float = 0.0
    check_invariants: bool = False
    trace: bool = True
    # Queueing hints decide when waiting work is retried; False retries all of it every cycle
    # (the reference the hints are tested against: same decisions, more time).
    hints: bool = True


@dataclass(slots=True)
class _Run:
    """A pod's progress across its runs.

    While it runs, `work_left` is the work left at `since` and `factor` its pace since then (its
    alignment `base` times its time-slicing share, the slowest of its gang's); the work it
    started this run with is `run_work`, and what its pace cost is summed per run.
    """

    job: Job
    work_left: float
    token: int = 0
    started: float | None = None
    factor: float = 1.0
    workload: str = ""
    base: float = 1.0
    share: float = 1.0
    sliced: tuple[DeviceId, ...] = ()
    since: float = 0.0
    run_work: float = 0.0
    deadline: float = math.inf
    held: float = 0.0
    lost_misaligned: float = 0.0
    lost_contention: float = 0.0
    progress: float = 0.0


@dataclass
class _Counters:
    events: int = 0
    cycles: int = 0
    changed: bool = False
    freed: bool = False
    errors: list[str] = field(default_factory=list)


class Simulation:
    """One policy over one workload on one cluster; see the module docstring."""

    def __init__(
        self,
        *,
        manifests: Manifests,
        workload: Workload,
        policy: Policy,
        seed: int = 0,
        scenario: str = "",
        options: SimOptions | None = None,
        node_events: Sequence[NodeEvent] = (),
        throughput: ThroughputModel | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.workload = workload
        self.policy = policy
        self.seed = seed
        self.scenario = scenario
        self.options = options or SimOptions()
        self.node_events = list(node_events)
        self.throughput = throughput or default_model()
        self.progress = progress
        extra = [LoadedObject(o, Location(file="<workload>")) for o in workload.objects]
        self.manifests = Manifests(entries=[*manifests.entries, *extra], skipped=list(manifests.skipped))
        self.state = ClusterState.from_manifests(self.manifests)
        admission = None
        if policy.queues and self.manifests.of_kind(ClusterQueue):
            admission = AdmissionState.from_cluster(
                self.manifests, self.state, config=policy.admission_config(self.manifests)
            )
        profiles = dict(policy.profiles) if policy.profiles else {DEFAULT_SCHEDULER_NAME: Profile()}
        self.engine = Engine(
            self.state,
            admission=admission,
            profiles=profiles,
            policy=EnginePolicy(
                queues=admission is not None,
                preemption=policy.preemption,
                queueing=QueueingConfig.exact(hints=self.options.hints),
                consolidation=ConsolidationConfig() if policy.consolidation else None,
                reservation=policy.reservations,
                quota_holds=policy.quota_holds,
            ),
            fallback_profile=next(iter(profiles)),
            seed=seed,
        )
        self.inventory = GpuInventory(self.manifests.of_kind(Node), self.manifests.of_kind(ResourceSlice))
        tenants = workload.tenant_names()
        namespaces = {t.namespace: t.name for t in workload.tenants.values()}
        self.recorder = Recorder(self.inventory, tenants, namespaces, trace=self.options.trace)
        self.queue = EventQueue()
        self._runs: dict[str, _Run] = {}
        self._jobs = {job.key: job for job in workload.jobs}
        self._workload_pods: dict[str, set[str]] = {}
        # Running pods on each time-sliced GPU: they share it in equal turns.
        self._sharers: dict[DeviceId, set[str]] = {}
        # The GPUs each pod shape could run on (for "idle while work that could use it waited").
        self._usable: dict[str, npt.NDArray[np.bool_]] = {}
        self._counters = _Counters()
        # Called with each cycle's result and time once it is applied (the dashboard's frames).
        self.observers: list[Callable[[CycleResult, float], None]] = []

    # -- the loop -----------------------------------------------------------------------

    def run(self) -> SimResult:
        began = wallclock.perf_counter()
        queue = self.queue
        if self.engine.admission is not None and not self.observers:
            # Only the recorder reads the reasons, and only their normalised text: a backlog is not
            # told each new count in a quota message. Observers (the dashboard) see every text.
            self.engine.admission.compare_reasons_by(self.recorder.reason_key)
        for job in self.workload.jobs:
            queue.call_at(job.arrival, EventKind.ARRIVAL, job.key)
        for failure in self.node_events:
            queue.call_at(failure.down, EventKind.NODE_DOWN, failure.node)
            if failure.up is not None:
                queue.call_at(failure.up, EventKind.NODE_UP, failure.node)
        horizon = self.options.horizon
        if horizon is not None:
            queue.call_at(horizon, EventKind.HORIZON, "")
        end = 0.0
        self.recorder.sample(0.0)
        while len(queue):
            batch = queue.pop_batch()
            now = queue.now()
            end = now
            if self._handle(batch, now):
                break
            if self._counters.changed:
                self._cycles(now)
            self.recorder.sample(now)
            if self.progress is not None:
                self.progress(now)
        for pod in sorted(self._runs):
            if self._runs[pod].started is not None:
                self._end_run(pod, end)
        result = self.recorder.result(
            scenario=self.scenario,
            policy=self.policy.name,
            seed=self.seed,
            weights=[t.weight for t in self.workload.tenants.values()],
            end=end,
            events=self._counters.events,
            cycles=self._counters.cycles,
        )
        result.wall_seconds = wallclock.perf_counter() - began
        if not self.throughput.available:
            result.notes.append("topology metrics not installed: alignment not assessed, no slowdown modeled")
        return result

    def _handle(self, batch: list[SimEvent], now: float) -> bool:
        """Apply one instant's events; True when the horizon was reached."""
        counters = self._counters
        counters.changed = counters.freed = False
        for event in batch:
            counters.events += 1
            if event.kind is EventKind.HORIZON:
                return True
            if event.kind is EventKind.ARRIVAL:
                self._arrive(self._jobs[event.subject], now)
            elif event.kind is EventKind.COMPLETION:
                self._complete(event, now)
            elif event.kind is EventKind.NODE_DOWN:
                self._node_down(event.subject, now)
            elif event.kind is EventKind.NODE_UP:
                self._node_up(event.subject, now)
        return False

    def _cycles(self, now: float) -> None:
        for _ in range(MAX_CYCLES_PER_INSTANT):
            result = self.engine.cycle(now)
            self._counters.cycles += 1
            self._apply(result, now)
            for observe in self.observers:
                observe(result, now)
            if self.options.check_invariants:
                problems = check(self.state)
                if problems:
                    raise SimulationError(f"t={now:g}s, policy {self.policy.name}: " + "; ".join(problems))
            if not result.evicted:
                return

    # -- events -------------------------------------------------------------------------

    def _arrive(self, job: Job, now: float) -> None:
        shape = self.workload.shapes[job.shape]
        tenant = self.workload.tenants[job.tenant]
        pods = make_pods(job, shape, tenant)
        for pod in pods:
            self.state.add_pod(pod)
            self._runs[pod.key] = _Run(job, job.duration)
        usable = self._usable.get(job.shape)
        if usable is None and pods and shape.gpus > 0:
            usable = self._usable[job.shape] = self.inventory.usable_by(self.state, pods[0].key)
        self.recorder.arrived(job, shape, now, usable)
        self._counters.changed = True

    def _complete(self, event: SimEvent, now: float) -> None:
        run = self._runs.get(event.subject)
        if run is None or run.token != event.token or run.started is None:
            return  # the run this completion belonged to was cut short
        pod = event.subject
        self._end_run(pod, now)
        run.started = None
        self.recorder.released(pod, now, completed=True)
        self.state.remove_pod(pod)
        del self._runs[pod]
        if run.workload:
            members = self._workload_pods.get(run.workload)
            if members is not None:
                members.discard(pod)
                if not members:
                    del self._workload_pods[run.workload]
                    self.engine.workload_finished(run.workload, now)
        self._counters.changed = self._counters.freed = True

    def _node_down(self, node: str, now: float) -> None:
        index = self.state.nodes.index.get(node)
        if index is None:
            return
        for info in self.state.pods_on(index):
            if info.node is not None:
                for evicted in self.engine.evict(info.key, NODE_DOWN_REASON, now):
                    self._stop(evicted.pod, now, NODE_DOWN_REASON, "", {})
        self.state.set_node_ready(node, False)
        self.recorder.node_ready(node, False, now)
        self._counters.changed = True

    def _node_up(self, node: str, now: float) -> None:
        if node not in self.state.nodes.index:
            return
        self.state.set_node_ready(node, True)
        self.recorder.node_ready(node, True, now)
        self._counters.changed = True

    # -- decisions ----------------------------------------------------------------------

    def _apply(self, result: CycleResult, now: float) -> None:
        """Apply a cycle's decisions in order; pods bound and still bound at the end start running."""
        starting: dict[str, Bound] = {}
        for decision in result.decisions:
            if isinstance(decision, Bound):
                starting[decision.pod] = decision
            elif isinstance(decision, Evicted):
                self._stop(decision.pod, now, decision.reason, decision.preemptor, starting)
            elif isinstance(decision, Waiting):
                self.recorder.waiting(decision.pod, decision.reason, now)
            elif isinstance(decision, Admitted):
                self.recorder.admitted(decision.workload, decision.cluster_queue, decision.borrowing, now)
        if starting:
            self._start(list(starting.values()), now)

    def _start(self, decisions: list[Bound], now: float) -> None:
        # Pods the scenario's manifests brought (running when it starts) have no run to time.
        decisions = [d for d in decisions if d.pod in self._runs]
        affected: set[str] = set()
        for d in decisions:
            run = self._runs[d.pod]
            assessment = self.throughput.assess(self.state, d.pod)
            run.token += 1
            run.started = run.since = now
            run.run_work = run.work_left
            run.base = assessment.factor
            run.sliced = assessment.sliced
            run.share = 1.0
            run.factor = 0.0  # set by _retime
            limit = runtime_estimate(self.state.pods[d.pod])
            # Kueue stops a workload at its maximum execution time.
            run.deadline = now + limit if limit is not None else math.inf
            run.lost_misaligned = run.lost_contention = run.progress = 0.0
            run.workload = self.engine.workload_of(d.pod)
            if run.workload:
                self._workload_pods.setdefault(run.workload, set()).add(d.pod)
            for device in run.sliced:
                sharers = self._sharers.setdefault(device, set())
                sharers.add(d.pod)
                affected |= sharers
            affected.add(d.pod)
            plugin_gpus = self.state.pods[d.pod].requests.get(PLUGIN_GPU_RESOURCE, 0)
            run.held = self.recorder.bound(
                d.pod, d.node, d.allocations, plugin_gpus, now, aligned=assessment.aligned, factor=run.base
            )
        self._retime(affected, now)

    def _retime(self, pods: set[str], now: float) -> None:
        """Set the pace of running pods whose time-slicing share or gang may have changed, and
        schedule their completions again (the old ones become stale)."""
        jobs = {self._runs[p].job.key: self._runs[p].job for p in pods if p in self._runs}
        members: list[str] = []
        for job in sorted(jobs.values(), key=lambda j: j.key):
            keys = [f"{job.namespace}/{name}" for name in job.pod_names()] if job.gang else []
            running = [k for k in keys if k in self._runs and self._runs[k].started is not None]
            members.extend(
                running or [p for p in sorted(pods) if p in self._runs and self._runs[p].job is job]
            )
        # Work done so far at the old pace, then the new shares.
        for pod in members:
            if self._runs[pod].started is not None:
                self._advance(self._runs[pod], now)
        for pod in members:
            run = self._runs[pod]
            run.share = min((sharing_factor(len(self._sharers[d])) for d in run.sliced), default=1.0)
        for pod in sorted(set(members)):
            run = self._runs[pod]
            if run.started is None:
                continue
            pace = run.base * run.share
            if run.job.gang:
                siblings = [f"{run.job.namespace}/{name}" for name in run.job.pod_names()]
                pace = min(
                    (
                        self._runs[k].base * self._runs[k].share
                        for k in siblings
                        if k in self._runs and self._runs[k].started is not None
                    ),
                    default=pace,
                )
            if pace == run.factor:
                continue
            run.factor = pace
            run.token += 1
            finish = min(now + run.work_left / pace, run.deadline)
            self.queue.call_at(max(finish, now), EventKind.COMPLETION, pod, run.token)

    def _advance(self, run: _Run, now: float) -> None:
        """Count the work done and what its pace cost since `run.since`."""
        elapsed = max(now - run.since, 0.0)
        run.since = now
        if not elapsed or not run.factor:
            return
        run.work_left = max(run.work_left - elapsed * run.factor, 0.0)
        run.progress += elapsed * run.factor
        run.lost_misaligned += run.held * elapsed * (1.0 - run.base)
        run.lost_contention += len(run.sliced) * elapsed * (1.0 - run.share)

    def _end_run(self, pod: str, now: float) -> None:
        """The pod's run ends (completed, stopped, or the simulation is over): report what it cost
        and let its time-slicing partners speed up."""
        run = self._runs[pod]
        self._advance(run, now)
        assert run.started is not None
        self.recorder.run_ended(
            pod,
            started=run.started,
            ended=now,
            progress=run.progress,
            lost_misaligned=run.lost_misaligned,
            lost_contention=run.lost_contention,
            time_sliced=bool(run.sliced),
        )
        partners: set[str] = set()
        for device in run.sliced:
            sharers = self._sharers.get(device, set())
            sharers.discard(pod)
            partners |= sharers
        if partners:
            self._retime(partners, now)

    def _stop(self, pod: str, now: float, reason: str, preemptor: str, starting: dict[str, Bound]) -> None:
        """A pod was taken off its node: cancel its run, keep the checkpointed work.

        A pod bound earlier in the same cycle (in `starting`) never ran: it is
        simply not started. A pod of a gang that Kueue does not manage takes
        its running (or starting) siblings with it.
        """
        run = self._runs.get(pod)
        if run is None:
            return
        if starting.pop(pod, None) is None:
            if run.started is None:
                return
            self._end_run(pod, now)
            done = run.run_work - run.work_left
            run.work_left = max(MIN_WORK, run.run_work - self.options.checkpoint * done)
            run.started = None
            run.token += 1
            self.recorder.preempted(pod, now, reason, preemptor)
            self._counters.freed = True
        managed = bool(run.workload) or bool(self.engine.workload_of(pod))
        if run.workload:
            members = self._workload_pods.get(run.workload)
            if members is not None:
                members.discard(pod)
                if not members:
                    del self._workload_pods[run.workload]
            run.workload = ""
        if run.job.gang and not managed:
            for sibling in run.job.pod_names():
                key = f"{run.job.namespace}/{sibling}"
                other = self._runs.get(key)
                if key == pod or other is None:
                    continue
                if key in starting or other.started is not None:
                    self.state.unbind(key)
                    self._stop(key, now, GANG_RESTART_REASON, preemptor, starting)
