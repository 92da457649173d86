"""Classic and fair-sharing preemption targets (fairshare.md §1.3, §1.5; Kueue's preemption package)."""

from __future__ import annotations

import copy

import pytest

from allot.admission import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    AdmissionConfig,
    AdmissionState,
    Mode,
)
from allot.model.kueue_config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE

from .builders import CQ, CohortB, make_state, workload


def place(
    state: AdmissionState, key: str, queue: str, *, cpu: int, priority: int = 0, at: float = 0.0
) -> None:
    """Submit and admit a workload at time `at` (it must fit)."""
    w = workload(key, queue, cpu=cpu, priority=priority, created=at)
    state.submit(w)
    assignment = state.assign(w)
    assert assignment.mode is Mode.FIT, assignment.message()
    state.admit(w, assignment, at)


def targets_for(
    state: AdmissionState, key: str, queue: str, *, cpu: int, priority: int = 0, at: float = 100.0
):
    w = workload(key, queue, cpu=cpu, priority=priority, created=at)
    state.submit(w)
    assignment = state.assign(w)
    before = (
        copy.deepcopy({n: dict(c.usage) for n, c in state.tree.cqs.items()}),
        copy.deepcopy({n: dict(c.usage) for n, c in state.tree.cohorts.items()}),
    )
    found = state.preemption_targets(w, assignment)
    after = (
        copy.deepcopy({n: dict(c.usage) for n, c in state.tree.cqs.items()}),
        copy.deepcopy({n: dict(c.usage) for n, c in state.tree.cohorts.items()}),
    )
    assert before == after, "a preemption what-if left usage behind"
    return assignment, None if found is None else [(t.workload_key, t.reason) for t in found]


# --- within the ClusterQueue -------------------------------------------------------


def lone(policy: str) -> AdmissionState:
    state = make_state(CQ("q").quota("default", cpu=4).preemption(within=policy))
    place(state, "old-low", "lq-q", cpu=2, priority=1, at=1)
    place(state, "new-high", "lq-q", cpu=2, priority=5, at=2)
    return state


@pytest.mark.parametrize(
    ("policy", "priority", "expected"),
    [
        ("Never", 3, None),
        ("LowerPriority", 3, [("ns/old-low", IN_CLUSTER_QUEUE)]),
        ("LowerPriority", 1, None),  # equal priority is not lower
        ("LowerPriority", 9, [("ns/old-low", IN_CLUSTER_QUEUE)]),  # lowest priority goes first
    ],
)
def test_within_cluster_queue(policy: str, priority: int, expected) -> None:
    state = lone(policy)
    assignment, found = targets_for(state, "p", "lq-q", cpu=2, priority=priority)
    assert assignment.mode is Mode.PREEMPT
    assert found == expected


@pytest.mark.parametrize(
    ("victim_created", "expected"), [(200.0, [("ns/v", IN_CLUSTER_QUEUE)]), (50.0, None)]
)
def test_lower_or_newer_equal_priority(victim_created: float, expected) -> None:
    state = make_state(CQ("q").quota("default", cpu=2).preemption(within="LowerOrNewerEqualPriority"))
    place(state, "v", "lq-q", cpu=2, priority=3, at=victim_created)
    # The preemptor was created at 100: it may preempt an equal-priority workload created later only.
    _, found = targets_for(state, "p", "lq-q", cpu=2, priority=3, at=100.0)
    assert found == expected


def test_most_recently_admitted_goes_first_and_targets_are_minimised() -> None:
    state = make_state(CQ("q").quota("default", cpu=4).preemption(within="LowerPriority"))
    place(state, "a", "lq-q", cpu=1, priority=0, at=1)
    place(state, "b", "lq-q", cpu=2, priority=1, at=2)
    place(state, "c", "lq-q", cpu=1, priority=1, at=3)
    # Order: a (lowest priority), then c (newer), then b. Removing a, c frees 2: fits.
    _, found = targets_for(state, "p", "lq-q", cpu=2, priority=5)
    assert found == [("ns/a", IN_CLUSTER_QUEUE), ("ns/c", IN_CLUSTER_QUEUE)]
    # Need 3: a, c, b removed (4 free); filling back in reverse from the second to last,
    # c returns (3 free still fits) and a does not (2 free).
    state2 = make_state(CQ("q").quota("default", cpu=4).preemption(within="LowerPriority"))
    place(state2, "a", "lq-q", cpu=1, priority=0, at=1)
    place(state2, "b", "lq-q", cpu=2, priority=1, at=2)
    place(state2, "c", "lq-q", cpu=1, priority=1, at=3)
    _, found2 = targets_for(state2, "p", "lq-q", cpu=3, priority=5)
    assert sorted(found2) == [("ns/a", IN_CLUSTER_QUEUE), ("ns/b", IN_CLUSTER_QUEUE)]


# --- reclaim within the cohort -----------------------------------------------------


