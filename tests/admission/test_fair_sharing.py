"""Dominant resource share and the fair-sharing admission order (fairshare.md §1.3)."""

from __future__ import annotations

import math

import pytest

from allot.admission import DRS, AdmissionConfig, compare_drs
from allot.admission.fair_sharing import MAX_INT64
from allot.admission.tournament import Nominee, TournamentMemo, run_tournament

from .builders import CQ, CohortB, admit_all, make_state, units, workload

FAIR = AdmissionConfig(fair_sharing=True)
GPU = "nvidia.com/gpu"


def test_weighted_share_worked_example() -> None:
    # Cohort {A: 9 CPU, B: 12 CPU}; A uses 15 => borrowed 6, lendable 21, DRS 6000/21 = 285.7 => 286.
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=9), CQ("b").cohort("c").quota("default", cpu=12), config=FAIR
    )
    for i in range(15):
        state.submit(workload(f"w{i}", "lq-a", created=i, cpu=1))
    admit_all(state)
    status = state.status().cluster_queue("a")
    assert status.weighted_share == 286
    assert status.dominant_resource == "cpu"
    drs = state.shares.share(state.tree.cqs["a"])
    assert drs.precise() == pytest.approx(6000 / 21)
    assert state.status().cluster_queue("b").weighted_share == 0


@pytest.mark.parametrize(
    ("weight", "expected"),
    [("2", math.ceil(6000 / 21 / 2)), ("0.5", math.ceil(6000 / 21 / 0.5)), ("0", MAX_INT64)],
)
def test_weights(weight: str, expected: int) -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=9).weight(weight),
        CQ("b").cohort("c").quota("default", cpu=12),
        config=FAIR,
    )
    for i in range(15):
        state.submit(workload(f"w{i}", "lq-a", created=i, cpu=1))
    admit_all(state)
    assert state.status().cluster_queue("a").weighted_share == expected


def test_zero_weight_is_zero_when_not_borrowing_and_worst_when_borrowing() -> None:
    lender = DRS(weight=0.0)
    assert lender.precise() == 0 and lender.weighted_share() == 0
    borrower = DRS(weight=0.0, ratio=1.0, dominant="cpu", borrowing=True)
    heavy = DRS(weight=1.0, ratio=999.0, dominant="cpu", borrowing=True)
    assert compare_drs(borrower, heavy) == 1
    assert compare_drs(heavy, borrower) == -1
    assert borrower.weighted_share() == MAX_INT64


def test_dominant_resource_ties_go_to_smallest_name() -> None:
    # Borrow 1 of 10 cpu and 1 of 10 memory units: equal ratios => "cpu" < "memory".
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=0, memory=0),
        CQ("b").cohort("c").quota("default", cpu=10, memory=10),
        config=FAIR,
    )
    state.submit(workload("w", "lq-a", cpu=1, memory=1))
    admit_all(state)
    drs = state.shares.share(state.tree.cqs["a"])
    assert drs.dominant == "cpu"
    assert drs.ratio == pytest.approx(100.0)


