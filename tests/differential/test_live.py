"""The whole loop on fresh cases: generate, play on a real control plane with kube-scheduler v1.36,
record, compare with allot. Keeps the runner honest (the corpus test only reads what it recorded).
Skipped without the binaries (../shared/k8s)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import binaries_folder, skip_reason
from differential.case import key_of, load, save, state_after
from differential.compare import compare_case
from differential.features import gated
from differential.generate import generate
from differential.runner import Recorder, start_plane
from differential.validity import problems

# Seeds outside the corpus's range, without features allot lacks: MIG partitions, constraints, All
# mode, device taints, extended resources through DRA (9002); priorities with preemption, shared
# GPUs, NICs, a shared claim (9009).
FRESH = (9002, 9009)


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorder]:
    if binaries_folder() is None:
        pytest.skip(skip_reason())
    plane = start_plane(tmp_path_factory.mktemp("differential-plane"))
    recorder = Recorder(plane)
    try:
        yield recorder
    finally:
        recorder.close()
        plane.stop()


@pytest.mark.parametrize("seed", FRESH)
def test_a_fresh_case_from_kube_scheduler_agrees_with_allot(
    recorder: Recorder, seed: int, tmp_path: Path
) -> None:
    scenario = generate(seed)
    case = recorder.record(scenario)
    assert not gated(case.features)
    # One step per pending pod, in creation order; the API server's timestamps agree with it.
    assert [s.pod for s in case.steps] == [key_of(p) for p in scenario.pending]
    stamps = {key_of(p): p["metadata"]["creationTimestamp"] for p in case.pods()}
    assert [stamps[s.pod] for s in case.steps] == sorted(stamps[s.pod] for s in case.steps)
    # The input holds the recorded pods without a node, and the pods that ran with theirs.
    recorded = {s.pod for s in case.steps}
    assert all(bool(p["spec"].get("nodeName")) != (key_of(p) in recorded) for p in case.pods())
    assert problems(state_after(case)) == []
    report = compare_case(load(save(case, tmp_path)))
    assert not report.failures(), "\n".join(report.failures())
