"""The parsed scenario file, as plain values (docs/simulator.md has the format with examples).

Parsing (`allot.sim.scenario.parse`) checks every field and turns the file
into these records; building (`allot.sim.scenario.build`) turns them into
manifests and a `Workload`. Nothing here touches files or randomness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from allot.model.core import Toleration
from allot.model.loader import Manifests
from allot.model.quantity import Quantity
from allot.model.resource import ResourceClaimSpec
from allot.sim.scenario.arrivals import Arrival
from allot.sim.scenario.distributions import Distribution
from allot.sim.simulator import NodeEvent
from allot.sim.topology import ThroughputFactors


@dataclass(frozen=True)
class GpuShare:
    """A fraction of one GPU: percent of its compute and bytes of its memory."""

    cores: int | None
    memory: Quantity | None


@dataclass(frozen=True)
class DeviceSpec:
    """The device shorthand of a job template (see `allot.sim.scenario.devices`)."""

    gpus: int = 0
    nics: int = 0
    alignment: str | None = None
    share: GpuShare | None = None
    mig: str | None = None
    device_class: str | None = None


@dataclass(frozen=True)
class JobTemplate:
    name: str
    tenant: str
    arrival: Arrival
    count: int | None
    pods: Distribution
    gang: bool | None
    duration: Distribution
    priority_class: str | None = None
    workload_priority: str | None = None
    resources: Mapping[str, Quantity] = field(default_factory=dict)
    devices: DeviceSpec | None = None
    claim: ResourceClaimSpec | None = None
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    kind: str | None = None
    # Kueue's maximum execution time: jobs stop after it; reservations backfill by it.
    runtime_estimate: float | None = None
    path: str = ""


@dataclass(frozen=True)
class TenantSpec:
    name: str
    namespace: str
    local_queue: str
    cluster_queue: str
    weight: float = 1.0
    trust: str = ""
    quota: Mapping[str, Quantity] | None = None
    path: str = ""


@dataclass(frozen=True)
class TraceSpec:
    """Jobs from a trace instead of templates: `synthetic`, `philly` (a CSV) or `openb`."""

    kind: str
    file: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PolicySpec:
    name: str
    base: str
    queues: bool | None = None
    fair_sharing: bool | None = None
    preemption: bool | None = None
    consolidation: bool | None = None
    reservations: bool | None = None
    quota_holds: bool | None = None
    scheduler_config: Mapping[str, Any] | None = None
    description: str = ""
    path: str = ""


@dataclass(frozen=True)
class PriorityClassSpec:
    name: str
    value: int
    global_default: bool = False
    workload: bool = False


@dataclass
class Scenario:
    """A scenario file, parsed, with its cluster already expanded into `manifests`."""

    name: str
    file: str
    description: str = ""
    seed: int = 0
    horizon: float | None = None
    checkpoint: float = 0.0
    compare: list[str] = field(default_factory=list)
    policies: list[PolicySpec] = field(default_factory=list)
    manifests: Manifests = field(default_factory=Manifests)
    node_events: list[NodeEvent] = field(default_factory=list)
    tenants: list[TenantSpec] = field(default_factory=list)
    priority_classes: list[PriorityClassSpec] = field(default_factory=list)
    jobs: list[JobTemplate] = field(default_factory=list)
    trace: TraceSpec | None = None
    cohort: str = "all"
    # What misalignment costs (None: the measured defaults, docs/simulator.md).
    throughput: ThroughputFactors | None = None
    # Line of every field of the file, so later checks can point at it too.
    lines: dict[str, int] = field(default_factory=dict)
