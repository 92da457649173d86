"""What the node agent found on a machine, as records: the raw NVML view and the raw sysfs view.

Two sources, each recorded as it was read so a machine can be replayed
without its hardware (`allot agent discover --record` / `--from`):

* `GpuInventory`: what NVML says about the driver, each GPU and each MIG
  device present. Values are kept in NVML's own form (its PCI bus id with
  an 8-digit domain, the CUDA version as an integer such as 12080) so a
  recording is what the library returned.
* `HostInventory`: what sysfs says about PCI functions (the root complex a
  device hangs under, its NUMA node, vendor/device/class ids, SR-IOV),
  network interfaces, RDMA devices and NUMA nodes' CPUs.

A `Recording` holds either or both; a section it holds replaces the live
source of that kind. `allot.agent.node` joins the two into the records the
slices and the kubelet plugin use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

RECORDING_KIND = "AgentRecording"
RECORDING_VERSION = "allot.dev/v1alpha1"


class _Record(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    pass


class MigDevice(_Record, frozen=True, kw_only=True):
    """One MIG device present on a GPU: its GPU instance's placement and its compute instance."""

    uuid: str
    profile: str  # "1g.10gb", as NVML names the GPU instance profile
    gi_profile_id: int  # NVML's GPU instance profile id (19 for 1g, 0 for 7g, ...)
    placement_start: int  # in memory slices
    placement_size: int
    gpu_instance_id: int
    compute_instance_id: int
    memory_bytes: int = 0
    multiprocessors: int = 0
    # Device nodes of the instance's capabilities (/dev/nvidia-caps/nvidia-cap<N>), for the kubelet plugin.
    caps: tuple[str, ...] = ()


class Gpu(_Record, frozen=True, kw_only=True):
    """One physical GPU as NVML describes it."""

    index: int
    minor: int  # /dev/nvidia<minor>
    uuid: str
    product_name: str
    brand: str = "Nvidia"
    architecture: str  # "Hopper"
    compute_capability: str  # "9.0"
    memory_bytes: int
    pci_bus_id: str  # NVML's form, "00000000:1B:00.0"
    mig_enabled: bool = False  # current MIG mode
    mig_pending: bool = False  # pending MIG mode (takes effect at the next GPU reset)
    compute_mode: str = "Default"  # Default | ExclusiveProcess | Prohibited
    mig_devices: tuple[MigDevice, ...] = ()


class GpuInventory(_Record, frozen=True, kw_only=True):
    """The NVIDIA driver and its GPUs; empty when the node has no NVML (no driver, no GPU)."""

    driver_version: str = ""
    cuda_driver_version: int = 0  # NVML's integer, 12080 for 12.8
    nvml_version: str = ""
    gpus: tuple[Gpu, ...] = ()


class PciFunction(_Record, frozen=True, kw_only=True):
    """One PCI function from /sys/bus/pci/devices."""

    address: str  # "0000:1b:00.0"
    root: str  # root complex, "pci0000:15"; "" when the device hangs under none (VMs)
    numa: int = -1  # -1 when the firmware tells none
    vendor: str  # "0x15b3"
    device: str  # "0x1021"
    device_class: str  # "0x020700"
    sriov_totalvfs: int = 0
    virtual_function: bool = False  # an SR-IOV VF (has a physfn link)


class NetInterface(_Record, frozen=True, kw_only=True):
    """One interface from /sys/class/net; `pci_address` is None for virtual ones (no PCI device)."""

    name: str
    pci_address: str | None = None
    mac: str = ""
    mtu: int = 0
    operstate: str = "unknown"


class RdmaDevice(_Record, frozen=True, kw_only=True):
    """One RDMA device from /sys/class/infiniband, with each port's state ("4: ACTIVE")."""

    name: str
    pci_address: str | None = None
    ports: dict[str, str] = msgspec.field(default_factory=dict)


class NumaNode(_Record, frozen=True, kw_only=True):
    """One NUMA node's logical CPUs from /sys/devices/system/node."""

    id: int
    cpus: tuple[int, ...]
    socket: int = 0
    smt: bool = False


class HostInventory(_Record, frozen=True, kw_only=True):
    pci: tuple[PciFunction, ...] = ()
    net: tuple[NetInterface, ...] = ()
    rdma: tuple[RdmaDevice, ...] = ()
    numa: tuple[NumaNode, ...] = ()


class Recording(_Record, frozen=True, kw_only=True):
    """A recorded machine: `gpus` (NVML), `host` (sysfs), either or both."""

    api_version: str = RECORDING_VERSION
    kind: str = RECORDING_KIND
    description: str = ""
    gpus: GpuInventory | None = None
    host: HostInventory | None = None


class RecordingError(ValueError):
    """A recording that does not load; the message names the file and the field."""


def to_yaml(recording: Recording) -> str:
    data = msgspec.to_builtins(recording)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)


def from_data(data: Any, source: str) -> Recording:
    if not isinstance(data, dict) or data.get("kind") != RECORDING_KIND:
        raise RecordingError(f"{source}: expected a mapping with kind: {RECORDING_KIND}")
    try:
        return msgspec.convert(data, Recording)
    except msgspec.ValidationError as err:
        # msgspec says "... - at `$.gpus.gpus[0].uuid`"; say it as a field path.
        message, _, where = str(err).partition(" - at `$.")
        field = where.rstrip("`") if where else "(top level)"
        raise RecordingError(f"{source}: {field}: {message}") from None


def load(path: Path | str) -> Recording:
    """A recording from a YAML or JSON file; RecordingError naming the file and field otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise RecordingError(f"{path}: cannot read: {err.strerror}") from None
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        raise RecordingError(f"{path}: not YAML: {err}") from None
    return from_data(data, str(path))
