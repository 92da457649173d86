"""The pending line listed by group, and the parked by chain: the same as a walk of the whole
line, through pushes, removals, parking and rolled-back transactions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.admission import ParkKind, ParkReason
from allot.admission.queues import MIXED, PendingQueue, exact_reason
from allot.cluster.journal import Journal

from .builders import CQ, admit_all, make_state, workload


def pending_in_order(state, cluster_queue: str) -> list[str]:
    groups = state.pending_groups(cluster_queue).values()
    return [key for _, (_, _, key) in sorted((g.score, k) for g in groups for k in g.members)]


KEYS = [f"w{i}" for i in range(8)]
GROUPS = ["a", "b", "c"]

operation = st.one_of(
    st.tuples(
        st.just("push"),
        st.sampled_from(KEYS),
        st.integers(0, 2),
        st.integers(0, 3),
        st.sampled_from([*GROUPS, None]),
        st.sampled_from(["x", "y", None]),
    ),
    st.tuples(st.just("remove"), st.sampled_from(KEYS)),
    st.tuples(
        st.just("park"),
        st.sampled_from(KEYS),
        st.sampled_from(["quota", "placement", "backoff"]),
        st.sampled_from(["no room, 1 more needed", "no room, 2 more needed", "no node"]),
    ),
    st.tuples(st.just("unpark"), st.sampled_from(KEYS)),
    st.tuples(st.just("wake")),
    st.tuples(
        st.just("retell"),
        st.sampled_from(["x", "y", None]),
        st.sampled_from(["no room, 1 more needed", "no room, 3 more needed", "held for q2"]),
    ),
    st.tuples(st.just("rekey"), st.booleans()),
    st.tuples(st.just("begin")),
    st.tuples(st.just("end"), st.booleans()),
)


def _expected(queue: PendingQueue):
    """(groups, chains of the parked for quota, the others parked) from a walk of the whole line."""
    groups: dict[object, list[tuple[int, float, str]]] = {}
    chains: dict[object, list[tuple[int, float, str]]] = {}
    others = set()
    for key in queue.pending_keys():
        sort_key = queue.sort_key(key)
        assert sort_key is not None
        groups.setdefault(queue._group_of.get(key), []).append(sort_key)
        reason = queue.parked.get(key)
        if reason is not None and reason.kind is ParkKind.QUOTA and not queue.strict:
            chains.setdefault(queue._chain_of.get(key), []).append(sort_key)
        elif reason is not None:
            others.add(key)
    return (
        {group: sorted(members) for group, members in groups.items()},
        {chain: [k for _, _, k in sorted(members)] for chain, members in chains.items()},
        others,
    )


def _indexed(queue: PendingQueue):
    return (
        {group: list(members) for group, members in queue.groups().items()},
        dict(queue.quota_chains()),
        {key for key, _ in queue.parked_otherwise()},
    )


def _without_digits(message: str) -> str:
    return "".join(c for c in message if not c.isdigit())


def _check_counts(queue: PendingQueue) -> None:
    """Each chain's reasons and the kinds parked otherwise, counted as a walk of the parked counts
    them; and what the queue answers from those counts."""
    chains: dict[object, dict[object, int]] = {}
    kinds: dict[object, int] = {}
    for key, reason in queue.parked.items():
        if reason.kind is ParkKind.QUOTA and not queue.strict:
            counts = chains.setdefault(queue._chain_of.get(key), {})
            reason_key = queue.reason_key(reason.message)
            counts[reason_key] = counts.get(reason_key, 0) + 1
        else:
            kinds[reason.kind] = kinds.get(reason.kind, 0) + 1
    assert queue._chain_reasons == chains
    assert {kind: n for kind, n in queue._otherwise_kinds.items() if n} == kinds
    for chain in {*chains, *queue._chain_of.values()}:
        found = chains.get(chain, {})
        expected = None if not found else (next(iter(found)) if len(found) == 1 else MIXED)
        assert queue.chain_reason(chain) is expected or queue.chain_reason(chain) == expected
    for kind in ParkKind:
        assert queue.parks_otherwise(frozenset({kind})) == (kind in kinds)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(operation, max_size=40), st.booleans(), st.booleans(), st.booleans())
def test_indexes_list_every_pending_workload_in_order(operations, by_local_queue, strict, by_key) -> None:
    journal = Journal()
    queue = PendingQueue("q", strict=strict, by_local_queue=by_local_queue, journal=journal)
    if by_key:
        queue.compare_reasons_by(_without_digits)
    open_transactions = []
    for op in operations:
        if op[0] == "push":
            _, key, priority, time, group, chain = op
            queue.push(key, "lq", (-priority, float(time), key), group, chain)
        elif op[0] == "remove":
            queue.remove(op[1])
        elif op[0] == "park" and op[1] in queue:
            kind = {"quota": ParkKind.QUOTA, "placement": ParkKind.PLACEMENT, "backoff": ParkKind.BACKOFF}
            queue.park(op[1], ParkReason(kind[op[2]], op[3]))
        elif op[0] == "unpark":
            queue.unpark(op[1])
        elif op[0] == "wake":
            queue.wake_chains()
        elif op[0] == "retell":
            _, chain, message = op
            told = queue.reason_key(message)
            deferred = queue.deferred(chain)
            expected = [k for k in reversed(deferred) if queue.reason_key(queue.parked[k].message) != told]
            assert queue.retell(chain, ParkReason.quota(message)) == expected
            assert all(queue.reason_key(queue.parked[k].message) == told for k in deferred)
        elif op[0] == "rekey" and not open_transactions:
            queue.compare_reasons_by(_without_digits if op[1] else exact_reason)
        elif op[0] == "begin":
            open_transactions.append((journal.begin(), dict(queue.parked)))
        elif op[0] == "end" and open_transactions:
            transaction, parked = open_transactions.pop()
            if op[1]:
                transaction.commit()
            else:
                transaction.rollback()
                assert queue.parked == parked  # every reason as it was
        assert _indexed(queue) == _expected(queue)
        _check_counts(queue)
    while open_transactions:
        transaction, parked = open_transactions.pop()
        transaction.rollback()
        assert queue.parked == parked
        assert _indexed(queue) == _expected(queue)
        _check_counts(queue)


def test_pending_in_order_follows_priority_then_time_across_shapes_and_parking() -> None:
    state = make_state(CQ("q").quota("default", cpu=2))
    state.submit(workload("old-big", "lq-q", created=0, cpu=3))  # never fits: parked
    state.submit(workload("low", "lq-q", created=1, cpu=1))
    state.submit(workload("urgent", "lq-q", created=2, cpu=1, priority=5))
    state.submit(workload("late", "lq-q", created=3, cpu=2))
    before = pending_in_order(state, "q")
    assert before == ["ns/urgent", "ns/old-big", "ns/low", "ns/late"]
    admit_all(state)
    pending = pending_in_order(state, "q")
    assert "ns/old-big" in pending and "ns/urgent" not in pending
    assert pending == [k for k in before if k in pending]


def test_reasons_compared_anew_are_counted_once() -> None:
    queue = PendingQueue("q", strict=False, by_local_queue=False, journal=Journal())
    for index, key in enumerate(("a", "b", "c")):
        queue.push(key, "lq", (0, float(index), key), "g", "chain")
    queue.park("a", ParkReason.placement("no node"))
    queue.park("b", ParkReason.quota("no room, 1 more needed"))
    queue.park("c", ParkReason.quota("no room, 2 more needed"))
    assert queue.chain_reason("chain") is MIXED
    queue.compare_reasons_by(_without_digits)
    _check_counts(queue)
    assert queue.chain_reason("chain") == "no room,  more needed"
    queue.unpark("a")
    assert not queue.parks_otherwise(frozenset({ParkKind.PLACEMENT}))


def test_retelling_a_chain_gives_its_deferred_workloads_the_new_reason_and_rolls_back_whole() -> None:
    journal = Journal()
    queue = PendingQueue("q", strict=False, by_local_queue=False, journal=journal)
    for index, key in enumerate(("a", "b", "c")):
        queue.push(key, "lq", (0, float(index), key), "g", "chain")
        queue.park(key, ParkReason.quota("no room"))
    queue.wake_chains()  # `a` stands for the chain; `b` and `c` wait behind it
    assert queue.park("a", ParkReason.quota("held for q2")) == "chain"
    assert queue.retell("chain", ParkReason.quota("no room")) == []  # they have it already
    transaction = journal.begin()
    assert queue.retell("chain", ParkReason.quota("held for q2")) == ["b", "c"]
    assert queue.chain_reason("chain") == "held for q2"
    transaction.rollback()
    assert {key: reason.message for key, reason in queue.parked.items()} == {
        "a": "held for q2",
        "b": "no room",
        "c": "no room",
    }
    assert queue.chain_reason("chain") is MIXED
    _check_counts(queue)
