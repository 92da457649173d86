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


def gpu_attributes(
    node: str, index: int, model: GpuModel, slot: GpuSlot, *, driver_version: str, cuda_version: str
) -> dict[str, DeviceAttribute]:
    """A whole GPU's attributes, unqualified names meaning the `gpu.nvidia.com` domain."""
    return {
        "architecture": text(model.architecture),
        "brand": text("Nvidia"),
        "cudaComputeCapability": version(model.compute_capability),
        "cudaDriverVersion": version(cuda_version),
        "driverVersion": version(driver_version),
        "productName": text(model.product_name),
        PCI_BUS_ID: text(slot.pci_bus_id),
        PCIE_ROOT: text(slot.pcie_root),
        NUMA_NODE: integer(slot.numa),
        "type": text("gpu"),
        "uuid": text(gpu_uuid(node, index)),
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


def nic_device(node: str, nic: NicSlot) -> Device:
    """One NIC function; RDMA-only functions (EFA) carry no interface fields."""
    attributes: dict[str, DeviceAttribute] = {}
    if nic.if_name is not None:
        attributes["dra.net/ifName"] = text(nic.if_name)
        attributes["dra.net/mac"] = text(_mac(node, nic))
        attributes["dra.net/mtu"] = integer(nic.mtu)
    attributes.update(
        {
            "dra.net/numaNode": integer(nic.numa),
            "dra.net/pciAddress": text(nic.pci_address),
            "dra.net/pciDevice": text(nic.product),
            "dra.net/pciVendor": text(nic.vendor),
            "dra.net/rdma": flag(True),
            "dra.net/rdmaDevice": text(nic.rdma_device),
            "dra.net/sriov": flag(False),
            "dra.net/virtual": flag(False),
            NUMA_NODE: integer(nic.numa),
            PCIE_ROOT: text(nic.pcie_root),
        }
    )
    return Device(name=nic_device_name(nic.pci_address), attributes=attributes)


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
            NUMA_NODE: integer(socket.numa),
        },
        capacity={"dra.cpu/cpu": DeviceCapacity(value=Quantity.from_int(socket.cpus), request_policy=policy)},
        allow_multiple_allocations=True,
    )
