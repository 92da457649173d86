"""How well a placed pod's devices are aligned, and how fast it therefore runs.

The simulator asks a `ThroughputModel` about every pod it binds and gets an
`Assessment`:

* `aligned`: whether its GPUs and NICs share PCIe roots (None when no claim
  of the pod mixes device kinds, or the devices publish no topology);
* `nic`: its GPU/NIC throughput factor (`allot.scheduling.topology.metrics.
  pod_throughput_factor`: a pod runs at its slowest GPU's factor given the
  distance to its closest NIC; 1 without both);
* `cpu`: its CPU/NUMA factor (`cpu_alignment_factor`: CPU devices on
  another NUMA node than its GPUs or NICs; 1 without CPU devices);
* `sliced`: the time-sliced GPUs it uses (devices with NVIDIA's attribute
  `sharingStrategy: TimeSlicing`). Time-slicing gives every pod on a GPU an
  equal turn, so n pods on one time-sliced GPU each run at 1/n; the
  simulator applies that as pods come and go (`sharing_factor`).

A pod's work is stretched by 1 / (nic × cpu × sharing). The factors are
`ThroughputFactors`: the measured GPU/NIC factors and the CPU factor of
`allot.scheduling.topology.penalties` by default, overridden by a
scenario's `throughput` section. `FullSpeed` is the model without
topology: every pod runs at full speed and alignment is not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from allot.cluster.state import ClusterState
from allot.dra import DeviceId
from allot.model.resource import Device
from allot.scheduling.topology import metrics
from allot.scheduling.topology.alignment import Level
from allot.scheduling.topology.penalties import CPU_MISALIGNED_FACTOR, GPU_NIC_FACTORS
from allot.scheduling.topology.places import Place

ALIGNED_LABEL = "pcieRoot"
TIME_SLICING = "TimeSlicing"


@dataclass(frozen=True, slots=True)
class ThroughputFactors:
    """Throughput relative to an aligned placement: GPU/NIC by distance, CPUs off the devices' NUMA node."""

    gpu_nic: Mapping[Level, float] = field(default_factory=lambda: MappingProxyType(dict(GPU_NIC_FACTORS)))
    cpu_numa: float = CPU_MISALIGNED_FACTOR


@dataclass(frozen=True, slots=True)
class Assessment:
    """What the model says of one bound pod (see the module docstring)."""

    aligned: bool | None = None
    nic: float = 1.0
    cpu: float = 1.0
    sliced: tuple[DeviceId, ...] = ()

    @property
    def factor(self) -> float:
        """Throughput from alignment alone (time-slicing comes on top, as pods come and go)."""
        return self.nic * self.cpu


def sharing_factor(sharers: int) -> float:
    """Time-slicing's equal turns: each of n pods on one GPU runs at 1/n."""
    return 1.0 / max(sharers, 1)


class ThroughputModel(Protocol):
    available: bool

    def assess(self, state: ClusterState, pod_key: str) -> Assessment:
        """The assessment of a bound pod."""
        ...


class FullSpeed:
    """No topology model: nothing is assessed, nothing slows down."""

    available = False

    def assess(self, state: ClusterState, pod_key: str) -> Assessment:
        return Assessment()


def _time_sliced(device: Device) -> bool:
    for name, attribute in device.attributes.items():
        if name.rpartition("/")[2] == "sharingStrategy" and attribute.string_value == TIME_SLICING:
            return True
    return False


class TopologyMetrics:
    """The alignment model of `allot.scheduling.topology.metrics` (see the module docstring)."""

    available = True

    def __init__(self, factors: ThroughputFactors | None = None) -> None:
        self.factors = factors or ThroughputFactors()
        self._catalog: metrics.DeviceCatalog | None = None
        self._slices: object = None

    def assess(self, state: ClusterState, pod_key: str) -> Assessment:
        if self._catalog is None or self._slices is not state.slices:
            self._catalog = metrics.DeviceCatalog(state.slices)
            self._slices = state.slices
        catalog = self._catalog
        labels: list[str] = []
        places: list[Place] = []
        sliced: list[DeviceId] = []
        for claim in state.pod_claims(state.pods[pod_key]):
            allocation = claim.status.allocation
            if allocation is None:
                continue
            found = catalog.places(allocation)
            places.extend(found)
            label = metrics.claim_label(found) if len(found) > 1 else None
            if label is not None:
                labels.append(label)
            for result in allocation.devices.results:
                device = catalog.get(result.driver, result.pool, result.device)
                if device is not None and _time_sliced(device):
                    sliced.append(DeviceId(result.driver, result.pool, result.device))
        nic = metrics.pod_throughput_factor(places, factors=self.factors.gpu_nic)
        cpu = metrics.cpu_alignment_factor(places, misaligned=self.factors.cpu_numa)
        known = [label for label in labels if label != "unknown"]
        aligned = all(label == ALIGNED_LABEL for label in known) if known else None
        return Assessment(
            aligned=aligned,
            nic=max(float(nic), 1e-3) if nic is not None else 1.0,
            cpu=max(float(cpu), 1e-3) if cpu is not None else 1.0,
            sliced=tuple(sorted(set(sliced))),
        )


def default_model(factors: ThroughputFactors | None = None) -> ThroughputModel:
    """The topology metrics model."""
    return TopologyMetrics(factors)
