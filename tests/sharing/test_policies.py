"""Each placement policy on small clusters, the expected node and GPU worked out by hand from its definition.

Nodes have 64 CPUs and GPUs of 100 cores (1000 milli-GPU) unless said
otherwise; pods ask 1 CPU. `on=` pins the pods that prepare a scene.
"""

from __future__ import annotations

import numpy as np
from msgspec.structs import replace

from allot.cluster.state import ClusterState
from allot.scheduling.scheduler import Placement
from allot.scheduling.sharing.fragmentation import FragmentationModel
from allot.scheduling.sharing.table import table_for
from builders import pod
from sharing.helpers import devices_of, hami_cluster, hami_pod, scheduler, sharing_profile

ONE_CLASS = {
    "classes": [
        {
            "cpu": "1",
            "gpus": 1,
            "deviceClassName": "hami-core-gpu.project-hami.io",
            "selectors": ['device.attributes["hami-core-gpu.project-hami.io"].type == "hami-gpu"'],
            "capacity": {"cores": 50, "memory": "500Mi"},
        }
    ]
}


def scene(
    gpus: dict[str, int], used: list[tuple[str, int]], policy: str, **args: object
) -> tuple[ClusterState, object]:
    """A cluster where pods of `used` (node, cores) already sit (pinned), and a scheduler with `policy`."""
    state = hami_cluster(gpus)
    pinning = scheduler(state, sharing_profile("BestFit"))
    for i, (node_name, cores) in enumerate(used):
        assert isinstance(
            pinning.schedule(state.add_pod(hami_pod(f"u{i}", cores=cores, memory_mib=500, on=node_name)).key),
            Placement,
        )
    return state, scheduler(state, sharing_profile(policy, **args))


def place(
    state: ClusterState, sched: object, cores: int, name: str = "p", **extra: object
) -> list[tuple[str, str]]:
    outcome = sched.schedule(state.add_pod(hami_pod(name, cores=cores, memory_mib=500, **extra)).key)  # type: ignore[attr-defined]
    return devices_of(outcome)


def test_best_fit_takes_the_fullest_node_and_the_tightest_gpu() -> None:
    # b: GPU0 has 40 cores used. Score 100 * (1 - (0.5 cpu_left/64 + 0.5 gpu_left/2)):
    # a: (63-1)/64 = .969, (2-.3)/2 = .85 -> 9;  b: (62-1)/64 = .953, (1.6-.3)/2 = .65 -> 19.
    state, sched = scene({"a": 2, "b": 2}, [("b", 40)], "BestFit")
    assert place(state, sched, 30) == [("b", "hami-gpu-0")]


def test_dot_product_and_best_fit_disagree_on_a_cpu_heavy_pod() -> None:
    # a: 48 CPUs taken, GPUs free. b: 1.7 GPUs taken, 62 CPUs free. Pod: 8 CPUs, 10 cores.
    # DotProduct, free x request: a .25*.125 + 1*.05 = .081, b .969*.125 + .15*.05 = .129 -> a.
    # BestFit, (free - request): a (.125 + .95)/2 = .54 -> 46, b (.84 + .1)/2 = .47 -> 52 -> b.
    def cluster(policy: str) -> tuple[ClusterState, object]:
        state, sched = scene({"a": 2, "b": 2}, [("b", 100), ("b", 70)], policy)
        sched.schedule(state.add_pod(pod("cpu", cpu="47", node_selector={"name": "a"})).key)  # type: ignore[attr-defined]
        return state, sched

    state, sched = cluster("DotProduct")
    assert place(state, sched, 10, cpu="8")[0][0] == "a"
    state, sched = cluster("BestFit")
    assert place(state, sched, 10, cpu="8") == [("b", "hami-gpu-1")]


