"""A node's devices: NVML's GPUs and sysfs's NICs and CPUs joined into one record per published device.

`join(gpus, host, config)` matches each GPU to its PCI function (NVML's
bus id `00000000:1B:00.0` is sysfs's `0000:1b:00.0`) for its PCIe root and
NUMA node, each NIC function to its netdev and RDMA device, each NUMA node
to its CPUs, and decides each GPU's sharing mode. The result, `NodeDevices`,
is what the slices are built from and what the kubelet plugin (issue 16)
maps an allocated device name back to: `lookup(driver, name)` gives the GPU
(UUID, /dev/nvidia<minor>), the MIG placement (profile, placement, and the
MIG device present there, if any, with its UUID and capability nodes), the
NIC (PCI address, interface, RDMA device) or the CPU set (CPU ids).

Sharing modes: a GPU whose MIG mode is on is `mig` (partitionable: every
profile and placement of allot's MIG table, allocated by counters); any
other GPU takes its configured mode, `whole` (exclusive, the default),
`time-sliced` or `shared` (fractional). A MIG GPU whose model is not in
the table cannot be offered safely and is left out, with a problem said.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from allot.agent import pci_names
from allot.agent.inventory import (
    Gpu,
    GpuInventory,
    HostInventory,
    MigDevice,
    NetInterface,
    NumaNode,
    PciFunction,
)
from allot.model.presets.catalog import CpuSocket, GpuModel, GpuSlot, NicSlot
from allot.model.presets.devices import CPU_DRIVER, GPU_DRIVER, NIC_DRIVER, nic_device_name
from allot.model.presets.gpu_sharing import HAMI_DRIVER, MigProfile, mig_device_name, mig_profiles

GpuMode = Literal["whole", "time-sliced", "shared", "mig"]
CONFIGURABLE_MODES: tuple[GpuMode, ...] = ("whole", "time-sliced", "shared")
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How the agent publishes what it finds.

    `sharing` maps a GPU (its index as a string, or its UUID) to its mode; `default_sharing` is
    the mode of the others. `nics` is `rdma` (functions with an RDMA device: what GPU workloads
    ask for) or `all` (every physical network function with an interface); `exclude_nics` are
    name patterns of interfaces or RDMA devices to leave out (the node's primary network, which
    a pod must never be handed)."""

    default_sharing: GpuMode = "whole"
    sharing: Mapping[str, GpuMode] = field(default_factory=dict)
    replicas: int = 4
    nics: Literal["rdma", "all"] = "rdma"
    pci_ids: Path | None = None
    # Interface or RDMA device names (shell patterns) never to publish: the node's own network.
    exclude_nics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuRecord:
    gpu: Gpu
    mode: GpuMode
    slot: GpuSlot  # normalised bus id, PCIe root, NUMA node
    model: GpuModel  # what the preset builders need
    name: str  # "gpu-<index>"

    @property
    def device_nodes(self) -> tuple[str, ...]:
        return (f"/dev/nvidia{self.gpu.minor}",)

    @property
    def driver(self) -> str:
        return HAMI_DRIVER if self.mode == "shared" else GPU_DRIVER


@dataclass(frozen=True, slots=True)
class MigPlacement:
    """A partition the agent offers on a MIG GPU; `present` is the MIG device there now, if any."""

    gpu: GpuRecord
    profile: MigProfile
    start: int
    present: MigDevice | None

    @property
    def name(self) -> str:
        return mig_device_name(self.gpu.gpu.index, self.profile, self.start)


@dataclass(frozen=True, slots=True)
class NicRecord:
    function: PciFunction
    interface: NetInterface | None
    rdma_device: str
    slot: NicSlot
    link_up: bool

    @property
    def name(self) -> str:
        return nic_device_name(self.function.address)


@dataclass(frozen=True, slots=True)
class CpuRecord:
    numa: NumaNode

    @property
    def name(self) -> str:
        return f"cpudevnuma{self.numa.id:03d}"

    @property
    def socket(self) -> CpuSocket:
        return CpuSocket(self.numa.id, self.numa.socket, len(self.numa.cpus), self.numa.smt)


DeviceRecord = GpuRecord | MigPlacement | NicRecord | CpuRecord


@dataclass(frozen=True, slots=True)
class NodeDevices:
    node: str
    driver_version: str
    cuda_version: str
    gpus: tuple[GpuRecord, ...]
    nics: tuple[NicRecord, ...]
    cpus: tuple[CpuRecord, ...]
    problems: tuple[str, ...] = ()

    def mig_placements(self, gpu: GpuRecord) -> list[MigPlacement]:
        if gpu.mode != "mig" or gpu.model.mig_model is None:
            return []
        found = []
        for profile in mig_profiles()[gpu.model.mig_model]:
            for start in profile.placements:
                present = next(
                    (
                        m
                        for m in gpu.gpu.mig_devices
                        if m.gi_profile_id == profile.gi_profile_id and m.placement_start == start
                    ),
                    None,
                )
                found.append(MigPlacement(gpu, profile, start, present))
        return found

    def lookup(self, driver: str, name: str) -> DeviceRecord | None:
        """The record behind a published device: what the kubelet plugin exposes for an allocation."""
        if driver in (GPU_DRIVER, HAMI_DRIVER):
            for gpu in self.gpus:
                if gpu.driver == driver and gpu.name == name:
                    return gpu
                for placement in self.mig_placements(gpu) if driver == GPU_DRIVER else ():
                    if placement.name == name:
                        return placement
        elif driver == NIC_DRIVER:
            return next((n for n in self.nics if n.name == name), None)
        elif driver == CPU_DRIVER:
            return next((c for c in self.cpus if c.name == name), None)
        return None


