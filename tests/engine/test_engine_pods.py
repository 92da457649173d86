"""The engine's kube-scheduler path: priority then arrival, preemption, gangs, waiting for change."""

from __future__ import annotations

from msgspec.structs import replace

from allot.cluster.state import CLAIM_NOT_FOUND, ClusterState
from allot.engine.decisions import Bound, Evicted
from allot.engine.engine import Engine, EnginePolicy
from allot.model.core import PersistentVolumeClaimVolumeSource, PodSchedulingGate, Taint, Volume
from allot.scheduling.diagnosis import NO_NODES
from builders import GPU_DRIVER, claim, claim_spec, device_class, gpu_slice, node, pod

from .counting import calls, tried_pods


def test_higher_priority_goes_first_then_arrival_order() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")],
        pods=[pod("early-low", cpu="2", priority=1), pod("late-high", cpu="2", priority=5)],
    )
    result = Engine(state, policy=EnginePolicy(preemption=False)).cycle()
    assert [d.pod for d in result.bound] == ["default/late-high"]
    assert [d.pod for d in result.waiting] == ["default/early-low"]


def test_preemption_evicts_and_binds_in_one_cycle() -> None:
    state = ClusterState(nodes=[node("n1", cpu="2")], pods=[pod("low", cpu="2", priority=1, node_name="n1")])
    state.add_pod(pod("high", cpu="2", priority=10))
    result = Engine(state).cycle()
    assert [(type(d).__name__, d.pod) for d in result.decisions if isinstance(d, (Bound, Evicted))] == [
        ("Evicted", "default/low"),
        ("Bound", "default/high"),
    ]
    assert not state.pods["default/low"].bound
    # The preemptor carries why it fit nowhere before (what kube-scheduler writes on it while the
    # victims leave), without a post-filter account; a pod placed without victims carries nothing.
    (bound,) = result.bound
    assert bound.failure == "0/1 nodes are available: 1 Insufficient cpu."
    state.add_pod(pod("easy", cpu="0"))
    assert [b.failure for b in Engine(state).cycle().bound] == [""]


def test_waiting_pods_are_not_retried_until_something_leaves() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")], pods=[pod("a", cpu="2", node_name="n1"), pod("b", cpu="2")]
    )
    engine = Engine(state)
    first = engine.cycle()
    assert [d.pod for d in first.waiting] == ["default/b"]
    tried = tried_pods(engine)
    # Nothing happened: b is not tried again, and its reason (given once) still stands.
    assert engine.cycle().decisions == () and tried == []
    state.remove_pod("default/a")
    third = engine.cycle()
    assert tried == ["default/b"] and [d.pod for d in third.bound] == ["default/b"]


def test_gang_members_bind_together_with_their_workload_key() -> None:
    labels = {"kueue.x-k8s.io/pod-group-name": "g"}
    annotations = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    state = ClusterState(
        nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
        pods=[pod(f"w{i}", cpu="2", labels=labels, annotations=annotations) for i in range(2)],
    )
    result = Engine(state, policy=EnginePolicy(queues=False)).cycle()
    assert sorted((d.pod, d.workload) for d in result.bound) == [
        ("default/w0", "default/g"),
        ("default/w1", "default/g"),
    ]


def test_a_pod_like_one_that_just_failed_waits_without_a_search() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")],
        pods=[pod("a", cpu="2", node_name="n1"), pod("b", cpu="2"), pod("c", cpu="2"), pod("small", cpu="1")],
    )
    engine = Engine(state)
    placed = calls(engine, "place")
    result = engine.cycle()
    # b is searched (and preemption tried on it); c asks the same and waits for the same reason.
    assert "default/c" not in placed and "default/b" in placed
    reasons = {d.pod: d.reason for d in result.waiting}
    assert reasons["default/c"] == reasons["default/b"]
    # A pod asking for less is not in b's class and is searched on its own.
    assert "default/small" in placed
    state.remove_pod("default/a")
    assert sorted(d.pod for d in engine.cycle().bound) == ["default/b"]


def test_rolled_back_preemption_attempts_do_not_wake_waiting_pods() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")],
        pods=[pod("low", cpu="1", priority=1, node_name="n1"), pod("big", cpu="8", priority=9)],
    )
    before = state.releases
    with state.journal.transaction():
        state.unbind("default/low")
        assert state.releases == before + 1
    assert state.releases == before and state.pods["default/low"].bound


def _reason(state: ClusterState, pod_key: str) -> str:
    result = Engine(state).cycle()
    return {d.pod: d.reason for d in result.waiting}[pod_key]


def test_waiting_reason_carries_kube_schedulers_preemption_account() -> None:
    # "small" has less cpu than the pod asks for at all and "tainted" a taint it does not
    # tolerate: preemption cannot help there (kube-scheduler's unresolvable). On "busy" it could,
    # but the pod there has the same priority.
    taint = Taint(key="node-role.kubernetes.io/control-plane", effect="NoSchedule")
    state = ClusterState(
        nodes=[node("small", cpu="2"), node("busy", cpu="8"), node("tainted", cpu="8", taints=[taint])],
        pods=[pod("peer", cpu="6", node_name="busy"), pod("big", cpu="4")],
    )
    assert _reason(state, "default/big") == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


