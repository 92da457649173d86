"""How many GPUs a pending pod asks for, in GPU-equivalents (what "GPU-hours waiting" counts).

A pod asks for:

* every `nvidia.com/gpu` it requests of a device plugin, one GPU each;
* for each device request of its claims (an exact request, or the first alternative of a
  `firstAvailable` list), `count` devices of what its DeviceClass and selectors pick, each
  weighing what it would take of its GPU (`allot.sim.inventory`: 1 for a whole GPU, the
  slice's share of the counters for a MIG slice, the requested capacity over the device's for
  a shared GPU).

Which devices a request picks is decided by evaluating its class and request selectors
(`allot.cel`) on the cluster's GPU devices, one device per distinct content, until the first
that matches: a request that matches no GPU device (a NIC, a CPU group) asks for no GPU. The
weight is the first matching device's, so a request that several shapes could serve (any MIG
profile) is an estimate. Results are cached per request shape for the life of the catalog
(until nodes or devices change).
"""

from __future__ import annotations

from allot.cel import CelCompileError, CelRuntimeError, SelectorEnvironment, default_environment
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dashboard.devices import DeviceCatalog
from allot.dra.devices import DeviceInfo
from allot.model.quantity import Quantity
from allot.model.resource import DeviceRequest, DeviceRequestAllocationResult
from allot.sim.inventory import PLUGIN_GPU_RESOURCE, is_gpu_driver

# (class name, request selectors, capacity requests) of one device request.
Shape = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]


class DemandEstimator:
    """See the module docstring; one per `DeviceCatalog` (it caches against its devices)."""

    def __init__(
        self, state: ClusterState, catalog: DeviceCatalog, env: SelectorEnvironment | None = None
    ) -> None:
        self.catalog = catalog
        self.env = env if env is not None else default_environment()
        self._classes = state.classes
        self._cache: dict[Shape, float] = {}
        seen: set[tuple[str, bytes]] = set()
        # GPU devices with distinct content, in a stable order.
        self._devices: list[DeviceInfo] = []
        slices = state.slices
        for index in sorted(range(len(slices)), key=lambda i: slices.slices[i].name):
            if not is_gpu_driver(slices.slices[index].spec.driver):
                continue
            for info in slices.infos(index):
                if info.cel_key not in seen:
                    seen.add(info.cel_key)
                    self._devices.append(info)

    def valid_for(self, state: ClusterState) -> bool:
        return self.catalog.valid_for(state) and self._classes is state.classes

    def wanted(self, state: ClusterState, info: PodInfo) -> float:
        """GPU-equivalents the pod asks for (see the module docstring)."""
        total = float(info.requests.get(PLUGIN_GPU_RESOURCE, 0))
        for claim in state.pod_claims(info):
            for request in claim.spec.devices.requests:
                total += self._request(request)
        return total

    def _request(self, request: DeviceRequest) -> float:
        exact = request.exactly
        if exact is not None:
            class_name, selectors, capacity = exact.device_class_name, exact.selectors, exact.capacity
            count = exact.count if exact.count is not None else 1
            if exact.allocation_mode == "All":
                count = 1
        elif request.first_available:
            sub = request.first_available[0]
            class_name, selectors, capacity = sub.device_class_name, sub.selectors, sub.capacity
            count = sub.count if sub.count is not None else 1
        else:
            return 0.0
        shape: Shape = (
            class_name,
            tuple(s.cel.expression for s in selectors if s.cel is not None),
            tuple(sorted((k, v.canonical()) for k, v in (capacity.requests if capacity else {}).items())),
        )
        weight = self._cache.get(shape)
        if weight is None:
            weight = self._cache[shape] = self._weight(shape)
        return count * weight

    def _weight(self, shape: Shape) -> float:
        class_name, selectors, capacity = shape
        device_class = self._classes.get(class_name)
        if device_class is None:
            return 0.0
        expressions = [s.cel.expression for s in device_class.spec.selectors if s.cel is not None]
        expressions.extend(selectors)
        requests = {name: Quantity.parse(value) for name, value in capacity} or None
        for device in self._devices:
            if not self._selects(expressions, device):
                continue
            result = DeviceRequestAllocationResult(
                driver=device.id.driver,
                pool=device.id.pool,
                device=device.id.device,
                consumed_capacity=requests,
            )
            usage = self.catalog.inventory.result_usage(result)
            return max(usage[1], usage[2]) if usage is not None else 0.0
        return 0.0

    def _selects(self, expressions: list[str], device: DeviceInfo) -> bool:
        try:
            return all(self.env.evaluate(e, device.cel_input) for e in expressions)
        except (CelCompileError, CelRuntimeError):
            return False