def normalise_bus_id(bus_id: str) -> str:
    """NVML's "00000000:1B:00.0" as sysfs and the standard attribute spell it: "0000:1b:00.0"."""
    parts = bus_id.strip().lower().split(":")
    domain = int(parts[0], 16) if len(parts) == 3 else 0
    bus, function = parts[-2], parts[-1]
    return f"{domain:04x}:{bus}:{function}"


def semver(version: str) -> str:
    """A driver version as a semantic version: "535.104.05" -> "535.104.5" (no leading zeros)."""
    parts = [str(int(p)) for p in version.split(".") if p.isdigit()][:3]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def cuda_version(value: int) -> str:
    """NVML's CUDA driver version integer: 12080 -> "12.8.0"."""
    return f"{value // 1000}.{value % 1000 // 10}.0"


def mig_model_for(product_name: str, memory_bytes: int) -> str | None:
    """The MIG table's key for a GPU ("H100-80GB"), by family in the name and memory within 8 %."""
    memory_gib = memory_bytes / 2**30
    for key in sorted(mig_profiles()):
        family, _, size = key.partition("-")
        nominal = float(size.removesuffix("GB"))
        if family in product_name and abs(memory_gib - nominal) <= 0.08 * nominal:
            return key
    return None


def _gpu_mode(gpu: Gpu, config: AgentConfig) -> GpuMode:
    if gpu.mig_enabled:
        return "mig"
    return config.sharing.get(gpu.uuid) or config.sharing.get(str(gpu.index)) or config.default_sharing


def _gpus(
    inventory: GpuInventory, pci: Mapping[str, PciFunction], config: AgentConfig
) -> tuple[list[GpuRecord], list[str]]:
    records, problems = [], []
    for gpu in sorted(inventory.gpus, key=lambda g: g.index):
        bus_id = normalise_bus_id(gpu.pci_bus_id)
        function = pci.get(bus_id)
        if function is None:
            problems.append(
                f"GPU {gpu.index} ({gpu.uuid}): PCI function {bus_id} not in sysfs; no PCIe root or NUMA node"
            )
        mode = _gpu_mode(gpu, config)
        mig_model = mig_model_for(gpu.product_name, gpu.memory_bytes)
        if mode == "mig" and mig_model is None:
            problems.append(
                f"GPU {gpu.index} ({gpu.uuid}): MIG is on but {gpu.product_name} is not in allot's MIG table; not published"
            )
            continue
        model = GpuModel(
            product_name=gpu.product_name,
            architecture=gpu.architecture,
            compute_capability=semver(gpu.compute_capability),
            memory=f"{gpu.memory_bytes // MIB}Mi",
            mig_model=mig_model,
            product_label=gpu.product_name.replace(" ", "-"),
        )
        slot = GpuSlot(bus_id, function.root if function else "", function.numa if function else -1)
        records.append(GpuRecord(gpu, mode, slot, model, f"gpu-{gpu.index}"))
    return records, problems


def _link_up(interface: NetInterface | None, ports: Mapping[str, str]) -> bool:
    if interface is not None:
        # "unknown" is what drivers without carrier reporting say; only a definite down counts.
        return interface.operstate not in ("down", "lowerlayerdown", "notpresent")
    return any(state.split(":")[-1].strip().upper() == "ACTIVE" for state in ports.values())


def _nics(host: HostInventory, config: AgentConfig) -> list[NicRecord]:
    records = []
    for function in host.pci:
        if not function.device_class.startswith("0x02") or function.virtual_function:
            continue
        interface = next((i for i in host.net if i.pci_address == function.address), None)
        rdma = next((r for r in host.rdma if r.pci_address == function.address), None)
        if rdma is None and (config.nics == "rdma" or interface is None):
            continue
        names = [x.name for x in (interface, rdma) if x is not None]
        if any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in config.exclude_nics):
            continue
        slot = NicSlot(
            pci_address=function.address,
            pcie_root=function.root,
            numa=function.numa,
            rdma_device=rdma.name if rdma is not None else "",
            if_name=interface.name if interface is not None else None,
            vendor=pci_names.vendor_name(function.vendor, config.pci_ids),
            product=pci_names.device_name(function.vendor, function.device, config.pci_ids),
            mtu=interface.mtu if interface is not None else 0,
        )
        link_up = _link_up(interface, rdma.ports if rdma is not None else {})
        records.append(NicRecord(function, interface, slot.rdma_device, slot, link_up))
    return records


def join(
    node: str, gpus: GpuInventory, host: HostInventory, config: AgentConfig | None = None
) -> NodeDevices:
    """The node's devices (see the module docstring)."""
    config = config or AgentConfig()
    pci = {f.address: f for f in host.pci}
    gpu_records, problems = _gpus(gpus, pci, config)
    return NodeDevices(
        node=node,
        driver_version=semver(gpus.driver_version) if gpus.driver_version else "",
        cuda_version=cuda_version(gpus.cuda_driver_version),
        gpus=tuple(gpu_records),
        nics=tuple(_nics(host, config)),
        cpus=tuple(CpuRecord(n) for n in host.numa),
        problems=tuple(problems),
    )
