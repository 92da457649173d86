"""Preemption cases shared by the unit tests and the check against the real kube-scheduler
(tests/live/test_preemption_order.py): running pods with start times, and one urgent pod."""

from __future__ import annotations

from ready_nodes import node_yaml

CPU = "4"
PRIORITY_CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: urgent}
value: 100
"""


def running_yaml(name: str, node: str, started: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  nodeName: {node}
  priorityClassName: low
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "2"}}}}}}]
status: {{phase: Running, startTime: "{started}"}}
"""


URGENT = """
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: urgent
  containers: [{name: c, image: pause, resources: {requests: {cpu: "4"}}}]
"""

# Both nodes need two victims of equal priority. n1's started at 00:05 and 00:30, n2's at 00:10
# and 00:20: kube-scheduler takes the node whose earliest top victim started latest, n2 (the
# latest single start, on n1, does not decide). Listed n2 first so that bind order disagrees.
RUNNING = {
    "c": ("n2", "2026-01-01T00:10:00Z"),
    "d": ("n2", "2026-01-01T00:20:00Z"),
    "a": ("n1", "2026-01-01T00:05:00Z"),
    "b": ("n1", "2026-01-01T00:30:00Z"),
}


def cluster_yaml() -> str:
    running = [running_yaml(name, node, started) for name, (node, started) in RUNNING.items()]
    return "\n---\n".join([PRIORITY_CLASSES, node_yaml("n1", cpu=CPU), node_yaml("n2", cpu=CPU), *running])
