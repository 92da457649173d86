"""Each score alone decides between otherwise equal nodes."""

from __future__ import annotations

import numpy as np
from msgspec.structs import replace

from allot.cluster.resources import DEFAULT_MEMORY_REQUEST, nonzero_cpu_memory
from allot.cluster.state import ClusterState
from allot.model.core import Pod, ResourceRequirements, Taint, Toleration
from allot.model.loader import load_text
from allot.model.quantity import Quantity
from allot.scheduling.framework import Cycle
from allot.scheduling.plugins.balanced_allocation import BalancedAllocation
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler
from builders import node, pod, requirement


def chosen(state: ClusterState, name: str, profile: Profile | None = None) -> str:
    scheduler = Scheduler(state, {profile.scheduler_name: profile} if profile else None)
    outcome = scheduler.place(f"default/{name}")
    assert isinstance(outcome, Placement)
    return outcome.node


def only(weight_for: str, **extra: object) -> Profile:
    return Profile(score_weights={weight_for: 1}, **extra)  # type: ignore[arg-type]


def test_least_allocated_spreads_and_most_allocated_packs() -> None:
    nodes = [node("busy", cpu="8"), node("idle", cpu="8")]
    pods = [pod("running", cpu="6", node_name="busy"), pod("p", cpu="1")]
    assert chosen(ClusterState(nodes=nodes, pods=pods), "p", only("NodeResourcesFit")) == "idle"
    packing = Profile(
        score_weights={"NodeResourcesFit": 1},
        plugin_args={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
    )
    from allot.scheduling.scheduler import Scheduler as S

    state = ClusterState(nodes=nodes, pods=pods)
    scheduler = S(state, {"default-scheduler": packing})
    outcome = scheduler.place("default/p")
    assert isinstance(outcome, Placement) and outcome.node == "busy"


def test_balanced_allocation_prefers_proportional_use() -> None:
    # cpu-heavy node: adding a memory-heavy pod balances it.
    nodes = [node("cpu-heavy", cpu="10", memory="10Gi"), node("balanced", cpu="10", memory="10Gi")]
    pods = [
        pod("a", cpu="8", memory="1Gi", node_name="cpu-heavy"),
        pod("b", cpu="4", memory="4Gi", node_name="balanced"),
        pod("p", cpu="1", memory="6Gi"),
    ]
    assert (
        chosen(ClusterState(nodes=nodes, pods=pods), "p", only("NodeResourcesBalancedAllocation"))
        == "cpu-heavy"
    )


def test_balanced_allocation_scores_the_change_in_balance_as_kube_scheduler_1_36() -> None:
    # Recorded from kube-scheduler v1.36 (its -v=10 log): the empty node scores 71 and the
    # busier one 74, since the pod unbalances the empty node more; the score before 1.36 (the
    # balance after placement alone) preferred the empty node, 93 to 92.
    nodes = [node("empty", cpu="8", memory="32Gi"), node("busier", cpu="32", memory="128Gi")]
    pods = [pod("running", cpu="4", memory="1Gi", node_name="busier"), pod("p", cpu="1", memory="128Mi")]
    state = ClusterState(nodes=nodes, pods=pods)
    scores = BalancedAllocation().score(Cycle(state, state.pods["default/p"]), np.array([0, 1]))
    by_name = {state.nodes.infos[i].name: float(s) for i, s in enumerate(scores)}
    assert by_name == {"empty": 71.0, "busier": 74.0}
    assert chosen(state, "p", only("NodeResourcesBalancedAllocation")) == "busier"
    # A pod that asks for neither cpu nor memory is not scored at all.
    state.add_pod(pod("best-effort", cpu=None))
    zero = BalancedAllocation().score(Cycle(state, state.pods["default/best-effort"]), np.array([0, 1]))
    assert zero.tolist() == [0.0, 0.0]


def test_prefer_no_schedule_taints_are_avoided_when_possible() -> None:
    soft = Taint(key="spot", value="true", effect="PreferNoSchedule")
    nodes = [node("a-spot", taints=[soft]), node("b-plain")]
    assert chosen(ClusterState(nodes=nodes, pods=[pod("p")]), "p", only("TaintToleration")) == "b-plain"
    tolerant = pod("p", tolerations=[Toleration(key="spot", operator="Exists")])
    # Tolerated: both score the same, and the tie goes to the first node by name.
    assert chosen(ClusterState(nodes=nodes, pods=[tolerant]), "p", only("TaintToleration")) == "a-spot"


def test_preferred_node_affinity_weights() -> None:
    nodes = [node("a", labels={"disk": "hdd"}), node("b", labels={"disk": "ssd", "zone": "z1"})]
    p = pod(
        "p",
        preferred_affinity=[
            (10, [requirement("disk", "In", "ssd")]),
            (5, [requirement("disk", "In", "hdd")]),
        ],
    )
    assert chosen(ClusterState(nodes=nodes, pods=[p]), "p", only("NodeAffinity")) == "b"


def test_percentage_of_nodes_to_score_follows_kube_scheduler() -> None:
    profile = Profile()
    assert profile.feasible_nodes_to_find(50) == 50
    assert profile.feasible_nodes_to_find(500) == 230  # 50 - 500/125 = 46 %
    assert profile.feasible_nodes_to_find(5000) == 500  # 10 %
    assert profile.feasible_nodes_to_find(10000) == 500  # floor of 5 %
    assert Profile(percentage_of_nodes_to_score=100).feasible_nodes_to_find(5000) == 5000
    assert Profile(percentage_of_nodes_to_score=1).feasible_nodes_to_find(5000) == 100


# Pod-level requests (spec.resources) in NodeResourcesFit's score, as kube-scheduler v1.36.2 has
# them (played on its binary: benchmarks/oddities/pod-level-scoring).


def _pod_level(name: str, memory: str, **extra: object) -> Pod:
    made = pod(name, cpu="1", memory="128Mi", **extra)  # type: ignore[arg-type]
    level = ResourceRequirements(requests={"cpu": Quantity.parse("1"), "memory": Quantity.parse(memory)})
    return replace(made, spec=replace(made.spec, resources=level))


def test_the_pod_being_placed_is_scored_by_fit_without_its_pod_level_requests() -> None:
    # Counting its 4224Mi at pod level, NodeResourcesFit would send it to the 128Gi node (85 to
    # 81); kube-scheduler scores it as its containers' 128Mi (87 everywhere), and BalancedAllocation,
    # which does count them, prefers the 32Gi node.
    nodes = [
        node("big", cpu="4", memory="128Gi"),
        node("small", cpu="4", memory="32Gi"),
        node("mid", cpu="4", memory="64Gi"),
    ]
    state = ClusterState(nodes=nodes, pods=[_pod_level("p", "4224Mi")])
    assert chosen(state, "p") == "small"


def test_a_pod_on_a_node_counts_its_pod_level_requests_in_fit() -> None:
    nodes = [node("a", cpu="4", memory="64Gi"), node("b", cpu="4", memory="64Gi")]
    pods = [
        _pod_level("pod-level", "20Gi", node_name="a"),
        pod("containers", cpu="1", memory="8Gi", node_name="b"),
        pod("p", cpu="1", memory="128Mi"),
    ]
    assert chosen(ClusterState(nodes=nodes, pods=pods), "p") == "b"


def test_non_zero_requests_count_every_container_that_asks_nothing() -> None:
    (sidecar,) = load_text(
        """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  initContainers:
  - {name: log, image: x, restartPolicy: Always}
  - {name: setup, image: x, resources: {requests: {cpu: "2"}}}
  containers: [{name: app, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
  overhead: {cpu: 250m}
"""
    ).of_kind(Pod)
    # The sidecar counts 100m / 200Mi beside the app (600m), the setup container 2 CPUs beside
    # the sidecar (2100m) is the floor, and the overhead comes on top.
    assert nonzero_cpu_memory(sidecar) == (2350, 1024**3 + DEFAULT_MEMORY_REQUEST)
