"""Each node's devices as the node view draws them, and who holds each one.

`DeviceCatalog(state)` reads the published ResourceSlices once (build a new one when the
state's node table or slice index is replaced, i.e. when nodes or devices changed: `valid_for`):
per node its physical GPUs (`allot.sim.inventory`: a whole GPU, a MIG-partitioned GPU whose
slices consume its counters, a shared GPU with consumable capacity, or a device plugin's
`nvidia.com/gpu` slot) and its devices with kind, model, PCIe root, NUMA node
(`allot.scheduling.topology.places`) and taints (DeviceTaintRules included). `holders(...)`
then says, from the allocated claims and the bound pods, which pod holds which device and what
share of its GPU: cheap enough to run for every snapshot.

Only node-local slices are drawn (devices published for one node by name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.dashboard.model import OTHER, PARTITION, PLUGIN, SHARED, WHOLE, DeviceRecord, GpuRecord, Holder
from allot.dra.tolerations import BLOCKING_EFFECTS
from allot.model.core import Taint
from allot.model.resource import Device, DeviceTaint, ResourceClaim
from allot.scheduling.topology.places import place_of
from allot.sim.inventory import PLUGIN_GPU_RESOURCE, GpuInventory

DeviceKey = tuple[str, str, str]  # (driver, pool, device)
# A pod's trust domain on a shared GPU.
DomainOf = Callable[[PodInfo], str]
Running = Callable[[PodInfo], bool]
_MODEL_ATTRIBUTES = ("productName", "model", "type")
# A MIG slice names its profile (NVIDIA's DRA driver, allot's presets); the placement that takes
# every counter of its GPU has none: it is the whole GPU.
PROFILE = "profile"
WHOLE_GPU = "whole GPU"


def attribute_text(device: Device, driver: str, name: str) -> str:
    """A device attribute (unqualified names in the driver's domain) as text; "" when absent."""
    attribute = device.attributes.get(name) or device.attributes.get(f"{driver}/{name}")
    if attribute is None:
        return ""
    for value in (attribute.string_value, attribute.int_value, attribute.version_value):
        if value is not None:
            return str(value)
    return ""


def model_of(device: Device, driver: str) -> str:
    for name in _MODEL_ATTRIBUTES:
        found = attribute_text(device, driver, name)
        if found:
            return found
    return ""


def taint_text(taint: DeviceTaint | Taint) -> str:
    """A node's or a device's taint as kubectl prints it: `key=value:Effect`."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def healthy(taints: Iterable[DeviceTaint]) -> bool:
    return not any(t.effect in BLOCKING_EFFECTS for t in taints)


def _role(device: Device, is_gpu: bool) -> str:
    if not is_gpu:
        return OTHER
    if device.consumes_counters:
        return PARTITION
    if device.allow_multiple_allocations:
        return SHARED
    return WHOLE


@dataclass(slots=True)
class NodeDevices:
    """One node's GPUs and devices as published (holders come later)."""

    gpus: list[GpuRecord] = field(default_factory=list)
    devices: list[DeviceRecord] = field(default_factory=list)
    # Global inventory index of the node's first GPU.
    first_gpu: int = 0
    # Local indices of the node's device plugin slots.
    plugin: list[int] = field(default_factory=list)


class DeviceCatalog:
    """See the module docstring."""

    def __init__(self, state: ClusterState) -> None:
        self._nodes = state.nodes
        self._slices = state.slices
        self._claims: dict[str, _Claim] = {}
        infos = state.nodes.infos
        inventory = self.inventory = GpuInventory([i.node for i in infos], state.slices.slices)
        self.nodes: dict[str, NodeDevices] = {i.name: NodeDevices() for i in infos}
        # Global GPU index -> its node's local index.
        self.local: list[int] = []
        for index, gpu in enumerate(inventory.gpus):
            entry = self.nodes[gpu.node]
            if index == 0 or inventory.gpus[index - 1].node != gpu.node:
                entry.first_gpu = index
            self.local.append(index - entry.first_gpu)
        # The device that describes each GPU (model, topology): its first non-slice device.
        described: dict[int, tuple[Device, str, str]] = {}
        modes: dict[int, str] = {}
        for slice_ in sorted(state.slices.slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.name)):
            spec = slice_.spec
            node_devices = self.nodes.get(spec.node_name or "")
            if node_devices is None:
                continue
            for device in spec.devices:
                physical = inventory.gpu_of(spec.driver, spec.pool.name, device.name)
                role = _role(device, physical is not None)
                model = model_of(device, spec.driver)
                if physical is not None:
                    slice_profile = attribute_text(device, spec.driver, PROFILE) if role == PARTITION else ""
                    if role == PARTITION:
                        model = slice_profile or WHOLE_GPU
                    # The GPU is described by its whole-GPU device where one is published.
                    if physical not in described or (described[physical][2] and not slice_profile):
                        described[physical] = (device, spec.driver, slice_profile)
                    if modes.get(physical) != PARTITION and role in (PARTITION, SHARED):
                        modes[physical] = role
                place = place_of(spec.driver, device)
                node_devices.devices.append(
                    DeviceRecord(
                        name=device.name,
                        driver=spec.driver,
                        pool=spec.pool.name,
                        kind=place.kind,
                        role=role,
                        model=model,
                        pcie_root=min(place.roots, default=""),
                        numa=min(place.numas, default=None),
                        gpu=self.local[physical] if physical is not None else -1,
                        taints=tuple(taint_text(t) for t in device.taints),
                        healthy=healthy(device.taints),
                    )
                )
        for index, gpu in enumerate(inventory.gpus):
            entry = self.nodes[gpu.node]
            found = described.get(index)
            if found is None:
                entry.plugin.append(self.local[index])
                entry.gpus.append(GpuRecord(label=gpu.label, mode=PLUGIN, model=PLUGIN_GPU_RESOURCE))
                continue
            device, driver, profile = found
            place = place_of(driver, device)
            local = self.local[index]
            entry.gpus.append(
                GpuRecord(
                    # A MIG GPU is named by its whole-GPU device where it publishes one.
                    label=gpu.label if profile else device.name,
                    mode=modes.get(index, WHOLE),
                    model=model_of(device, driver),
                    pcie_root=min(place.roots, default=""),
                    numa=min(place.numas, default=None),
                    healthy=all(d.healthy for d in entry.devices if d.gpu == local),
                )
            )

    def valid_for(self, state: ClusterState) -> bool:
        return self._nodes is state.nodes and self._slices is state.slices

    def _parsed(self, key: str, claim: ResourceClaim) -> _Claim:
        """What an allocated claim holds, worked out once per claim object (they are immutable)."""
        cached = self._claims.get(key)
        if cached is not None and cached.claim is claim:
            return cached
        allocation = claim.status.allocation
        assert allocation is not None
        pods = tuple(f"{claim.namespace}/{r.name}" for r in claim.status.reserved_for if r.resource == "pods")
        results = []
        for result in allocation.devices.results:
            usage = self.inventory.result_usage(result)
            share = round(max(usage[1], usage[2]), 4) if usage is not None else 1.0
            results.append(
                ((result.driver, result.pool, result.device), usage, share, result.share_id is not None)
            )
        holder = pods[0] if pods else f"claim {key}"
        parsed = _Claim(claim, pods, holder, tuple(results), tuple(Holder(holder, r[2]) for r in results))
        self._claims[key] = parsed
        return parsed

    def holdings(self, state: ClusterState, domain_of: DomainOf, running: Running) -> Holdings:
        """Who holds what, from the allocated claims and (device plugin GPUs) the bound pods."""
        found = Holdings()
        if len(self._claims) > 2 * len(state.claims) + 1024:
            self._claims = {k: v for k, v in self._claims.items() if k in state.claims}
        for claim_key in sorted(state.claims):
            claim = state.claims[claim_key]
            if claim.status.allocation is None:
                continue
            parsed = self._parsed(claim_key, claim)
            infos = [state.pods[name] for name in parsed.pods if name in state.pods]
            live = any(running(info) for info in infos)
            holder = parsed.holder
            for (key, usage, share, shared), plain in zip(parsed.results, parsed.holders, strict=True):
                if usage is not None:
                    found.add(usage[0], usage[1], usage[2], live)
                    found.pods[holder] = found.pods.get(holder, 0.0) + share
                found.devices.setdefault(key, []).append(
                    Holder(holder, share, domain_of(infos[0])) if shared and infos else plain
                )
        # Device plugin slots: a node's bound pods asking `nvidia.com/gpu` fill them in key order.
        for node, entry in self.nodes.items():
            if not entry.plugin:
                continue
            slots = list(entry.plugin)
            for pod_key in sorted(state.nodes.infos[state.nodes.index[node]].pods):
                info = state.pods[pod_key]
                for _ in range(min(info.requests.get(PLUGIN_GPU_RESOURCE, 0), len(slots))):
                    local = slots.pop(0)
                    found.plugin[(node, local)] = pod_key
                    found.pods[pod_key] = found.pods.get(pod_key, 0.0) + 1.0
                    found.add(entry.first_gpu + local, 1.0, 1.0, running(info))
        return found