def test_a_pod_whose_claims_fit_nowhere_says_its_claims_are_still_not_schedulable() -> None:
    # DynamicResources' post-filter speaks first: a pod with claims (its own, or one for an
    # extended resource a DeviceClass serves) is "still not schedulable"; one without has "no new
    # claims to deallocate".
    state = ClusterState(
        nodes=[node("n1", cpu="4")],
        pods=[pod("p", claim_names={"gpus": "two"}), pod("q", extended={"example.com/gpu": "2"})],
        claims=[claim("two", claim_spec(("gpu", GPU_DRIVER, 2)))],
        classes=[device_class(), device_class("ext", extended_resource="example.com/gpu")],
        slices=[gpu_slice("n1", 1)],
    )
    result = Engine(state).cycle()
    reasons = {d.pod: d.reason for d in result.waiting}
    assert reasons["default/p"] == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert "still not schedulable, preemption:" in reasons["default/q"]


def test_a_pod_rejected_before_its_claims_are_looked_at_has_kube_schedulers_post_filter_account() -> None:
    # A missing PersistentVolumeClaim stops kube-scheduler at VolumeBinding's pre-filter, before
    # DynamicResources' runs: that post-filter then finds no state ("not found") and no preemption
    # follows. A class that does not exist stops DynamicResources' own pre-filter before it took
    # in the claims: "no new claims to deallocate", then preemption. (Both as kube-scheduler v1.36
    # wrote them on a real API server.)
    volume = Volume(name="data", persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name="data"))
    with_volume = pod("with-volume")
    with_volume = replace(with_volume, spec=replace(with_volume.spec, volumes=(volume,)))
    state = ClusterState(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")],
        pods=[with_volume, pod("no-class", claim_names={"gpu": "tpu"})],
        claims=[claim("tpu", claim_spec(("tpu", "tpu.example.com", 1)))],
        classes=[device_class()],
        slices=[gpu_slice("n1", 1)],
    )
    reasons = {d.pod: d.reason for d in Engine(state).cycle().waiting}
    assert reasons["default/with-volume"] == (
        '0/2 nodes are available: persistentvolumeclaim "data" not found. not found'
    )
    assert reasons["default/no-class"] == (
        "0/2 nodes are available: request tpu: device class tpu.example.com does not exist. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_preemption_that_would_not_help_reports_the_filters_reason() -> None:
    # Removing the low-priority pod frees 1 of the 4 CPUs the pod asks for (the other pod outranks it).
    state = ClusterState(
        nodes=[node("n1", cpu="4")],
        pods=[
            pod("low", cpu="1", priority=1, node_name="n1"),
            pod("high", cpu="2", priority=10, node_name="n1"),
            pod("big", cpu="4", priority=9),
        ],
    )
    assert _reason(state, "default/big").endswith(" preemption: 0/1 nodes are available: 1 Insufficient cpu.")


def test_pods_that_never_preempt_say_so() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")],
        pods=[
            pod("low", cpu="2", priority=1, node_name="n1"),
            pod("p", cpu="2", priority=9, preemption_policy="Never"),
        ],
    )
    assert _reason(state, "default/p") == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )


def test_gangs_wait_until_the_changed_nodes_can_host_the_members_they_lack() -> None:
    def member(gang: str, i: int) -> object:
        labels = {"kueue.x-k8s.io/pod-group-name": gang}
        return pod(
            f"{gang}-{i}", cpu="2", labels=labels, annotations={"kueue.x-k8s.io/pod-group-total-count": "2"}
        )

    state = ClusterState(
        nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
        pods=[
            pod("x", cpu="2", node_name="n1"),
            pod("y", cpu="1", node_name="n2"),
            *(member(g, i) for g in ("a", "b") for i in range(2)),
        ],
    )
    engine = Engine(state, policy=EnginePolicy(queues=False))
    first = engine.cycle()
    assert {d.pod for d in first.waiting} == {"default/a-0", "default/a-1", "default/b-0", "default/b-1"}
    tried = tried_pods(engine)
    state.remove_pod("default/y")  # n2 could take one member; each gang lacks two
    assert engine.cycle().decisions == () and tried == []
    state.remove_pod("default/x")
    third = engine.cycle()
    assert sorted(d.pod for d in third.bound) == ["default/a-0", "default/a-1"]
    # Gang b, like a, is tried after a fits, and waits.
    assert {d.pod for d in third.waiting} == {"default/b-0", "default/b-1"}


def test_equal_priority_pods_go_in_creation_order_not_manifest_order() -> None:
    def created(name: str, when: str) -> object:
        base = pod(name, cpu="2")
        return replace(base, metadata=replace(base.metadata, creation_timestamp=when))

    state = ClusterState(
        nodes=[node("n1", cpu="2")],
        # Listed by name, as kubectl prints them; "b-older" was created first.
        pods=[created("a-newer", "2026-03-02T10:00:05Z"), created("b-older", "2026-03-02T10:00:01Z")],
    )
    result = Engine(state, policy=EnginePolicy(preemption=False)).cycle()
    assert [d.pod for d in result.bound] == ["default/b-older"]


