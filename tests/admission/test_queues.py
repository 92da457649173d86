"""Queueing strategies, parking and requeue-on-event (fairshare.md §1.2, Kueue's cluster_queue.go)."""

from __future__ import annotations

from allot.admission import (
    EVICTED_BY_PODS_READY_TIMEOUT,
    EVICTED_BY_PREEMPTION,
    AdmissionConfig,
    Event,
    EventKind,
    Mode,
    ParkReason,
    RequeueConfig,
)

from .builders import CQ, admit_all, local_queue, make_state, workload


def two_queues(strategy: CQ):
    return make_state(
        strategy.cohort("c").quota("default", cpu=4), CQ("other").cohort("c").quota("default", cpu=0)
    )


def submit_big_then_small(state) -> None:
    state.submit(workload("big", "lq-q", created=0, cpu=6))  # never fits now (4 in the cohort)
    state.submit(workload("small", "lq-q", created=1, cpu=1))


def test_best_effort_fifo_parks_the_head_and_admits_behind_it() -> None:
    state = two_queues(CQ("q"))
    submit_big_then_small(state)
    assert admit_all(state) == ["ns/small"]
    assert state.pending_reason("ns/big") is not None
    assert "insufficient quota for cpu in flavor default" in state.pending_reason("ns/big")
    assert state.status().cluster_queue("q").pending == 1


def test_strict_fifo_blocks_behind_the_head() -> None:
    state = two_queues(CQ("q").strict())
    submit_big_then_small(state)
    assert admit_all(state) == []
    assert state.queues["q"].blocked is not None
    # Still blocked next cycle: nothing changed, nothing is retried.
    assert list(state.candidates(1)) == []


def test_higher_priority_arrival_unblocks_strict_fifo() -> None:
    state = two_queues(CQ("q").strict())
    submit_big_then_small(state)
    admit_all(state)
    state.submit(workload("urgent", "lq-q", created=5, priority=10, cpu=1))
    assert admit_all(state) == ["ns/urgent"]


def test_parked_workloads_are_not_retried_every_cycle() -> None:
    state = two_queues(CQ("q"))
    state.submit(workload("big", "lq-q", created=0, cpu=6))
    admit_all(state)
    calls = 0
    original = state._assignment

    def counting(entry):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return original(entry)

    state._assignment = counting  # type: ignore[method-assign]
    for t in range(1, 20):
        assert list(state.candidates(t)) == []
    assert calls == 0


def test_finish_in_the_same_cohort_requeues_parked_workloads() -> None:
    state = two_queues(CQ("q"))
    state.submit(workload("a", "lq-q", created=0, cpu=4))
    state.submit(workload("b", "lq-q", created=1, cpu=2))
    assert admit_all(state) == ["ns/a"]
    assert admit_all(state, 1) == []  # b parked
    state.finish("ns/a", 2)
    assert admit_all(state, 2) == ["ns/b"]


def test_quota_event_in_another_cohort_does_not_requeue() -> None:
    state = make_state(
        CQ("q").cohort("c").quota("default", cpu=1),
        CQ("elsewhere").cohort("d").quota("default", cpu=4),
    )
    state.submit(workload("big", "lq-q", created=0, cpu=2))
    admit_all(state)
    state.notify(Event(EventKind.WORKLOAD_FINISHED, cluster_queue="elsewhere"))
    assert "ns/big" in state.queues["q"].parked
    state.notify(Event(EventKind.QUOTA_CHANGED, cluster_queue="q"))
    assert "ns/big" not in state.queues["q"].parked


def test_placement_failures_wait_for_capacity_of_their_flavor() -> None:
    state = make_state(CQ("q").quota("default", cpu=8))
    w = workload("w", "lq-q", cpu=1)
    state.submit(w)
    candidate = next(iter(state.candidates(0)))
    state.park(candidate.workload, ParkReason.placement("0/3 nodes are available"))
    assert state.pending_reason("ns/w") == "0/3 nodes are available"
    state.notify(Event(EventKind.QUOTA_CHANGED))
    assert "ns/w" in state.queues["q"].parked  # quota events do not help placement
    state.notify(Event(EventKind.CAPACITY_FREED, flavor="other"))
    assert "ns/w" in state.queues["q"].parked
    state.notify(Event(EventKind.CAPACITY_FREED, flavor="default"))
    assert admit_all(state, 1) == ["ns/w"]


def test_pending_preemption_requeues_immediately() -> None:
    state = make_state(CQ("q").quota("default", cpu=8))
    w = workload("w", "lq-q", cpu=1)
    state.submit(w)
    candidate = next(iter(state.candidates(0)))
    state.park(candidate.workload, ParkReason.pending_preemption())
    assert [c.workload.key for c in state.candidates(1)] == ["ns/w"]


