"""DynamicResources scores nodes by the `firstAvailable` alternative their allocation takes
(Kubernetes 1.35+): sub-request i adds 8 - i, normalised to 100 x raw // max."""

from __future__ import annotations

import numpy as np

from allot.cluster.state import ClusterState
from allot.dra import Allocation, Allocator, Candidate
from allot.model.loader import load_text
from allot.plan.planner import plan
from allot.scheduling.framework import Cycle
from allot.scheduling.plugins.dynamic_resources import DynamicResources
from allot.scheduling.prioritized_list import normalize
from scheduling.dra_score_cases import NODES, cluster_yaml, pod_yaml


def test_scores_follow_upstreams_formula() -> None:
    state = ClusterState.from_manifests(load_text(cluster_yaml() + "\n---\n" + pod_yaml("p")))
    plugin = DynamicResources()
    cycle = Cycle(state, state.pods["default/p"])
    assert plugin.pre_filter(cycle).ok
    nodes = np.array([state.nodes.index[n] for n in NODES], dtype=np.int64)
    assert all(plugin.filter_node(cycle, int(i)).ok for i in nodes)
    scores = dict(zip(NODES, plugin.score(cycle, nodes), strict=True))
    # A100 (first alternative, 8), L40 (second, 7), T4 (third, 6): 100, 7*100//8, 6*100//8.
    assert scores == {"c-a100": 100, "b-l40": 87, "a-t4": 75}


def test_pods_take_the_preferred_gpus_first() -> None:
    pods = [pod_yaml(f"p{i}") for i in range(3)]
    manifests = load_text("\n---\n".join([cluster_yaml(), *pods]))
    # Whatever the tie-break seed: the score, not chance, decides.
    for seed in range(1, 6):
        placed = {b.pod: b.node for b in plan(manifests, seed=seed).bound}
        assert placed == {"default/p0": "c-a100", "default/p1": "b-l40", "default/p2": "a-t4"}, seed
    result = plan(manifests)
    taken = {
        claim.status.reserved_for[0].name: claim.status.allocation.devices.results[0].request
        for claim in result.state.claims.values()
        if claim.status.allocation is not None
    }
    assert taken == {"p0": "gpu/a100", "p1": "gpu/l40", "p2": "gpu/t4"}


def test_normalisation_is_kube_schedulers() -> None:
    assert list(normalize([0, 0])) == [0, 0]
    assert list(normalize([3, 8, 7])) == [37, 100, 87]


def test_a_device_scorer_never_trades_the_preferred_alternative() -> None:
    # One node with an A100 and a T4: a scorer that likes T4s may choose devices, but the claim
    # prefers A100 and upstream's allocator takes it, so the A100 it is.
    text = cluster_yaml().replace(
        "devices: [{name: gpu-0, attributes: {model: {string: A100}}}]", A100_AND_T4
    )
    state = ClusterState.from_manifests(load_text(text + "\n---\n" + pod_yaml("p")))
    (claim,) = state.pod_claims(state.pods["default/p"])
    allocator = Allocator(state.classes, state.slices, features=state.features)
    node = state.nodes.infos[state.nodes.index["c-a100"]].node

    def likes_t4(candidate: Candidate) -> float:
        return sum(p.device.attributes["model"].string_value == "T4" for p in candidate.devices())

    outcome = allocator.allocate(node, [claim], state.allocated, scorer=likes_t4)
    assert isinstance(outcome, Allocation)
    (result,) = outcome.results[0].devices.results
    assert (result.request, result.device) == ("gpu/a100", "gpu-0")


A100_AND_T4 = "devices: [{name: gpu-0, attributes: {model: {string: A100}}}, {name: gpu-1, attributes: {model: {string: T4}}}]"
