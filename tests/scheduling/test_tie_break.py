"""Ties among equally scored nodes: the same input gives the same node, yet no node is favoured.

kube-scheduler picks at random among the top-scored nodes. allot ranks them by a key hashed
from (seed, pod, node), so small pods spread over equal nodes instead of piling onto the
first by name, and a run can be repeated exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

from allot.cluster.state import ClusterState
from allot.scheduling.scheduler import Placement, Scheduler
from allot.scheduling.tie_break import tie_key
from builders import claim_spec, claim_template, device_class, gpu_slice, node, pod

NODES = [f"n{i:02d}" for i in range(10)]


def gpu_cluster(pods: int) -> ClusterState:
    """Ten equal nodes of 8 GPUs, 64 CPUs and 64000Mi; pods asking one GPU, 100m CPU and 100Mi,
    which scores cannot tell apart: NodeResourcesFit's integer score stays at 99 for many such
    pods, and their CPU and memory keep each node's use exactly in proportion, so
    BalancedAllocation's (which rewards what a pod does to the balance) does not move."""
    return ClusterState(
        nodes=[node(n, cpu="64", memory="64000Mi") for n in NODES],
        slices=[gpu_slice(n, 8) for n in NODES],
        classes=[device_class()],
        templates=[claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1)))],
        pods=[pod(f"small-{i}", cpu="100m", memory="100Mi", claims={"gpu": "one-gpu"}) for i in range(pods)],
    )


def place_all(pods: int, seed: int = 0) -> dict[str, str]:
    state = gpu_cluster(pods)
    scheduler = Scheduler(state, seed=seed)
    placed = {}
    for i in range(pods):
        outcome = scheduler.schedule(f"default/small-{i}")
        assert isinstance(outcome, Placement)
        placed[outcome.pod_key] = outcome.node
    return placed


def test_small_pods_do_not_pile_onto_the_first_nodes() -> None:
    # By node order, 20 such pods filled the first three nodes (6, 6, 6) and a fourth with 2.
    first_four = 0
    for seed in range(20):
        nodes = Counter(place_all(20, seed).values())
        assert len(nodes) >= 6, (seed, nodes)
        first_four += sum(nodes[n] for n in NODES[:4])
    # Four of ten equal nodes should get about 40 % of the pods.
    assert 0.25 < first_four / (20 * 20) < 0.55


def test_lone_pods_are_spread_over_equal_nodes() -> None:
    # Each of 200 pods alone on the empty cluster: every node is somebody's choice.
    state = gpu_cluster(0)
    scheduler = Scheduler(state)
    for i in range(200):
        state.add_pod(pod(f"lone-{i}", cpu="100m"))
    choices = Counter()
    for i in range(200):
        outcome = scheduler.place(f"default/lone-{i}")
        assert isinstance(outcome, Placement)
        choices[outcome.node] += 1
    assert set(choices) == set(NODES)
    assert max(choices.values()) <= 40


def test_the_same_input_gives_the_same_placements_and_the_seed_varies_them() -> None:
    assert place_all(20) == place_all(20)
    assert place_all(20, seed=1) == place_all(20, seed=1)
    assert place_all(20, seed=1) != place_all(20)


def test_keys_are_the_same_in_every_process() -> None:
    # A hash of the names, not Python's per-process string hash: another interpreter, with
    # another hash seed, computes the same keys.
    code = "from allot.scheduling.tie_break import tie_key; print(tie_key(3, 'default/p', 'n1'))"
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert int(out.stdout) == tie_key(3, "default/p", "n1")
    assert tie_key(3, "default/p", "n1") != tie_key(4, "default/p", "n1")
    assert tie_key(3, "default/p", "n1") != tie_key(3, "default/q", "n1")
