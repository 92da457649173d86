"""`allot place` over a cluster with Kueue Jobs: the decisions `allot run` makes on the same objects.

A suspended Job sent to a queue waits as its placeholder pods (admitted all or none); a Job
running on an admission allot recorded holds its quota on the recorded flavor, though its pods
are not in the dump.
"""

from __future__ import annotations

from pathlib import Path

from allot.cli.queues_cmd import build_state
from allot.model.loader import load_paths, load_text
from allot.plan.planner import plan, resulting_objects

CLUSTER = Path(__file__).parent / "data" / "queued-jobs.yaml"


def test_a_running_jobs_recorded_admission_holds_quota_and_waiting_jobs_are_admitted_whole() -> None:
    result = plan(load_paths([CLUSTER]))
    # Quota 6 CPUs; the running Job holds 4 on pool-a: the 4-CPU Job waits whole, the 2-CPU one
    # is admitted and placed on pool a's node.
    assert {(d.pod, d.node) for d in result.bound} == {("default/fits.allot-0", "a-1")}
    assert [a.workload for a in result.admitted] == ["default/job-fits"]
    assert set(result.waiting) == {"default/waits.allot-0", "default/waits.allot-1"}
    assert all("insufficient unused quota for cpu" in r for r in result.waiting.values())
    # Placeholders never come out as pods to create.
    assert resulting_objects(result) == []


def test_without_the_recorded_admission_the_running_job_holds_nothing() -> None:
    manifests = load_text(CLUSTER.read_text().replace("allot.dev/job-admission", "example.com/other"))
    result = plan(manifests)
    assert sorted(d.pod for d in result.bound) == [
        "default/fits.allot-0",
        "default/waits.allot-0",
        "default/waits.allot-1",
    ]


def test_allot_queues_counts_the_running_job_as_admitted_and_the_suspended_ones_as_pending() -> None:
    state = build_state(load_paths([CLUSTER]))
    assert state.is_admitted("default/job-running")
    assert {k for k, e in state.entries.items() if not state.is_admitted(k)} == {
        "default/job-waits",
        "default/job-fits",
    }
    assert state.usage("team")[("pool-a", "cpu")] == 4000
