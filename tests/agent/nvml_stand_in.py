"""A stand-in for the pynvml module that answers from a GpuInventory, the way the NVML library
answers on that machine (strings as bytes, bus ids in NVML's form, MIG through GPU instances).

No GPU was available to this project's tests; this lets the real NVML backend's code
(allot.agent.nvml) run: the record it builds from these answers must be the inventory itself.
Constants and error classes are the real module's.
"""

from __future__ import annotations

import queue
from types import SimpleNamespace
from typing import Any

import pynvml

from allot.agent.inventory import GpuInventory
from allot.model.presets.gpu_sharing import mig_profiles

_ARCH = {"Hopper": pynvml.NVML_DEVICE_ARCH_HOPPER, "Ampere": pynvml.NVML_DEVICE_ARCH_AMPERE,
         "Ada Lovelace": pynvml.NVML_DEVICE_ARCH_ADA}  # fmt: skip
_MODES = {"Default": 0, "Prohibited": 2, "ExclusiveProcess": 3}


def stand_in(recorded: GpuInventory, mig_model: str = "H100-80GB") -> SimpleNamespace:
    n = SimpleNamespace(
        **{k: getattr(pynvml, k) for k in dir(pynvml) if k.startswith(("NVML", "nvmlEventType"))}
    )
    gpus = recorded.gpus
    profiles = list(mig_profiles()[mig_model])
    n.events = queue.Queue()
    n.lost = set()
    n.recovery = {}

    def check(handle: int) -> int:
        if handle in n.lost:
            raise pynvml.NVMLError_GpuIsLost()
        return handle

    n.nvmlDeviceGetCount = lambda: len(gpus)
    n.nvmlDeviceGetHandleByIndex = lambda i: i
    n.nvmlDeviceGetHandleByUUID = lambda u: check(next(i for i, g in enumerate(gpus) if g.uuid == u))
    n.nvmlSystemGetDriverVersion = lambda: recorded.driver_version.encode()
    n.nvmlSystemGetCudaDriverVersion_v2 = lambda: recorded.cuda_driver_version
    n.nvmlSystemGetNVMLVersion = lambda: recorded.nvml_version.encode()
    n.nvmlDeviceGetCudaComputeCapability = lambda h: tuple(
        int(p) for p in gpus[h].compute_capability.split(".")
    )
    n.nvmlDeviceGetMigMode = lambda h: (int(gpus[h].mig_enabled), int(gpus[h].mig_pending))
    n.nvmlDeviceGetMinorNumber = lambda h: gpus[h].minor
    n.nvmlDeviceGetName = lambda h: gpus[h].product_name.encode()
    n.nvmlDeviceGetBrand = lambda h: pynvml.NVML_BRAND_NVIDIA
    n.nvmlDeviceGetArchitecture = lambda h: _ARCH[gpus[h].architecture]
    n.nvmlDeviceGetComputeMode = lambda h: _MODES[gpus[h].compute_mode]
    n.nvmlDeviceGetPciInfo = lambda h: SimpleNamespace(busId=gpus[check(h)].pci_bus_id.encode())

    def uuid(handle: Any) -> bytes:
        if isinstance(handle, tuple):
            return gpus[handle[0]].mig_devices[handle[1]].uuid.encode()
        return gpus[handle].uuid.encode()

    def memory(handle: Any) -> SimpleNamespace:
        total = (
            gpus[handle[0]].mig_devices[handle[1]].memory_bytes
            if isinstance(handle, tuple)
            else gpus[handle].memory_bytes
        )
        return SimpleNamespace(total=total, used=total // 4, free=total - total // 4)

    n.nvmlDeviceGetUUID = uuid
    n.nvmlDeviceGetMemoryInfo = memory

    def profile_info(handle: int, index: int) -> SimpleNamespace:
        if index >= len(profiles):
            raise pynvml.NVMLError_NotSupported()
        p = profiles[index]
        return SimpleNamespace(id=p.gi_profile_id, name=f"MIG {p.profile}".encode())

    def mig_handle(handle: int, slot: int) -> tuple[int, int]:
        if slot >= len(gpus[handle].mig_devices):
            raise pynvml.NVMLError_NotFound()
        return (handle, slot)

    def instance(mig: tuple[int, int]) -> Any:
        return gpus[mig[0]].mig_devices[mig[1]]

    n.NVML_GPU_INSTANCE_PROFILE_COUNT = len(profiles) + 2
    n.nvmlDeviceGetGpuInstanceProfileInfo = profile_info
    n.nvmlDeviceGetMaxMigDeviceCount = lambda h: 7
    n.nvmlDeviceGetMigDeviceHandleByIndex = mig_handle
    n.nvmlDeviceGetGpuInstanceId = lambda m: instance(m).gpu_instance_id
    n.nvmlDeviceGetComputeInstanceId = lambda m: instance(m).compute_instance_id
    n.nvmlDeviceGetGpuInstanceById = lambda h, gi: next(
        (h, i) for i, m in enumerate(gpus[h].mig_devices) if m.gpu_instance_id == gi
    )
    n.nvmlGpuInstanceGetInfo = lambda gi: SimpleNamespace(
        profileId=instance(gi).gi_profile_id,
        placement=SimpleNamespace(start=instance(gi).placement_start, size=instance(gi).placement_size),
    )
    n.nvmlDeviceGetAttributes = lambda m: SimpleNamespace(multiprocessorCount=instance(m).multiprocessors)

    n.nvmlEventSetCreate = lambda: "event-set"
    n.nvmlDeviceGetSupportedEventTypes = lambda h: pynvml.nvmlEventTypeAll
    n.nvmlDeviceRegisterEvents = lambda h, types, event_set: None

    def wait(event_set: str, timeout_ms: int) -> Any:
        try:
            return n.events.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            raise pynvml.NVMLError_Timeout() from None

    n.nvmlEventSetWait_v2 = wait

    def fields(handle: int, ids: list[int]) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(nvmlReturn=0, value=SimpleNamespace(uiVal=n.recovery.get(handle, 0))) for _ in ids
        ]

    n.nvmlDeviceGetFieldValues = fields
    n.nvmlDeviceGetUtilizationRates = lambda h: SimpleNamespace(gpu=37)
    n.nvmlDeviceGetPowerUsage = lambda h: 312_500  # milliwatts
    n.nvmlDeviceGetTemperature = lambda h, sensor: 61
    n.nvmlEventSetFree = lambda event_set: None
    n.nvmlShutdown = lambda: None
    return n


def xid_event(n: SimpleNamespace, handle: int, xid: int, gpu_instance: int = 0xFFFFFFFF) -> SimpleNamespace:
    return SimpleNamespace(device=handle, eventType=pynvml.nvmlEventTypeXidCriticalError, eventData=xid,
                           gpuInstanceId=gpu_instance, computeInstanceId=0xFFFFFFFF)  # fmt: skip
