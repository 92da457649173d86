"""The real kube-scheduler (v1.36) chooses the node to preempt on as allot does.

tests/scheduling/preemption_cases.py: two full nodes whose low-priority pods started at known
times (written into their status, as a kubelet would), and an urgent pod that fits only after
two of them go. kube-scheduler runs before the urgent pod exists; the node it nominates must be
the node allot preempts on, and the pods it deletes allot's victims.
"""

from __future__ import annotations

import json
import time

from allot.model.loader import load_text
from allot.plan.planner import plan
from controlplane import ControlPlane
from ready_nodes import mark_ready
from scheduling.preemption_cases import CPU, RUNNING, URGENT, cluster_yaml


def test_kube_scheduler_preempts_where_allot_does(control_plane: ControlPlane) -> None:
    plane = control_plane
    plane.start_scheduler()
    plane.apply(cluster_yaml())
    for node in ("n1", "n2"):
        mark_ready(plane, node, cpu=CPU)
    for name, (_, started) in RUNNING.items():
        status = {"status": {"phase": "Running", "startTime": started}}
        plane.kubectl(
            "patch",
            "pod",
            name,
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        )
    plane.apply(URGENT)
    deadline = time.monotonic() + 60
    nominated = ""
    while time.monotonic() < deadline and not nominated:
        pod = plane.get("pod", "urgent", namespace="default")
        nominated = str(pod.get("status", {}).get("nominatedNodeName", ""))  # type: ignore[union-attr]
        time.sleep(0.2)
    assert nominated, plane.logs()
    deleted = set()
    for name in RUNNING:
        found = plane.get("pod", name, namespace="default")
        if found["metadata"].get("deletionTimestamp"):  # type: ignore[union-attr]
            deleted.add(f"default/{name}")

    result = plan(load_text(cluster_yaml() + "\n---\n" + URGENT))
    assert nominated == "n2"
    assert {b.pod: b.node for b in result.bound} == {"default/urgent": nominated}
    assert {e.pod for e in result.evicted} == deleted == {"default/c", "default/d"}
