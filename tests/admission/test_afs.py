"""Admission fair sharing: decay, entry penalty, weights and the queue order (fairshare.md §1.4)."""

from __future__ import annotations

import math

import pytest

from allot.admission import AdmissionConfig, AfsConfig
from allot.admission.afs import AdmissionFairSharing, alpha
from allot.cluster.journal import Journal

from .builders import CQ, admit_all, local_queue, make_state, workload

HALF = 600.0  # 10m half life
TICK = 60.0  # 1m sampling


def ledger(**kw: float) -> AdmissionFairSharing:
    return AdmissionFairSharing(AfsConfig(half_life=HALF, sampling_interval=TICK, **kw), Journal())


def test_alpha() -> None:
    assert alpha(HALF, HALF) == pytest.approx(0.5)
    assert alpha(TICK, HALF) == pytest.approx(1 - 0.5 ** (60 / 600))
    assert alpha(TICK, 0) == 0


def test_entry_penalty_then_decay_towards_admitted_usage() -> None:
    afs = ledger()
    a = alpha(TICK, HALF)
    afs.admitted("ns/a", {"cpu": 4000}, now=0.0)  # 4 cores
    # Before the next tick only the entry penalty counts: α·4.
    assert afs.score("ns/a") == pytest.approx(a * 4)
    assert afs.consumed("ns/a") == {}
    afs.advance(TICK)  # first tick: consumed = α·4, penalty dropped
    assert afs.consumed("ns/a") == {"cpu": pytest.approx(a * 4)}
    assert afs.score("ns/a") == pytest.approx(a * 4)
    afs.advance(TICK * 11)  # ten more ticks: consumed = 4 − 4·(1−α)^11
    assert afs.consumed("ns/a")["cpu"] == pytest.approx(4 - 4 * (1 - a) ** 11)
    afs.released("ns/a", {"cpu": 4000}, now=TICK * 11)
    afs.advance(TICK * 21)  # usage gone: decays by (1−α)^10 = 2^-1 (ten ticks = one half life)
    assert afs.consumed("ns/a")["cpu"] == pytest.approx((4 - 4 * (1 - a) ** 11) * 0.5)


def test_sampling_is_independent_of_how_often_time_is_reported() -> None:
    fine, coarse = ledger(), ledger()
    for afs in (fine, coarse):
        afs.admitted("ns/a", {"cpu": 2000, "nvidia.com/gpu": 1}, now=5.0)
    for t in range(0, 1000, 7):
        fine.advance(float(t))
    fine.advance(1000.0)
    coarse.advance(1000.0)
    assert fine.consumed("ns/a") == pytest.approx(coarse.consumed("ns/a"))


def test_weights() -> None:
    afs = ledger(resource_weights={"nvidia.com/gpu": 10.0})
    afs.ensure("ns/heavy", weight=2.0)
    afs.ensure("ns/zero", weight=0.0)
    afs.admitted("ns/heavy", {"cpu": 1000, "nvidia.com/gpu": 1}, now=0.0)
    afs.advance(TICK)
    a = alpha(TICK, HALF)
    # (1·α·1 core + 10·α·1 GPU) / weight 2
    assert afs.score("ns/heavy") == pytest.approx((a * 1 + 10 * a * 1) / 2)
    assert afs.score("ns/zero") == math.inf


def test_half_life_zero_keeps_nothing() -> None:
    afs = AdmissionFairSharing(AfsConfig(half_life=0.0, sampling_interval=TICK), Journal())
    afs.admitted("ns/a", {"cpu": 8000}, now=0.0)
    assert afs.score("ns/a") == 0
    afs.advance(TICK * 3)
    assert afs.score("ns/a") == 0


def afs_state():
    return make_state(
        CQ("q").quota("default", cpu=100).afs(),
        local_queues=(local_queue("ns/a", "q"), local_queue("ns/b", "q")),
        config=AdmissionConfig(afs=AfsConfig(half_life=HALF, sampling_interval=TICK)),
    )


def test_burst_goes_behind_after_entry_penalty() -> None:
    state = afs_state()
    # Tenant a submits a burst of high-priority work first; b submits later at low priority.
    for i in range(5):
        state.submit(workload(f"a{i}", "a", created=i, priority=100, cpu=4))
    for i in range(3):
        state.submit(workload(f"b{i}", "b", created=10 + i, priority=0, cpu=4))
    # Nothing admitted yet: both scores 0, so priority decides: a0 first.
    first = next(iter(state.candidates(0)))
    assert first.workload.key == "ns/a0"
    state.admit(first.workload, state.assign(first.workload), 0.0)
    # a's entry penalty now puts every other a-workload behind b's, despite the priority.
    assert state.pending_order("q") == ["ns/b0", "ns/b1", "ns/b2", "ns/a1", "ns/a2", "ns/a3", "ns/a4"]


def test_alternates_between_local_queues() -> None:
    state = afs_state()
    for i in range(4):
        state.submit(workload(f"a{i}", "a", created=i, cpu=1))
        state.submit(workload(f"b{i}", "b", created=10 + i, cpu=1))
    order = admit_all(state, now=0.0)
    assert order == ["ns/a0", "ns/b0", "ns/a1", "ns/b1", "ns/a2", "ns/b2", "ns/a3", "ns/b3"]


def test_consumed_resources_in_status_and_rollback() -> None:
    state = afs_state()
    w = workload("a0", "a", cpu=4)
    state.submit(w)
    with state.journal.transaction():
        state.admit(w, state.assign(w), 0.0)
        assert state.afs is not None and state.afs.score("ns/a") > 0
    # Not committed: the penalty is gone with the admission.
    assert state.afs.score("ns/a") == 0
    state.admit(w, state.assign(w), 0.0)
    state.advance(TICK)
    lq = state.status().local_queue("ns/a")
    assert lq.consumed == {"cpu": pytest.approx(alpha(TICK, HALF) * 4)}
    assert lq.admitted == 1
