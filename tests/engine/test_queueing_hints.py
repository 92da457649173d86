"""Queueing hints: a waiting pod is tried again only when an event could help it, and then it is.

Each test fails a pod, shows that an event that cannot help leaves it
untried, and that an event that can (of each kind) gets it tried again.
"Tried" means the engine asked the scheduler to bind it; hints only look.
"""

from __future__ import annotations

from allot.admission.state import AdmissionState
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.cluster.state import ClusterState
from allot.engine.engine import Engine, EnginePolicy
from allot.engine.queueing import QueueingConfig, SchedulingQueue
from allot.model.core import Pod, Taint, Toleration
from allot.model.loader import load_text
from builders import node, pod

from .counting import looked_at, tried_pods
from .test_engine_kueue import QUEUES, node_yaml, pod_yaml


def probed_nodes(engine: Engine) -> list[int]:
    probed: list[int] = []
    original = engine.scheduler.fits_on

    def counting(pod_key: str, index: int) -> bool:
        probed.append(index)
        return original(pod_key, index)

    engine.scheduler.fits_on = counting  # type: ignore[method-assign]
    return probed


def test_a_pod_leaving_a_node_too_small_does_not_wake_it_one_leaving_a_big_enough_node_does() -> None:
    state = ClusterState(
        nodes=[node("small", cpu="2"), node("big", cpu="4")],
        pods=[pod("s", cpu="2", node_name="small"), pod("b", cpu="4", node_name="big"), pod("want", cpu="3")],
    )
    engine = Engine(state, policy=EnginePolicy(preemption=False))
    assert [d.pod for d in engine.cycle().waiting] == ["default/want"]
    tried = tried_pods(engine)
    state.remove_pod("default/s")  # 2 CPUs free on a 2-CPU node: 3 never fit there
    assert engine.cycle().decisions == () and tried == []
    state.remove_pod("default/b")
    assert [d.node for d in engine.cycle().bound] == ["big"] and tried == ["default/want"]


def test_a_node_coming_back_wakes_the_pods_it_could_take() -> None:
    state = ClusterState(nodes=[node("n1", cpu="4")], pods=[pod("want", cpu="2")])
    state.set_node_ready("n1", False)
    engine = Engine(state)
    assert [d.pod for d in engine.cycle().waiting] == ["default/want"]
    tried = tried_pods(engine)
    assert engine.cycle().decisions == () and tried == []
    state.set_node_ready("n1", True)
    assert [d.pod for d in engine.cycle().bound] == ["default/want"] and tried == ["default/want"]


def test_a_lower_priority_pod_taking_the_room_wakes_a_pod_that_may_preempt_it() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")], pods=[pod("peer", cpu="2", priority=10, node_name="n1")]
    )
    state.add_pod(pod("high", cpu="2", priority=10))
    engine = Engine(state)
    # Nothing of lower priority runs: preemption cannot help.
    assert [d.pod for d in engine.cycle().waiting] == ["default/high"]
    tried = tried_pods(engine)
    state.remove_pod("default/peer")
    state.add_pod(pod("low", cpu="2", priority=1))
    state.bind("default/low", "n1", {})  # bound behind the engine's back (another scheduler)
    result = engine.cycle()
    assert set(tried) == {"default/high"}
    assert [d.pod for d in result.evicted] == ["default/low"] and [d.pod for d in result.bound] == [
        "default/high"
    ]


def test_a_pod_bound_does_not_wake_pods_that_cannot_preempt_it() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="3")], pods=[pod("first", cpu="2", priority=5, node_name="n1")]
    )
    state.add_pod(pod("waiting", cpu="2", priority=5))
    engine = Engine(state)
    engine.cycle()
    tried = tried_pods(engine)
    state.add_pod(pod("other", cpu="1", priority=9))
    result = engine.cycle()  # "other" is bound; "waiting" cannot preempt it and is not tried
    assert [d.pod for d in result.bound] == ["default/other"] and tried == ["default/other"]


def test_taint_rejections_wait_for_node_changes_not_for_pods_leaving() -> None:
    taint = Taint(key="dedicated", value="infra", effect="NoSchedule")
    state = ClusterState(
        nodes=[node("n1", cpu="8", taints=[taint])],
        pods=[pod("infra", cpu="1", node_name="n1"), pod("want", cpu="1")],
    )
    engine = Engine(state)
    engine.cycle()
    tried = tried_pods(engine)
    probes = probed_nodes(engine)
    state.remove_pod("default/infra")  # room appears, but the taint is what rejected the pod
    assert engine.cycle().decisions == () and tried == [] and probes == []
    state.set_node_ready("n1", True)  # a node change: the taint may be gone, so the node is checked
    assert engine.cycle().decisions == () and probes == [0] and tried == []


