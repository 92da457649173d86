"""One engine, two drivers: generated cases played with `allot run` on a real control plane, in
kube-scheduler's place and by the same procedure, decide every step as `allot place` plans it
from the same state. Skipped without the binaries (../shared/k8s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane import binaries_folder, skip_reason
from differential.allot_run import ALLOT_RUN, AllotRun, compare_live
from differential.case import Case, state_after
from differential.generate import generate
from differential.runner import Recorder, start_plane
from differential.validity import problems

# Fresh seeds (outside the corpus's range), each with a preemption: 9009 has shared GPUs,
# consumable capacity and a shared claim; 9018 DRA constraints, All mode, pod anti-affinity and
# topology spread.
SEEDS = ((9009, "small"), (9018, "small"))


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Case]]:
    if binaries_folder() is None:
        pytest.skip(skip_reason())
    plane = start_plane(tmp_path_factory.mktemp("allot-run-plane"))
    recorder = Recorder(plane, AllotRun(plane))
    try:
        yield [recorder.record(generate(seed, size=size)) for seed, size in SEEDS]
    finally:
        try:
            recorder.close()
        finally:
            plane.stop()


def test_allot_run_decides_each_step_as_allot_place_plans_it(cases: list[Case]) -> None:
    every = []
    for case in cases:
        assert case.kube == ALLOT_RUN
        steps = compare_live(case)
        assert len(steps) == len(case.steps) > 0
        differing = [f"{case.name} {s.pod}: {s.differences()}" for s in steps if s.differences()]
        assert differing == []
        every += steps
    # The cases exercise what the comparison covers: binds with devices, victims, pending reasons.
    assert any(s.run_devices for s in every)
    assert any(s.run_victims for s in every)
    assert any(s.run_node is None and s.run_message.startswith("0/") for s in every)


def test_what_allot_run_left_breaks_no_rule(cases: list[Case]) -> None:
    for case in cases:
        assert problems(state_after(case)) == []
