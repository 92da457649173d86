"""What a finished simulation hands to metrics and reports: plain records and arrays.

Everything here is data, written once by the `Recorder` and read by the
pure functions of `allot.sim.metrics` and by `allot.report`. Time series
are sampled after every engine cycle (one sample per instant at which
something happened) and hold until the next sample: a step function, so
integrals over time are exact sums of value × interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from allot.sim.events import TraceKind

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """One job from arrival to completion. `start` is when every pod had started once
    (None if it never did); `finish` when its last pod completed (None if it did not)."""

    key: str
    tenant: str
    shape: str
    kind: str
    arrival: float
    pods: int
    gpus: float
    duration: float
    gang: bool
    start: float | None
    finish: float | None
    preemptions: int


@dataclass(frozen=True, slots=True)
class PreemptionRecord:
    time: float
    pod: str
    tenant: str
    reason: str
    preemptor: str
    preemptor_tenant: str


@dataclass(frozen=True, slots=True)
class AdmissionRecord:
    time: float
    workload: str
    tenant: str
    cluster_queue: str
    borrowing: bool


@dataclass(frozen=True, slots=True)
class BindRecord:
    """A pod start with the topology assessment: `aligned` None when it needs no alignment
    (or the topology model is not available), `factor` its modeled throughput (1 = full speed)."""

    time: float
    pod: str
    tenant: str
    node: str
    gpus: float
    aligned: bool | None
    factor: float


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of a pod, start to end (completed, stopped, or the end of the simulation).

    `progress`: the work it did, in seconds at full speed (its run time when nothing slowed it);
    `lost_misaligned`: GPU-seconds of work its misalignment cost (GPU-equivalents held × time ×
    (1 − alignment factor)); `lost_contention`: GPU-seconds of work time-slicing cost it (time-sliced
    GPUs × time × (1 − its share of their turns)).
    """

    pod: str
    tenant: str
    start: float
    end: float
    progress: float
    lost_misaligned: float
    lost_contention: float
    time_sliced: bool

    @property
    def speed(self) -> float:
        """Its mean pace over the run: work done over time taken (1 = full speed)."""
        span = self.end - self.start
        return self.progress / span if span > 0 else 1.0


@dataclass(frozen=True, slots=True)
class TraceEntry:
    time: float
    kind: TraceKind
    subject: str
    detail: str = ""


@dataclass
class Samples:
    """Cluster and per-tenant series; column t of a per-tenant array is tenant t."""

    time: FloatArray
    capacity: FloatArray  # GPUs on ready nodes
    busy: FloatArray  # GPUs with any allocation
    allocated: FloatArray  # Σ per GPU max(compute, memory) taken
    compute: FloatArray  # Σ compute fraction taken
    memory: FloatArray  # Σ memory fraction taken
    fragmented: FloatArray  # free share of partly used GPUs
    waiting: FloatArray  # GPU-equivalents of the GPU pods waiting
    wanted_free: FloatArray  # free share of the GPUs some waiting pod could use
    pending_pods: IntArray
    running_pods: IntArray
    tenant_allocated: FloatArray  # [sample, tenant] GPU-equivalents held
    tenant_demand: FloatArray  # [sample, tenant] GPU-equivalents arrived and not finished
    tenant_pending: IntArray  # [sample, tenant] pending pods


@dataclass
class Occupancy:
    """Who held which GPU when: parallel arrays, one entry per (pod run, GPU)."""

    gpu: IntArray
    tenant: IntArray
    fraction: FloatArray
    start: FloatArray
    end: FloatArray


@dataclass
class DemandClasses:
    """What each tenant's work could run on, for fair shares of the GPUs it can use.

    A demand class is the set of GPUs (a boolean mask over the physical GPUs) that a pod shape's
    device classes and selectors select; shapes with the same set share a class. `demand[sample,
    column]` holds the GPU-equivalents arrived and not finished of `keys[column]` = (tenant index,
    class). `ready[version]` marks the GPUs on ready nodes; `ready_version[sample]` says which
    version held at each sample.
    """

    keys: list[tuple[int, int]]
    masks: list[npt.NDArray[np.bool_]]
    demand: FloatArray
    ready: npt.NDArray[np.bool_]
    ready_version: IntArray


@dataclass
class SimResult:
    """Everything one run of one policy produced."""

    scenario: str
    policy: str
    seed: int
    tenants: list[str]
    weights: list[float]
    nodes: list[str]
    gpu_nodes: list[int]  # node index of every physical GPU
    gpu_labels: list[str]
    samples: Samples
    occupancy: Occupancy
    jobs: list[JobRecord]
    binds: list[BindRecord]
    runs: list[RunRecord]
    preemptions: list[PreemptionRecord]
    admissions: list[AdmissionRecord]
    # normalised reason -> (pod-seconds spent waiting with it, distinct pods)
    pending_reasons: dict[str, tuple[float, int]]
    demand_classes: DemandClasses
    end: float
    events: int
    cycles: int
    wall_seconds: float = 0.0
    trace: list[TraceEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The report's figures of this run once drawn (data: URIs by figure), kept with it so that
    # figures drawn in the process that ran it are not drawn again where the report is written.
    figures: dict[str, str] = field(default_factory=dict)