def borrowed_cohort(reclaim: str, *, b_priority: int = 0) -> AdmissionState:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=4).preemption(reclaim=reclaim),
        CQ("b").cohort("c").quota("default", cpu=4),
    )
    place(state, "b1", "lq-b", cpu=4, priority=b_priority, at=1)
    place(state, "b2", "lq-b", cpu=2, priority=b_priority, at=2)
    place(state, "b3", "lq-b", cpu=2, priority=b_priority, at=3)
    return state


@pytest.mark.parametrize(
    ("reclaim", "victim_priority", "expected"),
    [
        ("Never", 0, None),
        ("LowerPriority", 0, [("ns/b3", IN_COHORT_RECLAMATION)]),
        ("LowerPriority", 5, None),
        ("Any", 5, [("ns/b3", IN_COHORT_RECLAMATION)]),
    ],
)
def test_reclaim_within_cohort(reclaim: str, victim_priority: int, expected) -> None:
    state = borrowed_cohort(reclaim, b_priority=victim_priority)
    _, found = targets_for(state, "p", "lq-a", cpu=2, priority=3)
    assert found == expected


def test_queues_within_nominal_are_never_reclaimed() -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=4).preemption(reclaim="Any"),
        CQ("b").cohort("c").quota("default", cpu=4),
        CQ("d").cohort("c").quota("default", cpu=0),
    )
    place(state, "b1", "lq-b", cpu=4, at=1)  # b at nominal: not borrowing
    place(state, "d1", "lq-d", cpu=2, at=2)  # d borrows 2 of a's quota
    place(state, "d2", "lq-d", cpu=2, at=3)
    _, found = targets_for(state, "p", "lq-a", cpu=2, priority=3)
    assert found == [("ns/d2", IN_COHORT_RECLAMATION)]


# --- borrow within the cohort ------------------------------------------------------


def full_cohort(borrow: str | None, threshold: int | None = None) -> AdmissionState:
    state = make_state(
        CQ("a")
        .cohort("c")
        .quota("default", cpu=4)
        .preemption(reclaim="LowerPriority", borrow=borrow, threshold=threshold),
        CQ("b").cohort("c").quota("default", cpu=4),
        CQ("x").cohort("c").quota("default", cpu=4),
    )
    place(state, "a1", "lq-a", cpu=4, priority=9, at=0)  # a at nominal
    place(state, "b-base", "lq-b", cpu=4, priority=9, at=1)
    place(state, "b-low", "lq-b", cpu=2, priority=2, at=2)  # b borrows 4 of x's quota
    place(state, "b-mid", "lq-b", cpu=2, priority=4, at=3)
    return state


@pytest.mark.parametrize(
    ("borrow", "threshold", "expected"),
    [
        # a must borrow 2: without borrowWithinCohort it may only preempt while not borrowing => nothing.
        (None, None, None),
        # LowerPriority, no threshold: b-low first (lowest priority).
        ("LowerPriority", None, [("ns/b-low", IN_COHORT_RECLAIM_WHILE_BORROWING)]),
        # threshold 3: only b-low (2 <= 3) may go while borrowing.
        ("LowerPriority", 3, [("ns/b-low", IN_COHORT_RECLAIM_WHILE_BORROWING)]),
        # threshold 1: nobody is at or below it.
        ("LowerPriority", 1, None),
    ],
)
def test_borrow_within_cohort(borrow: str | None, threshold: int | None, expected) -> None:
    state = full_cohort(borrow, threshold)
    assignment, found = targets_for(state, "p", "lq-a", cpu=2, priority=5)
    assert found == expected
    # The request (2) is within a's nominal (4), so Kueue consults preemption: Preempt mode,
    # even when the search then finds no candidates.
    assert assignment.mode is Mode.PREEMPT


def test_borrow_within_cohort_threshold_needs_two_victims() -> None:
    state = full_cohort("LowerPriority", 4)
    _, found = targets_for(state, "p", "lq-a", cpu=4, priority=5)
    assert sorted(found) == [
        ("ns/b-low", IN_COHORT_RECLAIM_WHILE_BORROWING),
        ("ns/b-mid", IN_COHORT_RECLAIM_WHILE_BORROWING),
    ]


# --- fair sharing --------------------------------------------------------------------


def fair_state(strategies: tuple[str, ...], **flags: bool) -> AdmissionState:
    # Cohort holds all 12 CPUs; b uses 10 of them; a asks for 6 (share after 500).
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=0).preemption(reclaim="Any"),
        CQ("b").cohort("c").quota("default", cpu=0),
        cohorts=(CohortB("c").quota("default", cpu=12),),
        config=AdmissionConfig(fair_sharing=True, preemption_strategies=strategies, **flags),
    )
    place(state, "b-rest", "lq-b", cpu=3, at=1)
    place(state, "b-small", "lq-b", cpu=1, at=2)
    place(state, "b-big", "lq-b", cpu=6, at=3)  # newest: first candidate
    return state


