"""Health events and states become device taints, and go again on recovery (no API server here:
the taints as the slices would carry them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.machines import build_sysfs, recorded
from allot.agent.gpu_source import GpuStatus, HealthEvent, ReplayGpuSource
from allot.agent.health import HealthTracker, xid_effect
from allot.agent.inventory import GpuInventory
from allot.agent.node import AgentConfig, NodeDevices, join
from allot.agent.runner import keep_lost
from allot.agent.slices import build_pools
from allot.agent.sysfs import read_host
from allot.model.presets.catalog import SHAPES


def node_devices(tmp_path: Path, preset: str, recording: str) -> NodeDevices:
    root = build_sysfs(tmp_path / "sys", SHAPES[preset], f"{preset}-00")
    return join(f"{preset}-00", recorded(recording), read_host(root), AgentConfig())


def tainted(tracker: HealthTracker) -> dict[str, list[tuple[str, str, str]]]:
    """Device name -> (key, value, effect) of its taints, read from the slices the agent would publish."""
    pools = build_pools(tracker.devices, taints=tracker.taints())
    return {
        d.name: [(t.key, t.value, t.effect) for t in d.taints]
        for slices in pools.values()
        for s in slices
        for d in s.spec.devices
        if d.taints
    }


@pytest.mark.parametrize(
    ("xid", "effect"),
    [(79, "NoExecute"), (48, "NoExecute"), (95, "NoExecute"), (92, "NoSchedule"), (43, None), (13, None)],
)
def test_fatal_xids_evict_others_only_keep_new_work_off_application_xids_do_nothing(
    xid: int, effect: str | None
) -> None:
    assert xid_effect(xid) == effect


def test_an_xid_taints_the_gpu_and_recovery_clears_it(tmp_path: Path) -> None:
    devices = node_devices(tmp_path, "pcie-l40s", "pcie-l40s.yaml")
    tracker = HealthTracker(devices, settle=10)
    uuid = devices.gpus[2].gpu.uuid
    assert tracker.on_event(HealthEvent(uuid, "xid", xid=79), now=1000)
    assert tainted(tracker) == {"gpu-2": [("gpu.nvidia.com/xid", "79", "NoExecute")]}
    # A later, milder XID does not soften it; an application XID changes nothing.
    assert not tracker.on_event(HealthEvent(uuid, "xid", xid=92), now=1001)
    assert not tracker.on_event(HealthEvent(uuid, "xid", xid=13), now=1002)
    # Recovery reported too soon after the event (the driver may not have updated it yet): kept.
    tracker.on_gpu_status(uuid, GpuStatus(reachable=True, recovery="none"), now=1005)
    assert "gpu-2" in tainted(tracker)
    # The driver still wants a reset: kept.
    tracker.on_gpu_status(uuid, GpuStatus(reachable=True, recovery="reset"), now=1100)
    assert "gpu-2" in tainted(tracker)
    tracker.on_gpu_status(uuid, GpuStatus(reachable=True, recovery="none"), now=1200)
    assert tainted(tracker) == {}


def test_ecc_double_bit_evicts_single_bit_is_only_counted(tmp_path: Path) -> None:
    devices = node_devices(tmp_path, "p4d-24xlarge", "p4d-24xlarge.yaml")
    tracker = HealthTracker(devices)
    uuid = devices.gpus[0].gpu.uuid
    assert not tracker.on_event(HealthEvent(uuid, "ecc-single-bit"), now=1)
    assert tracker.on_event(HealthEvent(uuid, "ecc-double-bit"), now=2)
    assert tainted(tracker) == {"gpu-0": [("gpu.nvidia.com/ecc", "double-bit", "NoExecute")]}


def test_a_gpu_that_does_not_answer_is_lost_until_it_answers(tmp_path: Path) -> None:
    devices = node_devices(tmp_path, "pcie-l40s", "pcie-l40s.yaml")
    tracker = HealthTracker(devices)
    uuid = devices.gpus[0].gpu.uuid
    tracker.on_gpu_status(uuid, GpuStatus(reachable=False), now=5)
    assert tainted(tracker) == {"gpu-0": [("gpu.nvidia.com/gpu-lost", "true", "NoExecute")]}
    tracker.on_gpu_status(uuid, GpuStatus(reachable=True, recovery=None), now=6)
    assert tainted(tracker) == {}


def test_a_gpu_no_longer_enumerated_stays_published_as_lost(tmp_path: Path) -> None:
    before = recorded("pcie-l40s.yaml")
    after = GpuInventory(
        driver_version=before.driver_version,
        cuda_driver_version=before.cuda_driver_version,
        gpus=before.gpus[:3],
    )
    merged, lost = keep_lost(before, after)
    assert [g.index for g in merged.gpus] == [0, 1, 2, 3]
    assert lost == {before.gpus[3].uuid}


def test_mig_instance_xid_taints_only_overlapping_partitions_fatal_ones_the_whole_gpu(tmp_path: Path) -> None:
    devices = node_devices(tmp_path, "dgx-h100", "dgx-h100-mig.yaml")
    gpu = devices.gpus[0]
    three_g = next(m for m in gpu.gpu.mig_devices if m.profile == "3g.40gb")  # memory slices 4-7
    tracker = HealthTracker(devices)
    tracker.on_event(HealthEvent(gpu.gpu.uuid, "xid", xid=92, gpu_instance_id=three_g.gpu_instance_id), now=1)
    names = set(tainted(tracker))
    assert "gpu-0" in names  # the whole GPU overlaps everything
    assert "gpu-0-mig-3g40gb-9-4" in names and "gpu-0-mig-1g10gb-19-5" in names
    assert "gpu-0-mig-1g10gb-19-0" not in names and "gpu-0-mig-3g40gb-9-0" not in names
    assert not any(n.startswith("gpu-1") for n in names)
    tracker.on_event(HealthEvent(gpu.gpu.uuid, "xid", xid=79, gpu_instance_id=three_g.gpu_instance_id), now=2)
    every = {p.name for p in devices.mig_placements(gpu)} | {"gpu-0"}
    assert set(tainted(tracker)) == every


def test_nic_link_down_from_sysfs_taints_the_nic_until_it_is_up(tmp_path: Path) -> None:
    root = build_sysfs(tmp_path / "sys", SHAPES["dgx-h100"], "dgx-h100-00")
    gpus = ReplayGpuSource(recorded("dgx-h100.yaml"))
    tracker = HealthTracker(join("dgx-h100-00", gpus.inventory(), read_host(root)))
    (root / "class" / "net" / "ibp64s0" / "operstate").write_text("down\n")
    tracker.replace_devices(join("dgx-h100-00", gpus.inventory(), read_host(root)))
    tracker.on_links(now=1)
    assert tainted(tracker) == {"pci-0000-40-00-0": [("dra.net/link-down", "true", "NoSchedule")]}
    (root / "class" / "net" / "ibp64s0" / "operstate").write_text("up\n")
    tracker.replace_devices(join("dgx-h100-00", gpus.inventory(), read_host(root)))
    tracker.on_links(now=2)
    assert tainted(tracker) == {}
