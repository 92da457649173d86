"""`allot queues`: status from a cluster dump, as tables, JSON and YAML."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from allot.cli.queues_cmd import queues

CLUSTER = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "9"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "12"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: main, namespace: a}
spec: {clusterQueue: team-a}
---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
metadata: {name: kueue}
fairSharing: {}
"""


def pods(bound: int, pending: int) -> str:
    docs = []
    for i in range(bound + pending):
        node = "  nodeName: n1\n" if i < bound else ""
        docs.append(
            f"""---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: a, labels: {{kueue.x-k8s.io/queue-name: main}}}}
spec:
{node}  containers:
  - name: c
    resources: {{requests: {{cpu: "1"}}}}
"""
        )
    # Pods without the queue label and finished pods are not counted.
    docs.append(
        """---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: a}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: "50"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: "50"}}}]
status: {phase: Succeeded}
"""
    )
    return "".join(docs)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return str(path)


def test_json_status_in_kueue_field_names(tmp_path: Path) -> None:
    path = write(tmp_path, CLUSTER + pods(15, 2))
    result = CliRunner().invoke(queues, [path, "-o", "json"])
    assert result.exit_code == 0, result.output
    items = {(i["kind"], i["metadata"]["name"]): i for i in json.loads(result.output)["items"]}
    a = items[("ClusterQueue", "team-a")]["status"]
    assert a["flavorsReservation"] == [
        {"name": "default", "resources": [{"name": "cpu", "total": "15", "borrowed": "6"}]}
    ]
    assert (a["pendingWorkloads"], a["admittedWorkloads"], a["reservingWorkloads"]) == (2, 15, 15)
    assert a["fairSharing"] == {"weightedShare": 286}
    lq = items[("LocalQueue", "main")]["status"]
    assert (lq["pendingWorkloads"], lq["admittedWorkloads"]) == (2, 15)
    assert items[("Cohort", "research")]["status"] == {"fairSharing": {"weightedShare": 0}}


def test_yaml_and_table(tmp_path: Path) -> None:
    path = write(tmp_path, CLUSTER + pods(3, 0))
    result = CliRunner().invoke(queues, [path, "-o", "yaml"])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert docs[0]["kind"] == "ClusterQueue" and docs[0]["status"]["admittedWorkloads"] == 3
    table = CliRunner().invoke(queues, [path], terminal_width=200)
    assert table.exit_code == 0, table.output
    assert "ClusterQueues" in table.output and "team-a" in table.output and "a/main" in table.output


def test_bad_input_prints_every_error_and_exits_1(tmp_path: Path) -> None:
    bad = (
        CLUSTER
        + """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lost, namespace: a}
spec: {clusterQueue: nowhere}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: x}
spec: {parentName: y}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: y}
spec: {parentName: x}
"""
    )
    result = CliRunner().invoke(queues, [write(tmp_path, bad)])
    assert result.exit_code == 1
    assert "cohort cycle: x -> y -> x" in result.stderr
    assert "LocalQueue a/lost: spec.clusterQueue: ClusterQueue 'nowhere' does not exist" in result.stderr
    assert "2 error(s)" in result.stderr
