"""The hardware the presets describe, as data: GPU models, PCIe layouts, NICs and CPU sockets.

Each `NodeShape` is one server model as its drivers would see it: which GPU
sits on which PCIe root and NUMA node, which NIC shares that root, how many
logical CPUs each socket has. `nodes` turns a shape into a Node object and
`slices` into ResourceSlices; nothing here builds records.

Sources (research/sharing.md sections 3 and 4.3):

* DGX H100/H200: GPU <-> NIC <-> socket pairing, RDMA device names and IB
  netdev names from the DGX user guide (table 6); GPU bus ids "3 buses after
  the paired NIC" [recalled there, consistent with NCCL issue #1264's
  topology]. PCIe roots are opaque per GPU/NIC pair (only equality
  matters); allot uses the bus three below the NIC's. The storage NICs
  (two dual-port ConnectX-7, RDMA devices mlx5_1/2 and mlx5_7/8) sit on
  their own roots; their bus numbers (0x29, 0xaa) are [recalled].
* AWS p4d.24xlarge: 4 PCIe roots pci0000:10/20/90/a0, each with 2 GPUs and
  one EFA; GPU bus ids 0000:10:1c.0 ..., EFA rdmap16s27 at 0000:10:1b.0
  (DRANET's gpu-efa example). The 4 ENA interfaces are left out: they
  carry the node's primary network, which DRANET does not hand to pods.
* PCIe L40S server: a synthetic but typical 2-socket box with two GPUs per
  socket, each on its own root, and one RoCE NIC per socket on a root of
  its own, so GPU and NIC can align on NUMA only (KEP-6072 notes such
  layouts, e.g. Dell R760xa).
"""

from __future__ import annotations

from dataclasses import dataclass


class PresetError(ValueError):
    """A preset asked for something its hardware cannot do, or a bad preset spec; the message names the field."""


@dataclass(frozen=True, slots=True)
class GpuModel:
    """One GPU product as NVML and the NVIDIA DRA driver describe it."""

    product_name: str  # `productName`, as NVML prints it
    architecture: str
    compute_capability: str  # `cudaComputeCapability`, a semver version
    memory: str  # the `memory` capacity: NVML's total memory in MiB
    # Key into data/mig-profiles.csv, or None when the GPU has no MIG.
    mig_model: str | None
    # GPU feature discovery's `nvidia.com/gpu.product` label value.
    product_label: str


H100_SXM = GpuModel(
    "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi", "H100-80GB", "NVIDIA-H100-80GB-HBM3"
)
H200_SXM = GpuModel("NVIDIA H200", "Hopper", "9.0.0", "143771Mi", "H200-141GB", "NVIDIA-H200")
A100_SXM4_40GB = GpuModel(
    "NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi", "A100-40GB", "NVIDIA-A100-SXM4-40GB"
)
L40S = GpuModel("NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi", None, "NVIDIA-L40S")


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """Where one GPU sits: its PCI address, PCIe root and NUMA node."""

    pci_bus_id: str  # "0000:1b:00.0"
    pcie_root: str  # "pci0000:15"
    numa: int


@dataclass(frozen=True, slots=True)
class NicSlot:
    """One network function as DRANET publishes it (one device per PCI function)."""

    pci_address: str
    pcie_root: str
    numa: int
    rdma_device: str
    # Netdev name; None for RDMA-only functions (EFA), which have no interface.
    if_name: str | None
    vendor: str
    product: str
    mtu: int = 0
    # "compute" NICs carry GPU traffic; "storage" NICs serve storage and in-band management.
    role: str = "compute"


@dataclass(frozen=True, slots=True)
class CpuSocket:
    """One NUMA node's CPUs, as dra-driver-cpu groups them (grouped mode, one group per NUMA node)."""

    numa: int
    socket: int
    cpus: int  # logical CPUs
    smt: bool = True


@dataclass(frozen=True, slots=True)
class NodeShape:
    """A server model: its devices and the Node fields a kubelet on it reports."""

    name: str
    description: str
    instance_type: str
    gpu: GpuModel
    gpus: tuple[GpuSlot, ...]
    nics: tuple[NicSlot, ...]
    sockets: tuple[CpuSocket, ...]
    # Node status: capacity and what kubelet reserves (allocatable = capacity - reserved).
    memory: str
    memory_reserved: str
    cpu_reserved: str
    ephemeral_storage: str
    pods: int = 110
    driver_version: str = "570.133.20"
    cuda_driver_version: str = "12.8.0"

    @property
    def cpus(self) -> int:
        return sum(s.cpus for s in self.sockets)


_CX7 = ("Mellanox Technologies", "MT2910 Family [ConnectX-7]")
_CX6DX = ("Mellanox Technologies", "MT2892 Family [ConnectX-6 Dx]")
_EFA = ("Amazon.com, Inc.", "Elastic Fabric Adapter (EFA)")

