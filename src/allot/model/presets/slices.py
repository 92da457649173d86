"""ResourceSlices for one preset node: one pool per driver, named after the node.

Every driver publishes a pool named after its node with generation 1. The
GPU driver's slices depend on the GPU mode:

* `whole`: one slice with `gpu-0 .. gpu-N` (what the driver does by default);
* `shared`: one slice of fractional GPUs with consumable cores and memory,
  published by HAMi's DRA driver (`hami-core-gpu.project-hami.io`);
* `time-sliced`: one slice of GPUs shared by up to `replicas` pods;
* `mig`: dynamic MIG as on Kubernetes 1.35: one slice holding every GPU's
  counter set (a slice holds either devices or counters) and one device
  slice per GPU, so the pool has G + 1 slices.

The non-whole devices come from `allot.model.presets.gpu_sharing`. The
node agent (`allot.agent`) builds its slices from real hardware with the
same functions (`gpu_devices`, `gpu_pools`, `pool_slices`), so presets and
published slices cannot drift apart; pools are split at the API's
per-slice limits (8 counter sets, 128 devices, 64 once taints or counters
are used). Slice names are `<node>-<driver>-<suffix>`, as a driver's generateName
gives them, with a suffix derived from the node name and position.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from allot.model.base import ObjectMeta, OwnerReference
from allot.model.presets import gpu_sharing
from allot.model.presets.catalog import GpuModel, NodeShape, PresetError
from allot.model.presets.devices import (
    CPU_DRIVER,
    GPU_DRIVER,
    NIC_DRIVER,
    cpu_device,
    gpu_attributes,
    nic_device,
    whole_gpu,
)
from allot.model.presets.nodes import node_uid
from allot.model.quantity import Quantity
from allot.model.resource import (
    MAX_COUNTER_SETS_PER_SLICE,
    MAX_DEVICES_PER_SLICE,
    MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES,
    CounterSet,
    Device,
    DeviceAttribute,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

GPU_MODES = ("whole", "shared", "mig", "time-sliced")
# The alphabet of the API server's generateName suffixes.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def pool_slice(
    node: str,
    driver: str,
    position: int,
    count: int,
    *,
    devices: Sequence[Device] = (),
    counters: Sequence[CounterSet] = (),
    generation: int = 1,
    owner: OwnerReference | None = None,
) -> ResourceSlice:
    """Slice `position` of the `count` slices in `driver`'s pool on `node`.

    `owner` is the Node's owner reference (`preset_owner` for presets), so that the slice goes
    when its Node does."""
    base = f"{node}-{driver}-"
    return ResourceSlice(
        api_version="resource.k8s.io/v1",
        kind="ResourceSlice",
        metadata=ObjectMeta(
            name=base + _suffix(f"{node}/{driver}/{position}"),
            generate_name=base,
            generation=1,
            owner_references=(owner,) if owner is not None else (),
        ),
        spec=ResourceSliceSpec(
            driver=driver,
            node_name=node,
            pool=ResourcePool(name=node, generation=generation, resource_slice_count=count),
            devices=tuple(devices),
            shared_counters=tuple(counters),
        ),
    )


def preset_owner(node: str) -> OwnerReference:
    """The owner reference to a preset Node (whose uid presets derive from its name)."""
    return OwnerReference(api_version="v1", kind="Node", name=node, uid=node_uid(node), controller=True)


def device_limit(devices: Sequence[Device]) -> int:
    """The API's per-slice device limit for these devices: 64 once any uses taints or counters."""
    advanced = any(d.taints or d.consumes_counters for d in devices)
    return MAX_DEVICES_PER_SLICE_WITH_ADVANCED_FEATURES if advanced else MAX_DEVICES_PER_SLICE


def pool_slices(
    node: str,
    driver: str,
    *,
    counter_sets: Sequence[CounterSet] = (),
    device_groups: Sequence[Sequence[Device]] = (),
    devices: Sequence[Device] = (),
    generation: int = 1,
    owner: OwnerReference | None = None,
) -> list[ResourceSlice]:
    """One driver's pool on one node, split as the API requires.

    Counter sets come first, at most 8 to a slice (a slice holds either counters or devices);
    each of `device_groups` (a partitionable GPU's devices) gets a slice of its own; the loose
    `devices` follow, split at the per-slice device limit. An empty pool is one empty slice, so
    consumers see that the driver has nothing on the node."""
    counter_chunks = [
        list(counter_sets[i : i + MAX_COUNTER_SETS_PER_SLICE])
        for i in range(0, len(counter_sets), MAX_COUNTER_SETS_PER_SLICE)
    ]
    device_chunks: list[list[Device]] = []
    for group in device_groups:
        limit = device_limit(group)
        device_chunks += [list(group[i : i + limit]) for i in range(0, len(group), limit)]
    if devices:
        limit = device_limit(devices)
        device_chunks += [list(devices[i : i + limit]) for i in range(0, len(devices), limit)]
    total = len(counter_chunks) + len(device_chunks)
    if total == 0:
        return [pool_slice(node, driver, 0, 1, generation=generation, owner=owner)]
    slices = [
        pool_slice(node, driver, i, total, counters=chunk, generation=generation, owner=owner)
        for i, chunk in enumerate(counter_chunks)
    ]
    slices += [
        pool_slice(
            node, driver, len(counter_chunks) + i, total, devices=chunk, generation=generation, owner=owner
        )
        for i, chunk in enumerate(device_chunks)
    ]
    return slices