def test_packing_prefers_shared_gpus_then_used_nodes_then_idle_ones() -> None:
    # b: GPU0 has 60 % free. 30 cores fit there: 100 - 60/10 = 94 against idle a's 33 - 2 = 31.
    state, sched = scene({"a": 2, "b": 2}, [("b", 40)], "Packing")
    assert place(state, sched, 30, "p1") == [("b", "hami-gpu-0")]
    # 70 cores fit no used GPU: b's free GPU scores 50 - 1 = 49, still above a's 31.
    assert place(state, sched, 70, "p2") == [("b", "hami-gpu-1")]
    # Now b has 30 % free on GPU0 and GPU1: 40 cores fit nowhere on b; a is the only node.
    assert place(state, sched, 40, "p3") == [("a", "hami-gpu-0")]


def test_clustering_keeps_pods_of_a_kind_together() -> None:
    state, sched = scene({"a": 2, "b": 2, "c": 2}, [("a", 30), ("b", 100)], "Clustering")
    # A sharing pod joins a (only share-gpu pods: 75 + 25 * (8-... ) tier), not idle c or b.
    assert place(state, sched, 20, "share")[0][0] == "a"
    # A whole-GPU pod joins b (only 1-gpu pods there).
    assert place(state, sched, 100, "whole")[0][0] == "b"


def test_random_is_seeded() -> None:
    def picks(seed: int) -> list[str]:
        state, sched = scene({f"n{i}": 1 for i in range(8)}, [], "Random", seed=seed)
        return [place(state, sched, 100, f"p{i}")[0][0] for i in range(4)]

    assert picks(1) == picks(1)
    assert picks(1) != picks(2) or picks(1) != picks(3)


def test_fgd_fills_fragments_and_avoids_making_them() -> None:
    # One task class: 50 cores. F of a node = free share of GPUs below 50 cores (if one fits).
    # b's GPU0 has 40 free: F_b = 400. A 40-core pod there leaves 0: dF = -400, score 59;
    # anywhere else dF = 0, score 50.
    state, sched = scene({"a": 2, "b": 2}, [("b", 60)], "FGD", targetWorkload=ONE_CLASS)
    assert place(state, sched, 40, "fill") == [("b", "hami-gpu-0")]
    # b's GPU0 now full; a 40-core pod on b's GPU1 or a's GPUs leaves 600 >= 500: dF = 0 everywhere,
    # and the tie goes to the first node by name and its first GPU.
    assert place(state, sched, 40, "next") == [("a", "hami-gpu-0")]


def test_fgd_avoids_a_fragment_that_best_fit_makes() -> None:
    # b's GPU0 has 60 free. A 40-core pod there leaves 20 < 50: dF = +200 (score 45);
    # on b's GPU1 or on a it leaves 60: dF = 0 (score 50). Best fit takes b's GPU0.
    state, sched = scene({"a": 2, "b": 2}, [("b", 40)], "FGD", targetWorkload=ONE_CLASS)
    assert place(state, sched, 40) == [("a", "hami-gpu-0")]
    state, sched = scene({"a": 2, "b": 2}, [("b", 40)], "BestFit")
    assert place(state, sched, 40) == [("b", "hami-gpu-0")]


def test_fgd_caches_stay_true_to_a_fresh_computation() -> None:
    state, sched = scene({f"n{i}": 2 for i in range(4)}, [], "FGD")
    rng = np.random.default_rng(3)
    for i in range(24):
        sched.schedule(state.add_pod(hami_pod(f"p{i}", cores=int(rng.integers(10, 100)), memory_mib=500)).key)  # type: ignore[attr-defined]
    plugin = sched.plugins("default-scheduler").scorers[0][0]  # type: ignore[attr-defined]
    policy, context = plugin.policy, plugin._context
    cached_pod = hami_pod("probe", cores=35, memory_mib=500)
    info = state.add_pod(cached_pod)
    from allot.scheduling.framework import Cycle

    cycle = Cycle(state, info)
    assert plugin.pre_filter(cycle).ok
    plugin.filter_mask(cycle, np.ones(state.nodes.size, dtype=bool))
    placement = cycle.data["GpuPlacement"]
    nodes = np.arange(state.nodes.size)
    cached, _ = policy.deltas(context, placement.view, nodes)
    fresh = policy.model(context, placement.view).deltas(
        nodes, placement.view.needs, placement.view.fit, 1, placement.view.cpu
    )
    assert np.array_equal(
        np.where(np.isfinite(cached), cached, 0), np.where(np.isfinite(fresh.delta), fresh.delta, 0)
    )


