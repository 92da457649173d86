"""Flavor assignment (Kueue's flavorassigner): order, fungibility, matching, messages."""

from __future__ import annotations

import pytest

from allot.admission import Mode, PodSet, Workload

from .builders import CQ, flavor, flavor_quotas, make_state, workload

GPU = "nvidia.com/gpu"


def two_flavors(first: str | int, second: str | int, *, cohort_spare: int = 0, **fungibility: str) -> CQ:
    cq = (
        CQ("q")
        .cohort("c")
        .group(["cpu"], flavor_quotas("first", cpu=first), flavor_quotas("second", cpu=second))
    )
    if fungibility:
        cq.fungibility(**fungibility)
    return cq


def lender(spare: int) -> CQ:
    return (
        CQ("lender")
        .cohort("c")
        .group(["cpu"], flavor_quotas("first", cpu=spare), flavor_quotas("second", cpu=0))
    )


def chosen(state, w: Workload) -> tuple[str, Mode, int]:
    assignment = state.assign(w)
    (ps,) = assignment.pod_sets
    choice = ps.flavors["cpu"]
    return choice.flavor, assignment.mode, assignment.borrowing


def test_first_flavor_that_fits() -> None:
    state = make_state(two_flavors(2, 4), lender(0))
    assert chosen(state, workload("w", "lq-q", cpu=1)) == ("first", Mode.FIT, 0)
    assert chosen(state, workload("w", "lq-q", cpu=3)) == ("second", Mode.FIT, 0)


@pytest.mark.parametrize(
    ("when_can_borrow", "expected"),
    [("MayStopSearch", ("first", Mode.FIT, 1)), ("TryNextFlavor", ("second", Mode.FIT, 0))],
)
def test_when_can_borrow(when_can_borrow: str, expected: tuple[str, Mode, int]) -> None:
    # 3 CPUs: "first" fits by borrowing from the lender (level 1), "second" fits without.
    state = make_state(two_flavors(2, 4, borrow=when_can_borrow), lender(4))
    assert chosen(state, workload("w", "lq-q", cpu=3)) == expected


def preempt_setup(**fungibility: str):
    cq = CQ("q").group(["cpu"], flavor_quotas("first", cpu=2), flavor_quotas("second", cpu=2))
    cq.preemption(within="LowerPriority")
    if fungibility:
        cq.fungibility(**fungibility)
    state = make_state(cq)
    low = workload("low", "lq-q", cpu=2, priority=0)
    state.submit(low)
    state.admit(low, state.assign(low), 0)  # fills "first"
    return state


def test_when_can_preempt_try_next_flavor_prefers_free_flavor() -> None:
    state = preempt_setup()
    assert chosen(state, workload("w", "lq-q", cpu=2, priority=5)) == ("second", Mode.FIT, 0)


def test_when_can_preempt_may_stop_search_preempts_in_first() -> None:
    state = preempt_setup(preempt="MayStopSearch")
    flavor_name, mode, _ = chosen(state, workload("w", "lq-q", cpu=2, priority=5))
    assert (flavor_name, mode) == ("first", Mode.PREEMPT)


@pytest.mark.parametrize(
    ("preference", "expected"), [("BorrowingOverPreemption", "second"), ("PreemptionOverBorrowing", "first")]
)
def test_preference(preference: str, expected: str) -> None:
    # "first": within nominal but needs preemption; "second": fits only by borrowing.
    cq = CQ("q").cohort("c").group(["cpu"], flavor_quotas("first", cpu=2), flavor_quotas("second", cpu=0))
    cq.preemption(within="LowerPriority").fungibility("TryNextFlavor", "TryNextFlavor", preference)
    state = make_state(
        cq,
        CQ("lender")
        .cohort("c")
        .group(["cpu"], flavor_quotas("first", cpu=0), flavor_quotas("second", cpu=4)),
    )
    low = workload("low", "lq-q", cpu=2)
    state.submit(low)
    state.admit(low, state.assign(low), 0)
    assert chosen(state, workload("w", "lq-q", cpu=2, priority=5))[0] == expected


def test_resources_of_one_group_share_a_flavor() -> None:
    cq = CQ("q").group(
        ["cpu", GPU],
        flavor_quotas("a100", cpu=8, **{"nvidia.com__gpu": 1}),
        flavor_quotas("h100", cpu=8, **{"nvidia.com__gpu": 8}),
    )
    state = make_state(cq)
    assignment = state.assign(workload("w", "lq-q", cpu=1, **{"nvidia.com__gpu": 4}))
    (ps,) = assignment.pod_sets
    assert {ps.flavors["cpu"].flavor, ps.flavors[GPU].flavor} == {"h100"}
    assert dict(assignment.usage) == {("h100", "cpu"): 1000, ("h100", GPU): 4}


def test_taints_affinity_and_messages() -> None:
    cq = CQ("q").group(
        ["cpu"], flavor_quotas("spot", cpu=8), flavor_quotas("h100", cpu=8), flavor_quotas("tolerant", cpu=1)
    )
    flavors = (
        flavor("spot", taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]),
        flavor("h100", labels={"gpu": "h100"}),
        flavor(
            "tolerant",
            taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}],
            tolerations=[{"key": "spot", "operator": "Exists"}],
        ),
    )
    state = make_state(cq, flavors=flavors)
    w = workload("w", "lq-q", cpu=2, node_selector={"gpu": "a100"})
    assignment = state.assign(w)
    assert assignment.mode is Mode.NO_FIT
    assert assignment.message() == (
        "couldn't assign flavors to pod set main: flavor h100 doesn't match node affinity, "
        "insufficient quota for cpu in flavor tolerant, previously considered podsets requests (0) + "
        "current podset request (2) > maximum capacity (1), untolerated taint spot=true:NoSchedule in flavor spot"
    )
    fits = state.assign(workload("w2", "lq-q", cpu=1, node_selector={"gpu": "a100"}))
    assert fits.pod_sets[0].flavors["cpu"].flavor == "tolerant"
    node_filter = state.node_filter(fits, "main")
    assert [t.key for t in node_filter.tolerations] == ["spot"]
    assert state.flavor_node_filter("h100").node_labels == {"gpu": "h100"}


def test_insufficient_unused_quota_message() -> None:
    state = make_state(CQ("q").quota("h100", **{"nvidia.com__gpu": 8}))
    big = workload("big", "lq-q", **{"nvidia.com__gpu": 6})
    state.submit(big)
    state.admit(big, state.assign(big), 0)
    assignment = state.assign(workload("w", "lq-q", **{"nvidia.com__gpu": 6}))
    assert assignment.mode is Mode.PREEMPT
    assert assignment.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, "
        "4 more needed"
    )


def test_unavailable_resource_and_later_pod_sets_see_earlier_ones() -> None:
    state = make_state(CQ("q").quota("default", cpu=4))
    assignment = state.assign(workload("w", "lq-q", cpu=1, memory="1Gi"))
    assert (
        assignment.message()
        == "couldn't assign flavors to pod set main: resource memory unavailable in ClusterQueue"
    )
    two = Workload(
        key="ns/two",
        namespace="ns",
        name="two",
        queue_name="lq-q",
        pod_sets=(
            PodSet("driver", 1, {"cpu": 2000}),
            PodSet("workers", 3, {"cpu": 1000}),
        ),
    )
    result = state.assign(two)
    assert result.mode is Mode.NO_FIT
    assert (
        "previously considered podsets requests (2) + current podset request (3) > maximum capacity (4)"
        in (result.message())
    )
