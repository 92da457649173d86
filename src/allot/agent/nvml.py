"""The `GpuSource` that asks NVML (nvidia-ml-py's `pynvml`), imported lazily.

`open_nvml()` returns None where the module or the driver is missing, so
the agent runs (and publishes NICs and CPUs) on nodes without GPUs. Every
query that a GPU may refuse (no MIG on this model, a field an older driver
lacks) is guarded per query: one unsupported call never hides a GPU.

What each record field comes from:

* driver: `nvmlSystemGetDriverVersion`, `nvmlSystemGetCudaDriverVersion_v2`
  (an integer, 12080 for 12.8), `nvmlSystemGetNVMLVersion`;
* GPU: `nvmlDeviceGetUUID`, `GetName`, `GetBrand`, `GetArchitecture`,
  `GetCudaComputeCapability`, `GetMemoryInfo().total`, `GetPciInfo().busId`,
  `GetMinorNumber` (/dev/nvidia<minor>), `GetMigMode` (current, pending),
  `GetComputeMode`;
* MIG device: `GetMigDeviceHandleByIndex`, its UUID, GPU and compute
  instance ids; the GPU instance's placement (`nvmlGpuInstanceGetInfo`) and
  profile (matched by id among `GetGpuInstanceProfileInfo` v2, whose name
  is "MIG 1g.10gb"); its capabilities' device nodes from
  `/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<g>[/ci<c>]/access`;
* events: an event set registered for XID critical errors and single/
  double-bit ECC errors, waited on with `nvmlEventSetWait_v2`;
* status: a GPU that answers `GPU_IS_LOST` (or is no longer found) is
  unreachable; the recovery action is the field
  `NVML_FI_DEV_GET_GPU_RECOVERY_ACTION` where the driver has it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import ModuleType
from typing import Any

from allot.agent.gpu_source import RECOVERY_ACTIONS, GpuSample, GpuStatus, HealthEvent
from allot.agent.inventory import Gpu, GpuInventory, MigDevice

log = logging.getLogger(__name__)

_ARCHITECTURES = {
    "NVML_DEVICE_ARCH_KEPLER": "Kepler",
    "NVML_DEVICE_ARCH_MAXWELL": "Maxwell",
    "NVML_DEVICE_ARCH_PASCAL": "Pascal",
    "NVML_DEVICE_ARCH_VOLTA": "Volta",
    "NVML_DEVICE_ARCH_TURING": "Turing",
    "NVML_DEVICE_ARCH_AMPERE": "Ampere",
    "NVML_DEVICE_ARCH_ADA": "Ada Lovelace",
    "NVML_DEVICE_ARCH_HOPPER": "Hopper",
    "NVML_DEVICE_ARCH_BLACKWELL": "Blackwell",
    "NVML_DEVICE_ARCH_RUBIN": "Rubin",
}
_BRANDS = {
    "NVML_BRAND_QUADRO": "Quadro",
    "NVML_BRAND_TESLA": "Tesla",
    "NVML_BRAND_NVS": "NVS",
    "NVML_BRAND_GRID": "Grid",
    "NVML_BRAND_GEFORCE": "GeForce",
    "NVML_BRAND_TITAN": "Titan",
    "NVML_BRAND_NVIDIA": "Nvidia",
    "NVML_BRAND_NVIDIA_RTX": "NvidiaRTX",
    "NVML_BRAND_QUADRO_RTX": "QuadroRTX",
    "NVML_BRAND_GEFORCE_RTX": "GeForceRTX",
    "NVML_BRAND_TITAN_RTX": "TitanRTX",
}
_COMPUTE_MODES = {0: "Default", 1: "ExclusiveThread", 2: "Prohibited", 3: "ExclusiveProcess"}
# NVML's "no instance" id in event data.
_NO_INSTANCE = 0xFFFFFFFF


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _cap_device(proc_root: Path, minor: int, *parts: str) -> str | None:
    """/dev/nvidia-caps/nvidia-cap<N> from the capability's `access` file ("DeviceFileMinor: N")."""
    path = proc_root.joinpath("driver", "nvidia", "capabilities", f"gpu{minor}", "mig", *parts, "access")
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "DeviceFileMinor":
                return f"/dev/nvidia-caps/nvidia-cap{int(value)}"
    except (OSError, ValueError):
        return None
    return None


def open_nvml(proc_root: Path | str = "/proc") -> NvmlSource | None:
    """The NVML backend, or None (with the reason logged) where pynvml or the driver is missing."""
    try:
        import pynvml
    except ImportError:
        log.info("nvidia-ml-py is not installed: no GPUs discovered (pip install 'allot[agent]')")
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        log.info("NVML did not start (%s): no GPUs discovered", err)
        return None
    return NvmlSource(pynvml, Path(proc_root))


