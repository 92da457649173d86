"""Pods that ended (Succeeded, Failed) in a dump are not the scheduler's, as for kube-scheduler.

kube-scheduler's pod informer leaves out Succeeded and Failed pods: one that ran to completion
on a node holds none of that node's resources, and one that failed before it was placed is not
placed. A dump of a busy cluster holds many of both (Jobs' finished pods).
"""

from __future__ import annotations

import pytest

from allot.model.loader import load_text
from allot.plan.planner import plan

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""


def pod(name: str, cpu: str, *, node: str = "", phase: str = "") -> str:
    bound = f"nodeName: {node}\n  " if node else ""
    status = f"status: {{phase: {phase}}}" if phase else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  {bound}containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
{status}
"""


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_that_ended_on_a_node_leaves_its_room_to_the_next(phase: str) -> None:
    result = plan(
        load_text("\n---\n".join([NODE, pod("done", "2", node="n1", phase=phase), pod("new", "1")]))
    )
    assert {b.pod: b.node for b in result.bound} == {"default/new": "n1"}
    assert "default/done" not in result.state.pods


def test_a_pod_that_still_runs_keeps_its_room() -> None:
    result = plan(
        load_text("\n---\n".join([NODE, pod("busy", "2", node="n1", phase="Running"), pod("new", "1")]))
    )
    assert not result.bound
    assert "Insufficient cpu" in result.waiting["default/new"]


def test_a_pod_that_failed_before_it_was_placed_is_not_placed() -> None:
    result = plan(load_text("\n---\n".join([NODE, pod("rejected", "1", phase="Failed")])))
    assert not result.bound
    assert "default/rejected" not in result.waiting
