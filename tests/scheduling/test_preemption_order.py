"""Preemption's choice among candidate nodes follows kube-scheduler's criteria, in its order.

kube-scheduler (pickOneNodeForPreemption): fewest PodDisruptionBudget violations, then the
lowest highest-priority victim, then the lowest sum of victim priorities (each counted as
priority + 2^31, so fewer victims weigh less even at negative priorities), then the fewest
victims, then the node whose highest-priority victims started *latest*, judged by the earliest
of them; the rest is a tie, which allot breaks with its seeded per-pod key.
"""

from __future__ import annotations

import yaml
from msgspec.structs import replace

from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.model.loader import load_text
from allot.plan.planner import explain, plan
from allot.scheduling.preemption import Preemptor
from allot.scheduling.scheduler import Scheduler, Unschedulable
from builders import node, pod
from ready_nodes import node_yaml
from scheduling.preemption_cases import CPU, PRIORITY_CLASSES, URGENT, cluster_yaml


def started(p: Pod, at: str) -> Pod:
    return replace(p, status=replace(p.status, phase="Running", start_time=at))


def choose(state: ClusterState, preemptor: str) -> tuple[str, tuple[str, ...]]:
    scheduler = Scheduler(state)
    failure = scheduler.place(preemptor)
    assert isinstance(failure, Unschedulable)
    choice = Preemptor(scheduler).preempt(preemptor, failure)
    assert choice is not None
    return choice.node, choice.victims


def test_among_equal_victims_the_node_whose_earliest_top_victim_started_latest() -> None:
    # Both nodes need two victims of priority 1. On n1 they started at 00:05 and 00:30, on n2 at
    # 00:10 and 00:20: n2's earliest (00:10) is later than n1's (00:05), so n2 is taken, although
    # n1 holds the single most recent pod.
    pods = [
        started(pod("c", cpu="2", priority=1, node_name="n2"), "2026-01-01T00:10:00Z"),
        started(pod("d", cpu="2", priority=1, node_name="n2"), "2026-01-01T00:20:00Z"),
        started(pod("a", cpu="2", priority=1, node_name="n1"), "2026-01-01T00:05:00Z"),
        started(pod("b", cpu="2", priority=1, node_name="n1"), "2026-01-01T00:30:00Z"),
        pod("urgent", cpu="4", priority=100),
    ]
    state = ClusterState(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=pods)
    assert choose(state, "default/urgent") == ("n2", ("default/c", "default/d"))


def test_only_the_highest_priority_victims_start_times_count() -> None:
    # n1's top victim (priority 5) started at 00:20, n2's at 00:10; n1's lower victim started
    # long before, and does not count. (Listed so that bind order says the opposite.)
    pods = [
        started(pod("b", cpu="2", priority=1, node_name="n1"), "2026-01-01T00:00:00Z"),
        started(pod("a", cpu="2", priority=5, node_name="n1"), "2026-01-01T00:20:00Z"),
        started(pod("d", cpu="2", priority=1, node_name="n2"), "2026-01-01T00:30:00Z"),
        started(pod("c", cpu="2", priority=5, node_name="n2"), "2026-01-01T00:10:00Z"),
        pod("urgent", cpu="4", priority=100),
    ]
    state = ClusterState(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=pods)
    assert choose(state, "default/urgent")[0] == "n1"


def test_the_sum_of_priorities_counts_each_victim_above_zero() -> None:
    # Two victims of priority -5 on n1 sum to less than one on n2 in plain numbers (-10 < -5),
    # but kube-scheduler adds 2^31 to each priority first: one victim weighs less, n2 is taken.
    pods = [
        pod("a", cpu="2", priority=-5, node_name="n1"),
        pod("b", cpu="2", priority=-5, node_name="n1"),
        pod("c", cpu="4", priority=-5, node_name="n2"),
        pod("urgent", cpu="4", priority=0),
    ]
    state = ClusterState(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=pods)
    assert choose(state, "default/urgent") == ("n2", ("default/c",))


def test_a_lower_highest_priority_beats_fewer_victims() -> None:
    # n1: two victims of priority 1; n2: one victim of priority 2. The highest priority decides
    # before the count does.
    pods = [
        pod("a", cpu="2", priority=1, node_name="n1"),
        pod("b", cpu="2", priority=1, node_name="n1"),
        pod("c", cpu="4", priority=2, node_name="n2"),
        pod("urgent", cpu="4", priority=100),
    ]
    state = ClusterState(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=pods)
    assert choose(state, "default/urgent") == ("n1", ("default/a", "default/b"))


def test_allot_place_evicts_the_victims_kube_scheduler_would() -> None:
    # The case checked against the real kube-scheduler in tests/live/test_preemption_order.py.
    result = plan(load_text(cluster_yaml() + "\n---\n" + URGENT))
    assert sorted(e.pod for e in result.evicted) == ["default/c", "default/d"]
    assert {b.pod: b.node for b in result.bound} == {"default/urgent": "n2"}


def _pod_yaml(name: str, *, priority_class: str, node: str | None = None, selector: str | None = None) -> str:
    """A pod asking for 3 CPUs: running on `node`, or pending (only for node `selector` if given)."""
    spec = {
        "priorityClassName": priority_class,
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "3"}}}],
    }
    obj: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }
    if node is not None:
        spec["nodeName"] = node
        obj["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    if selector is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": selector}
    return yaml.safe_dump(obj)


def test_allot_place_deletes_a_victim_rather_than_placing_it_again() -> None:
    # urgent may only use n1 and takes it from mid. kube-scheduler deletes mid (as `allot run`
    # does); had the plan kept it pending, mid (priority 50) would in turn have preempted filler
    # (priority 1) on n2, a second eviction no scheduler makes.
    middle = yaml.safe_dump(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "middle"},
            "value": 50,
        }
    )
    objects = [
        PRIORITY_CLASSES,
        middle,
        node_yaml("n1", cpu=CPU),
        node_yaml("n2", cpu=CPU),
        _pod_yaml("mid", priority_class="middle", node="n1"),
        _pod_yaml("filler", priority_class="low", node="n2"),
        _pod_yaml("urgent", priority_class="urgent", selector="n1"),
    ]
    result = plan(load_text("\n---\n".join(objects)))
    assert [(e.pod, e.preemptor) for e in result.evicted] == [("default/mid", "default/urgent")]
    assert {b.pod: b.node for b in result.bound} == {"default/urgent": "n1"}
    assert "default/mid" not in result.state.pods and "default/mid" not in result.waiting
    assert result.state.pods["default/filler"].bound
    assert explain(result, "default/mid").summary.startswith("preempted for default/urgent (")
