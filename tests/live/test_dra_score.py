"""The real kube-scheduler (v1.36) agrees: `firstAvailable` alternatives decide the node.

The cluster of tests/scheduling/dra_score_cases.py goes to the API server; kube-scheduler
runs before the pods exist, and they are created one by one, each after the previous one is
bound, so its queue order is the creation order. allot plans the same objects; both must put
every pod on the same node with the same alternative.
"""

from __future__ import annotations

import time

from allot.model.loader import load_text
from allot.plan.planner import plan
from controlplane import ControlPlane
from ready_nodes import mark_ready
from scheduling.dra_score_cases import CPU, NODES, cluster_yaml, pod_yaml

PODS = ("p0", "p1", "p2")


def bound_node(plane: ControlPlane, pod: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = plane.get("pod", pod, namespace="default")
        node = found["spec"].get("nodeName", "")  # type: ignore[union-attr]
        if node:
            return str(node)
        time.sleep(0.2)
    raise AssertionError(f"pod {pod} was not bound in {timeout:g} s:\n{plane.logs()}")


def test_kube_scheduler_and_allot_take_the_preferred_gpus_first(control_plane: ControlPlane) -> None:
    plane = control_plane
    plane.start_controller_manager()
    plane.start_scheduler()
    plane.apply(cluster_yaml())
    for node in NODES:
        mark_ready(plane, node, cpu=CPU)
    upstream: dict[str, str] = {}
    for name in PODS:
        plane.apply(pod_yaml(name))
        upstream[name] = bound_node(plane, name)
    claims = plane.get("resourceclaims", namespace="default")["items"]
    upstream_requests = {
        c["status"]["reservedFor"][0]["name"]: c["status"]["allocation"]["devices"]["results"][0]["request"]
        for c in claims  # type: ignore[union-attr]
    }

    result = plan(load_text("\n---\n".join([cluster_yaml(), *(pod_yaml(p) for p in PODS)])))
    ours = {b.pod.split("/")[1]: b.node for b in result.bound}
    our_requests = {
        c.status.reserved_for[0].name: c.status.allocation.devices.results[0].request
        for c in result.state.claims.values()
        if c.status.allocation is not None
    }
    assert upstream == {"p0": "c-a100", "p1": "b-l40", "p2": "a-t4"}, plane.logs()
    assert ours == upstream
    assert our_requests == upstream_requests == {"p0": "gpu/a100", "p1": "gpu/l40", "p2": "gpu/t4"}
