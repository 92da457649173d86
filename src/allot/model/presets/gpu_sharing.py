"""GPU devices for sharing: fractional (consumable capacity), MIG partitions, time-slicing.

Contract (used by the node presets; implemented in this module):

* `shared_gpu_device(name, *, attributes, memory) -> Device`: one GPU with
  `allowMultipleAllocations: true` and consumable capacities `cores`
  (100, request policy validRange 0..100 step 1, as HAMi's DRA driver
  publishes it) and `memory` (the GPU's memory in bytes, validRange
  1Mi..memory step 1Mi).
* `time_sliced_device(name, *, attributes, memory, replicas) -> Device`:
  one GPU shared by up to `replicas` pods.
* `mig_devices(gpu_model, gpu_index, *, attributes) -> tuple[CounterSet,
  list[Device]]`: the counter set `gpu-<i>-counter-set` and the full GPU plus
  one device per (MIG profile, placement), from data/mig-profiles.csv, as
  NVIDIA's DRA driver models dynamic MIG.

The three models, and why they look the way they do (docs/sharing.md):

* Fractional GPUs copy Project-HAMi/k8s-dra-driver (`hami_core.go`): driver
  `hami-core-gpu.project-hami.io`, attribute `type: hami-gpu`, capacities
  `cores` (default 100, i.e. a request that names no cores takes the whole
  SM budget) and `memory` (default: all of it). Rounding is the allocator's:
  a request is rounded up to the policy's step, so shares are exact 1 %
  and 1 MiB multiples and never sum above the capacity.
* Time-slicing: NVIDIA's DRA driver shares a time-sliced GPU by letting
  several pods reference *one* ResourceClaim (research/sharing.md 3.3); the
  device itself publishes no fractional capacity and there is no replica
  limit. allot also needs the device-plugin notion "one GPU, N replicas"
  for pods with their own claims, so a time-sliced device here is a shared
  device (`allowMultipleAllocations`) with a consumable `replicas` capacity
  of N whose request policy admits exactly 1 per allocation: the N+1-th
  pod does not fit. `memory` is published with a default of 0, so pods that
  ask for no memory do not reserve any (time-slicing isolates nothing);
  pods may still name memory to keep their sum within the GPU.
* MIG: dynamic MIG of the NVIDIA driver (KEP-4815 partitionable devices).
  One counter set per GPU with the compute/engine counters and
  `memory-slice-0..7`; the full GPU consumes every counter, each (profile,
  placement) device consumes its engines and the memory slices of its
  placement. The `memory` counter counts MiB where NVIDIA's driver counts
  bytes: a GPU's bytes in nano-units overflow 64 bits, which the
  scheduler's device index hashes (the memory slices make memory
  exclusive either way; only ratios of the counter are read). Overlapping placements, and the whole GPU against any
  partition, therefore exclude each other through counters, in the real
  allocator.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from allot.model.base import ObjectMeta
from allot.model.quantity import Quantity, QuantityFormat
from allot.model.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CELDeviceSelector,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    DeviceClassSpec,
    DeviceCounterConsumption,
    DeviceSelector,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

# HAMi's DRA driver (Project-HAMi/k8s-dra-driver, HAMi-DRA constants.go).
HAMI_DRIVER = "hami-core-gpu.project-hami.io"
HAMI_DEVICE_TYPE = "hami-gpu"
# NVIDIA's DRA driver (MIG, time-slicing, whole GPUs).
NVIDIA_DRIVER = "gpu.nvidia.com"
CORES = "cores"
MEMORY = "memory"
REPLICAS = "replicas"
MIB = 1024 * 1024
MEMORY_SLICES = 8

_BINARY = QuantityFormat.BINARY_SI


def _int(value: int) -> Quantity:
    return Quantity.from_int(value)


def _bytes(value: int) -> Quantity:
    return Quantity.from_int(value, _BINARY)


def _string(value: str) -> DeviceAttribute:
    return DeviceAttribute(string_value=value)


# --- fractional GPUs ---------------------------------------------------------------


def shared_gpu_device(name: str, *, attributes: Mapping[str, DeviceAttribute], memory: Quantity) -> Device:
    """A fractional GPU as HAMi's DRA driver publishes it (`type: hami-gpu` unless given)."""
    total = memory.value()
    cores = CapacityRequestPolicy(
        default=_int(100),
        valid_range=CapacityRequestPolicyRange(min=_int(0), max=_int(100), step=_int(1)),
    )
    memory_policy = CapacityRequestPolicy(
        default=_bytes(total),
        valid_range=CapacityRequestPolicyRange(min=_bytes(MIB), max=_bytes(total), step=_bytes(MIB)),
    )
    return Device(
        name=name,
        attributes={"type": _string(HAMI_DEVICE_TYPE), **attributes},
        capacity={
            CORES: DeviceCapacity(value=_int(100), request_policy=cores),
            MEMORY: DeviceCapacity(value=_bytes(total), request_policy=memory_policy),
        },
        allow_multiple_allocations=True,
    )


