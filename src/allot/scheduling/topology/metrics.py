"""Alignment metrics over placed work, for the simulator and reports. Pure functions; nothing changes.

* `claim_alignment(allocation, catalog)`: the alignment of one allocated
  claim (`alignment.unit_alignment` over its devices): level `pcieRoot`,
  `numaNode` or `none`, or None for a claim with devices of one kind only.
* `pod_throughput_factor(places)`: a pod's modeled throughput relative to
  an aligned placement: for each of its GPUs the distance to the closest of
  its NICs, priced by `penalties.GPU_NIC_FACTORS`; the pod runs at its
  slowest GPU's factor (collectives wait for the slowest rank). Pods
  without both GPUs and NICs get None.
* `cpu_alignment_factor(places)`: for a pod whose CPUs are devices (dra.cpu)
  beside GPUs or NICs, `penalties.CPU_MISALIGNED_FACTOR` when some CPU,
  GPU or NIC of it has no partner of the other side on its NUMA node;
  None when it has no CPU devices or no accelerators.
* `alignment_summary(state)`: every allocated multi-device claim counted by
  level, and the mean throughput factor of bound pods that use GPUs and
  NICs together.

Claims whose devices publish no topology at all are counted as `unknown`,
not as misaligned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from allot.cluster.state import ClusterState
from allot.dra import SliceIndex
from allot.model.resource import AllocationResult, Device
from allot.scheduling.topology.alignment import Level, unit_alignment
from allot.scheduling.topology.penalties import CPU_MISALIGNED_FACTOR, GPU_NIC_FACTORS, throughput_factor
from allot.scheduling.topology.places import CLOSEST, SAME_NUMA, Place, place_of, relation

LABELS = ("pcieRoot", "numaNode", "none", "unknown")


class DeviceCatalog:
    """Published devices by (driver, pool, name), newest pool generation winning."""

    def __init__(self, slices: SliceIndex) -> None:
        self._devices: dict[tuple[str, str, str], tuple[int, Device]] = {}
        for slice_ in slices.slices:
            spec = slice_.spec
            for device in spec.devices:
                key = (spec.driver, spec.pool.name, device.name)
                known = self._devices.get(key)
                if known is None or known[0] <= spec.pool.generation:
                    self._devices[key] = (spec.pool.generation, device)

    def get(self, driver: str, pool: str, name: str) -> Device | None:
        found = self._devices.get((driver, pool, name))
        return found[1] if found is not None else None

    def places(self, allocation: AllocationResult) -> list[Place]:
        """Where the devices of one allocation sit (admin-access results excluded)."""
        found: list[Place] = []
        for result in allocation.devices.results:
            device = self.get(result.driver, result.pool, result.device)
            if device is not None and not result.admin_access:
                found.append(place_of(result.driver, device))
        return found


def claim_label(places: Sequence[Place]) -> str | None:
    """`pcieRoot`, `numaNode`, `none` or `unknown` for a claim's devices; None if fewer than two kinds."""
    alignment = unit_alignment(places)
    if alignment is None:
        return None
    if not all(place.known for place in places):
        return "unknown"
    return alignment.level.label


def claim_alignment(allocation: AllocationResult, catalog: DeviceCatalog) -> str | None:
    return claim_label(catalog.places(allocation))


def pod_throughput_factor(
    places: Iterable[Place],
    *,
    communication_share: float = 1.0,
    factors: Mapping[Level, float] = GPU_NIC_FACTORS,
) -> float | None:
    """The pod's modeled throughput factor; None when it does not use GPUs and NICs together."""
    gpus = [p for p in places if p.kind == "gpu"]
    nics = [p for p in places if p.kind == "nic"]
    if not gpus or not nics:
        return None
    worst = 1.0
    for gpu in gpus:
        best = max(relation(gpu, nic) for nic in nics)
        level = Level.PCIE if best == CLOSEST else Level.NUMA if best == SAME_NUMA else Level.NONE
        worst = min(worst, throughput_factor(level, communication_share=communication_share, factors=factors))
    return worst


def cpu_alignment_factor(
    places: Iterable[Place], *, misaligned: float = CPU_MISALIGNED_FACTOR
) -> float | None:
    """`misaligned` when the pod's CPU devices and its GPUs/NICs do not all share NUMA nodes pairwise
    (see the module docstring), 1.0 when they do, None when there is nothing to compare."""
    listed = list(places)
    cpus = [p for p in listed if p.kind == "cpu" and p.numas]
    devices = [p for p in listed if p.kind in ("gpu", "nic") and p.numas]
    if not cpus or not devices:
        return None
    for one in cpus:
        if not any(one.numas & other.numas for other in devices):
            return misaligned
    for one in devices:
        if not any(one.numas & other.numas for other in cpus):
            return misaligned
    return 1.0


@dataclass
class AlignmentSummary:
    """Allocated multi-device claims by alignment level, and pods' modeled throughput."""

    claims: Counter[str] = field(default_factory=Counter)
    single_kind: int = 0  # claims with several devices of one kind: nothing to align
    factors: list[float] = field(default_factory=list)

    @property
    def aligned_claims(self) -> int:
        """Claims with devices of at least two kinds (the denominator of `share`)."""
        return sum(self.claims.values())

    def share(self, label: str) -> float:
        total = self.aligned_claims
        return self.claims[label] / total if total else 0.0

    @property
    def mean_factor(self) -> float:
        return sum(self.factors) / len(self.factors) if self.factors else 1.0

    def as_dict(self) -> dict[str, object]:
        return {
            "claims": {label: self.claims[label] for label in LABELS},
            "singleKindClaims": self.single_kind,
            "shares": {label: self.share(label) for label in LABELS},
            "pods": len(self.factors),
            "meanThroughputFactor": self.mean_factor,
        }


def alignment_summary(state: ClusterState, *, communication_share: float = 1.0) -> AlignmentSummary:
    """Every allocated claim with two or more devices, and every bound pod using GPUs with NICs."""
    catalog = DeviceCatalog(state.slices)
    summary = AlignmentSummary()
    for claim in state.claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        places = catalog.places(allocation)
        if len(places) < 2:
            continue
        label = claim_label(places)
        if label is None:
            summary.single_kind += 1
        else:
            summary.claims[label] += 1
    for info in state.bound():
        pod_places: list[Place] = []
        for claim in state.pod_claims(info):
            if claim.status.allocation is not None:
                pod_places += catalog.places(claim.status.allocation)
        factor = pod_throughput_factor(pod_places, communication_share=communication_share)
        if factor is not None:
            summary.factors.append(factor)
    return summary
