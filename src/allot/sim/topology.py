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
claim of it that mixes device kinds is. When that module is not
installed, every pod runs at full speed and alignment is not reported.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from allot.cluster.state import ClusterState

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

    def __init__(self, module: Any) -> None:
        self._module = module
        self._catalog: Any = None
        self._slices: Any = None

    def assess(self, state: ClusterState, pod_key: str) -> tuple[bool | None, float]:
        if self._catalog is None or self._slices is not state.slices:
            self._catalog = self._module.DeviceCatalog(state.slices)
            self._slices = state.slices
        labels: list[str] = []
        places: list[Any] = []
        for claim in state.pod_claims(state.pods[pod_key]):
            allocation = claim.status.allocation
            if allocation is None:
                continue
            found = self._catalog.places(allocation)
            places.extend(found)
            label = self._module.claim_label(found) if len(found) > 1 else None
            if label is not None:
                labels.append(label)
        factor = self._module.pod_throughput_factor(places)
        known = [label for label in labels if label != "unknown"]
        aligned = all(label == ALIGNED_LABEL for label in known) if known else None
        return (aligned, max(float(factor), 1e-3) if factor is not None else 1.0)


def default_model() -> ThroughputModel:
    """The topology metrics when installed, else `FullSpeed`."""
    try:
        module = importlib.import_module("allot.scheduling.topology.metrics")
    except ImportError:
        return FullSpeed()
    if not all(hasattr(module, name) for name in ("DeviceCatalog", "claim_label", "pod_throughput_factor")):
        return FullSpeed()
    return TopologyMetrics(module)