def time_sliced_device(
    name: str, *, attributes: Mapping[str, DeviceAttribute], memory: Quantity, replicas: int
) -> Device:
    """A GPU time-sliced `replicas` ways: each allocation takes exactly one replica."""
    if replicas < 1:
        raise ValueError(f"time-sliced device {name}: replicas must be at least 1, got {replicas}")
    total = memory.value()
    # validValues [1]: a request for more than one slot of the same GPU is invalid, as a
    # device-plugin replica is one slot; no request at all takes the default, 1.
    slots = CapacityRequestPolicy(default=_int(1), valid_values=(_int(1),))
    # Nothing isolates memory on a time-sliced GPU: reserve none unless asked.
    memory_policy = CapacityRequestPolicy(
        default=_bytes(0),
        valid_range=CapacityRequestPolicyRange(min=_bytes(0), max=_bytes(total), step=_bytes(MIB)),
    )
    return Device(
        name=name,
        attributes={"type": _string("gpu"), "sharingStrategy": _string("TimeSlicing"), **attributes},
        capacity={
            REPLICAS: DeviceCapacity(value=_int(replicas), request_policy=slots),
            MEMORY: DeviceCapacity(value=_bytes(total), request_policy=memory_policy),
        },
        allow_multiple_allocations=True,
    )


# --- MIG -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One row of mig-profiles.csv."""

    gpu: str
    profile: str
    gi_profile_id: int
    compute_slices: int
    memory_slices: int
    placements: tuple[int, ...]
    placement_size: int
    max_instances: int
    nominal_memory: str

    @property
    def media_extensions(self) -> bool:
        return self.profile.endswith("+me")


@cache
def mig_profiles() -> dict[str, tuple[MigProfile, ...]]:
    """The MIG table shipped with allot, by GPU model (A100-40GB, A100-80GB, H100-80GB, H200-141GB)."""
    text = resources.files(__package__).joinpath("mig-profiles.csv").read_text(encoding="utf-8")
    table: dict[str, list[MigProfile]] = {}
    for row in csv.DictReader(text.splitlines()):
        profile = MigProfile(
            gpu=row["gpu"],
            profile=row["profile"],
            gi_profile_id=int(row["gi_profile_id"]),
            compute_slices=int(row["compute_slices(of 7)"]),
            memory_slices=int(row["memory_slices(of 8)"]),
            placements=tuple(int(p) for p in row["placement_starts(memory-slice index)"].split(",")),
            placement_size=int(row["placement_size"]),
            max_instances=int(row["max_instances"]),
            nominal_memory=row["nominal_memory"],
        )
        table.setdefault(profile.gpu, []).append(profile)
    return {gpu: tuple(rows) for gpu, rows in table.items()}


# SMs per compute slice: A100 from NVIDIA's MIG guide (14, 98 for 7g); Hopper as NVIDIA's
# go-nvml mock has it (16 per slice), the CSV notes that the real count varies by SKU.
_SMS_PER_SLICE = {"A100": 14, "H100": 16, "H200": 16}
# Media engines per GPU and per profile kind (NVDEC, JPEG, OFA), as NVIDIA's MIG user guide
# lists them [recalled, not in the CSV]. They make "+me" profiles unique per GPU (one OFA).
_ENGINES_TOTAL = {"A100": (5, 1, 1), "H100": (7, 7, 1), "H200": (7, 7, 1)}
_ENGINES_A100 = {1: (0, 0, 0), 2: (1, 0, 0), 3: (2, 0, 0), 4: (2, 0, 0), 7: (5, 1, 1)}


