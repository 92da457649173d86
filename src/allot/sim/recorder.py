"""The simulator's bookkeeping: what it saw, turned into records and series.

The simulator calls the recorder when a job arrives, a pod is bound,
released (completed, preempted, lost with its node) or told why it waits,
when a workload is admitted and after every instant with events
(`sample`). Running totals per GPU and per tenant are kept incrementally,
so a sample costs a few vector operations over the GPUs, not a walk over
the pods. The work is per change: the engine reports a waiting pod's
reason when it tries the pod, not every cycle, and each distinct reason
text is normalised once; memory grows with jobs and instants (one sample
per instant at which something happened), never with jobs x cycles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from allot.model.resource import AllocationResult
from allot.sim.events import TraceKind
from allot.sim.inventory import GpuInventory, Usage
from allot.sim.records import (
    AdmissionRecord,
    BindRecord,
    DemandClasses,
    JobRecord,
    Occupancy,
    PreemptionRecord,
    RunRecord,
    Samples,
    SimResult,
    TraceEntry,
)
from allot.sim.workload import Job, PodShape

_POD_PREFIX = re.compile(r"^pod \S+: ")
_OBJECT = re.compile(r"\s*\([^()\s]+/[^()\s]+\)")
_GANG_PREFIX = re.compile(r"^pod group \S+: \d+/\d+ pods fit; \S+: ")
_NODES = re.compile(r"\b\d+/\d+ nodes are available: ")
_COUNT = re.compile(r"\b\d+ (?=[A-Za-z(])")
# The per-node reasons after "no node fits:", up to the sentence's end: kube-scheduler orders them
# by how many nodes gave each, so the same reasons come in another order as the counts change.
_NODE_REASONS = re.compile(r"(no node fits: )([^.]*)")
_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")
_EPS = 1e-9


def normalise_reason(reason: str) -> str:
    """A pending reason without the names and counts that make every pod's message unique."""
    text = _GANG_PREFIX.sub("gang: ", reason.strip())
    text = _POD_PREFIX.sub("", text)
    text = _OBJECT.sub("", text)
    text = _NODES.sub("no node fits: ", text)
    text = _COUNT.sub("", text)
    text = _NODE_REASONS.sub(lambda m: m.group(1) + ", ".join(sorted(m.group(2).split(", "))), text)
    return _NUMBER.sub("N", text)


@dataclass(slots=True)
class _JobState:
    job: Job
    shape: PodShape
    started: set[str] = field(default_factory=set)
    start: float | None = None
    finish: float | None = None
    completed: int = 0
    preemptions: int = 0


