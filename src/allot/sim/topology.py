"""How well a placed pod's devices are aligned, and how fast it therefore runs.

The simulator asks a `ThroughputModel` about every pod it binds: whether
its devices are aligned (None when no claim of the pod mixes device kinds,
so there is nothing to align, or the devices publish no topology) and its
modeled throughput factor (1 = full speed). The pod's work is stretched by
1/factor.

The model is `allot.scheduling.topology.metrics`: a claim is aligned when
its devices share a PCIe root (`claim_label` = `pcieRoot`), and a pod that
uses GPUs and NICs runs at its slowest GPU's factor given the distance to
its closest NIC (`pod_throughput_factor`). A pod is aligned when every
claim of it that mixes device kinds is. `FullSpeed` is the model without
topology: every pod runs at full speed and alignment is not reported.
"""

from __future__ import annotations

from typing import Protocol

from allot.cluster.state import ClusterState
from allot.scheduling.topology import metrics
from allot.scheduling.topology.places import Place

ALIGNED_LABEL = "pcieRoot"


class ThroughputModel(Protocol):
    available: bool

    def assess(self, state: ClusterState, pod_key: str) -> tuple[bool | None, float]:
        """(aligned, throughput factor) of a bound pod."""
        ...


class FullSpeed:
    """No topology model: nothing is assessed, nothing slows down."""

    available = False

    def assess(self, state: ClusterState, pod_key: str) -> tuple[bool | None, float]:
        return (None, 1.0)


class TopologyMetrics:
    """The alignment model of `allot.scheduling.topology.metrics` (see the module docstring)."""

    available = True

    def __init__(self) -> None:
        self._catalog: metrics.DeviceCatalog | None = None
        self._slices: object = None

    def assess(self, state: ClusterState, pod_key: str) -> tuple[bool | None, float]:
        if self._catalog is None or self._slices is not state.slices:
            self._catalog = metrics.DeviceCatalog(state.slices)
            self._slices = state.slices
        labels: list[str] = []
        places: list[Place] = []
        for claim in state.pod_claims(state.pods[pod_key]):
            allocation = claim.status.allocation
            if allocation is None:
                continue
            found = self._catalog.places(allocation)
            places.extend(found)
            label = metrics.claim_label(found) if len(found) > 1 else None
            if label is not None:
                labels.append(label)
        factor = metrics.pod_throughput_factor(places)
        known = [label for label in labels if label != "unknown"]
        aligned = all(label == ALIGNED_LABEL for label in known) if known else None
        return (aligned, max(float(factor), 1e-3) if factor is not None else 1.0)


def default_model() -> ThroughputModel:
    """The topology metrics model."""
    return TopologyMetrics()
