"""Physical GPUs from presets, and what an allocation of each kind of device takes of them."""

from __future__ import annotations

import pytest

from allot.model.core import Node
from allot.model.presets.expand import expand_preset
from allot.model.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceSlice,
)
from allot.sim.inventory import GpuInventory


def inventory(mode: str, nodes: int = 1) -> GpuInventory:
    objects = expand_preset("dgx-h100", nodes, gpu_mode=mode)
    return GpuInventory(
        [o for o in objects if isinstance(o, Node)], [o for o in objects if isinstance(o, ResourceSlice)]
    )


def allocation(node: str, device: str, driver: str = "gpu.nvidia.com") -> AllocationResult:
    result = DeviceRequestAllocationResult(request="r", driver=driver, pool=node, device=device)
    return AllocationResult(devices=DeviceAllocationResult(results=(result,)))


@pytest.mark.parametrize("mode", ["whole", "mig", "shared", "time-sliced"])
def test_a_dgx_has_eight_gpus_in_every_mode(mode: str) -> None:
    gpus = inventory(mode, nodes=2)
    assert len(gpus) == 16
    assert gpus.node_of == [0] * 8 + [1] * 8


def test_whole_gpu_takes_all_of_it_and_nics_count_nothing() -> None:
    gpus = inventory("whole")
    node = gpus.node_names[0]
    assert gpus.device_usage([allocation(node, "gpu-3")]) == [(3, 1.0, 1.0)]
    assert gpus.device_usage([allocation(node, "pci-0000-18-00-0", driver="dra.net")]) == []


def test_mig_partition_takes_its_share_of_the_parent_gpu() -> None:
    gpus = inventory("mig")
    node = gpus.node_names[0]
    [(gpu, compute, memory)] = gpus.device_usage([allocation(node, "gpu-2-mig-1g10gb-19-0")])
    assert gpu == 2
    assert compute == pytest.approx(1 / 7)
    assert memory == pytest.approx(1 / 8)
    [(gpu, compute, memory)] = gpus.device_usage([allocation(node, "gpu-5-mig-3g40gb-9-4")])
    assert (gpu, compute, memory) == (5, pytest.approx(3 / 7), pytest.approx(4 / 8))
    assert gpus.device_usage([allocation(node, "gpu-5")]) == [(5, 1.0, 1.0)]
