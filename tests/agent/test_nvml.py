"""The NVML backend's code, run against a stand-in for pynvml (no GPU here; see nvml_stand_in),
and the /metrics it feeds."""

from __future__ import annotations

from pathlib import Path

from agent.machines import recorded
from agent.nvml_stand_in import stand_in, xid_event
from allot.agent.gpu_source import GpuStatus, HealthEvent
from allot.agent.inventory import HostInventory
from allot.agent.metrics import AgentMetrics
from allot.agent.node import join
from allot.agent.nvml import NvmlSource


def proc_with_mig_caps(root: Path) -> Path:
    """/proc/driver/nvidia/capabilities as the driver lays it out for GPU 0's two MIG instances."""
    for parts, minor in ((("gi9",), 84), (("gi9", "ci0"), 85), (("gi2",), 21), (("gi2", "ci0"), 22)):
        access = root.joinpath("driver", "nvidia", "capabilities", "gpu0", "mig", *parts, "access")
        access.parent.mkdir(parents=True, exist_ok=True)
        access.write_text(f"DeviceFileMinor: {minor}\nDeviceFileMode: 292\n")
    return root


def test_the_backend_records_what_nvml_says_including_mig_devices_and_their_caps(tmp_path: Path) -> None:
    expected = recorded("dgx-h100-mig.yaml")
    source = NvmlSource(stand_in(expected), proc_with_mig_caps(tmp_path / "proc"))  # type: ignore[arg-type]
    assert source.inventory() == expected


def test_the_backend_reports_events_status_and_samples(tmp_path: Path) -> None:
    expected = recorded("dgx-h100-mig.yaml")
    nvml = stand_in(expected)
    source = NvmlSource(nvml, tmp_path)  # type: ignore[arg-type]
    assert source.wait_events(0.05) == []
    nvml.events.put(xid_event(nvml, 0, 94, gpu_instance=2))
    uuid = expected.gpus[0].uuid
    assert source.wait_events(1.0) == [HealthEvent(uuid, "xid", xid=94, gpu_instance_id=2)]
    nvml.recovery[0] = 1
    assert source.status(uuid) == GpuStatus(reachable=True, recovery="reset")
    nvml.lost.add(0)
    assert source.status(uuid) == GpuStatus(reachable=False)
    samples = source.samples()
    assert len(samples) == 8 and samples[1].temperature_c == 61.0 and samples[1].power_watts == 312.5


def test_metrics_use_dcgm_exporter_names_and_labels(tmp_path: Path) -> None:
    gpus = recorded("pcie-l40s.yaml")
    source = NvmlSource(stand_in(gpus), tmp_path)  # type: ignore[arg-type]
    devices = join("l40s-node", gpus, HostInventory())
    metrics = AgentMetrics()
    metrics.observe_samples(devices, source.samples())
    metrics.observe_health([("gpu.nvidia.com", "gpu-0"), ("gpu.nvidia.com", "gpu-1")], {})
    text = metrics.text()
    labels = f'Hostname="l40s-node",UUID="{gpus.gpus[2].uuid}",device="nvidia2",gpu="2",modelName="NVIDIA L40S",pci_bus_id="0000:ca:00.0"'
    assert f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 61.0" in text
    assert f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 37.0" in text
    used = gpus.gpus[2].memory_bytes // 4 / 2**20
    assert f"DCGM_FI_DEV_FB_USED{{{labels}}} {used}" in text
    assert 'allot_agent_device_healthy{device="gpu-1",driver="gpu.nvidia.com"} 1.0' in text
