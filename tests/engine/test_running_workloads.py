"""Kueue workloads that already run count against quota wherever an engine is built from a cluster.

A cluster dump holds pods that Kueue admitted long ago, bound to nodes. Admission must start
from their usage: a tenant running past its nominal quota is reclaimed from, and nothing is
admitted past a cohort's total. The planner (`allot place`) and the simulator build their
admission state the same way, so both are checked.
"""

from __future__ import annotations

from allot.cluster.invariants import check
from allot.model.loader import load_text
from allot.plan.planner import plan
from allot.sim.policies import FAIR
from allot.sim.simulator import Simulation
from allot.sim.workload import Workload as SimWorkload

# Two teams in one cohort of 8 GPUs (4 nominal each); team-b reclaims what it lent.
QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: "4"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: lab
  namespaceSelector: {}
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: "4"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: b}
spec: {clusterQueue: team-b}
"""


def node(name: str, gpus: int) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}}}
"""


def queued_pod(namespace: str, name: str, gpus: int, *, node: str = "", created: str) -> str:
    bound = f"nodeName: {node}\n  " if node else ""
    phase = "status: {phase: Running}" if node else ""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  creationTimestamp: "{created}"
  labels: {{kueue.x-k8s.io/queue-name: q}}
spec:
  {bound}containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]
{phase}
"""


# team-a runs 6 GPUs (2 borrowed from team-b): a1 and a2 fill n1, a3 (the newest) half of n2.
RUNNING = [
    queued_pod("a", "a1", 2, node="n1", created="2026-01-01T00:00:00Z"),
    queued_pod("a", "a2", 2, node="n1", created="2026-01-01T00:01:00Z"),
    queued_pod("a", "a3", 2, node="n2", created="2026-01-01T00:02:00Z"),
]


def cluster(*documents: str) -> str:
    return "\n---\n".join([QUEUES, node("n1", 4), node("n2", 4), *RUNNING, *documents])


def test_a_tenant_under_its_quota_reclaims_from_one_running_past_its_own() -> None:
    manifests = load_text(cluster(queued_pod("b", "b1", 4, created="2026-01-01T01:00:00Z")))
    result = plan(manifests)
    # team-b is owed 4 GPUs; team-a lends 2 of them and gives them back: its newest workload goes.
    assert [e.pod for e in result.evicted] == ["a/a3"]
    assert {b.pod: b.node for b in result.bound} == {"b/b1": "n2"}
    assert check(result.state) == []
    assert result.engine.admission is not None
    usage = result.engine.admission.status()
    assert usage.cluster_queue("team-a").flavors[0].resources[0].total == 4
    assert usage.cluster_queue("team-b").flavors[0].resources[0].total == 4


def test_nothing_is_admitted_past_the_cohorts_total() -> None:
    # A third node has room, but the cohort's 8 GPUs are 6 used: a 4-GPU workload must wait.
    manifests = load_text(cluster(node("n3", 4), queued_pod("a", "a4", 4, created="2026-01-01T01:00:00Z")))
    result = plan(manifests)
    assert not result.bound and not result.evicted
    assert "a/a4" in result.waiting
    assert "quota" in result.waiting["a/a4"].lower()


def test_the_simulator_counts_running_workloads_too() -> None:
    manifests = load_text(cluster(node("n3", 4), queued_pod("a", "a4", 4, created="2026-01-01T01:00:00Z")))
    empty = SimWorkload(tenants={}, shapes={}, jobs=[])
    simulation = Simulation(manifests=manifests, workload=empty, policy=FAIR)
    admission = simulation.engine.admission
    assert admission is not None
    assert admission.status().cluster_queue("team-a").flavors[0].resources[0].total == 6
    result = simulation.engine.cycle(0.0)
    assert not result.bound


def group_pod(name: str, *, node: str = "") -> str:
    bound = f"nodeName: {node}\n  " if node else ""
    phase = "status: {phase: Running}" if node else ""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: a
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: train}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: "3"}}
spec:
  {bound}containers: [{{name: c, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]
{phase}
"""


def test_a_running_group_that_lost_a_pod_gets_it_back_without_new_quota() -> None:
    # Two of three pods of an admitted group run; the third (restarted) waits for a node. The
    # group is admitted as a whole (3 GPUs charged once), and its pod is placed like any pod.
    documents = [
        QUEUES,
        node("n1", 4),
        group_pod("w0", node="n1"),
        group_pod("w1", node="n1"),
        group_pod("w2"),
    ]
    result = plan(load_text("\n---\n".join(documents)))
    assert {b.pod: b.node for b in result.bound} == {"a/w2": "n1"}
    assert not result.admitted and not result.waiting
    assert result.engine.admission is not None
    assert result.engine.admission.status().cluster_queue("team-a").flavors[0].resources[0].total == 3
