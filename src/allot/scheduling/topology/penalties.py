"""Modeled cost of misalignment: throughput factors from measured GPU/NIC penalties.

Factors are throughput relative to an aligned placement (1.0), for a
GPU whose traffic leaves the node through a NIC at the given distance.
Sources (research/sharing.md section 4.2, all measured, none from the
unverified talk figures):

| GPU-NIC distance | factor | measurement |
|---|---|---|
| same PCIe root (PIX/PXB, GPUDirect RDMA on) | 1.00 | reference |
| same NUMA node, other root (PHB) | 0.63 | DRANET hardware-efficiency page: NCCL all-gather 29.20 vs 46.59 GB/s (0.627), all-reduce 29.68 vs 46.93 GB/s (0.632), GPU + RDMA NIC misaligned vs aligned |
| other socket (SYS) | 0.53 | DRANET AWS p4d example: 2-node all_reduce, 1 GPU per worker, EFA on another socket's root, 6.04 vs 11.35 GB/s (GDR off); Azure ND GB300 NUMA-remote NIC: 25 vs 56 GB/s (0.45) |

NCCL disables GPUDirect RDMA beyond PXB by default (`NCCL_NET_GDR_LEVEL`),
so PHB and SYS both stage through host memory; the same-socket case is
given the milder measured ratio because the staging stays on one socket
(an assumption: the DRANET page does not say which misalignment it ran).

The factors are bus-bandwidth ratios, i.e. for a pod whose time is all
communication. `communication_share` f scales them Amdahl-style:
factor = 1 / ((1 - f) + f / ratio). The one end-to-end measurement (Azure
ND H100 v5, BF16 DDP on 2 x 4 GPUs, NUMA-misaligned NICs: 324.7 vs 356.6
TFLOP/s per GPU, 0.911) corresponds to f = 0.11 with the SYS ratio;
`DDP_COMMUNICATION_SHARE` holds that value.

CPU-to-device NUMA misalignment (the CPUs a pod was given on another NUMA
node than its GPU or NIC) costs `CPU_MISALIGNED_FACTOR`, 0.71: the figure
press coverage of the KubeCon talk "Achieving Peak Performance Through
Hardware Alignment in DRA" quotes for a misaligned set against an aligned
one (research/sharing.md 4.1 marks it unverified: the slides were not
found). It is a placeholder until a measurement replaces it; the
simulator's scenario file overrides it (`throughput.cpuNuma`), as it does
the GPU/NIC factors.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from allot.scheduling.topology.alignment import Level

GPU_NIC_FACTORS: Mapping[Level, float] = MappingProxyType(
    {Level.PCIE: 1.0, Level.NUMA: 0.63, Level.NONE: 0.53}
)
DDP_COMMUNICATION_SHARE = 0.11
CPU_MISALIGNED_FACTOR = 0.71


def throughput_factor(
    level: Level,
    *,
    communication_share: float = 1.0,
    factors: Mapping[Level, float] = GPU_NIC_FACTORS,
) -> float:
    """Throughput relative to aligned for GPU-NIC distance `level` (see the module docstring)."""
    if not 0.0 <= communication_share <= 1.0:
        raise ValueError(f"communication_share must be within [0, 1], got {communication_share}")
    ratio = factors[level]
    return 1.0 / ((1.0 - communication_share) + communication_share / ratio)