class Recorder:
    """Collects a run's records; `result()` freezes them into a `SimResult`."""

    def __init__(
        self,
        inventory: GpuInventory,
        tenants: list[str],
        namespaces: Mapping[str, str],
        *,
        trace: bool = True,
    ) -> None:
        """`namespaces` maps each tenant namespace to its tenant."""
        self.inventory = inventory
        self.tenants = tenants
        self._tenant_index = {t: i for i, t in enumerate(tenants)}
        self._namespaces = dict(namespaces)
        size = len(inventory)
        self._compute = np.zeros(size)
        self._memory = np.zeros(size)
        self._gpu_node = np.array(inventory.node_of, dtype=np.int64)
        self._node_ready = np.ones(len(inventory.node_names), dtype=np.bool_)
        self._node_index = {n: i for i, n in enumerate(inventory.node_names)}
        count = len(tenants)
        self._alloc = np.zeros(count)
        self._demand = np.zeros(count)
        self._pending = np.zeros(count, dtype=np.int64)
        # GPU-equivalents of the GPU pods waiting, and per pod shape the pods waiting and the GPUs
        # they could use (`usable`, given at arrival): what "idle while work waited" is judged by.
        self._waiting = 0.0
        self._shape_waiting: dict[str, int] = {}
        self._usable: dict[str, np.ndarray] = {}
        # Demand classes: pod shapes that can use the same GPUs share one. Per (tenant, class) the
        # GPU-equivalents arrived and not finished, sampled like the tenants' demand; and the
        # ready GPUs, as versions (they change only when nodes fail or come back).
        self._class_of_mask: dict[bytes, int] = {}
        self.class_masks: list[np.ndarray] = []
        self._shape_class: dict[str, int] = {}
        self._class_keys: dict[tuple[int, int], int] = {}
        self._class_demand: list[float] = []
        self._class_series: list[list[float]] = []
        self._ready_versions: list[np.ndarray] = [self._node_ready[self._gpu_node].copy()]
        self._ready_series: list[int] = []
        self._running = 0
        self._series: dict[str, list[float]] = {k: [] for k in _SCALARS}
        self._tenant_series: dict[str, list[np.ndarray]] = {"alloc": [], "demand": [], "pending": []}
        self._jobs: dict[str, _JobState] = {}
        self._open: dict[str, tuple[list[Usage], float, int]] = {}  # pod -> (usage, start, tenant)
        self._plugin_free: dict[str, list[int]] = {
            n: list(inventory.plugin_slots(n)) for n in inventory.node_names
        }
        self._occupancy: list[tuple[int, int, float, float, float]] = []
        self._binds: list[BindRecord] = []
        self._runs: list[RunRecord] = []
        self._preemptions: list[PreemptionRecord] = []
        self._admissions: list[AdmissionRecord] = []
        self._reason_now: dict[str, tuple[str, float]] = {}
        # Reason text -> its normalised form: the regular expressions run once per distinct text.
        self._normalised: dict[str, str] = {}
        self._reasons: dict[str, list[float]] = {}
        self._reason_pods: dict[str, set[str]] = {}
        self.trace: list[TraceEntry] | None = [] if trace else None

    # -- events ----------------------------------------------------------------------------

    def tenant_of_pod(self, pod: str, fallback: str = "") -> str:
        job = self._job_of_pod(pod)
        return job.job.tenant if job is not None else fallback

    def _job_of_pod(self, pod: str) -> _JobState | None:
        namespace, _, name = pod.partition("/")
        return self._jobs.get(f"{namespace}/{name.rpartition('-')[0]}")

    def _log(self, time: float, kind: TraceKind, subject: str, detail: str = "") -> None:
        if self.trace is not None:
            self.trace.append(TraceEntry(time, kind, subject, detail))

    def arrived(self, job: Job, shape: PodShape, now: float, usable: np.ndarray | None = None) -> None:
        """`usable`: which GPUs (by inventory index) the job's pods could run on; None: none."""
        self._jobs[job.key] = _JobState(job, shape)
        t = self._tenant_index[job.tenant]
        self._demand[t] += job.pods * shape.gpus
        self._pending[t] += job.pods
        if usable is not None and job.shape not in self._usable:
            self._usable[job.shape] = usable
            klass = self._class_of_mask.setdefault(usable.tobytes(), len(self.class_masks))
            if klass == len(self.class_masks):
                self.class_masks.append(usable)
            self._shape_class[job.shape] = klass
        self._class_change(t, job.shape, job.pods * shape.gpus)
        self._wait(self._jobs[job.key], job.pods)
        self._log(now, TraceKind.ARRIVAL, job.key, f"{job.pods} pod(s)")

    def bound(
        self,
        pod: str,
        node: str,
        allocations: Mapping[str, AllocationResult],
        plugin_gpus: int,
        now: float,
        *,
        aligned: bool | None,
        factor: float,
    ) -> float:
        """Record a pod start; the GPU-equivalents it holds."""
        state = self._job_of_pod(pod)
        assert state is not None, pod
        t = self._tenant_index[state.job.tenant]
        usage = self.inventory.device_usage(allocations.values())
        free = self._plugin_free.get(node, [])
        for _ in range(min(plugin_gpus, len(free))):
            usage.append((free.pop(0), 1.0, 1.0))
        taken = 0.0
        for gpu, compute, memory in usage:
            self._compute[gpu] += compute
            self._memory[gpu] += memory
            taken += max(compute, memory)
        self._alloc[t] += taken
        self._pending[t] -= 1
        self._wait(state, -1)
        self._running += 1
        self._open[pod] = (usage, now, t)
        self._close_reason(pod, now)
        self._binds.append(BindRecord(now, pod, state.job.tenant, node, taken, aligned, factor))
        if pod not in state.started:
            state.started.add(pod)
            if len(state.started) == state.job.pods:
                state.start = now
        self._log(now, TraceKind.START, pod, node)
        return taken

    def run_ended(
        self,
        pod: str,
        *,
        started: float,
        ended: float,
        progress: float,
        lost_misaligned: float,
        lost_contention: float,
        time_sliced: bool,
    ) -> None:
        """A pod's run ended: how much work it did in that time, and the GPU-seconds of work its
        misalignment and time-slicing cost it."""
        self._runs.append(
            RunRecord(
                pod=pod,
                tenant=self.tenant_of_pod(pod),
                start=started,
                end=ended,
                progress=progress,
                lost_misaligned=lost_misaligned,
                lost_contention=lost_contention,
                time_sliced=time_sliced,
            )
        )

    def released(self, pod: str, now: float, *, completed: bool) -> None:
        """The pod left its node: it completed, or (completed=False) it is pending again."""
        opened = self._open.pop(pod, None)
        if opened is None:
            return
        usage, start, t = opened
        node = self.inventory.gpus[usage[0][0]].node if usage else ""
        for gpu, compute, memory in usage:
            self._compute[gpu] -= compute
            self._memory[gpu] -= memory
            self._alloc[t] -= max(compute, memory)
            if end_fraction := max(compute, memory):
                self._occupancy.append((gpu, t, end_fraction, start, now))
            if self.inventory.gpus[gpu].label.startswith("nvidia.com/gpu#"):
                self._plugin_free.setdefault(node, []).append(gpu)
        self._running -= 1
        state = self._job_of_pod(pod)
        assert state is not None
        if completed:
            self._demand[t] -= state.shape.gpus
            self._class_change(t, state.job.shape, -state.shape.gpus)
            state.completed += 1
            if state.completed == state.job.pods:
                state.finish = now
            self._log(now, TraceKind.COMPLETION, pod)
        else:
            self._pending[t] += 1
            self._wait(state, 1)

    def _class_change(self, tenant: int, shape: str, amount: float) -> None:
        klass = self._shape_class.get(shape)
        if klass is None or amount == 0:
            return
        column = self._class_keys.setdefault((tenant, klass), len(self._class_demand))
        if column == len(self._class_demand):
            self._class_demand.append(0.0)
        self._class_demand[column] = max(0.0, self._class_demand[column] + amount)

    def _wait(self, state: _JobState, pods: int) -> None:
        """`pods` more (or fewer) pods of the job's shape wait."""
        if state.shape.gpus <= 0:
            return
        self._waiting = max(0.0, self._waiting + pods * state.shape.gpus)
        shape = state.job.shape
        self._shape_waiting[shape] = self._shape_waiting.get(shape, 0) + pods

    def preempted(self, pod: str, now: float, reason: str, preemptor: str) -> None:
        self.released(pod, now, completed=False)
        state = self._job_of_pod(pod)
        tenant = state.job.tenant if state is not None else ""
        if state is not None:
            state.preemptions += 1
        self._preemptions.append(
            PreemptionRecord(now, pod, tenant, reason, preemptor, self.tenant_of_pod(preemptor))
        )
        self._log(now, TraceKind.PREEMPTION, pod, reason)

    def reason_key(self, reason: str) -> str:
        """What the recorder keeps of a reason (`normalise_reason`, worked out once per text): the
        engine need not tell a pod a reason whose key it was told already."""
        normalised = self._normalised.get(reason)
        if normalised is None:
            normalised = self._normalised[reason] = normalise_reason(reason)
        return normalised

    def waiting(self, pod: str, reason: str, now: float) -> None:
        current = self._reason_now.get(pod)
        normalised = self.reason_key(reason)
        if current is not None and current[0] == normalised:
            return
        self._close_reason(pod, now)
        self._reason_now[pod] = (normalised, now)
        self._reason_pods.setdefault(normalised, set()).add(pod)

    def _close_reason(self, pod: str, now: float) -> None:
        current = self._reason_now.pop(pod, None)
        if current is not None:
            self._reasons.setdefault(current[0], [0.0])[0] += now - current[1]

    def admitted(self, workload: str, cluster_queue: str, borrowing: bool, now: float) -> None:
        tenant = self._namespaces.get(workload.partition("/")[0], "")
        self._admissions.append(AdmissionRecord(now, workload, tenant, cluster_queue, borrowing))
        self._log(now, TraceKind.ADMISSION, workload, cluster_queue)

    def node_ready(self, node: str, ready: bool, now: float) -> None:
        index = self._node_index.get(node)
        if index is not None:
            self._node_ready[index] = ready
            self._ready_versions.append(self._node_ready[self._gpu_node].copy())
        self._log(now, TraceKind.NODE_UP if ready else TraceKind.NODE_DOWN, node)

    # -- series ----------------------------------------------------------------------------

    def sample(self, now: float) -> None:
        ready = self._node_ready[self._gpu_node] if self._gpu_node.size else np.zeros(0, dtype=np.bool_)
        taken = np.minimum(np.maximum(self._compute, self._memory), 1.0)
        partly = (taken > _EPS) & (taken < 1.0 - _EPS) & ready
        values = {
            "time": now,
            "capacity": float(ready.sum()),
            "busy": float((taken > _EPS).sum()),
            "allocated": float(taken.sum()),
            "compute": float(np.minimum(self._compute, 1.0).sum()),
            "memory": float(np.minimum(self._memory, 1.0).sum()),
            "fragmented": float((1.0 - taken[partly]).sum()),
            "pending": float(self._pending.sum()),
            "running": float(self._running),
            "waiting": self._waiting if self._waiting > _EPS else 0.0,
            "wanted_free": self._wanted_free(taken, ready),
        }
        series = self._series
        if series["time"] and series["time"][-1] == now:
            for name, value in values.items():
                series[name][-1] = value
            self._tenant_series["alloc"][-1] = self._alloc.copy()
            self._tenant_series["demand"][-1] = self._demand.copy()
            self._tenant_series["pending"][-1] = self._pending.copy()
            self._class_series[-1] = list(self._class_demand)
            self._ready_series[-1] = len(self._ready_versions) - 1
            return
        for name, value in values.items():
            series[name].append(value)
        self._class_series.append(list(self._class_demand))
        self._ready_series.append(len(self._ready_versions) - 1)
        self._tenant_series["alloc"].append(self._alloc.copy())
        self._tenant_series["demand"].append(self._demand.copy())
        self._tenant_series["pending"].append(self._pending.copy())

    def _wanted_free(self, taken: np.ndarray, ready: np.ndarray) -> float:
        """Free GPU share on ready GPUs that some waiting pod could use."""
        wanted: np.ndarray | None = None
        for shape, count in self._shape_waiting.items():
            usable = self._usable.get(shape)
            if count > 0 and usable is not None:
                wanted = usable.copy() if wanted is None else wanted | usable
        if wanted is None:
            return 0.0
        return float((1.0 - taken[wanted & ready]).sum())

    # -- result ----------------------------------------------------------------------------

    def result(
        self,
        *,
        scenario: str,
        policy: str,
        seed: int,
        weights: Iterable[float],
        end: float,
        events: int,
        cycles: int,
    ) -> SimResult:
        for pod in list(self._open):
            usage, start, t = self._open[pod]
            for gpu, compute, memory in usage:
                self._occupancy.append((gpu, t, max(compute, memory), start, end))
        for pod in list(self._reason_now):
            self._close_reason(pod, end)
        s = self._series
        tenants = len(self.tenants)

        def stack(name: str, dtype: type) -> np.ndarray:
            rows = self._tenant_series[name]
            return np.array(rows, dtype=dtype) if rows else np.zeros((0, tenants), dtype=dtype)

        samples = Samples(
            time=np.array(s["time"]),
            capacity=np.array(s["capacity"]),
            busy=np.array(s["busy"]),
            allocated=np.array(s["allocated"]),
            compute=np.array(s["compute"]),
            memory=np.array(s["memory"]),
            fragmented=np.array(s["fragmented"]),
            waiting=np.array(s["waiting"]),
            wanted_free=np.array(s["wanted_free"]),
            pending_pods=np.array(s["pending"], dtype=np.int64),
            running_pods=np.array(s["running"], dtype=np.int64),
            tenant_allocated=stack("alloc", np.float64),
            tenant_demand=stack("demand", np.float64),
            tenant_pending=stack("pending", np.int64),
        )
        occ = self._occupancy
        occupancy = Occupancy(
            gpu=np.array([o[0] for o in occ], dtype=np.int64),
            tenant=np.array([o[1] for o in occ], dtype=np.int64),
            fraction=np.array([o[2] for o in occ]),
            start=np.array([o[3] for o in occ]),
            end=np.array([o[4] for o in occ]),
        )
        jobs = [
            JobRecord(
                key=st.job.key,
                tenant=st.job.tenant,
                shape=st.job.shape,
                kind=st.shape.kind,
                arrival=st.job.arrival,
                pods=st.job.pods,
                gpus=st.job.pods * st.shape.gpus,
                duration=st.job.duration,
                gang=st.job.gang,
                start=st.start,
                finish=st.finish,
                preemptions=st.preemptions,
            )
            for st in self._jobs.values()
        ]
        reasons = {r: (v[0], len(self._reason_pods.get(r, ()))) for r, v in self._reasons.items()}
        columns = len(self._class_keys)
        class_demand = np.zeros((len(self._class_series), columns))
        for row, values in enumerate(self._class_series):
            class_demand[row, : len(values)] = values
        demand_classes = DemandClasses(
            keys=sorted(self._class_keys, key=lambda key: self._class_keys[key]),
            masks=list(self.class_masks),
            demand=class_demand,
            ready=np.array(self._ready_versions, dtype=np.bool_).reshape(len(self._ready_versions), -1),
            ready_version=np.array(self._ready_series, dtype=np.int64),
        )
        return SimResult(
            scenario=scenario,
            policy=policy,
            seed=seed,
            tenants=list(self.tenants),
            weights=list(weights),
            nodes=list(self.inventory.node_names),
            gpu_nodes=list(self.inventory.node_of),
            gpu_labels=[g.label for g in self.inventory.gpus],
            samples=samples,
            occupancy=occupancy,
            jobs=jobs,
            binds=self._binds,
            runs=self._runs,
            preemptions=self._preemptions,
            admissions=self._admissions,
            pending_reasons=reasons,
            demand_classes=demand_classes,
            end=end,
            events=events,
            cycles=cycles,
            trace=self.trace or [],
        )


_SCALARS = (
    "time",
    "capacity",
    "busy",
    "allocated",
    "compute",
    "memory",
    "fragmented",
    "pending",
    "running",
    "waiting",
    "wanted_free",
)
