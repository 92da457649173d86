"""Gangs are all-or-nothing; preemption picks minimal victims and respects budgets and priorities."""

from __future__ import annotations

from msgspec.structs import replace

from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector
from allot.model.scheduling import PodDisruptionBudget, PodDisruptionBudgetStatus
from allot.scheduling.gang import GangPlacement, GangUnschedulable, gangs, place_gang
from allot.scheduling.preemption import Preemptor
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from builders import (
    claim_spec,
    claim_template,
    device_class,
    disruption_budget,
    gpu_slice,
    node,
    pod,
)

GROUP = {"kueue.x-k8s.io/pod-group-name": "train"}


def group_pod(name: str, total: int, cpu: str = "3") -> object:
    return pod(name, cpu=cpu, labels=GROUP, annotations={"kueue.x-k8s.io/pod-group-total-count": str(total)})


def test_gang_that_fits_is_placed_whole() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=[group_pod(f"w{i}", 2) for i in range(2)]
    )
    scheduler = Scheduler(state)
    gang = gangs(state.pods.values())["default/train"]
    result = place_gang(state, gang, scheduler.schedule)
    assert isinstance(result, GangPlacement)
    assert sorted(p.node for p in result.placements) == ["n1", "n2"]
    assert all(state.pods[k].bound for k in gang.members)


def test_gang_that_fits_all_but_one_places_none() -> None:
    state = ClusterState(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=[group_pod(f"w{i}", 3) for i in range(3)]
    )
    scheduler = Scheduler(state)
    gang = gangs(state.pods.values())["default/train"]
    result = place_gang(state, gang, scheduler.schedule)
    assert isinstance(result, GangUnschedulable)
    assert result.reason.startswith(
        "pod group default/train: 2/3 pods fit; default/w2: 0/2 nodes are available"
    )
    assert not any(state.pods[k].bound for k in gang.members)
    assert state.nodes.requested["cpu"].sum() == 0
    assert check(state) == []


def test_gang_waits_for_missing_members() -> None:
    state = ClusterState(nodes=[node("n1", cpu="16")], pods=[group_pod("w0", 2)])
    gang = gangs(state.pods.values())["default/train"]
    result = place_gang(state, gang, Scheduler(state).schedule)
    assert isinstance(result, GangUnschedulable)
    assert result.reason == "waiting for 1 more pod(s) of group default/train"


def _full_cluster(*bound: tuple[str, int, str]) -> ClusterState:
    pods = [
        pod(name, cpu="2", priority=prio, node_name=n, labels={"app": name.rstrip("0123456789")})
        for name, prio, n in bound
    ]
    return ClusterState(nodes=[node("n1", cpu="4"), node("n2", cpu="4")], pods=pods)


def test_preemption_picks_the_node_with_the_least_important_victims() -> None:
    state = _full_cluster(("a", 10, "n1"), ("b", 10, "n1"), ("c", 1, "n2"), ("d", 5, "n2"))
    state.add_pod(pod("urgent", cpu="2", priority=100))
    scheduler = Scheduler(state)
    failure = scheduler.place("default/urgent")
    assert isinstance(failure, Unschedulable)
    choice = Preemptor(scheduler).preempt("default/urgent", failure)
    assert choice is not None
    # n2 holds lower priorities (1 and 5); one victim is enough, and it is the lowest.
    assert choice.node == "n2" and choice.victims == ("default/c",)
    # Deciding changed nothing.
    assert all(state.pods[k].bound for k in ("default/a", "default/b", "default/c", "default/d"))


def test_preemption_never_takes_equal_or_higher_priority_pods() -> None:
    state = _full_cluster(("a", 100, "n1"), ("b", 100, "n1"), ("c", 100, "n2"), ("d", 200, "n2"))
    state.add_pod(pod("p", cpu="2", priority=100))
    scheduler = Scheduler(state)
    failure = scheduler.place("default/p")
    assert isinstance(failure, Unschedulable)
    assert Preemptor(scheduler).preempt("default/p", failure) is None


def test_preemption_policy_never_is_honoured() -> None:
    state = _full_cluster(("a", 1, "n1"), ("b", 1, "n1"), ("c", 1, "n2"), ("d", 1, "n2"))
    state.add_pod(pod("p", cpu="2", priority=100, preemption_policy="Never"))
    scheduler = Scheduler(state)
    failure = scheduler.place("default/p")
    assert isinstance(failure, Unschedulable)
    assert Preemptor(scheduler).preempt("default/p", failure) is None


