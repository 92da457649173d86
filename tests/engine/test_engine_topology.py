"""The engine places gangs that ask for a topology level inside one domain (Kueue TAS)."""

from __future__ import annotations

from allot.cluster.state import ClusterState
from allot.engine.engine import Engine, EnginePolicy
from allot.model.base import ObjectMeta
from allot.model.kueue import Topology, TopologyLevel, TopologySpec
from builders import node, pod

RACKS = Topology(
    api_version="kueue.x-k8s.io/v1beta2",
    kind="Topology",
    metadata=ObjectMeta(name="datacenter"),
    spec=TopologySpec(
        levels=(TopologyLevel(node_label="rack"), TopologyLevel(node_label="kubernetes.io/hostname"))
    ),
)


def cluster(gang_size: int, required: str = "rack") -> ClusterState:
    nodes = [
        node(f"{rack}-n{i}", cpu="4", labels={"rack": rack, "kubernetes.io/hostname": f"{rack}-n{i}"})
        for rack, count in (("rack-a", 2), ("rack-b", 3))
        for i in range(count)
    ]
    labels = {"kueue.x-k8s.io/pod-group-name": "train"}
    annotations = {
        "kueue.x-k8s.io/pod-group-total-count": str(gang_size),
        "kueue.x-k8s.io/podset-required-topology": required,
    }
    pods = [pod(f"w{i}", cpu="4", labels=labels, annotations=annotations) for i in range(gang_size)]
    return ClusterState(nodes=nodes, pods=pods)


def test_gang_lands_in_one_rack() -> None:
    state = cluster(2)
    result = Engine(state, policy=EnginePolicy(queues=False), topologies=[RACKS]).cycle()
    racks = {state.nodes.infos[state.nodes.index[d.node]].labels["rack"] for d in result.bound}
    assert len(result.bound) == 2 and len(racks) == 1
    # BestFit: the rack with the least room that still fits (rack-a, 2 nodes) keeps rack-b free.
    assert racks == {"rack-a"}


def test_gang_larger_than_any_rack_reports_why() -> None:
    state = cluster(4)
    result = Engine(state, policy=EnginePolicy(queues=False), topologies=[RACKS]).cycle()
    assert not result.bound
    reasons = {d.reason for d in result.waiting}
    assert len(reasons) == 1
    (reason,) = reasons
    assert "no rack has room for 4 pods" in reason and "rack-a 2" in reason and "rack-b 3" in reason


def test_gang_asking_for_an_unknown_level_is_told_so() -> None:
    state = cluster(2, required="zone")
    result = Engine(state, policy=EnginePolicy(queues=False), topologies=[RACKS]).cycle()
    assert not result.bound
    assert result.waiting[0].reason == "pod group default/train: no Topology has the level zone"
