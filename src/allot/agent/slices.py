"""The ResourceSlices a node's devices are published as, built with the presets' own builders.

One pool per driver, named after the node: `gpu.nvidia.com` (whole,
time-sliced and MIG GPUs), `hami-core-gpu.project-hami.io` (fractional
GPUs), `dra.net` (NICs), `dra.cpu` (CPUs per NUMA node). Attribute names,
device names, capacities and counters come from `allot.model.presets`, so
`allot preset dgx-h100` and the agent on a DGX H100 publish the same
devices. Device taints (health) are laid on before the pool is split,
since taints lower the API's per-slice device limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from allot.agent.node import NodeDevices
from allot.model.base import OwnerReference
from allot.model.presets.devices import CPU_DRIVER, NIC_DRIVER, cpu_device, gpu_attributes, nic_device
from allot.model.presets.slices import GpuDevices, gpu_devices, gpu_pools, pool_slices
from allot.model.resource import Device, DeviceTaint, ResourceSlice

# (driver, device name) -> the taints the device carries.
Taints = Mapping[tuple[str, str], Sequence[DeviceTaint]]


def _tainted(driver: str, devices: Sequence[Device], taints: Taints) -> tuple[Device, ...]:
    return tuple(
        msgspec.structs.replace(d, taints=tuple(taints[(driver, d.name)]))
        if taints.get((driver, d.name))
        else d
        for d in devices
    )


def gpu_entries(devices: NodeDevices, taints: Taints, *, replicas: int = 4) -> list[GpuDevices]:
    entries = []
    for record in devices.gpus:
        attributes = gpu_attributes(
            devices.node,
            record.gpu.index,
            record.model,
            record.slot,
            driver_version=devices.driver_version,
            cuda_version=devices.cuda_version,
            uuid=record.gpu.uuid,
            brand=record.gpu.brand,
        )
        entry = gpu_devices(
            record.name, record.gpu.index, record.model, attributes, mode=record.mode, replicas=replicas
        )
        entries.append(
            GpuDevices(entry.driver, _tainted(entry.driver, entry.devices, taints), entry.counter_set)
        )
    return entries


def build_pools(
    devices: NodeDevices,
    *,
    taints: Taints | None = None,
    generations: Mapping[str, int] | None = None,
    owner: OwnerReference | None = None,
    replicas: int = 4,
) -> dict[str, list[ResourceSlice]]:
    """Every pool the node publishes, by driver; a driver with no device on the node has no pool."""
    taints = taints or {}
    generations = generations or {}
    node = devices.node
    pools: dict[str, list[ResourceSlice]] = {}
    entries = gpu_entries(devices, taints, replicas=replicas)
    for driver in sorted({e.driver for e in entries}):
        mine = [e for e in entries if e.driver == driver]
        pools[driver] = gpu_pools(node, mine, generation=generations.get(driver, 1), owner=owner)
    nics = [
        nic_device(
            node, n.slot, mac=n.interface.mac if n.interface else None, sriov=n.function.sriov_totalvfs > 0
        )
        for n in devices.nics
    ]
    cpus = [cpu_device(c.socket) for c in devices.cpus]
    for driver, found in ((NIC_DRIVER, nics), (CPU_DRIVER, cpus)):
        if found:
            tainted = _tainted(driver, found, taints)
            pools[driver] = pool_slices(
                node, driver, devices=tainted, generation=generations.get(driver, 1), owner=owner
            )
    return pools


def all_slices(pools: Mapping[str, Sequence[ResourceSlice]]) -> list[ResourceSlice]:
    return [s for driver in sorted(pools) for s in pools[driver]]