def test_preemption_avoids_violating_disruption_budgets() -> None:
    pods = [
        pod("guarded1", cpu="2", priority=1, node_name="n1", labels={"app": "guarded"}),
        pod("guarded2", cpu="2", priority=1, node_name="n1", labels={"app": "guarded"}),
        pod("free1", cpu="2", priority=5, node_name="n2", labels={"app": "free"}),
        pod("free2", cpu="2", priority=5, node_name="n2", labels={"app": "free"}),
        pod("urgent", cpu="2", priority=100),
    ]
    state = ClusterState(
        nodes=[node("n1", cpu="4"), node("n2", cpu="4")],
        pods=pods,
        disruption_budgets=[disruption_budget("keep-guarded", {"app": "guarded"}, min_available=2)],
    )
    scheduler = Scheduler(state)
    failure = scheduler.place("default/urgent")
    assert isinstance(failure, Unschedulable)
    choice = Preemptor(scheduler).preempt("default/urgent", failure)
    assert choice is not None
    # Lower priorities live on n1, but taking one would break the budget.
    assert choice.node == "n2" and choice.violations == 0 and len(choice.victims) == 1


def _preemption_choice(
    budget: PodDisruptionBudget, *, low_namespace: str = "default"
) -> tuple[str, list[str]]:
    """Node n1 full with two low-priority pods (app=guarded), n2 full with one of middle priority;
    where a high-priority pod preempts (node, victims) with this budget in force."""
    guarded = {
        "namespace": low_namespace,
        "cpu": "4",
        "priority": 10,
        "node_name": "n1",
        "labels": {"app": "guarded"},
    }
    pods = [
        pod("guarded-1", **guarded),
        pod("guarded-2", **guarded),
        pod("mid", cpu="8", priority=500, node_name="n2", labels={"app": "mid"}),
        pod("urgent", cpu="4", priority=1000),
    ]
    state = ClusterState(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")], pods=pods, disruption_budgets=[budget]
    )
    scheduler = Scheduler(state)
    failure = scheduler.place("default/urgent")
    assert isinstance(failure, Unschedulable)
    choice = Preemptor(scheduler).preempt("default/urgent", failure)
    assert choice is not None
    return choice.node, sorted(choice.victims)


def test_preemption_reads_the_allowance_the_disruption_controller_counted() -> None:
    written = disruption_budget("guard", {"app": "guarded"}, min_available=1)
    # By the pods alone one of the two guarded pods may go: the lower priority victim wins (n1).
    assert _preemption_choice(written) == ("n1", ["default/guarded-1"])
    # The controller counted no pod healthy (none is Ready yet) and allows no disruption: as
    # kube-scheduler does (measured on the v1.36 control plane), allot takes the pod on n2.
    counted = replace(
        written,
        status=PodDisruptionBudgetStatus(
            observed_generation=1,
            disruptions_allowed=0,
            current_healthy=0,
            desired_healthy=1,
            expected_pods=2,
        ),
    )
    assert _preemption_choice(counted) == ("n2", ["default/mid"])
    # A pod whose eviction the budget already counted breaks nothing more.
    disrupted = replace(
        counted, status=replace(counted.status, disrupted_pods={"guarded-1": "2026-12-04T05:00:00Z"})
    )
    assert _preemption_choice(disrupted) == ("n1", ["default/guarded-1"])


def test_a_budget_with_an_empty_selector_covers_no_pod_in_preemption() -> None:
    # kube-scheduler's preemption reads a nil or empty selector as covering nothing (the disruption
    # controller reads an empty one as every pod of the namespace; measured on the v1.36 control
    # plane, kube-scheduler then preempts the pod such a budget would keep).
    base = disruption_budget("everything", {}, min_available=2)
    empty = replace(
        base,
        metadata=replace(base.metadata, namespace="team"),
        spec=replace(base.spec, selector=LabelSelector()),
    )
    where, victims = _preemption_choice(empty, low_namespace="team")
    assert where == "n1" and len(victims) == 1 and victims[0].startswith("team/guarded-")
    # A budget naming the label covers them, and the victim moves to n2.
    naming = replace(empty, spec=replace(empty.spec, selector=LabelSelector(match_labels={"app": "guarded"})))
    assert _preemption_choice(naming, low_namespace="team") == ("n2", ["default/mid"])