def _family(gpu_model: str) -> str:
    return gpu_model.split("-", 1)[0]


def _engines(profile: MigProfile) -> tuple[int, int, int]:
    family = _family(profile.gpu)
    if profile.media_extensions:
        return (1, 1, 1)
    if family == "A100":
        if profile.compute_slices == 1 and profile.memory_slices == 2:
            return (1, 0, 0)  # 1g with double memory carries one decoder
        return _ENGINES_A100[profile.compute_slices]
    # Hopper: one NVDEC and one JPEG per compute slice; the OFA only with the whole GPU.
    ofa = 1 if profile.compute_slices == 7 else 0
    return (profile.compute_slices, profile.compute_slices, ofa)


def gpu_memory_bytes(gpu_model: str) -> int:
    """The GPU's memory: the nominal size of its 7g profile, read as GiB (e.g. 141GB -> 141 GiB)."""
    full = next(p for p in mig_profiles()[gpu_model] if p.compute_slices == 7)
    return int(full.nominal_memory.removesuffix("GB")) * 1024 * MIB


def mig_device_name(gpu_index: int, profile: MigProfile, start: int) -> str:
    """`gpu-<i>-mig-<profile without dots>-<GI profile id>-<placement start>`, e.g. gpu-0-mig-1g10gb-19-0."""
    compact = profile.profile.replace(".", "").replace("+", "")
    return f"gpu-{gpu_index}-mig-{compact}-{profile.gi_profile_id}-{start}"


def mig_devices(
    gpu_model: str, gpu_index: int, *, attributes: Mapping[str, DeviceAttribute]
) -> tuple[CounterSet, list[Device]]:
    """The counter set of one GPU and its devices: the full GPU first, then every (profile, placement)."""
    profiles = mig_profiles().get(gpu_model)
    if profiles is None:
        known = ", ".join(sorted(mig_profiles()))
        raise ValueError(f"no MIG profiles for GPU model {gpu_model!r}; known: {known}")
    family = _family(gpu_model)
    sms = _SMS_PER_SLICE[family]
    memory = gpu_memory_bytes(gpu_model)
    decoders, jpegs, ofas = _ENGINES_TOTAL[family]
    totals = {
        "multiprocessors": 7 * sms,
        "copy-engines": 7,
        "decoders": decoders,
        "jpeg-engines": jpegs,
        "ofa-engines": ofas,
        "memory": memory // MIB,
        **{f"memory-slice-{i}": 1 for i in range(MEMORY_SLICES)},
    }
    set_name = f"gpu-{gpu_index}-counter-set"
    counters = {name: Counter(value=_int(v)) for name, v in totals.items()}
    counter_set = CounterSet(name=set_name, counters=counters)

    # A MIG device names its parent by UUID, not as its own.
    parent = {("parentUUID" if k == "uuid" else k): v for k, v in attributes.items()}
    full = Device(
        name=f"gpu-{gpu_index}",
        attributes={"type": _string("gpu"), **attributes},
        capacity={MEMORY: DeviceCapacity(value=_bytes(memory))},
        consumes_counters=(DeviceCounterConsumption(counter_set=set_name, counters=dict(counters)),),
    )
    devices = [full]
    for profile in profiles:
        nvdec, jpeg, ofa = _engines(profile)
        slice_memory = memory // MEMORY_SLICES * profile.memory_slices
        capacity = {
            "multiprocessors": DeviceCapacity(value=_int(profile.compute_slices * sms)),
            "copyEngines": DeviceCapacity(value=_int(profile.compute_slices)),
            "decoders": DeviceCapacity(value=_int(nvdec)),
            "jpegEngines": DeviceCapacity(value=_int(jpeg)),
            "ofaEngines": DeviceCapacity(value=_int(ofa)),
            MEMORY: DeviceCapacity(value=_bytes(slice_memory)),
        }
        uses = {
            "multiprocessors": profile.compute_slices * sms,
            "copy-engines": profile.compute_slices,
            "decoders": nvdec,
            "jpeg-engines": jpeg,
            "ofa-engines": ofa,
            "memory": slice_memory // MIB,
        }
        for start in profile.placements:
            used = dict(uses)
            for index in range(start, start + profile.placement_size):
                used[f"memory-slice-{index}"] = 1
            consumed = {name: Counter(value=_int(v)) for name, v in used.items() if v}
            devices.append(
                Device(
                    name=mig_device_name(gpu_index, profile, start),
                    attributes={
                        **parent,
                        "type": _string("mig"),
                        "profile": _string(profile.profile),
                        "placementStart": DeviceAttribute(int_value=start),
                        "placementSize": DeviceAttribute(int_value=profile.placement_size),
                    },
                    capacity=capacity,
                    consumes_counters=(DeviceCounterConsumption(counter_set=set_name, counters=consumed),),
                )
            )
    return counter_set, devices