def test_less_than_or_equal_to_final_share_prefers_small_victims() -> None:
    # S2-a: b-big leaves b at 4/12 = 333 < 500 => skipped; b-small leaves 750 >= 500 => taken;
    # then b-rest leaves 6/12 = 500 >= 500 => taken; 2 + 1 + 3 = 6 free: fits.
    state = fair_state((LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,))
    _, found = targets_for(state, "p", "lq-a", cpu=6)
    assert found == [("ns/b-small", IN_COHORT_FAIR_SHARING), ("ns/b-rest", IN_COHORT_FAIR_SHARING)]


def test_less_than_initial_share_takes_the_first_candidate() -> None:
    # S2-b: 500 < 833 (b before removal) => the first candidate, b-big, goes.
    state = fair_state((LESS_THAN_INITIAL_SHARE,))
    _, found = targets_for(state, "p", "lq-a", cpu=6)
    assert found == [("ns/b-big", IN_COHORT_FAIR_SHARING)]


def test_second_strategy_only_when_first_runs_out() -> None:
    state = fair_state((LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE))
    _, found = targets_for(state, "p", "lq-a", cpu=6)
    assert found == [("ns/b-small", IN_COHORT_FAIR_SHARING), ("ns/b-rest", IN_COHORT_FAIR_SHARING)]
    # Asking 9 (share 750): S2-a takes b-small (b 750 >= 750) and nothing else; S2-b then takes
    # the first remaining candidate while 750 < b's share 750? No (not strictly less) => no fit.
    state2 = fair_state((LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE))
    _, found2 = targets_for(state2, "p", "lq-a", cpu=9)
    assert found2 is None


def test_queues_with_zero_share_are_never_victims() -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=2).preemption(reclaim="Any"),
        CQ("b").cohort("c").quota("default", cpu=6),
        CQ("d").cohort("c").quota("default", cpu=0),
        config=AdmissionConfig(fair_sharing=True),
    )
    place(state, "b1", "lq-b", cpu=6, at=1)  # within nominal: DRS 0
    place(state, "d1", "lq-d", cpu=1, at=2)  # borrows
    place(state, "d2", "lq-d", cpu=1, at=3)
    _, found = targets_for(state, "p", "lq-a", cpu=2)
    assert sorted(found) == [("ns/d1", IN_COHORT_RECLAMATION), ("ns/d2", IN_COHORT_RECLAMATION)]


@pytest.mark.parametrize(
    ("within_nominal", "reason"), [(True, IN_COHORT_RECLAMATION), (False, IN_COHORT_FAIR_SHARING)]
)
def test_preempt_within_nominal_reason(within_nominal: bool, reason: str) -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=4).preemption(reclaim="Any"),
        CQ("b").cohort("c").quota("default", cpu=4),
        config=AdmissionConfig(fair_sharing=True, fair_sharing_preempt_within_nominal=within_nominal),
    )
    place(state, "b1", "lq-b", cpu=4, at=1)
    place(state, "b2", "lq-b", cpu=4, at=2)
    _, found = targets_for(state, "p", "lq-a", cpu=4)
    assert found == [("ns/b2", reason)]


def test_fair_sharing_in_queue_priority_preemption() -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=4).preemption(within="LowerPriority"),
        CQ("b").cohort("c").quota("default", cpu=0),
        config=AdmissionConfig(fair_sharing=True),
    )
    place(state, "low", "lq-a", cpu=4, priority=0, at=1)
    _, found = targets_for(state, "p", "lq-a", cpu=4, priority=5)
    assert found == [("ns/low", IN_CLUSTER_QUEUE)]


# --- hierarchical cohorts ------------------------------------------------------------


def hierarchy_state() -> AdmissionState:
    # root <- mid {x: 4, y: 0}; root <- z: 4. z borrows x's idle quota through the root.
    state = make_state(
        CQ("x").cohort("mid").quota("default", cpu=4).preemption(reclaim="Any"),
        CQ("y").cohort("mid").quota("default", cpu=0),
        CQ("z").cohort("root").quota("default", cpu=4),
        cohorts=(CohortB("root"), CohortB("mid").parent("root")),
    )
    for i in range(4):
        place(state, f"z{i}", "lq-z", cpu=2, priority=10, at=i)
    return state


def test_hierarchical_reclaim_of_own_nominal_regardless_of_priority() -> None:
    state = hierarchy_state()
    assert state.tree.cohorts["root"].usage == {("default", "cpu"): 8000}
    _, found = targets_for(state, "p", "lq-x", cpu=4, priority=0)
    assert found == [("ns/z3", IN_COHORT_RECLAMATION), ("ns/z2", IN_COHORT_RECLAMATION)]


def test_no_reclaim_when_the_preemptor_would_borrow() -> None:
    state = hierarchy_state()
    _, found = targets_for(state, "p", "lq-x", cpu=6, priority=0)
    assert found is None
