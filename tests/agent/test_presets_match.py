"""The agent on a machine shaped like a preset publishes exactly what `allot preset` makes for it:
one source of truth for device names, attribute names, capacities and counters.

The machines are sysfs trees built on disk (tests/agent/machines.py) plus hand-made NVML
recordings (tests/agent/recordings/), replayed through the same interface as NVML.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.machines import build_sysfs, preset_slices
from allot.agent import inventory
from allot.agent.node import AgentConfig
from allot.agent.slices import all_slices, build_pools
from allot.agent.sources import open_sources
from allot.model.codec import to_data
from allot.model.presets.catalog import SHAPES
from allot.model.resource import ResourceSlice

RECORDINGS = Path(__file__).parent / "recordings"


def agent_slices(
    tmp_path: Path, preset: str, recording: str, config: AgentConfig | None = None
) -> list[ResourceSlice]:
    node = f"{preset}-00"
    root = build_sysfs(tmp_path / "sys", SHAPES[preset], node)
    sources = open_sources(sysfs_root=root, recording=inventory.load(RECORDINGS / recording))
    devices = sources.devices(node, config or AgentConfig())
    assert devices.problems == ()
    return all_slices(build_pools(devices))


def comparable(slices: list[ResourceSlice]) -> dict[str, object]:
    """Slice name -> spec as plain data (the preset's slices also name a made-up Node owner)."""
    return {s.name: to_data(s.spec) for s in slices}


@pytest.mark.parametrize(
    ("preset", "recording"),
    [("dgx-h100", "dgx-h100.yaml"), ("p4d-24xlarge", "p4d-24xlarge.yaml"), ("pcie-l40s", "pcie-l40s.yaml")],
)
def test_whole_gpus_nics_and_cpus_equal_the_preset(tmp_path: Path, preset: str, recording: str) -> None:
    published = agent_slices(tmp_path, preset, recording)
    expected = preset_slices(SHAPES[preset], f"{preset}-00")
    assert comparable(published) == comparable(expected)


def test_mig_gpus_are_partitionable_devices_with_the_presets_counters(tmp_path: Path) -> None:
    published = agent_slices(tmp_path, "dgx-h100", "dgx-h100-mig.yaml")
    expected = preset_slices(SHAPES["dgx-h100"], "dgx-h100-00", gpu_mode="mig")
    assert comparable(published) == comparable(expected)
    counters = [s for s in published if s.spec.shared_counters]
    assert [c.name for s in counters for c in s.spec.shared_counters] == [
        f"gpu-{i}-counter-set" for i in range(8)
    ]


@pytest.mark.parametrize("mode", ["time-sliced", "shared"])
def test_configured_sharing_mode_equals_the_presets_gpu_mode(tmp_path: Path, mode: str) -> None:
    config = AgentConfig(default_sharing=mode)  # type: ignore[arg-type]
    published = agent_slices(tmp_path, "pcie-l40s", "pcie-l40s.yaml", config)
    expected = preset_slices(SHAPES["pcie-l40s"], "pcie-l40s-00", gpu_mode=mode)
    assert comparable(published) == comparable(expected)
