"""Where the agent reads a machine from: live (NVML and sysfs) or a recording, section by section.

A recording that holds `gpus` replaces NVML, one that holds `host`
replaces sysfs; what it lacks is read live. So a hand-made NVML recording
can be combined with a sysfs tree, and `--from` a full recording needs
neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from allot.agent import sysfs
from allot.agent.gpu_source import GpuSource, NoGpus, ReplayGpuSource
from allot.agent.inventory import HostInventory, Recording
from allot.agent.node import AgentConfig, NodeDevices, join
from allot.agent.nvml import open_nvml


@dataclass
class Sources:
    """The two sources of one machine; `host()` re-reads sysfs (link states change)."""

    gpu: GpuSource
    sysfs_root: Path
    recorded_host: HostInventory | None = None

    def host(self) -> HostInventory:
        return self.recorded_host if self.recorded_host is not None else sysfs.read_host(self.sysfs_root)

    def record(self, description: str = "") -> Recording:
        return Recording(description=description, gpus=self.gpu.inventory(), host=self.host())

    def devices(self, node: str, config: AgentConfig) -> NodeDevices:
        return join(node, self.gpu.inventory(), self.host(), config)

    def close(self) -> None:
        self.gpu.close()


def open_sources(
    *,
    sysfs_root: Path | str = "/sys",
    proc_root: Path | str = "/proc",
    recording: Recording | None = None,
    nvml: bool = True,
) -> Sources:
    """Sources for this machine: the recording's sections where it has them, live ones otherwise."""
    gpu: GpuSource
    if recording is not None and recording.gpus is not None:
        gpu = ReplayGpuSource(recording.gpus)
    else:
        gpu = (open_nvml(proc_root) if nvml else None) or NoGpus()
    host = recording.host if recording is not None else None
    return Sources(gpu=gpu, sysfs_root=Path(sysfs_root), recorded_host=host)