def test_one_head_per_queue_per_cycle_unless_admitted() -> None:
    state = make_state(CQ("q").quota("default", cpu=8))
    for i in range(3):
        state.submit(workload(f"w{i}", "lq-q", created=i, cpu=1))
    # The engine looks but neither admits nor parks: the queue is done for this cycle.
    assert [c.workload.key for c in state.candidates(0)] == ["ns/w0"]
    # Admitting lets the queue offer its next head in the same cycle.
    assert admit_all(state, 1) == ["ns/w0", "ns/w1", "ns/w2"]


def test_evicted_by_preemption_goes_back_in_line_with_its_creation_time() -> None:
    state = make_state(CQ("q").quota("default", cpu=1))
    state.submit(workload("old", "lq-q", created=0, cpu=1))
    admit_all(state)
    state.submit(workload("newer", "lq-q", created=5, cpu=1))
    state.evict("ns/old", EVICTED_BY_PREEMPTION, 10)
    assert state.pending_order("q") == ["ns/old", "ns/newer"]


def test_pods_ready_timeout_backoff_and_eviction_timestamp() -> None:
    config = AdmissionConfig(requeue=RequeueConfig(backoff_base=60, backoff_max=3600, backoff_limit=2))
    state = make_state(CQ("q").quota("default", cpu=1), config=config)
    state.submit(workload("w", "lq-q", created=0, cpu=1))
    admit_all(state)
    state.submit(workload("later", "lq-q", created=50, cpu=1))
    state.evict("ns/w", EVICTED_BY_PODS_READY_TIMEOUT, 100)
    # Parked for 60 s; later (created 50) goes first meanwhile.
    assert admit_all(state, 120) == ["ns/later"]
    state.finish("ns/later", 130)
    assert admit_all(state, 159) == []
    assert admit_all(state, 160) == ["ns/w"]
    # Second timeout: 120 s; third: over the limit of 2 requeues => deactivated.
    state.evict("ns/w", EVICTED_BY_PODS_READY_TIMEOUT, 200)
    assert admit_all(state, 319) == []
    assert admit_all(state, 320) == ["ns/w"]
    state.evict("ns/w", EVICTED_BY_PODS_READY_TIMEOUT, 400)
    assert admit_all(state, 10_000) == []
    assert "deactivated" in (state.pending_reason("ns/w") or "")