def test_reported_device_events_wake_every_pod_waiting_on_devices() -> None:
    state = ClusterState(nodes=[node("n1", cpu="1")], pods=[pod("want", cpu="2")])
    engine = Engine(state)
    engine.cycle()
    tried = tried_pods(engine)
    engine.notify(ClusterEvent(ClusterEventKind.POD_ADDED, pod="default/elsewhere"))
    assert engine.cycle().decisions == () and tried == []
    # NodeResourcesFit does not wait for devices; a new node (reported by a driver) can help.
    engine.notify(ClusterEvent(ClusterEventKind.NODE_ADDED))
    engine.cycle()
    assert tried == ["default/want"]


def test_tolerating_pods_wake_on_node_changes_only_when_they_could_fit() -> None:
    toleration = Toleration(key="dedicated", operator="Exists", effect="NoSchedule")
    state = ClusterState(
        nodes=[node("n1", cpu="1"), node("n2", cpu="4")],
        pods=[pod("hog", cpu="4", node_name="n2"), pod("want", cpu="2", tolerations=[toleration])],
    )
    engine = Engine(state)
    engine.cycle()
    tried = tried_pods(engine)
    state.set_node_ready("n1", True)  # n1 changed, but 2 CPUs never fit its 1
    assert engine.cycle().decisions == () and tried == []


def test_backoff_delays_a_woken_pod_and_the_safety_net_wakes_one_without_events() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="2")], pods=[pod("a", cpu="2", node_name="n1"), pod("b", cpu="2")]
    )
    config = (
        QueueingConfig()
    )  # kube-scheduler's: 1 s backoff doubling to 10 s, 5 minutes at most unschedulable
    engine = Engine(state, policy=EnginePolicy(queueing=config))
    engine.cycle(0.0)
    assert engine.next_wakeup() == 300.0
    tried = tried_pods(engine)
    state.remove_pod("default/a")
    assert engine.cycle(0.5).decisions == () and tried == []  # woken, but backing off until 1 s
    assert engine.next_wakeup() == 1.0
    assert [d.pod for d in engine.cycle(1.0).bound] == ["default/b"]
    # A pod that waits 5 minutes with no event at all is tried again.
    state.add_pod(pod("c", cpu="2"))
    engine.cycle(2.0)
    assert tried == ["default/b", "default/c"]
    assert engine.cycle(100.0).decisions == ()
    engine.cycle(302.0)
    assert tried == ["default/b", "default/c", "default/c"]


def test_classes_of_both_key_kinds_backing_off_until_one_moment_are_both_tried_then() -> None:
    # Equivalence classes are keyed by bytes, pods without one and gangs by their str key; two such
    # classes parked in one cycle and woken in another fall due at the same moment (a live crash).
    queue = SchedulingQueue(QueueingConfig())
    freed = frozenset({ClusterEventKind.POD_LEFT})
    for unit, klass in (("default/a", b"class-a"), ("default/b", "default/b")):
        queue.park(unit, (0, 0.0, unit), klass, reason="full", kinds=freed, preempting=False, priority=0,
                   probes=(unit,), now=0.0)  # fmt: skip
    queue.begin_cycle(0.5)
    queue.observe([ClusterEvent(ClusterEventKind.POD_LEFT, node=0)], lambda *_: True, None, 0.5)
    assert queue.pop() is None and queue.next_wakeup() == 1.0  # both back off until 1 s
    queue.begin_cycle(1.0)
    assert sorted(unit for _, unit in iter(queue.pop, None)) == ["default/a", "default/b"]


def kueue_engine(*documents: str) -> Engine:
    manifests = load_text("\n---\n".join([QUEUES, *documents]))
    state = ClusterState.from_manifests(manifests)
    return Engine(state, admission=AdmissionState.from_manifests(manifests, journal=state.journal))


def test_a_workload_waiting_for_room_wakes_when_a_node_it_fits_frees_up() -> None:
    engine = kueue_engine(
        node_yaml("n1", 4), node_yaml("n2", 8), pod_yaml("small", 2), pod_yaml("wide", 8), pod_yaml("four", 4)
    )
    first = engine.cycle(0.0)
    # small and four are admitted (quota 8 GPUs: 2 + 4), wide waits on quota or room.
    assert {d.pod for d in first.bound} == {"default/small", "default/four"}
    state = engine.state
    tried = tried_pods(engine)
    node_of = {d.pod: d.node for d in first.bound}
    engine.workload_finished("default/small", 1.0)
    state.remove_pod("default/small")
    engine.cycle(1.0)
    if node_of["default/small"] == "n1":
        # 4 GPUs free on a 4-GPU node: an 8-GPU pod never fits there.
        assert "default/wide" not in tried
    engine.workload_finished("default/four", 2.0)
    state.remove_pod("default/four")
    result = engine.cycle(2.0)
    assert [d.pod for d in result.bound] == ["default/wide"]


