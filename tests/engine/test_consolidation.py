"""Consolidation: a pod that fits nowhere is placed by moving the fewest one-pod units elsewhere."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from allot.admission.state import AdmissionState
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.engine.decisions import Bound, CycleResult, Evicted
from allot.engine.engine import Engine, EnginePolicy
from allot.engine.policy import ConsolidationConfig
from allot.model.base import LabelSelector
from allot.model.core import Affinity, Pod, PodAffinity, PodAffinityTerm
from allot.model.loader import load_text
from allot.scheduling.packing.consolidation import Consolidator
from builders import node, pod

from .test_engine_kueue import QUEUES

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, gpus: int, *, on: str = "", priority: int = 0) -> Pod:
    return pod(name, extended={GPU: str(gpus)}, node_name=on, priority=priority)


def engine(pods: list[Pod], *, max_moves: int = 8) -> Engine:
    state = ClusterState(nodes=[node(f"n{i}", extended={GPU: "4"}) for i in (1, 2, 3)], pods=pods)
    policy = EnginePolicy(
        queues=False, preemption=False, consolidation=ConsolidationConfig(max_moves=max_moves)
    )
    return Engine(state, policy=policy)


def moves(result: CycleResult) -> list[tuple[str, str]]:
    return [(d.pod, d.reason) for d in result.decisions if isinstance(d, Evicted)]


def bound(result: CycleResult) -> dict[str, str]:
    return {d.pod: d.node for d in result.decisions if isinstance(d, Bound)}


def test_the_fewest_pods_move_and_each_runs_again_elsewhere() -> None:
    # n1 holds two one-GPU pods, n2 one, n3 three: four GPUs are free, but on no node together.
    running = [gpu_pod("a", 1, on="n1"), gpu_pod("b", 1, on="n1"), gpu_pod("c", 1, on="n2")]
    running += [gpu_pod(name, 1, on="n3") for name in ("d", "e", "f")]
    result = engine([*running, gpu_pod("big", 4)]).cycle()
    # Emptying n2 takes one move, n1 two: c moves, to a node with room, and big takes n2.
    assert moves(result) == [("default/c", "moved to node n1 to make room for default/big (consolidation)")]
    assert bound(result) == {"default/c": "n1", "default/big": "n2"}


def test_nothing_moves_when_the_pods_could_not_run_elsewhere() -> None:
    # The only candidate, c, has nowhere to go: moving it would stop it, so nothing moves.
    running = [gpu_pod(f"x{i}", 1, on="n1") for i in range(4)] + [gpu_pod("c", 1, on="n2")]
    running += [gpu_pod(f"y{i}", 1, on="n3") for i in range(4)]
    e = engine([*running, gpu_pod("big", 4)])
    result = e.cycle()
    assert moves(result) == [] and bound(result) == {}
    assert e.state.pods["default/c"].node == e.state.nodes.index["n2"]


def test_higher_priority_pods_stay_and_the_move_budget_holds() -> None:
    running = [gpu_pod("a", 1, on="n1"), gpu_pod("b", 1, on="n1"), gpu_pod("c", 1, on="n2", priority=10)]
    running += [gpu_pod(name, 1, on="n3") for name in ("d", "e", "f")]
    # c outranks big: emptying n1 (two moves, to n2) is the way.
    result = engine([*running, gpu_pod("big", 4)]).cycle()
    assert sorted(pod for pod, _ in moves(result)) == ["default/a", "default/b"]
    assert bound(result)["default/big"] == "n1"
    # With one move allowed per cycle, that is too many: big waits.
    result = engine([*running, gpu_pod("big", 4)], max_moves=1).cycle()
    assert moves(result) == [] and "default/big" not in bound(result)


def test_a_set_holding_a_pod_that_could_run_nowhere_else_is_not_tried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # n1 has two GPUs free, and two one-GPU pods: c, whose node selector no node matches (it runs
    # where it was bound), started last (so it is the first one-move set), and d. n2 has one GPU free, n3 none. big needs three.
    running = [gpu_pod("d", 1, on="n1")]
    running.append(
        pod("c", extended={GPU: "1"}, node_name="n1", node_selector={"kubernetes.io/hostname": "n1"})
    )
    running += [gpu_pod(f"y{i}", 1, on="n2") for i in range(3)]
    running += [gpu_pod(f"z{i}", 1, on="n3") for i in range(4)]
    tried: list[tuple[str, list[str]]] = []
    real_move_out = Consolidator._move_out

    def move_out(
        self: Consolidator, member: str, index: int, chosen: list[PodInfo], allowed: object
    ) -> object:
        tried.append((self.state.nodes.infos[index].name, [v.key for v in chosen]))
        return real_move_out(self, member, index, chosen, allowed)  # type: ignore[arg-type]

    monkeypatch.setattr(Consolidator, "_move_out", move_out)
    result = engine([*running, gpu_pod("big", 3)]).cycle()
    # Moving c out of n1 would fail (it fits no other node): not tried. Two of n2's pods move to n1.
    assert tried == [("n2", ["default/y1", "default/y2"])]
    assert sorted(pod for pod, _ in moves(result)) == ["default/y1", "default/y2"]
    assert bound(result)["default/big"] == "n2"
    assert "default/c" not in bound(result)


def _zoned_engine(pods: list[Pod]) -> Engine:
    zones = {"n1": "a", "n2": "b", "n3": "b"}
    nodes = [
        node(name, extended={GPU: "4"}, labels={"topology.kubernetes.io/zone": zone})
        for name, zone in zones.items()
    ]
    policy = EnginePolicy(queues=False, preemption=False, consolidation=ConsolidationConfig())
    return Engine(ClusterState(nodes=nodes, pods=pods), policy=policy)


def _one_per_zone(name: str) -> Pod:
    """A one-GPU pod labelled app=x that no other app=x pod may share a zone with."""
    term = PodAffinityTerm(
        label_selector=LabelSelector(match_labels={"app": "x"}), topology_key="topology.kubernetes.io/zone"
    )
    base = pod(name, extended={GPU: "1"}, labels={"app": "x"})
    affinity = Affinity(
        pod_anti_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=(term,))
    )
    return replace(base, spec=replace(base.spec, affinity=affinity))


def test_pods_alike_are_judged_each_where_other_pods_decide_where_they_fit() -> None:
    # Two app=x pods, one per zone: bound while n3 is down, one lands on n1 (zone a), the other on
    # n2 (zone b). Then n3 (zone b) comes back, with a pod big may not move.
    e = _zoned_engine([_one_per_zone("v1"), _one_per_zone("v2")])
    e.state.set_node_ready("n3", False)
    assert sorted(bound(e.cycle()).values()) == ["n1", "n2"]
    on_n2 = next(p for p in ("default/v1", "default/v2") if e.state.pods[p].node == e.state.nodes.index["n2"])
    e.state.set_node_ready("n3", True)
    e.state.add_pod(gpu_pod("w", 1, on="n3", priority=10))
    e.state.add_pod(gpu_pod("big", 4))
    result = e.cycle()
    # The pod on n1 can go nowhere else (zone b holds the other), which says nothing of the pod
    # on n2: without it, zone b is free for it on n3. It moves there and big takes n2.
    assert moves(result) == [(on_n2, "moved to node n3 to make room for default/big (consolidation)")]
    assert bound(result)[on_n2] == "n3" and bound(result)["default/big"] == "n2"


def test_victim_sets_too_small_to_free_the_gpus_are_not_put_to_the_filters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # n1: four one-GPU pods, nothing free; n2 and n3: two pods, two GPUs free. big needs a whole node:
    # on every node only all its pods together free enough GPUs, so no smaller set is filtered.
    running = [gpu_pod(f"a{i}", 1, on="n1") for i in range(4)]
    running += [gpu_pod(f"{n}{i}", 1, on=f"n{k}") for k, n in ((2, "b"), (3, "c")) for i in range(2)]
    e = engine([*running, gpu_pod("big", 4)])
    left_when_asked: list[int] = []
    real_fits_on = e.scheduler.fits_on

    def fits_on(pod_key: str, index: int) -> bool:
        if pod_key == "default/big":
            left_when_asked.append(len(list(e.state.pods_on(index))))
        return real_fits_on(pod_key, index)

    monkeypatch.setattr(e.scheduler, "fits_on", fits_on)
    result = e.cycle()
    assert len(moves(result)) == 2 and bound(result)["default/big"] in ("n2", "n3")
    assert left_when_asked and set(left_when_asked) == {0}


def test_a_node_where_the_pod_fits_with_no_pod_left_is_given_up_after_one_refused_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each node runs a pod of higher priority that takes 2 of its 8 CPUs, and big asks for 7: no
    # set of the movable pods leaving helps. On n1 the four three-pod sets each free enough GPUs;
    # the first refused one sends the filters to the node with every movable pod gone, which
    # refuses too, and the other sets are not tried.
    running = [gpu_pod(f"a{i}", 1, on="n1") for i in range(4)]
    running += [gpu_pod(f"{n}{i}", 1, on=f"n{k}") for k, n in ((2, "b"), (3, "c")) for i in range(2)]
    running += [pod(f"keep{k}", cpu="2", node_name=f"n{k}", priority=10) for k in (1, 2, 3)]
    e = engine([*running, pod("big", cpu="7", extended={GPU: "3"})])
    asked: dict[int, int] = {}
    real_fits_on = e.scheduler.fits_on

    def fits_on(pod_key: str, index: int) -> bool:
        if pod_key == "default/big":
            asked[index] = asked.get(index, 0) + 1
        return real_fits_on(pod_key, index)

    monkeypatch.setattr(e.scheduler, "fits_on", fits_on)
    result = e.cycle()
    assert moves(result) == [] and "default/big" not in bound(result)
    assert asked and max(asked.values()) <= 2, asked
    assert e.state.pods["default/big"].node is None
    assert {info.key for info in e.state.pods_on(0)} == {
        "default/keep1",
        *(f"default/a{i}" for i in range(4)),
    }


def test_with_kueue_a_pod_outside_it_that_arrives_later_is_placed_by_moves() -> None:
    running = [gpu_pod("a", 1, on="n1"), gpu_pod("b", 1, on="n1"), gpu_pod("c", 1, on="n2")]
    running += [gpu_pod(name, 1, on="n3") for name in ("d", "e", "f")]
    state = ClusterState(nodes=[node(f"n{i}", extended={GPU: "4"}) for i in (1, 2, 3)], pods=running)
    admission = AdmissionState.from_manifests(load_text(QUEUES), journal=state.journal)
    policy = EnginePolicy(preemption=False, consolidation=ConsolidationConfig(max_moves=8))
    e = Engine(state, admission=admission, policy=policy)
    assert moves(e.cycle(0.0)) == []  # nothing waits yet: the waiting work is listed empty
    state.add_pod(gpu_pod("big", 4))  # names no Kueue queue: it waits outside admission
    result = e.cycle(1.0)
    assert moves(result) == [("default/c", "moved to node n1 to make room for default/big (consolidation)")]
    assert bound(result) == {"default/c": "n1", "default/big": "n2"}