# --- slices and classes ------------------------------------------------------------------


def _slice(
    name: str,
    driver: str,
    node_name: str,
    pool: str,
    count: int,
    *,
    devices: Sequence[Device] = (),
    counters: Sequence[CounterSet] = (),
) -> ResourceSlice:
    return ResourceSlice(
        api_version="resource.k8s.io/v1",
        kind="ResourceSlice",
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver=driver,
            # A slice holds either devices or shared counters (the API's rule); both name the node.
            node_name=node_name,
            pool=ResourcePool(name=pool, generation=1, resource_slice_count=count),
            devices=tuple(devices),
            shared_counters=tuple(counters),
        ),
    )


def device_slice(
    node_name: str, devices: Sequence[Device], *, driver: str = HAMI_DRIVER, name: str | None = None
) -> ResourceSlice:
    """One node-local slice holding `devices` (fractional or time-sliced GPUs)."""
    return _slice(name or f"{node_name}-{driver}", driver, node_name, node_name, 1, devices=devices)


def mig_slices(
    node_name: str,
    gpus: Sequence[tuple[str, Mapping[str, DeviceAttribute]]],
    *,
    driver: str = NVIDIA_DRIVER,
) -> list[ResourceSlice]:
    """A node's MIG-capable GPUs as the NVIDIA driver publishes them on Kubernetes >= 1.35.

    `gpus` lists (model, attributes) per GPU index. Counter sets go into
    slices of their own (at most 8 sets per slice), devices into one slice
    per GPU (26 devices, under the 64-device limit for slices using counters).
    """
    sets: list[CounterSet] = []
    per_gpu: list[list[Device]] = []
    for index, (model, attributes) in enumerate(gpus):
        counter_set, devices = mig_devices(model, index, attributes=attributes)
        sets.append(counter_set)
        per_gpu.append(devices)
    groups = [sets[i : i + 8] for i in range(0, len(sets), 8)]
    total = len(groups) + len(per_gpu)
    slices = [
        _slice(f"{node_name}-{driver}-counters-{i}", driver, node_name, node_name, total, counters=group)
        for i, group in enumerate(groups)
    ]
    slices += [
        _slice(f"{node_name}-{driver}-gpu-{i}", driver, node_name, node_name, total, devices=devices)
        for i, devices in enumerate(per_gpu)
    ]
    return slices


def device_class(name: str, expression: str) -> DeviceClass:
    return DeviceClass(
        api_version="resource.k8s.io/v1",
        kind="DeviceClass",
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(selectors=(DeviceSelector(cel=CELDeviceSelector(expression=expression)),)),
    )


def hami_device_class() -> DeviceClass:
    """HAMi's class for fractional GPUs (its presence turns on the HAMi request mapping)."""
    return device_class(
        HAMI_DRIVER,
        f'device.driver == "{HAMI_DRIVER}" && device.attributes["{HAMI_DRIVER}"].type == "{HAMI_DEVICE_TYPE}"',
    )


def nvidia_device_classes() -> list[DeviceClass]:
    """NVIDIA's classes: whole GPUs (`gpu.nvidia.com`) and MIG partitions (`mig.nvidia.com`)."""
    attr = f'device.attributes["{NVIDIA_DRIVER}"].type'
    return [
        device_class("gpu.nvidia.com", f'device.driver == "{NVIDIA_DRIVER}" && {attr} == "gpu"'),
        device_class("mig.nvidia.com", f'device.driver == "{NVIDIA_DRIVER}" && {attr} == "mig"'),
    ]