def test_equivalent_workloads_wait_as_one_and_follow_each_other_in() -> None:
    pods = [pod_yaml(f"w{i}", 4) for i in range(4)]
    engine = kueue_engine(node_yaml("n1", 4), *pods)
    first = engine.cycle(0.0)
    assert [d.pod for d in first.bound] == ["default/w0"]
    tried = tried_pods(engine)
    # Three more of the same shape: none tried while nothing changes.
    assert engine.cycle(1.0).bound == [] and tried == []
    engine.workload_finished("default/w0", 2.0)
    engine.state.remove_pod("default/w0")
    second = engine.cycle(2.0)
    # One place freed: the first in line is tried and admitted, the next tried and parked, the last untried.
    assert [d.pod for d in second.bound] == ["default/w1"]
    assert tried == ["default/w1", "default/w2"]


def test_a_node_left_with_too_few_whole_gpus_is_ruled_out_by_count_before_its_filters() -> None:
    gpus = {"nvidia.com/gpu": "8"}
    state = ClusterState(
        nodes=[node("n1", extended=gpus)],
        pods=[
            pod("a", extended={"nvidia.com/gpu": "6"}, node_name="n1"),
            pod("b", extended={"nvidia.com/gpu": "2"}, node_name="n1"),
            pod("want", extended={"nvidia.com/gpu": "4"}),
        ],
    )
    engine = Engine(state, policy=EnginePolicy(preemption=False))
    assert [d.pod for d in engine.cycle().waiting] == ["default/want"]
    probed = probed_nodes(engine)
    tried = tried_pods(engine)
    state.remove_pod("default/b")  # 2 GPUs free, 4 wanted: counted, not filtered
    assert engine.cycle().decisions == ()
    assert probed == [] and tried == []
    state.remove_pod("default/a")
    assert [d.node for d in engine.cycle().bound] == ["n1"] and tried == ["default/want"]


def test_a_wake_observed_after_the_admission_phase_is_kept_for_the_next_cycle() -> None:
    # The consolidation phase observes its moves after the admission phase: a group woken there is
    # tried in the next cycle, not taken for still failing because its wake came in the last one.
    pods = [pod_yaml(f"w{i}", 4) for i in range(4)]
    engine = kueue_engine(node_yaml("n1", 4), *pods)
    assert [d.pod for d in engine.cycle(0.0).bound] == ["default/w0"]
    engine.workload_finished("default/w0", 1.0)
    engine.state.remove_pod("default/w0")
    engine._observe(1.0, None)  # what the consolidation phase does at the end of a cycle
    tried = tried_pods(engine)
    assert [d.pod for d in engine.cycle(2.0).bound] == ["default/w1"]
    assert tried == ["default/w1", "default/w2"]


def test_a_group_whose_woken_member_left_wakes_the_next_member() -> None:
    pods = [pod_yaml(f"w{i}", 4) for i in range(4)]
    engine = kueue_engine(node_yaml("n1", 4), *pods)
    engine.cycle(0.0)
    engine.workload_finished("default/w0", 1.0)
    engine.state.remove_pod("default/w0")
    engine._observe(1.0, None)  # the group wakes and w1, first in line, is requeued
    engine.state.remove_pod("default/w1")  # ... and deleted before its turn
    engine.pod_deleted("default/w1")
    tried = tried_pods(engine)
    assert [d.pod for d in engine.cycle(2.0).bound] == ["default/w2"]
    assert tried == ["default/w2", "default/w3"]


def test_equivalent_preempting_workloads_wait_as_one() -> None:
    # Quota for 8 GPUs, all of it held by low-priority pods; three 8-GPU pods of higher priority
    # could preempt them for quota, but no node has 8 GPUs: the first fails its placement, and the
    # two alike behind it wait on its verdict instead of evicting and placing in turn.
    lows = [pod_yaml(f"low{i}", 4) for i in range(2)]
    highs = [pod_yaml(f"high{i}", 8, priority=10) for i in range(3)]
    engine = kueue_engine(node_yaml("n1", 4), node_yaml("n2", 4), *lows)
    assert len(engine.cycle(0.0).bound) == 2
    for document in highs:
        engine.state.add_pod(load_text(document).of_kind(Pod)[0])
    tried = tried_pods(engine)
    result = engine.cycle(1.0)
    assert result.bound == [] and {d.pod for d in result.waiting} == {f"default/high{i}" for i in range(3)}
    assert tried == ["default/high0"]
    # A low pod finishing frees a node: the group's first member is looked at again, and alone.
    engine.workload_finished("default/low0", 2.0)
    engine.state.remove_pod("default/low0")
    looked = looked_at(engine)
    assert engine.cycle(2.0).bound == [] and set(looked) == {"default/high0"}