class NvmlSource:
    """`GpuSource` over an initialised pynvml module."""

    def __init__(self, nvml: ModuleType, proc_root: Path) -> None:
        self.nvml = nvml
        self.proc_root = proc_root
        self._event_set: Any = None
        self._architectures = {getattr(nvml, k): v for k, v in _ARCHITECTURES.items() if hasattr(nvml, k)}
        self._brands = {getattr(nvml, k): v for k, v in _BRANDS.items() if hasattr(nvml, k)}

    # -- inventory ------------------------------------------------------------------------

    def _optional(self, call: Any, *args: Any, default: Any = None) -> Any:
        try:
            return call(*args)
        except self.nvml.NVMLError:
            return default

    def inventory(self) -> GpuInventory:
        n = self.nvml
        gpus = tuple(
            self._gpu(index, n.nvmlDeviceGetHandleByIndex(index)) for index in range(n.nvmlDeviceGetCount())
        )
        return GpuInventory(
            driver_version=_text(n.nvmlSystemGetDriverVersion()),
            cuda_driver_version=int(self._optional(n.nvmlSystemGetCudaDriverVersion_v2, default=0)),
            nvml_version=_text(self._optional(n.nvmlSystemGetNVMLVersion, default="")),
            gpus=gpus,
        )

    def _gpu(self, index: int, handle: Any) -> Gpu:
        n = self.nvml
        major, minor_cc = n.nvmlDeviceGetCudaComputeCapability(handle)
        mig = self._optional(n.nvmlDeviceGetMigMode, handle, default=(0, 0))
        minor = int(n.nvmlDeviceGetMinorNumber(handle))
        enabled = mig[0] == getattr(n, "NVML_DEVICE_MIG_ENABLE", 1)
        return Gpu(
            index=index,
            minor=minor,
            uuid=_text(n.nvmlDeviceGetUUID(handle)),
            product_name=_text(n.nvmlDeviceGetName(handle)),
            brand=self._brands.get(self._optional(n.nvmlDeviceGetBrand, handle), "Nvidia"),
            architecture=self._architectures.get(
                self._optional(n.nvmlDeviceGetArchitecture, handle), "Unknown"
            ),
            compute_capability=f"{major}.{minor_cc}",
            memory_bytes=int(n.nvmlDeviceGetMemoryInfo(handle).total),
            pci_bus_id=_text(n.nvmlDeviceGetPciInfo(handle).busId),
            mig_enabled=enabled,
            mig_pending=mig[1] == getattr(n, "NVML_DEVICE_MIG_ENABLE", 1),
            compute_mode=_COMPUTE_MODES.get(
                self._optional(n.nvmlDeviceGetComputeMode, handle, default=0), "Default"
            ),
            mig_devices=self._mig_devices(handle, minor) if enabled else (),
        )

    def _profiles(self, handle: Any) -> dict[int, Any]:
        """GPU instance profiles this GPU supports, by profile id."""
        n = self.nvml
        found: dict[int, Any] = {}
        for profile in range(getattr(n, "NVML_GPU_INSTANCE_PROFILE_COUNT", 0)):
            info = self._optional(n.nvmlDeviceGetGpuInstanceProfileInfo, handle, profile)
            if info is not None:
                found[int(info.id)] = info
        return found

    def _mig_devices(self, handle: Any, minor: int) -> tuple[MigDevice, ...]:
        n = self.nvml
        profiles = self._profiles(handle)
        found = []
        for slot in range(self._optional(n.nvmlDeviceGetMaxMigDeviceCount, handle, default=0)):
            mig = self._optional(n.nvmlDeviceGetMigDeviceHandleByIndex, handle, slot)
            if mig is None:
                continue
            gi = int(n.nvmlDeviceGetGpuInstanceId(mig))
            ci = int(n.nvmlDeviceGetComputeInstanceId(mig))
            info = n.nvmlGpuInstanceGetInfo(n.nvmlDeviceGetGpuInstanceById(handle, gi))
            profile = profiles.get(int(info.profileId))
            name = (
                _text(profile.name).removeprefix("MIG ")
                if profile is not None
                else f"profile-{info.profileId}"
            )
            attributes = self._optional(n.nvmlDeviceGetAttributes, mig)
            caps = [
                _cap_device(self.proc_root, minor, f"gi{gi}"),
                _cap_device(self.proc_root, minor, f"gi{gi}", f"ci{ci}"),
            ]
            found.append(
                MigDevice(
                    uuid=_text(n.nvmlDeviceGetUUID(mig)),
                    profile=name,
                    gi_profile_id=int(info.profileId),
                    placement_start=int(info.placement.start),
                    placement_size=int(info.placement.size),
                    gpu_instance_id=gi,
                    compute_instance_id=ci,
                    memory_bytes=int(
                        self._optional(lambda h: n.nvmlDeviceGetMemoryInfo(h).total, mig, default=0)
                    ),
                    multiprocessors=int(attributes.multiprocessorCount) if attributes is not None else 0,
                    caps=tuple(c for c in caps if c is not None),
                )
            )
        return tuple(
            sorted(found, key=lambda m: (m.placement_start, m.gpu_instance_id, m.compute_instance_id))
        )

    # -- events ---------------------------------------------------------------------------

    def _events(self) -> Any:
        """The event set, registered on first use for every GPU and each supported event type."""
        n = self.nvml
        if self._event_set is None:
            self._event_set = n.nvmlEventSetCreate()
            wanted = (
                n.nvmlEventTypeXidCriticalError
                | n.nvmlEventTypeDoubleBitEccError
                | n.nvmlEventTypeSingleBitEccError
            )
            for index in range(n.nvmlDeviceGetCount()):
                handle = n.nvmlDeviceGetHandleByIndex(index)
                supported = self._optional(n.nvmlDeviceGetSupportedEventTypes, handle, default=0)
                if supported & wanted:
                    try:
                        n.nvmlDeviceRegisterEvents(handle, supported & wanted, self._event_set)
                    except n.NVMLError as err:
                        log.warning(
                            "GPU %d: cannot watch its events (%s); its status is still polled", index, err
                        )
        return self._event_set

    def wait_events(self, timeout: float) -> list[HealthEvent]:
        n = self.nvml
        try:
            data = n.nvmlEventSetWait_v2(self._events(), int(timeout * 1000))
        except n.NVMLError_Timeout:
            return []
        except n.NVMLError as err:
            # GPU_IS_LOST and friends: which GPU is for `status` to find out.
            log.warning("waiting for NVML events: %s", err)
            return []
        uuid = _text(n.nvmlDeviceGetUUID(data.device))
        gi = None if data.gpuInstanceId == _NO_INSTANCE else int(data.gpuInstanceId)
        ci = None if data.computeInstanceId == _NO_INSTANCE else int(data.computeInstanceId)
        if data.eventType & n.nvmlEventTypeXidCriticalError:
            return [
                HealthEvent(uuid, "xid", xid=int(data.eventData), gpu_instance_id=gi, compute_instance_id=ci)
            ]
        if data.eventType & n.nvmlEventTypeDoubleBitEccError:
            return [HealthEvent(uuid, "ecc-double-bit", gpu_instance_id=gi, compute_instance_id=ci)]
        if data.eventType & n.nvmlEventTypeSingleBitEccError:
            return [HealthEvent(uuid, "ecc-single-bit", gpu_instance_id=gi, compute_instance_id=ci)]
        return []

    # -- status and gauges -------------------------------------------------------------------

    def status(self, uuid: str) -> GpuStatus:
        n = self.nvml
        try:
            handle = n.nvmlDeviceGetHandleByUUID(uuid)
            n.nvmlDeviceGetPciInfo(handle)
        except n.NVMLError:
            return GpuStatus(reachable=False)
        field = getattr(n, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", None)
        if field is None:
            return GpuStatus()
        values = self._optional(n.nvmlDeviceGetFieldValues, handle, [field])
        if values is None or values[0].nvmlReturn != 0:
            return GpuStatus()
        return GpuStatus(recovery=RECOVERY_ACTIONS.get(int(values[0].value.uiVal)))

    def samples(self) -> list[GpuSample]:
        n = self.nvml
        found = []
        for index in range(self._optional(n.nvmlDeviceGetCount, default=0)):
            handle = self._optional(n.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                continue
            memory = self._optional(n.nvmlDeviceGetMemoryInfo, handle)
            utilization = self._optional(n.nvmlDeviceGetUtilizationRates, handle)
            power = self._optional(n.nvmlDeviceGetPowerUsage, handle)
            temperature = self._optional(n.nvmlDeviceGetTemperature, handle, n.NVML_TEMPERATURE_GPU)
            found.append(
                GpuSample(
                    uuid=_text(self._optional(n.nvmlDeviceGetUUID, handle, default="")),
                    temperature_c=float(temperature) if temperature is not None else None,
                    utilization_percent=float(utilization.gpu) if utilization is not None else None,
                    memory_used_bytes=int(memory.used) if memory is not None else None,
                    memory_free_bytes=int(memory.free) if memory is not None else None,
                    power_watts=power / 1000.0 if power is not None else None,
                )
            )
        return found

    def close(self) -> None:
        n = self.nvml
        if self._event_set is not None:
            self._optional(n.nvmlEventSetFree, self._event_set)
            self._event_set = None
        self._optional(n.nvmlShutdown)
