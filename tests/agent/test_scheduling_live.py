"""End to end on a real control plane: a scheduler (kube-scheduler, or `allot run`) places a pod
with a claim on the agent's devices; a fatal XID on that GPU makes Kubernetes evict the pod
(NoExecute device taint), tainted GPUs take no new claims, and recovered GPUs take them again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.live import agent, devices, machine, ready_node, started
from allot.agent.gpu_source import GpuStatus, HealthEvent
from allot.model.codec import dump_yaml
from allot.model.presets.classes import device_classes
from controlplane import ControlPlane
from live.cluster import AllotProcess

TEMPLATE = """
apiVersion: v1
kind: Namespace
metadata: {name: agent-e2e}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: agent-e2e}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
"""


def pod(name: str, scheduler: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: agent-e2e}}
spec:
  schedulerName: {scheduler}
  containers: [{{name: c, image: registry.k8s.io/pause:3.10, resources: {{claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
"""


def eventually(check: Callable[[], Any], what: str, plane: ControlPlane, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} within {timeout:.0f} s\n{plane.logs()}")


def get_pod(plane: ControlPlane, name: str) -> dict[str, Any]:
    return plane.get("pod", name, namespace="agent-e2e")


def allocated_device(plane: ControlPlane, pod_name: str, node: str) -> str:
    claims = plane.get("resourceclaims", namespace="agent-e2e")["items"]
    for claim in claims:  # type: ignore[union-attr]
        owner = claim["metadata"].get("annotations", {}).get("resource.kubernetes.io/pod-claim-name")
        reserved = [r["name"] for r in claim.get("status", {}).get("reservedFor", [])]
        if owner and pod_name in reserved:
            (result,) = claim["status"]["allocation"]["devices"]["results"]
            assert (result["driver"], result["pool"]) == ("gpu.nvidia.com", node)
            return str(result["device"])
    raise AssertionError(f"no allocated claim for {pod_name}")


@pytest.mark.parametrize("scheduler", ["default-scheduler", "allot"])
def test_a_scheduler_uses_the_agents_devices_and_kube_evicts_on_fatal_taints(
    fresh_control_plane: ControlPlane, tmp_path: Path, scheduler: str
) -> None:
    plane = fresh_control_plane
    plane.start_controller_manager()
    allot = None
    if scheduler == "allot":
        allot = AllotProcess(plane)
    else:
        plane.start_scheduler()
    try:
        _scenario(plane, tmp_path, scheduler)
    finally:
        if allot is not None:
            allot.stop()


def _scenario(plane: ControlPlane, tmp_path: Path, scheduler: str) -> None:
    plane.apply(dump_yaml(device_classes()))
    plane.apply(TEMPLATE)
    ready_node(plane, "sched-00")
    root, gpus = machine(tmp_path, "pcie-l40s", "sched-00", "pcie-l40s.yaml")
    by_name = {f"gpu-{g.index}": g.uuid for g in gpus.recorded.gpus}

    async def scenario() -> None:
        async with started(agent(plane, root, gpus, "sched-00")) as a:
            plane.apply(pod("first", scheduler))
            eventually(
                lambda: get_pod(plane, "first")["spec"].get("nodeName") == "sched-00", "first bound", plane
            )
            used = allocated_device(plane, "first", "sched-00")

            # The GPU under the running pod falls off the bus: NoExecute, and Kubernetes evicts.
            gpus.inject(HealthEvent(by_name[used], "xid", xid=79))
            a.handle_events(1.0)
            await a.publish()
            assert devices(plane, "sched-00", "gpu.nvidia.com")[used]["taints"][0]["effect"] == "NoExecute"
            evicted = eventually(
                lambda: (
                    get_pod(plane, "first")["metadata"].get("deletionTimestamp")
                    or "NotFound" in plane.kubectl("get", "pod", "first", "-n", "agent-e2e", check=False)
                ),
                "the pod on the tainted GPU is evicted",
                plane,
            )
            assert evicted

            # Every other GPU gets an XID that keeps new work off (NoSchedule): a new pod waits.
            for name, uuid in by_name.items():
                if name != used:
                    gpus.inject(HealthEvent(uuid, "xid", xid=92))
            a.handle_events(1.0)
            await a.publish()
            plane.apply(pod("second", scheduler))
            time.sleep(3)
            assert not get_pod(plane, "second")["spec"].get("nodeName")

            # The driver reports every GPU recovered: taints go, the pod is placed.
            for uuid in by_name.values():
                gpus.set_status(uuid, GpuStatus(reachable=True, recovery="none"))
            a.poll_health()
            await a.publish()
            assert not any("taints" in d for d in devices(plane, "sched-00", "gpu.nvidia.com").values())
            eventually(
                lambda: get_pod(plane, "second")["spec"].get("nodeName") == "sched-00", "second bound", plane
            )

    asyncio.run(scenario())