def test_a_pod_with_scheduling_gates_waits_until_they_are_removed() -> None:
    gated = pod("gated", cpu="1")
    gated = replace(
        gated, spec=replace(gated.spec, scheduling_gates=(PodSchedulingGate(name="example.com/wait"),))
    )
    state = ClusterState(nodes=[node("n1", cpu="4")], pods=[gated])
    engine = Engine(state)
    result = engine.cycle()
    assert not result.bound
    [waiting] = result.waiting
    assert "SchedulingGated" in waiting.reason and "example.com/wait" in waiting.reason
    state.update_pod(replace(gated, spec=replace(gated.spec, scheduling_gates=())))
    assert [b.node for b in engine.cycle().bound] == ["n1"]


def _gang_waiting_for_three_whole_nodes() -> tuple[ClusterState, Engine]:
    """Three 8-GPU nodes, each held by one pod, and a gang of three 8-GPU members."""
    gpus = {"nvidia.com/gpu": "8"}
    labels = {"kueue.x-k8s.io/pod-group-name": "g"}
    annotations = {"kueue.x-k8s.io/pod-group-total-count": "3"}
    state = ClusterState(
        nodes=[node(f"n{i}", extended=gpus) for i in range(3)],
        pods=[
            *(pod(f"busy{i}", extended=gpus, node_name=f"n{i}") for i in range(3)),
            *(pod(f"w{i}", extended=gpus, labels=labels, annotations=annotations) for i in range(3)),
        ],
    )
    engine = Engine(state, policy=EnginePolicy(queues=False, preemption=False))
    assert not engine.cycle().bound
    return state, engine


def test_a_gang_is_not_bind_tested_while_freed_gpus_cannot_add_up_to_its_missing_members() -> None:
    state, engine = _gang_waiting_for_three_whole_nodes()
    bind_tests = calls(engine, "bind_on")
    tried = tried_pods(engine)
    for i in range(2):
        state.remove_pod(f"default/busy{i}")
        assert engine.cycle().decisions == ()
    # Two whole nodes free for three members: untouched GPUs alone say it cannot fit yet.
    assert bind_tests == [] and tried == []
    state.remove_pod("default/busy2")
    placed = engine.cycle()
    assert sorted(d.node for d in placed.bound) == ["n0", "n1", "n2"]
    assert bind_tests  # the room was counted exactly once it could add up


def test_without_the_gpu_bound_the_same_gang_is_bind_tested_at_each_freed_node() -> None:
    state, engine = _gang_waiting_for_three_whole_nodes()
    engine._hints.room_bound = lambda *args, **kwargs: None  # type: ignore[method-assign]
    bind_tests = calls(engine, "bind_on")
    state.remove_pod("default/busy0")
    engine.cycle()
    assert bind_tests  # what the bound saves


def test_a_claim_deleted_under_a_waiting_pod_makes_it_wait_for_the_claim_again() -> None:
    # Claims from the API (as `allot run` keeps them): the pod waits, its claim is deleted, and the
    # next cycle tries it without the claim (the deletion is a claim event) and must not crash.
    state = ClusterState(
        nodes=[node("n1", cpu="4")],
        classes=[device_class("none", driver="none.example.com"), device_class()],
        slices=[gpu_slice("n1", 1)],
        claims=[claim("doomed", claim_spec(("gpu", "none", 1)))],
        pods=[pod("orphaned", claim_names={"gpu": "doomed"})],
        generate_claims=False,
    )
    engine = Engine(state)
    assert [d.pod for d in engine.cycle().waiting] == ["default/orphaned"]
    assert state.drop_claim("default/doomed") == ["default/orphaned"]
    assert state.pods["default/orphaned"].missing == [CLAIM_NOT_FOUND.format(key="default/doomed")]
    (waiting,) = engine.cycle().waiting
    assert CLAIM_NOT_FOUND.format(key="default/doomed") in waiting.reason
    # A claim of that name made again is the pod's (the live cache looks the pod's claims up again).
    state.apply_claim(claim("doomed", claim_spec(("gpu", GPU_DRIVER, 1))))
    state.update_pod(state.pods["default/orphaned"].pod)
    assert [(b.pod, b.node) for b in engine.cycle().bound] == [("default/orphaned", "n1")]
    # Deleted under a bound pod, it sends no pending pod back to wait.
    assert state.drop_claim("default/doomed") == []


def test_a_pod_that_found_no_nodes_is_tried_when_a_node_comes() -> None:
    # No plugin rejected it, so no plugin's events are what it waits for: any event may help.
    state = ClusterState(nodes=[], pods=[pod("early", cpu="4")])
    engine = Engine(state)
    assert [(w.pod, w.reason) for w in engine.cycle().waiting] == [("default/early", NO_NODES)]
    assert engine.cycle().decisions == ()
    state.replace_nodes([node("n1", cpu="8")])
    assert [(b.pod, b.node) for b in engine.cycle().bound] == [("default/early", "n1")]
