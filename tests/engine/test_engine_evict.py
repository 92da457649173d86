"""`Engine.evict`: the one operation drivers use to take a bound pod off its node."""

from __future__ import annotations

from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.engine.decisions import Evicted
from allot.engine.engine import Engine, EnginePolicy
from builders import node, pod

from .test_engine_kueue import engine_for, node_yaml


def test_evict_unbinds_a_plain_pod_and_it_can_be_placed_again() -> None:
    state = ClusterState(nodes=[node("n1", cpu="2")], pods=[pod("a", cpu="2", node_name="n1")])
    engine = Engine(state, policy=EnginePolicy(queues=False))
    evicted = engine.evict("default/a", "node failed", 5.0)
    assert evicted == [Evicted("default/a", "node failed", "")]
    assert not state.pods["default/a"].bound
    assert [d.pod for d in engine.cycle(6.0).bound] == ["default/a"]


def test_evicting_a_pod_of_an_admitted_workload_evicts_the_whole_workload() -> None:
    gang = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/pod-group-name: g}}
  annotations: {{kueue.x-k8s.io/pod-group-total-count: "2"}}
spec:
  containers: [{{name: c, resources: {{limits: {{cpu: "1", nvidia.com/gpu: "4"}}}}}}]
"""
    engine = engine_for(
        node_yaml("n1", 4), node_yaml("n2", 4), gang.format(name="w0"), gang.format(name="w1")
    )
    first = engine.cycle(0.0)
    assert sorted(d.pod for d in first.bound) == ["default/w0", "default/w1"]
    evicted = engine.evict("default/w0", "node failed", 1.0)
    assert sorted(e.pod for e in evicted) == ["default/w0", "default/w1"]
    assert not any(info.bound for info in engine.state.pods.values())
    assert engine.admission is not None
    assert engine.admission.status().cluster_queue("team").admitted == 0
    assert check(engine.state) == []
