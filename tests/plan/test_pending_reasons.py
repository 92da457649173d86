"""Every pending pod is listed with its reason, including those queued behind a queue's head."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from allot.cli.main import cli
from allot.model.loader import load_text
from allot.plan.planner import plan

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: strict}
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: "64"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: strict}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "4"}}
"""


def queued(name: str, gpus: int, minute: int, queue: str = "q") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  creationTimestamp: "2026-01-01T00:{minute:02d}:00Z"
  labels: {{kueue.x-k8s.io/queue-name: {queue}}}
spec:
  containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]
"""


def cluster() -> str:
    # The head asks for 8 GPUs where no node has more than 4: StrictFIFO holds the 15 behind it.
    pods = [queued("big", 8, 0)] + [queued(f"small-{i}", 1, i + 1) for i in range(15)]
    pods.append(queued("lost", 1, 30, queue="missing"))
    return "\n---\n".join([QUEUES, *pods])


def test_every_pending_pod_has_a_reason() -> None:
    result = plan(load_text(cluster()))
    assert not result.bound
    expected = {"default/big", "default/lost", *(f"default/small-{i}" for i in range(15))}
    assert set(result.waiting) == expected
    assert "Insufficient nvidia.com/gpu" in result.waiting["default/big"]
    assert "LocalQueue default/missing doesn't exist" in result.waiting["default/lost"]
    for i in range(15):
        reason = result.waiting[f"default/small-{i}"]
        assert "default/big" in reason and "ClusterQueue strict" in reason, reason


def test_place_lists_them_all(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(cluster())
    result = CliRunner().invoke(cli, ["place", str(path)])
    assert result.exit_code == 0, result.output
    assert "17 pod(s) left pending:" in result.output
    assert "  default/small-14: " in result.output
