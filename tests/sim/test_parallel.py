"""Policies run in worker processes give exactly what they give in-process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from allot.sim.parallel import Task, TaskFailed, run_all
from allot.sim.records import SimResult
from allot.sim.simulator import SimOptions, Simulation

from .cases import SMALL, prepared


def tasks() -> list[Task]:
    p = prepared(SMALL, policies=["fifo-priority", "fair"])

    def task(index: int) -> Task:
        def run(progress: Callable[[float], None]) -> SimResult:
            options = SimOptions(horizon=p.horizon)
            policy = p.policies[index]
            return Simulation(
                manifests=p.manifests, workload=p.workload, policy=policy, options=options, progress=progress
            ).run()

        return run

    return [task(0), task(1)]


def test_workers_give_the_same_results_as_one_process() -> None:
    seen: list[tuple[int, float]] = []
    parallel = run_all(tasks(), workers=2, progress=lambda i, now: seen.append((i, now)))
    serial = run_all(tasks(), workers=1)
    for a, b in zip(parallel, serial, strict=True):
        assert a.policy == b.policy
        assert a.trace == b.trace
        assert a.samples.allocated.tolist() == b.samples.allocated.tolist()
    assert {i for i, _ in seen} == {0, 1}


def test_a_failing_task_is_reported() -> None:
    def broken(progress: Callable[[float], None]) -> SimResult:
        raise ValueError("no luck")

    with pytest.raises(TaskFailed, match="no luck") as caught:
        run_all([*tasks(), broken], workers=2)
    assert caught.value.kind == "ValueError" and caught.value.index == 2
