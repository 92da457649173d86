"""The agent against a real API server: slices published, kept equal to the machine (generation
bumps on every change, stale slices deleted, split at the API's limits), left in place on shutdown."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from agent.live import agent, devices, generations, machine, once, ready_node, slices, started
from allot.agent.gpu_source import GpuStatus, HealthEvent
from allot.agent.inventory import HostInventory, NumaNode, PciFunction, RdmaDevice
from allot.agent.sources import Sources
from allot.model.presets.catalog import SHAPES
from controlplane import ControlPlane


def test_publishes_one_pool_per_driver_owned_by_the_node(control_plane: ControlPlane, tmp_path: Path) -> None:
    uid = ready_node(control_plane, "pub-10")
    root, gpus = machine(tmp_path, "dgx-h100", "pub-10", "dgx-h100.yaml")
    asyncio.run(once(agent(control_plane, root, gpus, "pub-10")))
    published = slices(control_plane, "pub-10")
    assert sorted(s["spec"]["driver"] for s in published) == ["dra.cpu", "dra.net", "gpu.nvidia.com"]
    for s in published:
        assert s["spec"]["pool"] == {"name": "pub-10", "generation": 1, "resourceSliceCount": 1}
        assert s["metadata"]["ownerReferences"][0]["uid"] == uid
        shown = json.loads(
            control_plane.kubectl(
                "get", "resourceslice", s["metadata"]["name"], "-o", "json", "--show-managed-fields"
            )
        )
        assert [(f["manager"], f["operation"]) for f in shown["metadata"]["managedFields"]] == [
            ("allot-agent", "Apply")
        ]
    assert len(devices(control_plane, "pub-10", "gpu.nvidia.com")) == 8
    assert len(devices(control_plane, "pub-10", "dra.net")) == len(SHAPES["dgx-h100"].nics)


def test_every_change_bumps_the_generation_and_nothing_else_does(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    ready_node(control_plane, "pub-11")
    root, gpus = machine(tmp_path, "pcie-l40s", "pub-11", "pcie-l40s.yaml")
    uuid = gpus.recorded.gpus[1].uuid

    async def scenario() -> None:
        async with started(agent(control_plane, root, gpus, "pub-11")) as a:
            await a.publish()  # unchanged: no write
            assert generations(control_plane, "pub-11") == {
                "dra.cpu": {1},
                "dra.net": {1},
                "gpu.nvidia.com": {1},
            }
            gpus.inject(HealthEvent(uuid, "xid", xid=48))
            a.handle_events(1.0)
            await a.publish()
            taints = devices(control_plane, "pub-11", "gpu.nvidia.com")["gpu-1"]["taints"]
            assert [(t["key"], t["value"], t["effect"]) for t in taints] == [
                ("gpu.nvidia.com/xid", "48", "NoExecute")
            ]
            assert generations(control_plane, "pub-11")["gpu.nvidia.com"] == {2}
            assert generations(control_plane, "pub-11")["dra.net"] == {1}
            # The driver says the GPU was reset: the taint goes, the generation moves on.
            gpus.set_status(uuid, GpuStatus(reachable=True, recovery="none"))
            a.poll_health()
            await a.publish()
            assert "taints" not in devices(control_plane, "pub-11", "gpu.nvidia.com")["gpu-1"]
            assert generations(control_plane, "pub-11")["gpu.nvidia.com"] == {3}

    asyncio.run(scenario())


def test_devices_that_go_are_removed_and_stale_slices_deleted(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    ready_node(control_plane, "pub-12")
    root, gpus = machine(tmp_path, "dgx-h100", "pub-12", "dgx-h100-mig.yaml")

    async def scenario() -> None:
        async with started(agent(control_plane, root, gpus, "pub-12")) as a:
            gpu_slices = [
                s for s in slices(control_plane, "pub-12") if s["spec"]["driver"] == "gpu.nvidia.com"
            ]
            assert len(gpu_slices) == 9  # one counter slice, one per MIG GPU
            # MIG turned off on every GPU (same GPUs, whole now): 9 slices become 1, 8 are deleted.
            whole = machine(tmp_path / "whole", "dgx-h100", "pub-12", "dgx-h100.yaml")[1]
            a.sources.gpu = whole
            a.refresh(inventory=True)
            await a.publish()
            gpu_slices = [
                s for s in slices(control_plane, "pub-12") if s["spec"]["driver"] == "gpu.nvidia.com"
            ]
            assert len(gpu_slices) == 1
            assert gpu_slices[0]["spec"]["pool"] == {
                "name": "pub-12",
                "generation": 2,
                "resourceSliceCount": 1,
            }
            # A storage NIC is pulled out of the machine.
            nic = "0000:29:00.1"
            shutil.rmtree(next((root / "devices").glob(f"pci*/*/{nic}")))
            (root / "bus" / "pci" / "devices" / nic).unlink()
            (root / "class" / "net" / "enp41s0f1np1").unlink()
            (root / "class" / "infiniband" / "mlx5_2").unlink()
            a.refresh(inventory=False)
            await a.publish()
            assert "pci-0000-29-00-1" not in devices(control_plane, "pub-12", "dra.net")
            assert generations(control_plane, "pub-12")["dra.net"] == {2}

    asyncio.run(scenario())


def test_pools_are_split_at_the_api_device_limit(control_plane: ControlPlane, tmp_path: Path) -> None:
    ready_node(control_plane, "pub-13")
    root, gpus = machine(tmp_path, "pcie-l40s", "pub-13", "pcie-l40s.yaml")
    a = agent(control_plane, root, gpus, "pub-13")
    # A machine with 130 CPU groups: more than one slice may hold.
    many = HostInventory(numa=tuple(NumaNode(id=i, cpus=(2 * i, 2 * i + 1)) for i in range(130)))
    a.sources = Sources(gpu=gpus, sysfs_root=root, recorded_host=many)
    a.refresh(inventory=True)
    asyncio.run(once(a))
    cpu = [s for s in slices(control_plane, "pub-13") if s["spec"]["driver"] == "dra.cpu"]
    assert sorted(len(s["spec"]["devices"]) for s in cpu) == [2, 128]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in cpu} == {2}


def test_a_taint_lowers_the_split_to_64_devices(control_plane: ControlPlane, tmp_path: Path) -> None:
    ready_node(control_plane, "pub-16")
    root, gpus = machine(tmp_path, "pcie-l40s", "pub-16", "pcie-l40s.yaml")
    a = agent(control_plane, root, gpus, "pub-16")
    # 130 RDMA NICs (an SR-IOV-heavy box, say), one with its link down.
    functions = [
        PciFunction(address=f"0000:{i + 1:02x}:00.0", root=f"pci0000:{i + 1:02x}", vendor="0x15b3", device="0x1021",
                    device_class="0x020700")
        for i in range(130)
    ]  # fmt: skip
    rdma = [
        RdmaDevice(name=f"mlx5_{i}", pci_address=f.address, ports={"1": "1: DOWN" if i == 7 else "4: ACTIVE"})
        for i, f in enumerate(functions)
    ]
    a.sources = Sources(
        gpu=gpus, sysfs_root=root, recorded_host=HostInventory(pci=tuple(functions), rdma=tuple(rdma))
    )
    a.refresh(inventory=True)

    async def scenario() -> None:
        async with started(a):
            a.poll_health()
            await a.publish()

    asyncio.run(scenario())
    nic = [s for s in slices(control_plane, "pub-16") if s["spec"]["driver"] == "dra.net"]
    assert sorted(len(s["spec"]["devices"]) for s in nic) == [2, 64, 64]
    assert (
        devices(control_plane, "pub-16", "dra.net")["pci-0000-08-00-0"]["taints"][0]["key"]
        == "dra.net/link-down"
    )


def test_the_api_server_rejects_what_the_split_avoids(control_plane: ControlPlane) -> None:
    devices_ = ", ".join(f"{{name: d{i}}}" for i in range(129))
    manifest = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: too-big}\n"
        f"spec: {{driver: x.example.com, nodeName: limit-node, pool: {{name: limit-node, generation: 1, resourceSliceCount: 1}}, devices: [{devices_}]}}\n"
    )
    with pytest.raises(Exception, match="128"):
        control_plane.apply(manifest)
    tainted = "{name: t0, taints: [{key: k, effect: NoSchedule}]}, " + ", ".join(
        f"{{name: t{i}}}" for i in range(1, 65)
    )
    with pytest.raises(Exception, match="64"):
        control_plane.apply(manifest.replace(devices_, tainted))


def test_shutdown_leaves_slices_and_a_restart_rewrites_nothing(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    ready_node(control_plane, "pub-14")
    root, gpus = machine(tmp_path, "p4d-24xlarge", "pub-14", "p4d-24xlarge.yaml")
    uuid = gpus.recorded.gpus[3].uuid
    # This GPU's driver cannot say whether a reset happened: the XID taint must survive restarts.
    gpus.set_status(uuid, GpuStatus(reachable=True, recovery=None))

    async def first_run() -> None:
        a = agent(control_plane, root, gpus, "pub-14")
        stop = asyncio.Event()
        task = asyncio.create_task(a.run(stop))
        await asyncio.wait_for(a.synced.wait(), 30)
        a.synced.clear()
        gpus.inject(HealthEvent(uuid, "xid", xid=79))
        await asyncio.wait_for(a.synced.wait(), 30)
        while "taints" not in devices(control_plane, "pub-14", "gpu.nvidia.com")["gpu-3"]:
            a.synced.clear()
            await asyncio.wait_for(a.synced.wait(), 30)
        stop.set()
        await asyncio.wait_for(task, 30)
        await a.close()

    asyncio.run(first_run())
    before = slices(control_plane, "pub-14")
    assert before, "slices must stay after shutdown"

    async def second_run() -> None:
        # A new agent (a restarted pod): it adopts the taint, finds the pools equal, writes nothing.
        async with started(agent(control_plane, root, gpus, "pub-14")) as a:
            a.poll_health()
            await a.publish()

    asyncio.run(second_run())
    after = slices(control_plane, "pub-14")
    assert [s["metadata"]["resourceVersion"] for s in after] == [
        s["metadata"]["resourceVersion"] for s in before
    ]
    taints = devices(control_plane, "pub-14", "gpu.nvidia.com")["gpu-3"]["taints"]
    assert [(t["key"], t["value"], t["effect"]) for t in taints] == [
        ("gpu.nvidia.com/xid", "79", "NoExecute")
    ]


def test_slices_deleted_by_someone_else_come_back_at_resync(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    ready_node(control_plane, "pub-15")
    root, gpus = machine(tmp_path, "pcie-l40s", "pub-15", "pcie-l40s.yaml")

    async def scenario() -> None:
        async with started(agent(control_plane, root, gpus, "pub-15")) as a:
            name = next(
                s["metadata"]["name"]
                for s in slices(control_plane, "pub-15")
                if s["spec"]["driver"] == "dra.net"
            )
            control_plane.kubectl("delete", "resourceslice", name)
            await a._cycle(resync_due=True)
            assert generations(control_plane, "pub-15")["dra.net"] == {2}

    asyncio.run(scenario())
