"""An allocated device, checked against the node as NVML reports it now, and what to expose.

The scheduler allocated a device by name from the slices the agent published; between that and
the container's start the GPU may have fallen off the bus, been replaced, had its MIG mode
turned on or its MIG devices destroyed. `resolve` maps one allocation result to a `Target`
(the mode, the UUID the container is to see, its device nodes, the share) only when:

1. the result names this node's pool (the agent's pools are named after the node), else the
   claim was allocated for another node;
2. the device is one the agent publishes on this node;
3. the published GPU's UUID is in NVML's inventory now (a GPU index may name another GPU
   after a reboot or a replacement);
4. its mode still holds: a whole, time-sliced or fractional GPU has MIG off, a MIG device's
   GPU has MIG on and a MIG device of the allocated profile at the allocated placement;
5. a share fits: a fractional share's memory is within the GPU's memory.

Anything else is a `PrepareError` whose one line says what is wrong and with which device, so
the kubelet reports it on the pod instead of starting a container on the wrong device.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.agent.inventory import Gpu, GpuInventory, MigDevice
from allot.agent.node import CpuRecord, GpuRecord, MigPlacement, NicRecord, NodeDevices
from allot.model.presets.gpu_sharing import CORES, MEMORY
from allot.model.resource import DeviceRequestAllocationResult

MIB = 1024 * 1024
GIB = 1024 * MIB


class PrepareError(Exception):
    """A claim that cannot be prepared; the message is one line for the pod's events."""


@dataclass(frozen=True, slots=True)
class Target:
    """What one allocated device becomes in the container."""

    result: DeviceRequestAllocationResult
    mode: str  # whole | time-sliced | shared | mig | nic | cpu
    gpu: Gpu | None = None  # the physical GPU as NVML reports it now
    uuid: str = ""  # what the container sees (a MIG device's own UUID)
    device_nodes: tuple[str, ...] = ()
    cores: int = 0
    memory_bytes: int = 0

    @property
    def gpu_uuid(self) -> str:
        return self.gpu.uuid if self.gpu is not None else ""


def _size(value: int) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value // MIB} MiB"


def _now(record: GpuRecord, nvml: GpuInventory, device: str) -> Gpu:
    gpu = next((g for g in nvml.gpus if g.uuid == record.gpu.uuid), None)
    if gpu is None:
        raise PrepareError(
            f"device {device}: GPU {record.gpu.uuid} is not in NVML's inventory now "
            "(fell off the bus, or replaced); not starting a container on another GPU"
        )
    return gpu


def _consumed(result: DeviceRequestAllocationResult, name: str, default: int) -> int:
    consumed = result.consumed_capacity or {}
    return consumed[name].value() if name in consumed else default


def _gpu_target(result: DeviceRequestAllocationResult, record: GpuRecord, nvml: GpuInventory) -> Target:
    gpu = _now(record, nvml, result.device)
    if gpu.mig_enabled:
        raise PrepareError(
            f"device {result.device}: GPU {gpu.uuid} has MIG mode on now; "
            "outside MIG devices it runs no CUDA work"
        )
    nodes = (f"/dev/nvidia{gpu.minor}",)
    if record.mode == "shared":
        cores = _consumed(result, CORES, 100)
        memory = _consumed(result, MEMORY, gpu.memory_bytes)
        if memory > gpu.memory_bytes:
            raise PrepareError(
                f"device {result.device}: the claim's share of {_size(memory)} does not fit "
                f"GPU {gpu.uuid}'s {_size(gpu.memory_bytes)}"
            )
        return Target(result, "shared", gpu, gpu.uuid, nodes, cores=cores, memory_bytes=memory)
    memory = _consumed(result, MEMORY, 0) if record.mode == "time-sliced" else gpu.memory_bytes
    return Target(result, record.mode, gpu, gpu.uuid, nodes, memory_bytes=memory)


def _mig_target(result: DeviceRequestAllocationResult, placement: MigPlacement, nvml: GpuInventory) -> Target:
    gpu = _now(placement.gpu, nvml, result.device)
    profile = placement.profile
    where = f"MIG {profile.profile} at memory slice {placement.start} of GPU {gpu.uuid}"
    if not gpu.mig_enabled:
        raise PrepareError(f"device {result.device}: {where}: the GPU has MIG mode off now")
    present: MigDevice | None = next(
        (
            m
            for m in gpu.mig_devices
            if m.gi_profile_id == profile.gi_profile_id and m.placement_start == placement.start
        ),
        None,
    )
    if present is None:
        raise PrepareError(
            f"device {result.device}: {where}: no such MIG device exists; create it "
            f"(nvidia-smi mig -cgi {profile.gi_profile_id} -C, or mig-parted) before the pod can start"
        )
    if present.memory_bytes <= 0:
        raise PrepareError(f"device {result.device}: {where}: NVML reports no memory for {present.uuid}")
    nodes = (f"/dev/nvidia{gpu.minor}", *present.caps)
    return Target(result, "mig", gpu, present.uuid, nodes, memory_bytes=present.memory_bytes)


def resolve(
    result: DeviceRequestAllocationResult, *, node: str, published: NodeDevices, nvml: GpuInventory
) -> Target:
    """The target of one allocation result of this node's drivers (see the module docstring)."""
    if result.pool != node:
        raise PrepareError(
            f"device {result.device} of pool {result.pool!r}: allocated on another node, this is node {node}"
        )
    record = published.lookup(result.driver, result.device)
    if record is None:
        raise PrepareError(
            f"device {result.device}: driver {result.driver} publishes no such device on node {node}"
        )
    if isinstance(record, GpuRecord):
        return _gpu_target(result, record, nvml)
    if isinstance(record, MigPlacement):
        return _mig_target(result, record, nvml)
    if isinstance(record, NicRecord):
        return Target(result, "nic")
    assert isinstance(record, CpuRecord)
    return Target(result, "cpu")
