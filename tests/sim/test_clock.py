"""The event heap: (time, kind, sequence) order, batching by instant, independent simulations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from allot.sim.clock import EventQueue, quantize
from allot.sim.events import EventKind


def test_batch_holds_one_instant_in_kind_then_sequence_order() -> None:
    queue = EventQueue()
    queue.call_at(10.0, EventKind.ARRIVAL, "a1")
    queue.call_at(10.0, EventKind.COMPLETION, "c1")
    queue.call_at(5.0, EventKind.ARRIVAL, "early")
    queue.call_at(10.0, EventKind.NODE_DOWN, "n1")
    queue.call_at(10.0, EventKind.ARRIVAL, "a2")
    queue.call_at(10.0, EventKind.NODE_UP, "n2")
    assert [e.subject for e in queue.pop_batch()] == ["early"]
    assert queue.now() == 5.0
    batch = queue.pop_batch()
    assert [e.subject for e in batch] == ["n1", "c1", "n2", "a1", "a2"]
    assert queue.now() == 10.0
    assert queue.pop_batch() == []


def test_times_on_the_millisecond_grid_share_a_batch() -> None:
    queue = EventQueue()
    queue.call_at(0.1 + 0.2, EventKind.ARRIVAL, "float-sum")
    queue.call_at(0.3, EventKind.ARRIVAL, "literal")
    assert len(queue.pop_batch()) == 2
    assert quantize(1.0004) == quantize(1.0)


def test_events_never_go_back_in_time() -> None:
    queue = EventQueue()
    queue.call_at(10.0, EventKind.ARRIVAL, "a")
    queue.pop_batch()
    late = queue.call_at(3.0, EventKind.COMPLETION, "c")
    assert late.time == 10.0


def test_two_queues_number_their_events_independently() -> None:
    first, second = EventQueue(), EventQueue()
    for _ in range(3):
        first.call_at(1.0, EventKind.ARRIVAL, "x")
    assert second.call_at(1.0, EventKind.ARRIVAL, "y").seq == 1


@given(st.lists(st.tuples(st.integers(0, 50), st.sampled_from(list(EventKind))), max_size=60))
def test_pop_order_is_sorted_by_time_kind_sequence(entries: list[tuple[int, EventKind]]) -> None:
    queue = EventQueue()
    events = [queue.call_at(float(t), kind, str(i)) for i, (t, kind) in enumerate(entries)]
    popped = []
    while len(queue):
        popped.extend(queue.pop_batch())
    assert popped == sorted(events, key=lambda e: e.key())