def test_scarcity_weighs_classes_by_the_share_of_gpus_they_can_use() -> None:
    from allot.cluster.state import ClusterState as State
    from allot.dra import Allocator
    from allot.model.presets.gpu_sharing import hami_device_class
    from allot.scheduling.sharing.workload import TargetWorkload
    from builders import node
    from sharing.helpers import hami_slice

    state = State(
        nodes=[node("a", cpu="64"), node("b", cpu="64")],
        slices=[hami_slice("a", 4, model="T4"), hami_slice("b", 4, model="V100")],
        classes=[hami_device_class()],
    )
    table = table_for(state, Allocator(state.classes, state.slices, features=state.features))
    attr = 'device.attributes["hami-core-gpu.project-hami.io"].productName'
    hami = "hami-core-gpu.project-hami.io"
    classes = {
        "classes": [
            {"cpu": "1", "gpus": 1, "deviceClassName": hami, "capacity": {"cores": 50}},
            {"cpu": "1", "gpus": 8, "deviceClassName": hami, "capacity": {"cores": 100}},
            {"cpu": "1", "gpus": 1, "deviceClassName": hami, "selectors": [f'{attr} == "T4"']},
            {"cpu": "100", "gpus": 1, "deviceClassName": hami},
        ],
        "popularityThreshold": 100,
    }
    workload = TargetWorkload.from_args(classes)
    cpu = state.nodes.allocatable["cpu"]
    plain = FragmentationModel(table, workload, lambda rows: cpu[rows])
    weighted = FragmentationModel(table, workload, lambda rows: cpu[rows], scarcity=True, cpu_capacity=cpu)
    assert np.allclose(plain.p, 0.25)
    weights = {
        (c.cpu, c.request.count, c.request.selectors[-1:] != ()): w
        for c, w in zip(workload.classes, weighted.p, strict=True)
        if c.request is not None
    }
    # T4-only: 4 of 8 GPUs -> x2. Unconstrained: x1. The 8-GPU class and the 100-CPU class fit
    # no node (capacity 0): kept at x1, there is nothing to protect for them.
    assert np.isclose(weights[(1000, 1, True)], 0.4)
    assert np.isclose(weights[(1000, 1, False)], 0.2)
    assert np.isclose(weights[(1000, 8, False)], 0.2)
    assert np.isclose(weights[(100000, 1, False)], 0.2)


def test_profiles_from_scheduler_configuration_yaml() -> None:
    import yaml

    from allot.scheduling.profile_config import checked_profiles

    text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: shared-gpus
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      disabled: [{name: DynamicResources}]
      enabled: [{name: GpuPlacement, weight: 10}, {name: GpuIsolation}]
  pluginConfig:
  - name: GpuPlacement
    args: {policy: FGDPlus, tieBreak: name}
  - name: GpuIsolation
    args: {trustDomain: "label:example.com/tenant"}
"""
    profiles = checked_profiles(yaml.safe_load(text), source="<test>")
    profile = profiles["shared-gpus"]
    assert "DynamicResources" not in profile.filters
    assert {"GpuPlacement", "GpuIsolation"} <= set(profile.filters)
    assert profile.score_weights["GpuPlacement"] == 10
    state = hami_cluster({"a": 1})
    from allot.scheduling.scheduler import Scheduler

    sched = Scheduler(state, profiles)
    p = hami_pod("p", cores=30, memory_mib=100)
    p = replace(p, spec=replace(p.spec, scheduler_name="shared-gpus"))
    assert devices_of(sched.schedule(state.add_pod(p).key)) == [("a", "hami-gpu-0")]


def test_enabling_gpu_placement_next_to_dynamic_resources_is_an_error() -> None:
    from allot.scheduling.profile import DEFAULT_FILTERS, Profile

    state = hami_cluster({"a": 1})
    both = Profile(filters=(*DEFAULT_FILTERS, "GpuPlacement"))
    outcome = scheduler(state, both).schedule(state.add_pod(hami_pod("p", cores=30)).key)
    assert not isinstance(outcome, Placement) and "disable DynamicResources" in outcome.message
