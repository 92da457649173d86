"""Property tests: quota limits hold everywhere after any sequence of operations,
and an uncommitted transaction restores the state exactly."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.admission import (
    EVICTED_BY_PODS_READY_TIMEOUT,
    EVICTED_BY_PREEMPTION,
    AdmissionConfig,
    AdmissionState,
    AfsConfig,
    Mode,
    ParkReason,
)
from allot.admission.tree import Node, local_quota
from fuzzing import examples

from .builders import CQ, CohortB, local_queue, make_state, workload

QUEUES = ("x", "y", "z")


def build(fair: bool) -> AdmissionState:
    # root (2) <- mid (borrowingLimit 3, lendingLimit 1) <- {x: 4 (borrow 2), y: 3 (lend 1)}; root <- z: 5
    return make_state(
        CQ("x").cohort("mid").quota("default", cpu=(4, 2)).preemption(within="LowerPriority", reclaim="Any"),
        CQ("y").cohort("mid").quota("default", cpu=(3, None, 1)).preemption(reclaim="LowerPriority").afs(),
        CQ("z")
        .cohort("root")
        .quota("default", cpu=5)
        .preemption(within="LowerOrNewerEqualPriority", reclaim="Any"),
        cohorts=(
            CohortB("root").quota("default", cpu=2),
            CohortB("mid").parent("root").quota("default", cpu=(0, 3, 1)),
        ),
        local_queues=(*(local_queue(f"ns/lq-{q}", q) for q in QUEUES), local_queue("ns/other-y", "y")),
        config=AdmissionConfig(fair_sharing=fair, afs=AfsConfig(half_life=100.0, sampling_interval=10.0)),
    )


def check_limits(state: AdmissionState) -> None:
    def walk(node: Node) -> None:
        for fr, used in node.usage.items():
            assert used >= 0
            if node.parent is None:
                assert used <= node.subtree_quota.get(fr, 0), f"{node} over its quota in {fr}"
            limit = node.borrowing_limit.get(fr)
            if limit is not None:
                assert used <= node.subtree_quota.get(fr, 0) + limit, f"{node} over its borrowing limit"
        for child in (*node.child_cohorts, *node.child_cqs):
            walk(child)

    for root in state.tree.roots():
        walk(root)
    # Usage is consistent: ClusterQueue usage is the sum of its admitted workloads, and each
    # cohort's usage is what its children use past their local quota.
    for name, node in state.tree.cqs.items():
        total: dict[tuple[str, str], int] = {}
        for record in state.admitted[name].values():
            for fr, value in record.usage.items():
                total[fr] = total.get(fr, 0) + value
        assert {k: v for k, v in node.usage.items() if v} == {k: v for k, v in total.items() if v}
    for node in state.tree.cohorts.values():
        expected: dict[tuple[str, str], int] = {}
        for child in (*node.child_cohorts, *node.child_cqs):
            for fr, used in child.usage.items():
                excess = max(0, used - local_quota(child, fr))
                if excess:
                    expected[fr] = expected.get(fr, 0) + excess
        assert {k: v for k, v in node.usage.items() if v} == expected


def snapshot(state: AdmissionState) -> Any:
    afs = state.afs
    return copy.deepcopy(
        (
            {n: dict(c.usage) for n, c in state.tree.cqs.items()},
            {n: dict(c.usage) for n, c in state.tree.cohorts.items()},
            {k: (e.state, e.order_time, e.requeues, e.flavors, e.waiting) for k, e in state.entries.items()},
            {n: sorted(a) for n, a in state.admitted.items()},
            {n: (dict(q._version), dict(q.parked), q.blocked) for n, q in state.queues.items()},
            {k: (dict(v.consumed), dict(v.penalty), dict(v.admitted)) for k, v in afs._ledgers.items()}
            if afs
            else None,
        )
    )


op = st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(QUEUES), st.integers(1, 5), st.integers(0, 3)),
    st.tuples(st.just("cycle"), st.booleans(), st.just(0), st.just(0)),
    st.tuples(st.just("finish"), st.integers(0, 50), st.just(0), st.just(0)),
    st.tuples(st.just("evict"), st.integers(0, 50), st.booleans(), st.just(0)),
)


def run(state: AdmissionState, ops: list[tuple[Any, ...]], prefix: str = "w", now: float = 0.0) -> float:
    counter = 0
    for kind, a, b, c in ops:
        now += 3.0
        if kind == "submit":
            lq = "other-y" if a == "y" and b % 2 else f"lq-{a}"
            state.submit(workload(f"{prefix}{counter}", lq, cpu=b, priority=c, created=now))
            counter += 1
        elif kind == "cycle":
            for candidate in state.candidates(now):
                assignment = state.assign(candidate.workload)
                if assignment.mode is Mode.PREEMPT and a:
                    targets = state.preemption_targets(candidate.workload, assignment)
                    for target in targets or ():
                        state.evict(target.workload_key, EVICTED_BY_PREEMPTION, now)
                    assignment = state.assign(candidate.workload)
                if assignment.mode is Mode.FIT:
                    with state.journal.transaction() as tx:
                        state.admit(candidate.workload, assignment, now)
                        tx.commit()
                else:
                    state.park(candidate.workload, ParkReason.quota(assignment.message()))
                check_limits(state)
        else:
            admitted = sorted(k for k, e in state.entries.items() if e.state == "Admitted")
            if not admitted:
                continue
            key = admitted[a % len(admitted)]
            if kind == "finish":
                state.finish(key, now)
            else:
                state.evict(key, EVICTED_BY_PODS_READY_TIMEOUT if b else EVICTED_BY_PREEMPTION, now)
        check_limits(state)
    return now


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(op, max_size=40), st.booleans())
def test_limits_hold_for_any_sequence(ops: list[tuple[Any, ...]], fair: bool) -> None:
    state = build(fair)
    run(state, ops)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(op, max_size=25), st.lists(op, max_size=25), st.booleans())
def test_rollback_restores_everything(
    before: list[tuple[Any, ...]], inside: list[tuple[Any, ...]], fair: bool
) -> None:
    state = build(fair)
    now = run(state, before)
    saved = snapshot(state)
    with state.journal.transaction():
        run(state, inside, prefix="v", now=now)
    assert snapshot(state) == saved
    check_limits(state)
