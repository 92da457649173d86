"""ClusterState: generated claims, shared claims, transactions that leave no trace."""

from __future__ import annotations

import numpy as np

from allot.cluster.claims import POD_CLAIM_NAME_ANNOTATION, generated_claim_name
from allot.cluster.invariants import check
from allot.cluster.journal import Journal
from allot.cluster.state import ClusterState
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from builders import claim, claim_spec, claim_template, device_class, gpu_slice, node, pod


def gpu_cluster(pods: list[object], gpus: int = 2, claims: list[object] | None = None) -> ClusterState:
    return ClusterState(
        nodes=[node("n1"), node("n2")],
        slices=[gpu_slice("n1", gpus), gpu_slice("n2", gpus)],
        classes=[device_class()],
        templates=[claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1)))],
        claims=claims or [],
        pods=pods,  # type: ignore[arg-type]
    )


def test_generated_claims_are_named_annotated_and_owned_as_upstream() -> None:
    state = gpu_cluster([pod("trainer", claims={"accel": "one-gpu"})])
    info = state.pods["default/trainer"]
    ((entry, key),) = info.claims
    generated = state.claims[key]
    assert entry == "accel"
    assert generated.name.startswith("trainer-accel-") and len(generated.name) == len("trainer-accel-") + 5
    assert generated.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "accel"
    (owner,) = generated.metadata.owner_references
    assert (owner.kind, owner.name, owner.controller, owner.block_owner_deletion) == (
        "Pod",
        "trainer",
        True,
        True,
    )
    assert generated.spec == state.templates["default/one-gpu"].spec.spec
    # Deterministic: the same pod gets the same name again.
    assert generated_claim_name(info.pod, "accel") == generated.name


def test_long_names_are_truncated_keeping_both_parts() -> None:
    long_pod = pod("p" * 60, claims={"c" * 30: "one-gpu"})
    name = generated_claim_name(long_pod, "c" * 30)
    assert len(name) <= 63
    assert name.startswith("p") and "-c" in name


def test_shared_claim_is_allocated_once_and_reserved_for_each_pod() -> None:
    shared = claim("shared-gpu", claim_spec(("gpu", "gpu.example.com", 1)))
    state = gpu_cluster([pod(f"p{i}", claim_names={"gpu": "shared-gpu"}) for i in range(3)], claims=[shared])
    scheduler = Scheduler(state)
    nodes = set()
    for i in range(3):
        outcome = scheduler.schedule(f"default/p{i}")
        assert isinstance(outcome, Placement)
        nodes.add(outcome.node)
    allocated = state.claims["default/shared-gpu"]
    assert allocated.status.allocation is not None
    assert len(allocated.status.allocation.devices.results) == 1
    assert sorted(r.name for r in allocated.status.reserved_for) == ["p0", "p1", "p2"]
    # The allocation is node-local, so every pod follows it to the same node.
    assert len(nodes) == 1
    assert check(state) == []
    # Releasing all but one pod keeps the allocation; releasing the last frees the device.
    state.unbind("default/p0")
    state.unbind("default/p1")
    assert state.claims["default/shared-gpu"].status.allocation is not None
    state.unbind("default/p2")
    assert state.claims["default/shared-gpu"].status.allocation is None
    assert not state.allocated.exclusive
    assert check(state) == []


def test_rolled_back_transaction_restores_everything() -> None:
    state = gpu_cluster([pod(f"p{i}", cpu="1", claims={"gpu": "one-gpu"}) for i in range(4)])
    scheduler = Scheduler(state)
    assert isinstance(scheduler.schedule("default/p0"), Placement)
    before_requested = {k: v.copy() for k, v in state.nodes.requested.items()}
    before_claims = dict(state.claims)
    before_allocated = dict(state.allocated.exclusive)
    with state.journal.transaction():
        for i in (1, 2, 3):
            assert isinstance(scheduler.schedule(f"default/p{i}"), Placement)
        state.unbind("default/p0")
        state.remove_pod("default/p1")
    assert all(np.array_equal(before_requested[k], state.nodes.requested[k]) for k in before_requested)
    assert state.claims == before_claims
    assert dict(state.allocated.exclusive) == before_allocated
    assert [i.key for i in state.bound()] == ["default/p0"]
    assert "default/p1" in state.pods
    assert check(state) == []


def test_nested_transactions_commit_into_the_parent() -> None:
    journal = Journal()
    values: list[int] = []

    def push(v: int) -> None:
        values.append(v)
        journal.record(values.pop)

    with journal.transaction() as outer:
        push(1)
        with journal.transaction() as inner:
            push(2)
            inner.commit()
        with journal.transaction():
            push(3)
        assert values == [1, 2]
        outer.rollback()
    assert values == []


def test_claim_already_allocated_pins_the_pod_to_its_node() -> None:
    shared = claim("pinned", claim_spec(("gpu", "gpu.example.com", 1)))
    state = gpu_cluster(
        [pod("first", claim_names={"g": "pinned"}), pod("second", claim_names={"g": "pinned"}, cpu="7")],
        claims=[shared],
    )
    scheduler = Scheduler(state)
    first = scheduler.schedule("default/first")
    assert isinstance(first, Placement)
    # The second pod must share the node of the allocated claim; make that node too small.
    state.add_pod(pod("hog", cpu="7", node_name=""))
    hog = scheduler.place("default/hog")
    assert isinstance(hog, Placement)
    state.bind("default/hog", first.node, {})
    outcome = scheduler.place("default/second")
    assert isinstance(outcome, Unschedulable)
    assert "resourceclaim not available on the node" in outcome.message
    assert "Insufficient cpu" in outcome.message
