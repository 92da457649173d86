"""Metrics on tiny hand-computed cases: percentiles, Jain, step integrals, fair shares, waits, fragmentation."""

from __future__ import annotations

import numpy as np
import pytest

from allot.sim.fairshare import contended, share_ratios, usable_fair_shares, weighted_max_min
from allot.sim.metrics import completion_times, idle_while_waiting, summarize, waits
from allot.sim.recorder import normalise_reason
from allot.sim.records import DemandClasses, JobRecord, Occupancy, Samples, SimResult
from allot.sim.stats import durations, integral, jain, percentile, time_mean


def job(arrival: float, start: float | None, finish: float | None, tenant: str = "a") -> JobRecord:
    return JobRecord("ns/j", tenant, "s", "gpu", arrival, 1, 1.0, 10.0, False, start, finish, 0)


def test_percentiles_interpolate_linearly() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == pytest.approx(4.0 + 0.8 * 6.0)  # rank 0.95 * 4 = 3.8
    assert percentile(values, 100) == 10.0
    assert percentile([], 50) is None


@pytest.mark.parametrize(
    ("values", "expected"),
    [([1, 1, 1, 1], 1.0), ([1, 0, 0, 0], 0.25), ([2, 1], 9 / 10), ([0, 0], 1.0), ([], None)],
)
def test_jain(values: list[float], expected: float | None) -> None:
    assert jain(values) == (pytest.approx(expected) if expected is not None else None)


def test_step_functions_hold_until_the_next_sample() -> None:
    times = [0.0, 10.0, 30.0]
    values = [2.0, 4.0, 1.0]
    assert list(durations(times, 40.0)) == [10.0, 20.0, 10.0]
    assert integral(times, values, 40.0) == 2 * 10 + 4 * 20 + 1 * 10
    assert time_mean(times, values, 40.0) == pytest.approx(110 / 40)
    assert time_mean([], [], 10.0) is None


@pytest.mark.parametrize(
    ("capacity", "demands", "weights", "expected"),
    [
        (10, [3, 10, 10], [1, 1, 1], [3, 3.5, 3.5]),  # the small demand is met, the rest split evenly
        (12, [20, 20], [1, 2], [4, 8]),  # split by weight
        (12, [2, 20], [1, 2], [2, 10]),  # what the light tenant leaves goes to the other
        (10, [4, 3], [1, 1], [4, 3]),  # no contention: everyone gets its demand
        (6, [0, 9, 9], [5, 1, 1], [0, 3, 3]),  # no demand, no share, whatever the weight
        (9, [10, 10, 10], [1, 0, 2], [3, 0, 6]),  # weight 0 gets nothing
    ],
)
def test_weighted_max_min(
    capacity: float, demands: list[float], weights: list[float], expected: list[float]
) -> None:
    assert weighted_max_min(capacity, demands, weights) == pytest.approx(expected)


def test_share_ratios_over_the_contended_period_only() -> None:
    times = np.array([0.0, 10.0, 20.0])
    capacity = np.array([4.0, 4.0, 4.0])
    # 0-10: no contention; 10-20: both want 4 (fair 2 each) and a holds 3, b 1; 20-30: a alone.
    demand = np.array([[1.0, 1.0], [4.0, 4.0], [4.0, 0.0]])
    held = np.array([[1.0, 1.0], [3.0, 1.0], [4.0, 0.0]])
    assert list(contended(capacity, demand)) == [False, True, False]
    got, fair, seconds = share_ratios(times, 30.0, capacity, demand, held, [1.0, 1.0])
    assert seconds == 10.0
    assert list(got) == [30.0, 10.0]
    assert list(fair) == [20.0, 20.0]


def test_waits_count_jobs_still_waiting_until_the_end() -> None:
    jobs = [job(0, 5, 15), job(10, None, None), job(20, 20, None)]
    assert waits(jobs, 100.0) == [5.0, 90.0, 0.0]
    assert completion_times(jobs) == [15.0]


def test_reasons_group_without_names_and_counts() -> None:
    a = normalise_reason(
        "pod ns/x-1: 0/32 nodes are available: 16 Insufficient cpu, 16 node(s) had untolerated taint"
    )
    b = normalise_reason(
        "pod ns/y-7: 0/30 nodes are available: 14 Insufficient cpu, 16 node(s) had untolerated taint"
    )
    assert a == b == "no node fits: Insufficient cpu, node(s) had untolerated taint"
    # The same reasons in another order (kube-scheduler lists the most frequent first) are one reason.
    c = normalise_reason(
        "0/12 nodes are available: 9 node(s) had untolerated taint, 3 Insufficient cpu. "
        "preemption: 0/12 nodes are available: 9 Preemption is not helpful for scheduling, "
        "3 No preemption victims found for incoming pod."
    )
    d = normalise_reason(
        "0/12 nodes are available: 7 Insufficient cpu, 5 node(s) had untolerated taint. "
        "preemption: 0/12 nodes are available: 7 No preemption victims found for incoming pod, "
        "5 Preemption is not helpful for scheduling."
    )
    assert (
        c
        == d
        == (
            "no node fits: Insufficient cpu, node(s) had untolerated taint. preemption: no node fits: "
            "No preemption victims found for incoming pod, Preemption is not helpful for scheduling."
        )
    )
    assert normalise_reason("Preempted to accommodate a workload (ns/w-3) due to reclamation") == (
        "Preempted to accommodate a workload due to reclamation"
    )


