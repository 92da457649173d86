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

The non-whole devices come from `allot.model.presets.gpu_sharing`.
Slice names are `<node>-<driver>-<suffix>`, as a driver's generateName
gives them, with a suffix derived from the node name and position.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from allot.model.base import ObjectMeta, OwnerReference
from allot.model.presets import gpu_sharing
from allot.model.presets.catalog import NodeShape, PresetError
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
from allot.model.resource import CounterSet, Device, ResourcePool, ResourceSlice, ResourceSliceSpec

GPU_MODES = ("whole", "shared", "mig", "time-sliced")
# The alphabet of the API server's generateName suffixes.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def _slice(
    node: str,
    driver: str,
    position: int,
    count: int,
    *,
    devices: Sequence[Device] = (),
    counters: Sequence[CounterSet] = (),
) -> ResourceSlice:
    base = f"{node}-{driver}-"
    owner = OwnerReference(api_version="v1", kind="Node", name=node, uid=node_uid(node), controller=True)
    return ResourceSlice(
        api_version="resource.k8s.io/v1",
        kind="ResourceSlice",
        metadata=ObjectMeta(
            name=base + _suffix(f"{node}/{driver}/{position}"),
            generate_name=base,
            generation=1,
            owner_references=(owner,),
        ),
        spec=ResourceSliceSpec(
            driver=driver,
            node_name=node,
            pool=ResourcePool(name=node, generation=1, resource_slice_count=count),
            devices=tuple(devices),
            shared_counters=tuple(counters),
        ),
    )


def gpu_slices(shape: NodeShape, node: str, *, mode: str = "whole", replicas: int = 4) -> list[ResourceSlice]:
    """The GPU driver's slices for one node in GPU mode `mode` (see the module docstring)."""
    model = shape.gpu
    memory = Quantity.parse(model.memory)
    attributes = [
        gpu_attributes(
            node,
            index,
            model,
            slot,
            driver_version=shape.driver_version,
            cuda_version=shape.cuda_driver_version,
        )
        for index, slot in enumerate(shape.gpus)
    ]
    names = [f"gpu-{index}" for index in range(len(shape.gpus))]
    if mode == "whole":
        devices = [whole_gpu(n, a, model.memory) for n, a in zip(names, attributes, strict=True)]
    elif mode == "shared":
        # HAMi's driver publishes fractional GPUs under its own name and `type: hami-gpu`.
        devices = [
            gpu_sharing.shared_gpu_device(
                n, attributes={k: v for k, v in a.items() if k != "type"}, memory=memory
            )
            for n, a in zip(names, attributes, strict=True)
        ]
        return [_slice(node, gpu_sharing.HAMI_DRIVER, 0, 1, devices=devices)]
    elif mode == "time-sliced":
        devices = [
            gpu_sharing.time_sliced_device(n, attributes=a, memory=memory, replicas=replicas)
            for n, a in zip(names, attributes, strict=True)
        ]
    elif mode == "mig":
        if model.mig_model is None:
            raise PresetError(f"gpuMode: {model.product_name} does not support MIG")
        per_gpu = [
            gpu_sharing.mig_devices(model.mig_model, index, attributes=a)
            for index, a in enumerate(attributes)
        ]
        count = len(per_gpu) + 1
        slices = [_slice(node, GPU_DRIVER, 0, count, counters=[counter_set for counter_set, _ in per_gpu])]
        for index, (_, mig) in enumerate(per_gpu, start=1):
            slices.append(_slice(node, GPU_DRIVER, index, count, devices=mig))
        return slices
    else:
        raise PresetError(f"gpuMode: expected one of {', '.join(GPU_MODES)}, got {mode!r}")
    return [_slice(node, GPU_DRIVER, 0, 1, devices=devices)]


def nic_slice(shape: NodeShape, node: str) -> ResourceSlice:
    return _slice(node, NIC_DRIVER, 0, 1, devices=[nic_device(node, nic) for nic in shape.nics])


def cpu_slice(shape: NodeShape, node: str) -> ResourceSlice:
    return _slice(node, CPU_DRIVER, 0, 1, devices=[cpu_device(socket) for socket in shape.sockets])


def node_slices(
    shape: NodeShape, node: str, *, gpu_mode: str = "whole", replicas: int = 4
) -> list[ResourceSlice]:
    """Every driver's slices for one node: GPUs, NICs, CPUs."""
    return [
        *gpu_slices(shape, node, mode=gpu_mode, replicas=replicas),
        nic_slice(shape, node),
        cpu_slice(shape, node),
    ]
