"""The dashboard's picture of one instant: plain, immutable records (msgspec), no behaviour.

A `Snapshot` is what every view reads and what a recorded simulation stores per frame, so it
holds facts, not presentation: amounts in the admission units (`allot.admission.resources`:
CPU in millicores, memory in bytes, devices counted), GPU shares as fractions of one physical
GPU (`allot.sim.inventory` defines the physical GPU and what each device takes of it), times in
seconds since the epoch (simulated or wall).
"""

from __future__ import annotations

import msgspec

# What a device is to its physical GPU.
WHOLE = "whole"  # the whole GPU, held by one claim
PARTITION = "partition"  # a MIG slice: a device consuming the GPU's counters
SHARED = "shared"  # a device with consumable capacity: fractional shares
PLUGIN = "plugin"  # a device plugin's `nvidia.com/gpu` slot (no DRA device behind it)
OTHER = "other"  # not a GPU (NIC, CPU group, anything else)


class Holder(msgspec.Struct, frozen=True):
    """A pod holding (part of) a device: its key, the share of the GPU it takes, its trust domain."""

    pod: str
    share: float = 1.0
    domain: str = ""


class DeviceRecord(msgspec.Struct, frozen=True):
    """One published device of a node, where it sits and who holds it."""

    name: str
    driver: str
    pool: str
    kind: str  # gpu, nic, cpu, or the driver's name
    role: str  # WHOLE, PARTITION, SHARED, PLUGIN or OTHER
    model: str = ""
    pcie_root: str = ""
    numa: int | None = None
    # Index of the physical GPU in the node's `gpus` (GPU devices only), else -1.
    gpu: int = -1
    taints: tuple[str, ...] = ()
    healthy: bool = True
    holders: tuple[Holder, ...] = ()


class GpuRecord(msgspec.Struct, frozen=True):
    """One physical GPU: a whole device, a MIG-partitioned GPU, a shared GPU or a plugin slot."""

    label: str
    mode: str  # WHOLE, PARTITION (MIG), SHARED or PLUGIN
    model: str = ""
    pcie_root: str = ""
    numa: int | None = None
    # Share of the GPU held by allocated claims (0..1), and by pods whose containers run.
    allocated: float = 0.0
    in_use: float = 0.0
    healthy: bool = True


class NodeRecord(msgspec.Struct, frozen=True):
    name: str
    pool: str
    ready: bool = True
    schedulable: bool = True
    taints: tuple[str, ...] = ()
    gpus: tuple[GpuRecord, ...] = ()
    devices: tuple[DeviceRecord, ...] = ()
    # Keys of the pods bound to the node, sorted.
    pods: tuple[str, ...] = ()
    # (allocatable, requested): CPU in millicores, memory in bytes.
    cpu: tuple[int, int] = (0, 0)
    memory: tuple[int, int] = (0, 0)


class PodRecord(msgspec.Struct, frozen=True):
    key: str
    node: str = ""
    phase: str = ""
    priority: int = 0
    scheduler: str = ""
    # Kueue: the LocalQueue (namespace/name) the pod names, and the ClusterQueue behind it.
    local_queue: str = ""
    cluster_queue: str = ""
    # The pod group (Kueue's pod-group-name or the coscheduling label), "" for a lone pod.
    group: str = ""
    # GPU-equivalents held (bound) or asked for (pending).
    gpus: float = 0.0
    created: float | None = None
    # Why it waits (pending pods only): the scheduler's sentence.
    reason: str = ""

    @property
    def namespace(self) -> str:
        return self.key.partition("/")[0]

    @property
    def pending(self) -> bool:
        return not self.node


class Quota(msgspec.Struct, frozen=True):
    """One (flavor, resource) of a ClusterQueue: nominal quota, limits, usage, borrowed."""

    flavor: str
    resource: str
    nominal: int
    usage: int
    borrowed: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class ClusterQueueRecord(msgspec.Struct, frozen=True):
    name: str
    cohort: str = ""
    weight: float = 1.0
    # Kueue's fairSharing.weightedShare (None without fair sharing) and its dominant resource.
    weighted_share: int | None = None
    dominant_resource: str = ""
    quota: tuple[Quota, ...] = ()
    pending_workloads: int = 0
    admitted_workloads: int = 0
    inactive: str = ""


class LocalQueueRecord(msgspec.Struct, frozen=True):
    key: str
    cluster_queue: str
    pending_workloads: int = 0
    admitted_workloads: int = 0
    # (flavor, resource, amount) in use by its admitted workloads.
    usage: tuple[tuple[str, str, int], ...] = ()


class CohortRecord(msgspec.Struct, frozen=True):
    name: str
    parent: str = ""
    weighted_share: int | None = None


class Tally(msgspec.Struct, frozen=True):
    """What the scheduler saw happen, per application: preemptions and recent waits (seconds)."""

    preemptions: int = 0
    admissions: int = 0
    waits: tuple[float, ...] = ()


class Snapshot(msgspec.Struct, frozen=True):
    time: float
    # "live", "watch" (a read-only mirror) or "simulation".
    source: str
    title: str = ""
    nodes: tuple[NodeRecord, ...] = ()
    pods: tuple[PodRecord, ...] = ()
    cluster_queues: tuple[ClusterQueueRecord, ...] = ()
    local_queues: tuple[LocalQueueRecord, ...] = ()
    cohorts: tuple[CohortRecord, ...] = ()
    # Tallies by application key: "namespace/<ns>", "clusterqueue/<name>", "localqueue/<ns>/<name>".
    tallies: dict[str, Tally] = msgspec.field(default_factory=dict)
    # Whether the tallies are known (a read-only mirror sees no decisions).
    decisions_seen: bool = True
