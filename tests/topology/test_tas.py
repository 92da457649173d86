"""Topology Aware Scheduling: gangs land in one rack (BestFit), go up a level when preferred, or say why not."""

from __future__ import annotations

import pytest

from allot.cluster.invariants import check
from allot.model.core import Pod
from allot.model.presets.classes import topology
from allot.scheduling.gang import GangUnschedulable, gangs
from allot.scheduling.scheduler import Scheduler
from allot.scheduling.topology.tas import (
    TopologyGangPlacement,
    TopologyRequest,
    best_fit,
    place_gang_in_topology,
    topology_request,
)

from .helpers import claim_pod, cluster, request, spec, template

RACK = "cloud.provider.com/topology-rack"
BLOCK = "cloud.provider.com/topology-block"
HOST = "kubernetes.io/hostname"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
WHOLE_NODE = template("node", spec(request("gpu", 8), request("nic", 8)))
RACKS = topology("racks", [RACK, HOST])


def member(name: str, group: str, total: int, *, level: str | None = RACK, required: bool = True) -> Pod:
    annotations = {"kueue.x-k8s.io/pod-group-total-count": str(total)}
    if level is not None:
        annotations[REQUIRED if required else PREFERRED] = level
    return claim_pod(name, "node", labels={"kueue.x-k8s.io/pod-group-name": group}, annotations=annotations)


def group(name: str, size: int, **kwargs: object) -> list[Pod]:
    return [member(f"{name}-{i}", name, size, **kwargs) for i in range(size)]  # type: ignore[arg-type]


def test_best_fit_follows_the_kep_example() -> None:
    room = [(("a",), 3), (("b",), 3), (("c",), 2), (("d",), 1)]
    assert best_fit(room, 7) == [(("a",), 3), (("b",), 3), (("d",), 1)]
    assert best_fit(room, 2) == [(("c",), 2)]
    assert best_fit(room, 10) is None


def test_request_comes_from_the_annotations() -> None:
    state = cluster(nodes=2, racks=2, templates=[WHOLE_NODE], pods=group("g", 2, required=False))
    gang = gangs(state.pods.values())["default/g"]
    assert topology_request(state, gang) == TopologyRequest(RACK, required=False)


def test_required_rack_places_the_gang_in_one_rack() -> None:
    state = cluster(nodes=8, racks=2, templates=[WHOLE_NODE], pods=group("g", 3))
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS)
    assert isinstance(result, TopologyGangPlacement)
    assert result.level == RACK and result.domain == ("rack-a",)
    racks = {state.nodes.infos[state.nodes.index[p.node]].labels[RACK] for p in result.placements}
    assert racks == {"rack-a"} and all(state.pods[k].bound for k in gang.members)


def test_best_fit_takes_the_fullest_rack_that_fits() -> None:
    pods = [claim_pod("fill-0", "node"), claim_pod("fill-1", "node"), *group("g", 2)]
    state = cluster(nodes=8, racks=2, templates=[WHOLE_NODE], pods=pods)
    scheduler = Scheduler(state, fallback="default-scheduler")
    # Two whole nodes of rack-b are taken: rack-b has room for 2, rack-a for 4.
    b_nodes = [i for i in range(8) if state.nodes.infos[i].labels[RACK] == "rack-b"]
    mask = state.nodes.ready.copy()
    mask[:] = False
    mask[b_nodes] = True
    for fill in ("fill-0", "fill-1"):
        scheduler.schedule(f"default/{fill}", allowed=mask)
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, scheduler, gang, RACKS)
    assert isinstance(result, TopologyGangPlacement) and result.domain == ("rack-b",)


def test_no_rack_with_room_says_how_far_each_got() -> None:
    state = cluster(nodes=8, racks=2, templates=[WHOLE_NODE], pods=group("g", 6))
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS)
    assert isinstance(result, GangUnschedulable)
    assert result.reason == "pod group default/g: no rack has room for 6 pods: rack-a 4, rack-b 4"
    assert not any(state.pods[k].bound for k in gang.members)
    assert state.allocated.exclusive == {} and check(state) == []
    assert sorted(state.pods) == sorted(f"default/g-{i}" for i in range(6))  # probes left no trace


def test_preferred_rack_goes_up_to_the_block() -> None:
    state = cluster(nodes=8, racks=4, blocks=1, templates=[WHOLE_NODE], pods=group("g", 3, required=False))
    blocks = topology("blocks", [BLOCK, RACK, HOST])
    # Racks of 2 nodes: no rack holds 3 pods, the block does.
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, blocks)
    assert isinstance(result, TopologyGangPlacement)
    assert result.level == BLOCK and result.domain == ("block-a",)
    racks = sorted(state.nodes.infos[state.nodes.index[p.node]].labels[RACK] for p in result.placements)
    # BestFit below the block: one full rack, then the rack that leaves the least room.
    assert racks == ["rack-a", "rack-a", "rack-b"]


def test_preferred_spreads_over_the_topology_as_a_last_resort() -> None:
    state = cluster(nodes=4, racks=2, templates=[WHOLE_NODE], pods=group("g", 3, required=False))
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS)
    assert isinstance(result, TopologyGangPlacement) and result.domain == ()
    assert len(result.placements) == 3


def test_required_hostname_puts_every_pod_on_one_node() -> None:
    small = template("gpu", spec(request("gpu")))
    pods = [
        claim_pod(
            f"h-{i}",
            "gpu",
            labels={"kueue.x-k8s.io/pod-group-name": "h"},
            annotations={
                "kueue.x-k8s.io/pod-group-total-count": "4",
                REQUIRED: HOST,
            },
        )
        for i in range(4)
    ]
    state = cluster(nodes=4, racks=2, templates=[small], pods=pods)
    gang = gangs(state.pods.values())["default/h"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS)
    assert isinstance(result, TopologyGangPlacement) and result.level == HOST
    assert len({p.node for p in result.placements}) == 1


def test_unknown_level_is_reported() -> None:
    state = cluster(nodes=2, racks=2, templates=[WHOLE_NODE], pods=group("g", 2, level="example.com/pod"))
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS)
    assert isinstance(result, GangUnschedulable)
    assert "topology racks has no level example.com/pod" in result.reason


@pytest.mark.parametrize("allowed_rack", ["rack-a", "rack-b"])
def test_allowed_nodes_restrict_the_domains(allowed_rack: str) -> None:
    state = cluster(nodes=4, racks=2, templates=[WHOLE_NODE], pods=group("g", 2))
    allowed = state.nodes.ready.copy()
    for info in state.nodes.infos:
        allowed[info.index] = info.labels[RACK] == allowed_rack
    gang = gangs(state.pods.values())["default/g"]
    result = place_gang_in_topology(state, Scheduler(state), gang, RACKS, allowed=allowed)
    assert isinstance(result, TopologyGangPlacement) and result.domain == (allowed_rack,)
