"""Device records as the three drivers publish them: NVIDIA GPUs, DRANET NICs, dra-driver-cpu groups.

Attribute names and types follow the drivers (research/sharing.md section 3):

* `gpu.nvidia.com`: device `gpu-<i>` with `type`, `uuid`, `productName`,
  `brand`, `architecture`, `cudaComputeCapability`, `driverVersion`,
  `cudaDriverVersion` (driver domain) and the standard
  `resource.kubernetes.io/pciBusID`, `resource.kubernetes.io/pcieRoot`,
  `resource.kubernetes.io/numaNode`; capacity `memory`.
* `dra.net`: device `pci-<domain>-<bus>-<device>-<function>` with `ifName`
  (netdevs only), `pciAddress`, `mac`, `mtu`, `pciVendor`, `pciDevice`,
  `numaNode` (legacy), `rdma`, `rdmaDevice`, `sriov`, `virtual` and the
  standard `pcieRoot` and `numaNode`.
* `dra.cpu` (grouped mode): one device per NUMA node, `cpudevnuma<NNN>`,
  shared (`allowMultipleAllocations`) with consumable capacity
  `dra.cpu/cpu`, attributes `numCPUs`, `socketID`, `smtEnabled` and the
  standard `numaNode`.

Identifiers that are unique per machine (GPU UUIDs, MAC addresses) are
derived from the node name, so the same input always gives the same output.
"""

from __future__ import annotations

import hashlib
import uuid

from allot.model.presets.catalog import CpuSocket, GpuModel, GpuSlot, NicSlot
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Device,
    DeviceAttribute,
    DeviceCapacity,
)

GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVER = "dra.net"
CPU_DRIVER = "dra.cpu"
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"

_UUIDS = uuid.UUID("3f9b8a64-0d6e-4c1b-9a57-6c2e8f1d4b20")


def text(value: str) -> DeviceAttribute:
    return DeviceAttribute(string_value=value)


def integer(value: int) -> DeviceAttribute:
    return DeviceAttribute(int_value=value)


def flag(value: bool) -> DeviceAttribute:
    return DeviceAttribute(bool_value=value)


def version(value: str) -> DeviceAttribute:
    return DeviceAttribute(version_value=value)


def gpu_uuid(node: str, index: int) -> str:
    return f"GPU-{uuid.uuid5(_UUIDS, f'{node}/gpu/{index}')}"


def topology_attributes(pcie_root: str, numa: int) -> dict[str, DeviceAttribute]:
    """The standard PCIe root and NUMA attributes; each left out when unknown ("" or a negative node),
    as drivers do on machines (VMs) whose firmware does not tell."""
    found: dict[str, DeviceAttribute] = {}
    if pcie_root:
        found[PCIE_ROOT] = text(pcie_root)
    if numa >= 0:
        found[NUMA_NODE] = integer(numa)
    return found


def gpu_attributes(
    node: str,
    index: int,
    model: GpuModel,
    slot: GpuSlot,
    *,
    driver_version: str,
    cuda_version: str,
    uuid: str | None = None,
    brand: str = "Nvidia",
) -> dict[str, DeviceAttribute]:
    """A whole GPU's attributes, unqualified names meaning the `gpu.nvidia.com` domain.

    `uuid` is the GPU's own (the node agent passes what NVML reports); presets derive one from
    the node name and index."""
    return {
        "architecture": text(model.architecture),
        "brand": text(brand),
        "cudaComputeCapability": version(model.compute_capability),
        "cudaDriverVersion": version(cuda_version),
        "driverVersion": version(driver_version),
        "productName": text(model.product_name),
        PCI_BUS_ID: text(slot.pci_bus_id),
        **topology_attributes(slot.pcie_root, slot.numa),
        "type": text("gpu"),
        "uuid": text(uuid if uuid is not None else gpu_uuid(node, index)),
    }


def whole_gpu(name: str, attributes: dict[str, DeviceAttribute], memory: str) -> Device:
    return Device(
        name=name, attributes=attributes, capacity={"memory": DeviceCapacity(value=Quantity.parse(memory))}
    )


def nic_device_name(pci_address: str) -> str:
    """DRANET's device name for a PCI function: `0000:18:00.0` -> `pci-0000-18-00-0`."""
    return "pci-" + pci_address.replace(":", "-").replace(".", "-")


def _mac(node: str, nic: NicSlot) -> str:
    digest = hashlib.sha256(f"{node}/{nic.pci_address}".encode()).digest()
    if nic.if_name is not None and nic.if_name.startswith("ib"):
        # IPoIB hardware addresses are 20 bytes: QP number, then the port GID.
        raw = bytes((0x00, 0x00, 0x10, 0x29, 0xFE, 0x80, 0, 0, 0, 0, 0, 0)) + digest[:8]
    else:
        raw = bytes((0x94, 0x6D, 0xAE)) + digest[:3]
    return ":".join(f"{b:02x}" for b in raw)


def nic_device(node: str, nic: NicSlot, *, mac: str | None = None, sriov: bool = False) -> Device:
    """One NIC function; RDMA-only functions (EFA) carry no interface fields, functions without an
    RDMA device no `rdmaDevice`. `mac` is the interface's own (the node agent reads it from sysfs);
    presets derive one from the node name and PCI address."""
    attributes: dict[str, DeviceAttribute] = {}
    if nic.if_name is not None:
        attributes["dra.net/ifName"] = text(nic.if_name)
        attributes["dra.net/mac"] = text(mac if mac is not None else _mac(node, nic))
        attributes["dra.net/mtu"] = integer(nic.mtu)
    if nic.numa >= 0:
        attributes["dra.net/numaNode"] = integer(nic.numa)
    attributes.update(
        {
            "dra.net/pciAddress": text(nic.pci_address),
            "dra.net/pciDevice": text(nic.product),
            "dra.net/pciVendor": text(nic.vendor),
            "dra.net/rdma": flag(bool(nic.rdma_device)),
            "dra.net/sriov": flag(sriov),
            "dra.net/virtual": flag(False),
            **topology_attributes(nic.pcie_root, nic.numa),
        }
    )
    if nic.rdma_device:
        attributes["dra.net/rdmaDevice"] = text(nic.rdma_device)
    return Device(name=nic_device_name(nic.pci_address), attributes=dict(sorted(attributes.items())))


def cpu_device(socket: CpuSocket) -> Device:
    """One NUMA node's CPUs as a shared device with consumable `dra.cpu/cpu` (grouped mode)."""
    one = Quantity.parse("1")
    policy = CapacityRequestPolicy(default=one, valid_range=CapacityRequestPolicyRange(min=one, step=one))
    return Device(
        name=f"cpudevnuma{socket.numa:03d}",
        attributes={
            "dra.cpu/numCPUs": integer(socket.cpus),
            "dra.cpu/smtEnabled": flag(socket.smt),
            "dra.cpu/socketID": integer(socket.socket),
            **topology_attributes("", socket.numa),
        },
        capacity={"dra.cpu/cpu": DeviceCapacity(value=Quantity.from_int(socket.cpus), request_policy=policy)},
        allow_multiple_allocations=True,
    )
