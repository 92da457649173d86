"""Machines for the agent's tests: sysfs trees built on disk and hand-made NVML inventories,
both shaped like a hardware preset (DGX H100, p4d.24xlarge, PCIe L40S).

`build_sysfs(root, shape, node)` lays out what the kernel shows for the preset's GPUs (as PCI
functions), NICs (PCI function, netdev, RDMA device) and NUMA nodes, plus the noise a real node
has (loopback, a bridge, the node's primary Ethernet without RDMA, an NVMe drive, NVSwitches).
The NVML side is in `recordings/` (made by `recordings/make_recordings.py`). Neither was read from
a real machine: both are hand-made from the presets' catalogue (allot.model.presets.catalog).
"""

from __future__ import annotations

import os
from pathlib import Path

from allot.agent import inventory
from allot.agent.inventory import GpuInventory
from allot.model.presets.catalog import NodeShape
from allot.model.presets.expand import expand_preset
from allot.model.resource import ResourceSlice

# PCI device ids (pci.ids) of the GPUs and NICs in the presets.
GPU_DEVICE_IDS = {
    "NVIDIA H100 80GB HBM3": "0x2330",
    "NVIDIA H200": "0x2335",
    "NVIDIA A100-SXM4-40GB": "0x20b0",
    "NVIDIA L40S": "0x26b9",
}
NIC_IDS = {
    "MT2910 Family [ConnectX-7]": ("0x15b3", "0x1021"),
    "MT2892 Family [ConnectX-6 Dx]": ("0x15b3", "0x101d"),
    "Elastic Fabric Adapter (EFA)": ("0x1d0f", "0xefa1"),
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


def pci_function(
    root: Path, address: str, complex_: str, numa: int, vendor: str, device: str, cls: str
) -> Path:
    """A PCI function under root complex `complex_` (behind one root port), linked from bus/pci/devices."""
    bus = complex_.removeprefix("pci")
    folder = root / "devices" / complex_ / f"{bus}:01.0" / address
    for name, value in (("vendor", vendor), ("device", device), ("class", cls), ("numa_node", str(numa))):
        _write(folder / name, value)
    _link(root / "bus" / "pci" / "devices" / address, folder)
    return folder


def net_interface(
    root: Path, name: str, device: Path | None, mac: str, mtu: int, operstate: str = "up"
) -> None:
    folder = root / "devices" / "virtual" / "net" / name if device is None else device / "net" / name
    for key, value in (("address", mac), ("mtu", str(mtu)), ("operstate", operstate)):
        _write(folder / key, value)
    if device is not None:
        _link(folder / "device", device)
    _link(root / "class" / "net" / name, folder)


def rdma_device(root: Path, name: str, device: Path, state: str = "4: ACTIVE") -> None:
    folder = device / "infiniband" / name
    _write(folder / "ports" / "1" / "state", state)
    _link(folder / "device", device)
    _link(root / "class" / "infiniband" / name, folder)


def preset_slices(shape: NodeShape, node: str, gpu_mode: str = "whole") -> list[ResourceSlice]:
    prefix, _, index = node.rpartition("-")
    objects = expand_preset(shape.name, 1, name_prefix=prefix, start=int(index), gpu_mode=gpu_mode)
    return [o for o in objects if isinstance(o, ResourceSlice)]


def preset_macs(shape: NodeShape, node: str) -> dict[str, str]:
    """The MAC the preset gives each interface (the tree must carry the same to compare)."""
    macs = {}
    for s in preset_slices(shape, node):
        for d in s.spec.devices:
            if "dra.net/mac" in d.attributes:
                macs[str(d.attributes["dra.net/ifName"].value)] = str(d.attributes["dra.net/mac"].value)
    return macs


def build_sysfs(root: Path, shape: NodeShape, node: str) -> Path:
    """A sysfs tree for a machine of `shape` called `node` (see the module docstring); returns root."""
    for gpu in shape.gpus:
        pci_function(
            root,
            gpu.pci_bus_id,
            gpu.pcie_root,
            gpu.numa,
            "0x10de",
            GPU_DEVICE_IDS[shape.gpu.product_name],
            "0x030200",
        )
    macs = preset_macs(shape, node)
    for nic in shape.nics:
        vendor, device = NIC_IDS[nic.product]
        ib = nic.if_name is not None and nic.if_name.startswith("ib")
        folder = pci_function(
            root, nic.pci_address, nic.pcie_root, nic.numa, vendor, device, "0x020700" if ib else "0x020000"
        )
        if nic.if_name is not None:
            net_interface(root, nic.if_name, folder, macs[nic.if_name], nic.mtu)
        rdma_device(root, nic.rdma_device, folder)
    # Noise: what every node also has and the agent must not publish.
    net_interface(root, "lo", None, "00:00:00:00:00:00", 65536, "unknown")
    net_interface(root, "cni0", None, "0a:58:0a:f4:00:01", 1450)
    primary = pci_function(root, "0000:05:00.0", "pci0000:00", 0, "0x8086", "0x1593", "0x020000")
    net_interface(root, "eno1", primary, "3c:ec:ef:00:00:01", 1500)
    pci_function(root, "0000:06:00.0", "pci0000:00", 0, "0x144d", "0xa80a", "0x010802")  # NVMe
    for index, numa in enumerate(s.numa for s in shape.sockets):
        first = sum(s.cpus for s in shape.sockets[:index]) // 2
        half = shape.cpus // 2
        per = shape.sockets[index].cpus // 2
        _write(
            root / "devices" / "system" / "node" / f"node{numa}" / "cpulist",
            f"{first}-{first + per - 1},{half + first}-{half + first + per - 1}",
        )
        for cpu in (*range(first, first + per), *range(half + first, half + first + per)):
            sibling = cpu + half if cpu < half else cpu - half
            topology = root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
            _write(topology / "physical_package_id", str(shape.sockets[index].socket))
            _write(topology / "thread_siblings_list", f"{min(cpu, sibling)},{max(cpu, sibling)}")
    return root


RECORDINGS = Path(__file__).parent / "recordings"


def recorded(name: str) -> GpuInventory:
    """The NVML side of a hand-made recording in recordings/."""
    gpus = inventory.load(RECORDINGS / name).gpus
    assert gpus is not None
    return gpus
