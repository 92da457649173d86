"""Helpers for the agent's tests against the real API server: a machine on disk, a Node, an Agent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent.machines import build_sysfs
from allot.agent import inventory
from allot.agent.client import make_client
from allot.agent.gpu_source import ReplayGpuSource
from allot.agent.node import AgentConfig
from allot.agent.runner import Agent, AgentOptions
from allot.agent.sources import open_sources
from allot.model.presets.catalog import SHAPES
from controlplane import ControlPlane
from live.test_control_plane import make_ready

RECORDINGS = Path(__file__).parent / "recordings"


def ready_node(plane: ControlPlane, name: str) -> str:
    """A Node that kubelet would have registered (Ready), returning its uid."""
    plane.apply(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
    )
    make_ready(plane, name)
    return str(plane.get("node", name)["metadata"]["uid"])  # type: ignore[index]


def machine(tmp: Path, preset: str, node: str, recording: str) -> tuple[Path, ReplayGpuSource]:
    """A sysfs tree shaped like `preset` and the recorded GPUs, as the agent's sources read them."""
    root = build_sysfs(tmp / node, SHAPES[preset], node)
    recorded = inventory.load(RECORDINGS / recording).gpus
    assert recorded is not None
    # The recordings are for node <preset>-00; UUIDs do not depend on the node's name here.
    return root, ReplayGpuSource(recorded)


def agent(
    plane: ControlPlane,
    root: Path,
    gpus: ReplayGpuSource,
    node: str,
    *,
    kubeconfig: Path | None = None,
    config: AgentConfig | None = None,
    settle: float = 0.0,
) -> Agent:
    sources = open_sources(sysfs_root=root, nvml=False)
    sources.gpu = gpus
    options = AgentOptions(node=node, config=config or AgentConfig(), poll=0.2, settle=settle)
    return Agent(make_client(kubeconfig or plane.kubeconfig, qps=100, burst=100), sources, options)


def slices(plane: ControlPlane, node: str) -> list[dict[str, Any]]:
    items = plane.get("resourceslices")["items"]
    mine = [s for s in items if s["spec"].get("nodeName") == node]  # type: ignore[union-attr]
    return sorted(mine, key=lambda s: s["metadata"]["name"])


def devices(plane: ControlPlane, node: str, driver: str) -> dict[str, dict[str, Any]]:
    return {
        d["name"]: d
        for s in slices(plane, node)
        if s["spec"]["driver"] == driver
        for d in s["spec"].get("devices", [])
    }


def generations(plane: ControlPlane, node: str) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for s in slices(plane, node):
        found.setdefault(s["spec"]["driver"], set()).add(s["spec"]["pool"]["generation"])
    return found


@contextlib.asynccontextmanager
async def started(a: Agent) -> AsyncIterator[Agent]:
    """The agent after its first publish; its client closed at the end (slices stay)."""
    try:
        await a.start()
        yield a
    finally:
        await a.close()


async def once(a: Agent) -> None:
    async with started(a):
        pass