def test_summary_of_a_hand_made_run() -> None:
    from .test_recorder import two_gpu_run

    summary = summarize(two_gpu_run())
    # One GPU held 0-100 s, both 100-200 s (of 2 GPUs): allocation 75 %.
    assert summary.allocation_pct == pytest.approx(75.0)
    assert summary.gpus == 2.0
    assert summary.completed == 2
    assert summary.wait.p50 == pytest.approx(50.0)  # waits 0 and 100


def demand_classes(whole_a: float, whole_b: float, shared_b: float) -> DemandClasses:
    """Eight whole GPUs both tenants' training can use, eight fractional ones only b's inference can."""
    whole = np.array([True] * 8 + [False] * 8)
    return DemandClasses(
        keys=[(0, 0), (1, 0), (1, 1)],
        masks=[whole, ~whole],
        demand=np.array([[whole_a, whole_b, shared_b]]),
        ready=np.ones((1, 16), dtype=np.bool_),
        ready_version=np.array([0]),
    )


@pytest.mark.parametrize(
    ("demands", "expected"),
    [
        # a could take the whole GPUs; b's two inference pods sit on the fractional ones, so of the
        # ten GPUs they can use together each gets five: b's two plus three whole ones.
        ((100.0, 4.0, 2.0), [5.0, 5.0]),
        # b asks for little: it gets it, a the rest of the whole GPUs.
        ((100.0, 1.0, 1.0), [7.0, 2.0]),
        # no contention on the GPUs they can use: each gets its demand.
        ((3.0, 2.0, 6.0), [3.0, 8.0]),
    ],
)
def test_usable_fair_shares_count_only_the_gpus_a_tenant_can_use(
    demands: tuple[float, float, float], expected: list[float]
) -> None:
    shares, demand = usable_fair_shares(demand_classes(*demands), 2, [1.0, 1.0])
    assert list(shares[0]) == pytest.approx(expected)
    assert list(demand[0]) == pytest.approx([demands[0], demands[1] + demands[2]])
    # The one-pool water-filling would give a the fractional GPUs too (16 - 6 = 10 in the first case).
    assert weighted_max_min(16, [demands[0], demands[1] + demands[2]], [1.0, 1.0])[0] >= expected[0]


def test_idle_while_waiting_counts_the_time_gpu_pods_wait() -> None:
    # Three samples: nothing waits (half the GPUs idle), a GPU pod waits (a quarter idle, none of it
    # usable by the pod), a GPU pod waits with two usable GPUs free.
    samples = Samples(
        time=np.array([0.0, 10.0, 20.0]),
        capacity=np.array([8.0, 8.0, 8.0]),
        busy=np.zeros(3),
        allocated=np.array([4.0, 6.0, 6.0]),
        compute=np.zeros(3),
        memory=np.zeros(3),
        fragmented=np.zeros(3),
        waiting=np.array([0.0, 1.0, 1.0]),
        wanted_free=np.array([0.0, 0.0, 2.0]),
        pending_pods=np.zeros(3, dtype=np.int64),
        running_pods=np.zeros(3, dtype=np.int64),
        tenant_allocated=np.zeros((3, 1)),
        tenant_demand=np.array([[4.1], [7.0], [7.0]]),
        tenant_pending=np.zeros((3, 1), dtype=np.int64),
    )
    empty = np.zeros(0)
    result = SimResult(
        scenario="s",
        policy="p",
        seed=0,
        tenants=["a"],
        weights=[1.0],
        nodes=[],
        gpu_nodes=[],
        gpu_labels=[],
        samples=samples,
        occupancy=Occupancy(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), empty, empty, empty),
        jobs=[],
        binds=[],
        runs=[],
        preemptions=[],
        admissions=[],
        pending_reasons={},
        demand_classes=demand_classes(0.0, 0.0, 0.0),
        end=30.0,
        events=0,
        cycles=0,
    )
    # The first ten seconds do not count although demand and holdings differ (by rounding).
    assert idle_while_waiting(result) == (pytest.approx(25.0), pytest.approx(12.5))
