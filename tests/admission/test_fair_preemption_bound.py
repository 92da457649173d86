"""Shortcuts of fair-sharing preemption that must give the search's answer: the bound that gives up
before the search (allot.admission.fair_preemption._cannot_fit), the reuse of the flavor
oracle's search for a whole assignment, `AdmissionState.fitting`, which tells Fit without the
oracle, and searches that move victims only in what they read (`World.reading_only`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.admission import AdmissionConfig, AdmissionState, Mode, Workload, fair_preemption
from allot.admission.preemption import preemption_targets
from allot.admission.targets import Preemptor, World
from allot.model.kueue_config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from fuzzing import examples

from .builders import CQ, CohortB, flavor_quotas, make_state, workload

QUEUES = ("a", "b", "c", "d")
STRATEGIES = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
)


def two_teams() -> AdmissionState:
    # The cohort holds all 12 CPUs; a and b own none of them.
    return make_state(
        CQ("a").cohort("c").quota("default", cpu=0).preemption(reclaim="Any"),
        CQ("b").cohort("c").quota("default", cpu=0),
        cohorts=(CohortB("c").quota("default", cpu=12),),
        config=AdmissionConfig(fair_sharing=True),
    )


def admit(state: AdmissionState, key: str, queue: str, cpu: int, priority: int = 0, at: float = 0.0) -> bool:
    w = workload(key, f"lq-{queue}", cpu=cpu, priority=priority, created=at)
    state.submit(w)
    assignment = state.assign(w)
    if assignment.mode is not Mode.FIT:
        return False
    state.admit(w, assignment, at)
    return True


def preemptor_for(state: AdmissionState, key: str, queue: str, cpu: int, priority: int) -> Preemptor | None:
    w = workload(key, f"lq-{queue}", cpu=cpu, priority=priority, created=1000.0)
    state.submit(w)
    assignment = state.assign(w)
    if assignment.mode is not Mode.PREEMPT:
        return None
    return Preemptor(w.key, queue, priority, 1000.0, assignment.usage, assignment.needs_preemption())


def test_a_queue_already_above_every_borrower_gives_up_without_searching() -> None:
    state = two_teams()
    assert admit(state, "b1", "b", 4, at=1)  # b's share 333
    assert admit(state, "a1", "a", 6, at=2)  # a's share 500, 666 with 2 more
    assert admit(state, "b2", "b", 2, at=3)  # the cohort is full
    preemptor = preemptor_for(state, "p", "a", 2, 0)
    assert preemptor is not None
    candidates = fair_preemption.find_candidates(state.world, preemptor)
    assert [c.key for c in candidates] == ["ns/b2", "ns/b1"]
    assert fair_preemption._cannot_fit(state.world, preemptor, candidates)
    assert fair_preemption.fair_targets(state.world, preemptor) is None


def test_a_queue_below_a_borrower_still_searches() -> None:
    state = two_teams()
    assert admit(state, "b1", "b", 10, at=1)  # b's share 833
    preemptor = preemptor_for(state, "p", "a", 6, 0)  # a's share after: 500
    assert preemptor is not None
    candidates = fair_preemption.find_candidates(state.world, preemptor)
    assert not fair_preemption._cannot_fit(state.world, preemptor, candidates)
    found = fair_preemption.fair_targets(state.world, preemptor)
    assert found is not None and [t.workload_key for t in found] == ["ns/b1"]


def random_state(draw: Any) -> AdmissionState:
    hierarchical = draw(st.booleans())
    cqs = []
    for name in QUEUES:
        cohort = "mid" if hierarchical and name in ("a", "b") else "root"
        queue = (
            CQ(name)
            .cohort(cohort)
            .quota("default", cpu=draw(st.integers(0, 4)))
            .preemption(within=draw(st.sampled_from(["Never", "LowerPriority"])), reclaim="Any")
        )
        cqs.append(queue.weight(draw(st.sampled_from([0, 0.5, 1, 2]))))
    cohorts = [CohortB("root").quota("default", cpu=draw(st.integers(0, 6)))]
    if hierarchical:
        cohorts.append(CohortB("mid").parent("root").weight(draw(st.sampled_from([0.5, 1, 2]))))
    config = AdmissionConfig(
        fair_sharing=True,
        preemption_strategies=draw(st.sampled_from(STRATEGIES)),
        fair_sharing_preempt_within_nominal=draw(st.booleans()),
    )
    return make_state(*cqs, cohorts=tuple(cohorts), config=config)


job = st.tuples(st.sampled_from(QUEUES), st.integers(1, 4), st.integers(0, 2))


@settings(max_examples=examples(300), deadline=None)
@given(st.data(), st.lists(job, min_size=1, max_size=14), st.lists(job, min_size=1, max_size=6))
def test_the_bound_never_turns_down_a_preemption_the_search_finds(
    data: st.DataObject, admitted: list[tuple[str, int, int]], asking: list[tuple[str, int, int]]
) -> None:
    state = random_state(data.draw)
    for index, (queue, cpu, priority) in enumerate(admitted):
        admit(state, f"w{index}", queue, cpu, priority, at=float(index))
    for index, (queue, cpu, priority) in enumerate(asking):
        preemptor = preemptor_for(state, f"p{index}", queue, cpu, priority)
        if preemptor is None:
            continue
        # The candidates kept for the generation are those a fresh walk finds.
        assert fair_preemption.find_candidates(state.world, preemptor) == fair_preemption._find_candidates(
            state.world, preemptor
        )
        with_bound = fair_preemption.fair_targets(state.world, preemptor)
        with mock.patch.object(fair_preemption, "_cannot_fit", return_value=False):
            searched = fair_preemption.fair_targets(state.world, preemptor)
        assert with_bound == searched


def two_resource_state(draw: Any) -> AdmissionState:
    hierarchical = draw(st.booleans())
    cqs = []
    for name in QUEUES:
        cohort = "mid" if hierarchical and name in ("a", "b") else "root"
        quotas = {
            "cpu": draw(st.integers(0, 4)),
            "memory": (f"{draw(st.integers(0, 4))}Gi", *draw(st.sampled_from([(), (None, "1Gi"), ("2Gi",)]))),
        }
        queue = CQ(name).cohort(cohort).quota("default", **quotas)
        cqs.append(
            queue.preemption(within="LowerPriority", reclaim="Any").weight(draw(st.sampled_from([0.5, 1])))
        )
    cohorts = [
        CohortB("root").quota("default", cpu=draw(st.integers(0, 4)), memory=f"{draw(st.integers(0, 4))}Gi")
    ]
    if hierarchical:
        cohorts.append(CohortB("mid").parent("root"))
    config = AdmissionConfig(fair_sharing=True, preemption_strategies=draw(st.sampled_from(STRATEGIES)))
    return make_state(*cqs, cohorts=tuple(cohorts), config=config)


sized_job = st.tuples(st.sampled_from(QUEUES), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2))


def admit_sized(state: AdmissionState, jobs: list[tuple[str, int, int, int]]) -> None:
    """Admit each (queue, cpu, memory GiB, priority) job that fits now, one after the other."""
    for index, (queue, cpu, memory, priority) in enumerate(jobs):
        w = workload(
            f"w{index}", f"lq-{queue}", cpu=cpu, memory=f"{memory}Gi", priority=priority, created=index
        )
        state.submit(w)
        assignment = state.assign(w)
        if assignment.mode is Mode.FIT:
            state.admit(w, assignment, float(index))


def submit_sized(
    state: AdmissionState, jobs: list[tuple[str, int, int, int]]
) -> Iterator[tuple[Workload, str, int]]:
    """Submit each job as a late arrival; yields it with its queue and priority."""
    for index, (queue, cpu, memory, priority) in enumerate(jobs):
        w = workload(
            f"p{index}", f"lq-{queue}", cpu=cpu, memory=f"{memory}Gi", priority=priority, created=1000.0
        )
        state.submit(w)
        yield w, queue, priority


def fitting_state(draw: Any) -> AdmissionState:
    """Queues with one flavor (fitting decides without the oracle) or two (the whole assignment),
    any fungibility, classic or fair preemption."""
    cqs = []
    for name in QUEUES:
        queue = CQ(name).cohort("root")
        quotas = [flavor_quotas(f, cpu=draw(st.integers(0, 4))) for f in ("one", "two")]
        queue.group(["cpu"], *quotas[: draw(st.integers(1, 2))])
        queue.preemption(
            within="LowerPriority", reclaim="Any", borrow=draw(st.sampled_from([None, "LowerPriority"]))
        )
        queue.fungibility(
            borrow=draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"])),
            preempt=draw(st.sampled_from(["Preempt", "TryNextFlavor"])),
            preference=draw(st.sampled_from([None, "BorrowingOverPreemption", "PreemptionOverBorrowing"])),
        )
        cqs.append(queue)
    cohorts = (CohortB("root").quota("one", cpu=draw(st.integers(0, 6))),)
    return make_state(*cqs, cohorts=cohorts, config=AdmissionConfig(fair_sharing=draw(st.booleans())))


@settings(max_examples=examples(300), deadline=None)
@given(st.data(), st.lists(job, min_size=1, max_size=14), st.lists(job, min_size=1, max_size=8))
def test_fitting_answers_as_the_whole_assignment_does(
    data: st.DataObject, admitted: list[tuple[str, int, int]], asking: list[tuple[str, int, int]]
) -> None:
    state = fitting_state(data.draw)
    for index, (queue, cpu, priority) in enumerate(admitted):
        admit(state, f"w{index}", queue, cpu, priority, at=float(index))
    waiting = []
    for index, (queue, cpu, priority) in enumerate(asking):
        w = workload(f"p{index}", f"lq-{queue}", cpu=cpu, priority=priority, created=1000.0 + index)
        state.submit(w)
        waiting.append(w)
    # Asked first, before any whole assignment is cached; each compared with a whole assignment
    # worked out afresh (not read from the cache `fitting` may have filled).
    found = [state.fitting(w) for w in waiting]
    for w, fits in zip(waiting, found, strict=True):
        state._assign_cache.clear()
        whole = state.assign(w)
        assert fits == (whole if whole.mode is Mode.FIT else None)
    # And asked again, now from the caches, the same.
    assert [state.fitting(w) for w in waiting] == found


def test_fitting_with_one_flavor_does_not_simulate_preemption() -> None:
    state = two_teams()
    assert admit(state, "b1", "b", 12, at=1)  # the cohort is full: a's workload needs preemption
    w = workload("p", "lq-a", cpu=2, created=1000.0)
    state.submit(w)
    with mock.patch.object(fair_preemption, "fair_targets", side_effect=AssertionError("searched")):
        assert state.fitting(w) is None
    assert state.assign(w).mode is Mode.PREEMPT


@contextmanager
def _reading_everything(self: World, preemptor: Preemptor) -> Iterator[None]:
    yield


@settings(max_examples=examples(300), deadline=None)
@given(st.data(), st.lists(sized_job, min_size=1, max_size=14), st.lists(sized_job, min_size=1, max_size=6))
def test_searches_for_a_whole_assignment_and_reading_only_what_they_read_find_a_fresh_searchs_targets(
    data: st.DataObject,
    admitted: list[tuple[str, int, int, int]],
    asking: list[tuple[str, int, int, int]],
) -> None:
    # Victims leave the tree only in the pairs the preemptor asks for and those borrowed somewhere
    # (World.reading_only); with lending limits, two resources and one of them never borrowed, the
    # targets, the oracle's answers and the assignments are those of moving their whole usage.
    state = two_resource_state(data.draw)
    admit_sized(state, admitted)
    for w, queue, priority in submit_sized(state, asking):
        state.world.oracle_cache.clear()
        state._assign_cache.clear()
        assignment = state.assign(w)
        state.world.oracle_cache.clear()
        state._assign_cache.clear()
        with mock.patch.object(World, "reading_only", _reading_everything):
            moved_everything = state.assign(w)
        assert (assignment.mode, assignment.borrowing, assignment.message()) == (
            moved_everything.mode,
            moved_everything.borrowing,
            moved_everything.message(),
        )
        if assignment.mode is not Mode.PREEMPT:
            continue
        whole = Preemptor(w.key, queue, priority, 1000.0, assignment.usage, assignment.needs_preemption())
        # The engine's search for a whole assignment may reuse the flavor oracle's search for the
        # one contested resource (allot.admission.preemption.assignment_targets): never with
        # another answer than a fresh search.
        state.world.oracle_cache.clear()
        state._assign_cache.clear()
        state.assign(w)  # runs the oracle, which fills its cache
        assert state.preemption_targets(w, assignment) == preemption_targets(state.world, whole)
        singles = [
            Preemptor(w.key, queue, priority, 1000.0, {fr: whole.usage[fr]}, frozenset({fr}))
            for fr in sorted(whole.frs)
        ]
        for preemptor in (whole, *singles):
            found = fair_preemption.fair_targets(state.world, preemptor)
            with mock.patch.object(World, "reading_only", _reading_everything):
                assert found == fair_preemption.fair_targets(state.world, preemptor)