@dataclass(frozen=True, slots=True)
class GpuDevices:
    """One GPU's devices in its sharing mode: the driver that publishes them, the devices, and
    for a partitionable (MIG) GPU its counter set."""

    driver: str
    devices: tuple[Device, ...]
    counter_set: CounterSet | None = None


def gpu_devices(
    name: str,
    index: int,
    model: GpuModel,
    attributes: dict[str, DeviceAttribute],
    *,
    mode: str,
    replicas: int = 4,
) -> GpuDevices:
    """GPU `index` (device `name`) with `attributes` as published in sharing mode `mode`."""
    if mode == "whole":
        return GpuDevices(GPU_DRIVER, (whole_gpu(name, attributes, model.memory),))
    memory = Quantity.parse(model.memory)
    if mode == "shared":
        # HAMi's driver publishes fractional GPUs under its own name and `type: hami-gpu`.
        shared = {k: v for k, v in attributes.items() if k != "type"}
        return GpuDevices(
            gpu_sharing.HAMI_DRIVER, (gpu_sharing.shared_gpu_device(name, attributes=shared, memory=memory),)
        )
    if mode == "time-sliced":
        device = gpu_sharing.time_sliced_device(name, attributes=attributes, memory=memory, replicas=replicas)
        return GpuDevices(GPU_DRIVER, (device,))
    if mode == "mig":
        if model.mig_model is None:
            raise PresetError(f"gpuMode: {model.product_name} does not support MIG")
        counter_set, mig = gpu_sharing.mig_devices(model.mig_model, index, attributes=attributes)
        return GpuDevices(GPU_DRIVER, tuple(mig), counter_set)
    raise PresetError(f"gpuMode: expected one of {', '.join(GPU_MODES)}, got {mode!r}")


def gpu_pools(
    node: str, gpus: Sequence[GpuDevices], *, generation: int = 1, owner: OwnerReference | None = None
) -> list[ResourceSlice]:
    """The slices of every driver that publishes some of `gpus`: per driver, partitionable GPUs'
    counter sets, then one slice per partitionable GPU, then the other GPUs."""
    slices: list[ResourceSlice] = []
    for driver in sorted({g.driver for g in gpus}):
        mine = [g for g in gpus if g.driver == driver]
        slices += pool_slices(
            node,
            driver,
            counter_sets=[g.counter_set for g in mine if g.counter_set is not None],
            device_groups=[g.devices for g in mine if g.counter_set is not None],
            devices=[d for g in mine if g.counter_set is None for d in g.devices],
            generation=generation,
            owner=owner,
        )
    return slices


def gpu_slices(shape: NodeShape, node: str, *, mode: str = "whole", replicas: int = 4) -> list[ResourceSlice]:
    """The GPU driver's slices for one node in GPU mode `mode` (see the module docstring)."""
    model = shape.gpu
    if mode not in GPU_MODES:
        raise PresetError(f"gpuMode: expected one of {', '.join(GPU_MODES)}, got {mode!r}")
    gpus = [
        gpu_devices(
            f"gpu-{index}",
            index,
            model,
            gpu_attributes(
                node,
                index,
                model,
                slot,
                driver_version=shape.driver_version,
                cuda_version=shape.cuda_driver_version,
            ),
            mode=mode,
            replicas=replicas,
        )
        for index, slot in enumerate(shape.gpus)
    ]
    return gpu_pools(node, gpus, owner=preset_owner(node))


def nic_slice(shape: NodeShape, node: str) -> ResourceSlice:
    devices = [nic_device(node, nic) for nic in shape.nics]
    return pool_slice(node, NIC_DRIVER, 0, 1, devices=devices, owner=preset_owner(node))


def cpu_slice(shape: NodeShape, node: str) -> ResourceSlice:
    devices = [cpu_device(socket) for socket in shape.sockets]
    return pool_slice(node, CPU_DRIVER, 0, 1, devices=devices, owner=preset_owner(node))


def node_slices(
    shape: NodeShape, node: str, *, gpu_mode: str = "whole", replicas: int = 4
) -> list[ResourceSlice]:
    """Every driver's slices for one node: GPUs, NICs, CPUs."""
    return [
        *gpu_slices(shape, node, mode=gpu_mode, replicas=replicas),
        nic_slice(shape, node),
        cpu_slice(shape, node),
    ]
