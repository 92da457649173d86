"""Admission and placement decided together (one transaction), through the engine."""

from __future__ import annotations

from allot.admission.state import AdmissionState
from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.engine.engine import Engine
from allot.model.loader import load_text

from .counting import tried_pods

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "64"}
      - {name: nvidia.com/gpu, nominalQuota: "8"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: team}
"""


def node_yaml(name: str, gpus: int) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "{gpus}"}}}}
"""


def pod_yaml(name: str, gpus: int, priority: int = 0) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  priority: {priority}
  containers: [{{name: c, resources: {{limits: {{cpu: "1", nvidia.com/gpu: "{gpus}"}}}}}}]
"""


def engine_for(*documents: str) -> Engine:
    manifests = load_text("\n---\n".join([QUEUES, *documents]))
    state = ClusterState.from_manifests(manifests)
    admission = AdmissionState.from_manifests(manifests, journal=state.journal)
    return Engine(state, admission=admission)


def test_quota_that_fits_but_no_node_shape_does_not_admit() -> None:
    # Kueue #4329: 8 GPUs of quota, but free as 2 x 4. allot admits only what it can place.
    engine = engine_for(node_yaml("n1", 4), node_yaml("n2", 4), pod_yaml("big", 8))
    result = engine.cycle(0.0)
    assert not result.admitted and not result.bound
    (waiting,) = result.waiting
    assert waiting.pod == "default/big"
    assert "Insufficient nvidia.com/gpu" in waiting.reason
    assert engine.admission is not None
    cq = engine.admission.status().cluster_queue("team")
    assert cq.admitted == 0 and cq.pending == 1
    assert all(r.total == 0 for f in cq.flavors for r in f.resources)


def test_workloads_that_fit_are_admitted_and_placed_together() -> None:
    engine = engine_for(
        node_yaml("n1", 4), node_yaml("n2", 4), pod_yaml("a", 4), pod_yaml("b", 4), pod_yaml("c", 4)
    )
    result = engine.cycle(0.0)
    assert len(result.admitted) == 2
    assert sorted(d.node for d in result.bound) == ["n1", "n2"]
    assert [d.pod for d in result.waiting] == ["default/c"]
    assert check(engine.state) == []


def test_higher_priority_workload_preempts_within_the_cluster_queue() -> None:
    engine = engine_for(node_yaml("n1", 8), pod_yaml("low", 8, priority=1))
    first = engine.cycle(0.0)
    assert [d.pod for d in first.bound] == ["default/low"]
    state = engine.state
    from allot.model.loader import load_text as load

    (high,) = load(pod_yaml("high", 8, priority=10)).objects
    state.add_pod(high)  # type: ignore[arg-type]
    second = engine.cycle(1.0)
    assert [d.pod for d in second.evicted] == ["default/low"]
    assert [d.pod for d in second.bound] == ["default/high"]
    assert not state.pods["default/low"].bound
    assert check(state) == []


def test_a_workload_larger_than_its_quota_is_told_why_it_waits() -> None:
    # 16 GPUs asked of a ClusterQueue with 8 GPUs of nominal quota and no cohort: the admission
    # cycle parks it without offering it to placement; its pod still gets a Waiting decision, which
    # the live scheduler turns into PodScheduled=False (and the equivalent one behind it too).
    engine = engine_for(node_yaml("n1", 8), pod_yaml("huge", 16), pod_yaml("huge-too", 16))
    result = engine.cycle(0.0)
    assert not result.admitted
    reasons = {w.pod: w.reason for w in result.waiting}
    assert set(reasons) == {"default/huge", "default/huge-too"}
    assert all("nvidia.com/gpu" in r and "quota" in r for r in reasons.values()), reasons


def _preemptor_that_cannot_be_placed(*, short_cut: bool) -> tuple[Engine, list[str]]:
    """Two 4-GPU nodes full of low-priority work, and an 8-GPU pod that may preempt it all: its quota
    fits once both are gone, no node can take it. Then a third, small node changes twice."""

    engine = engine_for(
        node_yaml("n1", 4),
        node_yaml("n2", 4),
        node_yaml("n3", 2),
        pod_yaml("low1", 4, 1),
        pod_yaml("low2", 4, 1),
    )
    if not short_cut:
        engine._futile = None
    assert len(engine.cycle(0.0).bound) == 2
    (high,) = load_text(pod_yaml("high", 8, priority=10)).objects
    engine.state.add_pod(high)  # type: ignore[arg-type]
    first = engine.cycle(1.0)
    assert not first.bound and not first.evicted
    tried = tried_pods(engine)
    engine.state.set_node_ready("n3", False)
    engine.cycle(2.0)
    engine.state.set_node_ready("n3", True)
    later = engine.cycle(3.0)
    assert not later.bound and not later.evicted
    assert [w.pod for w in later.waiting] == ["default/high"]
    return engine, tried


def test_a_preemption_that_freed_no_room_is_not_tried_again_until_a_node_could_help() -> None:
    # Without the short cut the engine evicts both victims again at each node change and fails alike.
    _, retried = _preemptor_that_cannot_be_placed(short_cut=False)
    assert "default/high" in retried
    engine, tried = _preemptor_that_cannot_be_placed(short_cut=True)
    assert tried == []
    assert check(engine.state) == []
    # n2 grows to 8 GPUs: with its victim gone the pod fits there, so it is tried and placed.
    nodes = load_text("\n---\n".join([node_yaml("n1", 4), node_yaml("n2", 8), node_yaml("n3", 2)])).objects
    engine.state.replace_nodes(nodes)  # type: ignore[arg-type]
    placed = engine.cycle(4.0)
    assert [(b.pod, b.node) for b in placed.bound] == [("default/high", "n2")]
    assert sorted(e.pod for e in placed.evicted) == ["default/low1", "default/low2"]
    assert check(engine.state) == []


def group_pod_yaml(name: str, group: str, count: int, gpus: int) -> str:
    return pod_yaml(name, gpus).replace(
        "labels: {kueue.x-k8s.io/queue-name: q}",
        f"labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: {group}}}, "
        f"annotations: {{kueue.x-k8s.io/pod-group-total-count: '{count}'}}",
    )


def test_pods_that_leave_the_cluster_take_their_workload_and_its_quota_with_them() -> None:
    # What a live driver sees: a running pod completes (dropped from the state), a pending one is
    # deleted. The first releases its quota, the second leaves its queue, and the next in line runs.
    engine = engine_for(node_yaml("n1", 8), *(pod_yaml(name, 4) for name in ("a", "b", "c", "d")))
    assert [d.pod for d in engine.cycle(0.0).bound] == ["default/a", "default/b"]
    state, admission = engine.state, engine.admission
    assert admission is not None
    state.drop_pod("default/a")
    engine.pod_deleted("default/a", 1.0)
    state.drop_pod("default/c")
    engine.pod_deleted("default/c", 1.0)
    assert "default/a" not in admission.entries and "default/c" not in admission.entries
    assert [d.pod for d in engine.cycle(1.0).bound] == ["default/d"]
    assert admission.usage("team")[("gpu", "nvidia.com/gpu")] == 8
    assert check(state) == []


def test_a_pending_pod_group_short_of_a_deleted_pod_waits_for_it() -> None:
    engine = engine_for(
        node_yaml("n1", 4), pod_yaml("big", 4), *(group_pod_yaml(f"g{i}", "g", 2, 2) for i in range(2))
    )
    assert [d.pod for d in engine.cycle(0.0).bound] == ["default/big"]
    engine.state.drop_pod("default/g0")
    engine.pod_deleted("default/g0", 1.0)
    engine.workload_finished("default/big", 1.0)
    engine.state.drop_pod("default/big")
    result = engine.cycle(1.0)
    # The group is whole no more: its remaining pod waits for the missing one instead of running alone.
    assert result.bound == []
    assert engine.admission is not None
    assert engine.admission.pending_reason("default/g") == "pod group 'g' has 1 of 2 pods"


def plain_pod_yaml(name: str, gpus: int) -> str:
    """A pod that names no queue (a Job's pod, made by its controller after admission)."""
    return pod_yaml(name, gpus).replace("labels: {kueue.x-k8s.io/queue-name: q}", "labels: {}")


def test_an_adopted_pod_is_placed_without_admission_and_a_held_workload_keeps_its_quota_until_finished() -> (
    None
):
    # A Job's placeholders (a pod group) are admitted; its real pod then takes one's place.
    engine = engine_for(node_yaml("n1", 8), *(group_pod_yaml(f"p{i}", "job-a", 2, 4) for i in range(2)))
    assert len(engine.cycle(0.0).bound) == 2
    admission = engine.admission
    assert admission is not None and admission.is_admitted("default/job-a")
    engine.hold_until_finished("default/job-a")
    engine.state.add_pod(load_text(plain_pod_yaml("real-0", 4)).objects[0])  # type: ignore[arg-type]
    engine.adopt("default/real-0", "default/job-a")
    for placeholder in ("default/p0", "default/p1"):
        engine.state.drop_pod(placeholder)
        engine.pod_deleted(placeholder, 1.0)
    # Placed as an admitted workload's pod: no second admission, no second charge.
    assert [d.pod for d in engine.cycle(1.0).bound] == ["default/real-0"]
    assert admission.usage("team")[("gpu", "nvidia.com/gpu")] == 8
    # The pod ends; the Job has not finished: the quota stays held while it has no pod.
    engine.state.drop_pod("default/real-0")
    engine.pod_deleted("default/real-0", 2.0)
    assert admission.is_admitted("default/job-a")
    engine.workload_withdrawn("default/job-a", 3.0)
    assert "default/job-a" not in admission.entries
    assert admission.usage("team").get(("gpu", "nvidia.com/gpu"), 0) == 0


def test_an_adopted_pod_whose_workload_is_preempted_is_not_placed_on_its_own() -> None:
    # Two nodes, quota for one: the preempted pods would fit on the other node by themselves.
    engine = engine_for(
        node_yaml("n1", 8), node_yaml("n2", 8), *(group_pod_yaml(f"p{i}", "job-low", 2, 4) for i in range(2))
    )
    engine.cycle(0.0)
    engine.hold_until_finished("default/job-low")
    for i in range(2):
        engine.state.add_pod(load_text(plain_pod_yaml(f"low-{i}", 4)).objects[0])  # type: ignore[arg-type]
        engine.adopt(f"default/low-{i}", "default/job-low")
        engine.state.drop_pod(f"default/p{i}")
        engine.pod_deleted(f"default/p{i}", 0.5)
    assert sorted(d.pod for d in engine.cycle(1.0).bound) == ["default/low-0", "default/low-1"]
    engine.state.add_pod(load_text(pod_yaml("urgent", 8, priority=100)).objects[0])  # type: ignore[arg-type]
    result = engine.cycle(2.0)
    # The urgent pod preempts the Job's workload; its pods wait for their owner (suspended by the
    # driver) instead of going back on the node as pods of nobody's workload.
    assert sorted(d.pod for d in result.evicted) == ["default/low-0", "default/low-1"]
    assert [d.pod for d in result.bound] == ["default/urgent"]
    assert engine.cycle(3.0).bound == []
    assert check(engine.state) == []