def test_missing_local_queue_and_namespace_selector() -> None:
    selective = CQ("q").quota("default", cpu=4)
    selective.spec["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    state = make_state(selective, local_queues=(local_queue("ns/lq-q", "q"),))
    state.submit(workload("nolq", "missing", cpu=1))
    assert state.pending_reason("ns/nolq") == "LocalQueue ns/missing doesn't exist"
    state.submit(workload("w", "lq-q", cpu=1))
    assert (
        state.pending_reason("ns/w") == "namespace ns doesn't match the namespaceSelector of ClusterQueue q"
    )
    assert state.assign(state.entries["ns/w"].workload).mode is Mode.NO_FIT
    assert admit_all(state) == []


def test_rollback_of_admit_restores_queue_and_quota() -> None:
    state = make_state(CQ("q").quota("default", cpu=4))
    w = workload("w", "lq-q", cpu=2)
    state.submit(w)
    with state.journal.transaction():
        state.admit(w, state.assign(w), 0)
        assert state.is_admitted("ns/w")
    assert not state.is_admitted("ns/w")
    assert state.usage("q") == {}
    assert state.pending_order("q") == ["ns/w"]
    assert admit_all(state) == ["ns/w"]


def _equivalent_backlog(count: int):  # type: ignore[no-untyped-def]
    """A queue with 4 cpu held by one workload and `count` equivalent 1-cpu workloads parked."""
    state = make_state(CQ("q").quota("default", cpu=4))
    state.submit(workload("holder", "lq-q", created=0, cpu=4))
    assert admit_all(state) == ["ns/holder"]
    for i in range(count):
        state.submit(workload(f"w{i:02d}", "lq-q", created=1 + i, cpu=1))
    assert admit_all(state, 1) == []
    return state


def test_a_release_admits_equivalent_workloads_in_line_and_reassesses_one_that_cannot_fit() -> None:
    state = _equivalent_backlog(30)
    assessed: list[str] = []
    original = state._assignment

    def counting(entry):  # type: ignore[no-untyped-def]
        assessed.append(entry.workload.key)
        return original(entry)

    state._assignment = counting  # type: ignore[method-assign]
    state.finish("ns/holder", 2)
    assert admit_all(state, 2) == ["ns/w00", "ns/w01", "ns/w02", "ns/w03"]
    # The fifth is assessed and does not fit; the 25 behind it are not assessed at all.
    assert set(assessed) == {"ns/w00", "ns/w01", "ns/w02", "ns/w03", "ns/w04"}
    reason = state.pending_reason("ns/w04")
    assert reason is not None and "insufficient unused quota for cpu" in reason
    assert all(state.pending_reason(f"ns/w{i:02d}") == reason for i in range(5, 30))
    assert state.status().cluster_queue("q").pending == 26


def test_a_woken_workload_deleted_before_its_turn_passes_its_turn_on() -> None:
    state = _equivalent_backlog(10)
    state.finish("ns/holder", 2)
    state.remove("ns/w00")
    state.remove("ns/w02")
    assert admit_all(state, 2) == ["ns/w01", "ns/w03", "ns/w04", "ns/w05"]


def test_a_woken_workload_that_fails_placement_passes_its_turn_on() -> None:
    state = _equivalent_backlog(10)
    state.finish("ns/holder", 2)
    order = []
    for candidate in state.candidates(2):
        key = candidate.workload.key
        order.append(key)
        assignment = state.assign(candidate.workload)
        if key == "ns/w00":
            state.park(candidate.workload, ParkReason.placement("0/3 nodes are available"))
        elif assignment.mode is Mode.FIT:
            state.admit(candidate.workload, assignment, 2)
        else:
            state.park(candidate.workload, ParkReason.quota(assignment.message()))
    # w00 fits the quota but not the nodes: the four behind it take the freed cpu.
    assert order == ["ns/w00", "ns/w01", "ns/w02", "ns/w03", "ns/w04", "ns/w05"]
    assert state.pending_reason("ns/w00") == "0/3 nodes are available"


def test_a_release_rolled_back_leaves_the_line_as_it_was() -> None:
    state = _equivalent_backlog(10)
    parked = dict(state.queues["q"].parked)
    with state.journal.transaction():
        state.evict("ns/holder", EVICTED_BY_PREEMPTION, 2)
        assert len(state.queues["q"].parked) < len(parked)
        # not committed: rolled back
    assert state.queues["q"].parked == parked
    assert admit_all(state, 3) == []
    state.finish("ns/holder", 4)
    assert admit_all(state, 4) == ["ns/w00", "ns/w01", "ns/w02", "ns/w03"]


def _backlog_short_of(count: int, reason_key=None):  # type: ignore[no-untyped-def]
    """4 cpu of quota, 3 held by two workloads, `count` equivalent 3-cpu workloads parked (2 more needed)."""
    state = make_state(CQ("q").quota("default", cpu=4))
    if reason_key is not None:
        state.compare_reasons_by(reason_key)
    state.submit(workload("big-holder", "lq-q", created=0, cpu=2))
    state.submit(workload("small-holder", "lq-q", created=0.5, cpu=1))
    assert admit_all(state) == ["ns/big-holder", "ns/small-holder"]
    for i in range(count):
        state.submit(workload(f"w{i:02d}", "lq-q", created=1 + i, cpu=3))
    assert admit_all(state, 1) == []
    state.parked_in_cycle.clear()
    return state


def test_a_backlog_parked_behind_its_head_is_told_each_new_reason_text() -> None:
    state = _backlog_short_of(20)
    assert all("2 more needed" in (state.pending_reason(f"ns/w{i:02d}") or "") for i in range(20))
    state.finish("ns/small-holder", 2)
    assert admit_all(state, 2) == []
    # Only the head was assessed again; the 19 behind it are told its new reason as they would be
    # had each come to the head.
    assert sorted(state.parked_in_cycle) == [f"ns/w{i:02d}" for i in range(1, 20)]
    assert all("1 more needed" in (state.pending_reason(f"ns/w{i:02d}") or "") for i in range(20))


def test_a_backlog_is_not_told_a_reason_that_differs_only_where_its_key_ignores() -> None:
    def without_digits(message: str) -> str:
        return "".join(c for c in message if not c.isdigit())

    state = _backlog_short_of(20, without_digits)
    state.finish("ns/small-holder", 2)
    assert admit_all(state, 2) == []
    assert state.parked_in_cycle == []
    assert "1 more needed" in (state.pending_reason("ns/w00") or "")
    assert all("2 more needed" in (state.pending_reason(f"ns/w{i:02d}") or "") for i in range(1, 20))