# DGX H100 table 6: (NIC bus, RDMA device, GPU bus, socket). The root is three buses below the NIC.
_DGX_PAIRS = (
    (0x18, "mlx5_0", 0x1B, 0),
    (0x40, "mlx5_3", 0x43, 0),
    (0x4F, "mlx5_4", 0x52, 0),
    (0x5E, "mlx5_5", 0x61, 0),
    (0x9A, "mlx5_6", 0x9D, 1),
    (0xC0, "mlx5_9", 0xC3, 1),
    (0xCE, "mlx5_10", 0xD1, 1),
    (0xDC, "mlx5_11", 0xDF, 1),
)
# The two dual-port storage NICs: (bus, RDMA devices of the two ports, socket).
_DGX_STORAGE = ((0x29, ("mlx5_1", "mlx5_2"), 0), (0xAA, ("mlx5_7", "mlx5_8"), 1))


def _root(bus: int) -> str:
    return f"pci0000:{bus:02x}"


def _dgx_gpus() -> tuple[GpuSlot, ...]:
    return tuple(GpuSlot(f"0000:{gpu:02x}:00.0", _root(nic - 3), numa) for nic, _, gpu, numa in _DGX_PAIRS)


def _dgx_nics() -> tuple[NicSlot, ...]:
    nics = [
        NicSlot(f"0000:{bus:02x}:00.0", _root(bus - 3), numa, rdma, f"ibp{bus}s0", *_CX7, mtu=4092)
        for bus, rdma, _, numa in _DGX_PAIRS
    ]
    for bus, ports, numa in _DGX_STORAGE:
        for function, rdma in enumerate(ports):
            nics.append(
                NicSlot(
                    f"0000:{bus:02x}:00.{function}",
                    _root(bus - 3),
                    numa,
                    rdma,
                    f"enp{bus}s0f{function}np{function}",
                    *_CX7,
                    mtu=9000,
                    role="storage",
                )
            )
    return tuple(sorted(nics, key=lambda n: n.pci_address))


_DGX_SOCKETS = (CpuSocket(0, 0, 112), CpuSocket(1, 1, 112))


def _dgx(name: str, gpu: GpuModel, description: str) -> NodeShape:
    return NodeShape(
        name=name,
        description=description,
        instance_type=name,
        gpu=gpu,
        gpus=_dgx_gpus(),
        nics=_dgx_nics(),
        sockets=_DGX_SOCKETS,
        memory="2113456292Ki",
        memory_reserved="3145728Ki",
        cpu_reserved="2",
        ephemeral_storage="1951011456Ki",
    )


# p4d.24xlarge: (root bus, socket); two GPUs at devices 1c/1d and one EFA at 1b per root.
_P4D_ROOTS = ((0x10, 0), (0x20, 0), (0x90, 1), (0xA0, 1))


def _p4d() -> NodeShape:
    gpus = tuple(
        GpuSlot(f"0000:{bus:02x}:{device:02x}.0", _root(bus), numa)
        for bus, numa in _P4D_ROOTS
        for device in (0x1C, 0x1D)
    )
    nics = tuple(
        NicSlot(f"0000:{bus:02x}:1b.0", _root(bus), numa, f"rdmap{bus}s27", None, *_EFA)
        for bus, numa in _P4D_ROOTS
    )
    return NodeShape(
        name="p4d-24xlarge",
        description="AWS p4d.24xlarge: 8 x A100-SXM4-40GB, 4 EFA, 4 PCIe roots of 2 GPUs + 1 EFA, 2 sockets",
        instance_type="p4d.24xlarge",
        gpu=A100_SXM4_40GB,
        gpus=gpus,
        nics=nics,
        sockets=(CpuSocket(0, 0, 48), CpuSocket(1, 1, 48)),
        memory="1176832144Ki",
        memory_reserved="9342668Ki",
        cpu_reserved="310m",
        ephemeral_storage="83873772Ki",
        pods=737,
    )


def _l40s() -> NodeShape:
    gpus = (
        GpuSlot("0000:4a:00.0", _root(0x49), 0),
        GpuSlot("0000:61:00.0", _root(0x60), 0),
        GpuSlot("0000:ca:00.0", _root(0xC9), 1),
        GpuSlot("0000:e1:00.0", _root(0xE0), 1),
    )
    nics = (
        NicSlot("0000:17:00.0", _root(0x16), 0, "mlx5_0", "ens1f0np0", *_CX6DX, mtu=9000),
        NicSlot("0000:98:00.0", _root(0x97), 1, "mlx5_1", "ens5f0np0", *_CX6DX, mtu=9000),
    )
    return NodeShape(
        name="pcie-l40s",
        description="PCIe server: 4 x L40S (2 per socket, own roots), 2 RoCE NICs (1 per socket, own roots)",
        instance_type="pcie-l40s",
        gpu=L40S,
        gpus=gpus,
        nics=nics,
        sockets=(CpuSocket(0, 0, 64), CpuSocket(1, 1, 64)),
        memory="1056462052Ki",
        memory_reserved="2097152Ki",
        cpu_reserved="1",
        ephemeral_storage="936398616Ki",
    )


SHAPES: dict[str, NodeShape] = {
    shape.name: shape
    for shape in (
        _dgx(
            "dgx-h100",
            H100_SXM,
            "NVIDIA DGX H100: 8 x H100 SXM 80GB, 8 compute + 2 dual-port storage ConnectX-7, 2 sockets",
        ),
        _dgx(
            "dgx-h200",
            H200_SXM,
            "NVIDIA DGX H200: 8 x H200 141GB, 8 compute + 2 dual-port storage ConnectX-7, 2 sockets",
        ),
        _p4d(),
        _l40s(),
    )
}
