"""Metrics on tiny hand-computed cases: percentiles, Jain, step integrals, fair shares, waits, fragmentation."""

from __future__ import annotations

import numpy as np
import pytest

from allot.sim.fairshare import contended, share_ratios, weighted_max_min
from allot.sim.metrics import completion_times, summarize, waits
from allot.sim.recorder import normalise_reason
from allot.sim.records import JobRecord
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