@dataclass(frozen=True, slots=True)
class _Claim:
    claim: ResourceClaim
    pods: tuple[str, ...]
    holder: str
    # (device, (gpu, compute, memory) or None, share of its GPU, shared device) per result.
    results: tuple[tuple[DeviceKey, tuple[int, float, float] | None, float, bool], ...]
    # Each result's holder, without a trust domain.
    holders: tuple[Holder, ...]


@dataclass(slots=True)
class Holdings:
    """Who holds what at one instant."""

    # Holders per device.
    devices: dict[DeviceKey, list[Holder]] = field(default_factory=dict)
    # Per global GPU: [compute, memory] taken by allocated claims, then the same for running pods.
    gpus: dict[int, list[float]] = field(default_factory=dict)
    # GPU-equivalents each pod (or unreserved claim) holds.
    pods: dict[str, float] = field(default_factory=dict)
    # Device plugin slots: (node, local GPU index) -> pod.
    plugin: dict[tuple[str, int], str] = field(default_factory=dict)

    def add(self, gpu: int, compute: float, memory: float, live: bool) -> None:
        sums = self.gpus.setdefault(gpu, [0.0, 0.0, 0.0, 0.0])
        sums[0] += compute
        sums[1] += memory
        if live:
            sums[2] += compute
            sums[3] += memory
