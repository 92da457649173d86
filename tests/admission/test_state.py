"""The engine-facing facade: cycles, equivalence parking, evicting marks, restore, status."""

from __future__ import annotations

import pytest

from allot.admission import (
    EVICTED_BY_PREEMPTION,
    IN_CLUSTER_QUEUE,
    AdmissionError,
    Mode,
    ParkReason,
)

from .builders import CQ, CohortB, admit_all, flavor, make_state, workload


def test_cohort_cycle_makes_queues_inactive() -> None:
    state = make_state(
        CQ("q").cohort("a").quota("default", cpu=4),
        cohorts=(CohortB("a").parent("b"), CohortB("b").parent("a")),
    )
    state.submit(workload("w", "lq-q", cpu=1))
    assert admit_all(state) == []
    assert state.pending_reason("ns/w") == "cohort a is in a cycle: a -> b -> a"
    assert state.status().cluster_queue("q").inactive == "cohort a is in a cycle: a -> b -> a"


def test_equivalent_workloads_are_parked_without_another_assignment() -> None:
    state = make_state(CQ("q").quota("default", cpu=2))
    for i in range(50):
        state.submit(workload(f"w{i}", "lq-q", created=i, cpu=3))  # none can ever fit
    state.submit(workload("other", "lq-q", created=99, cpu=1))
    assessed: set[str] = set()
    original = state._assignment

    def counting(entry):  # type: ignore[no-untyped-def]
        assessed.add(entry.workload.key)
        return original(entry)

    state._assignment = counting  # type: ignore[method-assign]
    assert admit_all(state) == ["ns/other"]
    assert assessed == {"ns/w0", "ns/other"}  # w1..w49 share w0's equivalence class
    assert state.status().cluster_queue("q").pending == 50
    # Freeing quota forgets the class: its first workload is assessed again, and when it still
    # cannot fit, the others are parked behind it again without an assignment of their own.
    state.finish("ns/other", 1)
    assessed.clear()
    assert admit_all(state, 1) == []
    assert assessed == {"ns/w0"}
    assert state.status().cluster_queue("q").pending == 50


def test_workloads_being_evicted_are_preferred_victims() -> None:
    state = make_state(CQ("q").quota("default", cpu=2).preemption(within="LowerPriority"))
    for name, at in (("old", 1.0), ("new", 2.0)):
        w = workload(name, "lq-q", cpu=1, created=at)
        state.submit(w)
        state.admit(w, state.assign(w), at)
    w = workload("p", "lq-q", cpu=1, priority=5, created=3)
    state.submit(w)
    assignment = state.assign(w)
    targets = state.preemption_targets(w, assignment)
    assert targets is not None and [t.workload_key for t in targets] == ["ns/new"]  # most recent first
    state.mark_evicting("ns/old")
    targets = state.preemption_targets(w, state.assign(w))
    assert targets is not None and [(t.workload_key, t.reason) for t in targets] == [
        ("ns/old", IN_CLUSTER_QUEUE)
    ]
    assert "ns/p" in targets[0].message("ns/p")


def test_admit_refuses_what_does_not_fit() -> None:
    state = make_state(CQ("q").quota("default", cpu=2))
    a, b = workload("a", "lq-q", cpu=2), workload("b", "lq-q", cpu=1)
    state.submit(a)
    state.submit(b)
    stale = state.assign(b)
    state.admit(a, state.assign(a), 0)
    with pytest.raises(
        AdmissionError, match="does not fit ClusterQueue q: cpu in flavor default needs 1, 0 available"
    ):
        state.admit(b, stale, 0)


def test_restore_counts_running_workloads_even_over_quota() -> None:
    state = make_state(
        CQ("q").group(
            ["cpu"],
            {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
            {"name": "ondemand", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
        ),
        flavors=(flavor("spot", labels={"pool": "spot"}), flavor("ondemand", labels={"pool": "od"})),
    )
    assignment = state.restore(workload("big", "lq-q", cpu=3), 0, node_labels={"pool": "od", "zone": "a"})
    assert dict(assignment.usage) == {("ondemand", "cpu"): 3000}
    status = state.status().cluster_queue("q")
    assert [(f.name, r.total, r.borrowed) for f in status.flavors for r in f.resources] == [
        ("spot", 0, 0),
        ("ondemand", 3000, 2000),
    ]
    assert state.assign(workload("more", "lq-q", cpu=1)).mode is Mode.FIT  # spot is still free


def test_preempt_then_admit_cycle() -> None:
    state = make_state(CQ("q").quota("default", cpu=2).preemption(within="LowerPriority"))
    low = workload("low", "lq-q", cpu=2, priority=0)
    state.submit(low)
    assert admit_all(state) == ["ns/low"]
    state.submit(workload("high", "lq-q", cpu=2, priority=9, created=1))
    (candidate,) = list(state.candidates(1))[:1]
    assignment = state.assign(candidate.workload)
    assert assignment.mode is Mode.PREEMPT
    for target in state.preemption_targets(candidate.workload, assignment) or ():
        state.evict(target.workload_key, EVICTED_BY_PREEMPTION, 1)
    assignment = state.assign(candidate.workload)
    assert assignment.mode is Mode.FIT
    state.admit(candidate.workload, assignment, 1)
    assert state.is_admitted("ns/high") and not state.is_admitted("ns/low")
    state.park(state.entries["ns/low"].workload, ParkReason.quota("preempted"))
    assert state.status().cluster_queue("q").pending == 1