def _high_waits_for_the_gpu_low_holds(
    profile: Profile | None = None,
) -> tuple[ClusterState, Scheduler, Unschedulable]:
    """One node with one GPU that a low-priority pod holds; a high-priority pod asks for it."""
    template = claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1)))
    state = ClusterState(
        nodes=[node("n1")],
        slices=[gpu_slice("n1", 1)],
        classes=[device_class()],
        templates=[template],
        pods=[pod("low", claims={"gpu": "one-gpu"}, priority=1)],
    )
    scheduler = Scheduler(state, {profile.scheduler_name: profile} if profile else None)
    assert isinstance(scheduler.schedule("default/low"), Placement)
    state.add_pod(pod("high", claims={"gpu": "one-gpu"}, priority=10))
    failure = scheduler.place("default/high")
    assert isinstance(failure, Unschedulable)
    assert failure.message == "0/1 nodes are available: 1 cannot allocate all claims."
    return state, scheduler, failure


def test_preemption_frees_devices_of_victims() -> None:
    state, scheduler, failure = _high_waits_for_the_gpu_low_holds()
    choice = Preemptor(scheduler).preempt("default/high", failure)
    assert choice is not None and choice.victims == ("default/low",)
    for victim in choice.victims:
        state.unbind(victim)
    placed = scheduler.schedule("default/high")
    assert isinstance(placed, Placement)
    assert check(state) == []


def test_preempt_for_devices_false_never_preempts_for_devices_as_kube_scheduler() -> None:
    # kube-scheduler's DynamicResources reports "cannot allocate all claims" as unresolvable:
    # preemption is "not helpful" there, however low the pod holding the device.
    profile = Profile(plugin_args={"DynamicResources": {"preemptForDevices": False}})
    _, scheduler, failure = _high_waits_for_the_gpu_low_holds(profile)
    attempt = Preemptor(scheduler).attempt("default/high", failure)
    assert attempt.candidate is None
    assert (
        attempt.message == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def _high_short_of_cpu_where_low_holds_the_gpu(
    profile: Profile | None = None,
) -> tuple[Scheduler, Unschedulable]:
    """As above, but the node also lacks CPU for both: the pod fails on CPU (a reason preemption can
    resolve in kube-scheduler too), and only the device tells the two behaviours apart."""
    template = claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1)))
    state = ClusterState(
        nodes=[node("n1", cpu="4")],
        slices=[gpu_slice("n1", 1)],
        classes=[device_class()],
        templates=[template],
        pods=[pod("low", cpu="3", claims={"gpu": "one-gpu"}, priority=1)],
    )
    scheduler = Scheduler(state, {profile.scheduler_name: profile} if profile else None)
    assert isinstance(scheduler.schedule("default/low"), Placement)
    state.add_pod(pod("high", cpu="3", claims={"gpu": "one-gpu"}, priority=10))
    failure = scheduler.place("default/high")
    assert isinstance(failure, Unschedulable)
    assert failure.message == "0/1 nodes are available: 1 Insufficient cpu."
    return scheduler, failure


def test_preemption_counts_a_victims_devices_as_freed_on_a_node_short_of_cpu() -> None:
    scheduler, failure = _high_short_of_cpu_where_low_holds_the_gpu()
    choice = Preemptor(scheduler).preempt("default/high", failure)
    assert choice is not None and choice.victims == ("default/low",)


def test_preempt_for_devices_false_keeps_a_victims_devices_allocated_in_the_dry_run() -> None:
    # kube-scheduler v1.36's DRA plugin does not see the dry run's removals: the victim frees its
    # CPU but not its GPU there, so the node is no candidate and the pod waits.
    profile = Profile(plugin_args={"DynamicResources": {"preemptForDevices": False}})
    scheduler, failure = _high_short_of_cpu_where_low_holds_the_gpu(profile)
    attempt = Preemptor(scheduler).attempt("default/high", failure)
    assert attempt.candidate is None
    assert attempt.message == "preemption: 0/1 nodes are available: 1 cannot allocate all claims."
    # The dry run changed nothing: the victim still runs and holds its GPU.
    state = scheduler.state
    assert state.pods["default/low"].bound and check(state) == []


def test_a_victim_in_a_gang_takes_its_whole_gang_with_it() -> None:
    annotations = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    state = ClusterState(
        nodes=[node("n1", cpu="2"), node("n2", cpu="2")],
        pods=[
            pod("w0", cpu="2", priority=1, labels=GROUP, annotations=annotations, node_name="n1"),
            pod("w1", cpu="2", priority=1, labels=GROUP, annotations=annotations, node_name="n2"),
        ],
    )
    state.add_pod(pod("urgent", cpu="2", priority=100))
    scheduler = Scheduler(state)
    failure = scheduler.place("default/urgent")
    assert isinstance(failure, Unschedulable)
    choice = Preemptor(scheduler).preempt("default/urgent", failure)
    assert choice is not None and choice.node == "n1"
    # Only w0 is in the way, but a gang is never left partly running.
    assert choice.victims == ("default/w0", "default/w1")