def test_share_is_summed_over_flavors_and_uses_parent_potential() -> None:
    # Two flavors of one resource: borrowed amounts add up, lendable is the parent's total.
    state = make_state(
        CQ("a")
        .cohort("c")
        .group(
            ["cpu"],
            {"name": "x", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
            {"name": "y", "resources": [{"name": "cpu", "nominalQuota": "1"}]},
        ),
        CQ("b")
        .cohort("c")
        .group(
            ["cpu"],
            {"name": "x", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
            {"name": "y", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
        ),
        config=FAIR,
    )
    a = state.tree.cqs["a"]
    state.tree.add_usage(a, {("x", "cpu"): 2000, ("y", "cpu"): 3000})
    # borrowed 1 + 2 = 3 of lendable 5 + 5 = 10 => 300
    assert state.shares.share(a).ratio == pytest.approx(300.0)


def test_a_share_follows_its_queues_usage_through_changes_elsewhere_and_undos() -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=2), CQ("b").cohort("c").quota("default", cpu=8), config=FAIR
    )
    tree = state.tree
    a, b = tree.cqs["a"], tree.cqs["b"]
    tree.add_usage(a, {("default", "cpu"): 4000})
    assert state.shares.share(a).ratio == pytest.approx(200.0)  # borrows 2 of the cohort's 10
    assert state.shares.share(a) is state.shares.share(a)  # kept while a's usage stays
    tree.add_usage(b, {("default", "cpu"): 1000})  # b's usage changes: a's share does not
    assert state.shares.share(a).ratio == pytest.approx(200.0)
    with tree.journal.transaction():  # a what-if on a's usage, rolled back
        tree.add_usage(a, {("default", "cpu"): 2000})
        assert state.shares.share(a).ratio == pytest.approx(400.0)
    assert state.shares.share(a).ratio == pytest.approx(200.0)
    tree.remove_usage(a, {("default", "cpu"): 3000})
    assert not state.shares.share(a).borrowing


def _drive(state, queues: dict[str, int], total: int) -> None:
    """Keep every queue saturated with 1-GPU workloads and admit until nothing fits."""
    t = 0
    for name, count in queues.items():
        for i in range(count):
            state.submit(workload(f"{name}-{i}", f"lq-{name}", created=t, **{"nvidia.com__gpu": 1}))
            t += 1
    admitted = admit_all(state)
    assert len(admitted) == total


def test_kep_300_gpus_two_cohorts_and_weights_1_1_3() -> None:
    # KEP-1714: 300 GPUs; cohorts C1, C2 with equal weights => 150 each;
    # inside C1, CQs weighted 1:1:3 => 30/30/90.
    quota = {"nvidia.com__gpu": 0}
    state = make_state(
        CQ("a").cohort("c1").quota("default", **quota).weight(1),
        CQ("b").cohort("c1").quota("default", **quota).weight(1),
        CQ("c").cohort("c1").quota("default", **quota).weight(3),
        CQ("d").cohort("c2").quota("default", **quota),
        CQ("e").cohort("c2").quota("default", **quota),
        cohorts=(
            CohortB("root").quota("default", **{"nvidia.com__gpu": 300}),
            CohortB("c1").parent("root"),
            CohortB("c2").parent("root"),
        ),
        config=FAIR,
    )
    _drive(state, {"a": 200, "b": 200, "c": 200, "d": 200, "e": 200}, 300)
    used = {q: state.usage(q).get(("default", GPU), 0) for q in "abcde"}
    assert used["a"] + used["b"] + used["c"] == 150
    assert used["d"] + used["e"] == 150
    assert (used["a"], used["b"], used["c"]) == (30, 30, 90)
    assert (used["d"], used["e"]) == (75, 75)


def two_borrowers():  # type: ignore[no-untyped-def]
    """Queues a and b owning nothing, in a cohort that holds 10 cpu."""
    return make_state(
        CQ("a").cohort("c").quota("default", cpu=0),
        CQ("b").cohort("c").quota("default", cpu=0),
        cohorts=(CohortB("c").quota("default", cpu=10),),
        config=FAIR,
    )


def test_tournament_prefers_lower_share_after_admission_then_priority() -> None:
    state = two_borrowers()
    state.submit(workload("a-big", "lq-a", created=0, cpu=4))
    state.submit(workload("b-small", "lq-b", created=1, cpu=1))
    # After admission: a would borrow 4/10, b 1/10 => b first although a is older.
    order = [c.workload.key for c in state.candidates(0)]
    assert order == ["ns/b-small", "ns/a-big"]


def _mixed(config: AdmissionConfig):
    # a: cpu within nominal (flavor x) but already borrowing memory heavily (flavor y);
    # b: borrows a little cpu. Lendable cpu 105, memory 100.
    state = make_state(
        CQ("a").cohort("c").quota("x", cpu=5).quota("y", memory=0),
        CQ("b").cohort("c").quota("x", cpu=0).quota("y", memory=0),
        cohorts=(CohortB("c").quota("x", cpu=100).quota("y", memory=100),),
        config=config,
    )
    state.tree.add_usage(state.tree.cqs["a"], {("y", "memory"): 50})  # DRS(a) = 500 from memory
    state.submit(workload("b", "lq-b", created=0, cpu=1))  # DRS(b) after = 1000/105 = 9.5
    state.submit(workload("a", "lq-a", created=1, cpu=1))  # DRS(a) after = 500, not borrowing cpu
    return state


def test_tournament_prefers_subtree_not_borrowing_what_it_requests() -> None:
    state = _mixed(FAIR)
    assert [c.workload.key for c in state.candidates(0)] == ["ns/a", "ns/b"]


def test_without_prioritize_non_borrowing_lower_share_wins() -> None:
    state = _mixed(AdmissionConfig(fair_sharing=True, fair_sharing_prioritize_non_borrowing=False))
    assert [c.workload.key for c in state.candidates(0)] == ["ns/b", "ns/a"]


def test_equal_shares_break_ties_by_priority_then_time_then_key() -> None:
    state = make_state(
        CQ("a").cohort("c").quota("default", cpu=0),
        CQ("b").cohort("c").quota("default", cpu=0),
        CQ("d").cohort("c").quota("default", cpu=0),
        cohorts=(CohortB("c").quota("default", cpu=10),),
        config=FAIR,
    )
    state.submit(workload("low", "lq-a", created=0, priority=1, cpu=1))
    state.submit(workload("high", "lq-b", created=5, priority=9, cpu=1))
    state.submit(workload("mid", "lq-d", created=3, priority=1, cpu=1))
    first = next(iter(state.candidates(0)))
    assert first.workload.key == "ns/high"


def test_a_tournament_replayed_with_its_memo_reads_again_a_queue_whose_usage_changed() -> None:
    state = two_borrowers()
    root = state.tree.cohorts["c"]
    nominees = {
        "a": Nominee("ns/a", 0, 0.0, {("default", "cpu"): units("cpu", 2)}),
        "b": Nominee("ns/b", 0, 1.0, {("default", "cpu"): units("cpu", 3)}),
    }
    memo: TournamentMemo = {}
    first = run_tournament(state.shares, root, nominees, memo=memo)
    assert first is not None and first.key == "ns/a"
    # a's queue now holds 4 cpu: with its nominee it would borrow 6 of 10, b only 3.
    state.tree.add_usage(state.tree.cqs["a"], {("default", "cpu"): units("cpu", 4)})
    replayed = run_tournament(state.shares, root, nominees, memo=memo)
    fresh = run_tournament(state.shares, root, nominees)
    assert replayed is not None and fresh is not None
    assert replayed.key == fresh.key == "ns/b"
