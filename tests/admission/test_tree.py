"""Quota arithmetic against Kueue's documented examples and resource_node.go's formulas.

Values are derived by hand from the formulas in fairshare.md §1.2, not read
off the implementation.
"""

from __future__ import annotations

import pytest

from allot.admission import Mode
from allot.admission.tree import (
    available,
    drop_at,
    local_quota,
    lowest_subtree_that_fits,
    potential_available,
)

from .builders import CQ, CohortB, admit_all, make_state, workload

FR = ("default", "cpu")


def fill(state, queue: str, n: int, *, start: int = 0, cpu: int = 1) -> list[str]:
    for i in range(start, start + n):
        state.submit(workload(f"{queue}-{i}", f"lq-{queue}", created=i, cpu=cpu))
    return admit_all(state)


def cohort_ab(a: CQ, b: CQ):
    return make_state(a.cohort("c"), b.cohort("c"))


@pytest.mark.parametrize(
    ("a", "b", "a_max", "b_keeps"),
    [
        # docs/concepts/cluster_queue.md: A 9 CPU, B 12 CPU, B idle => A can reach 21.
        pytest.param(
            CQ("a").quota("default", cpu=9), CQ("b").quota("default", cpu=12), 21, 0, id="borrow-all"
        ),
        # borrowingLimit 1 on A => A max 9 + 1 = 10.
        pytest.param(
            CQ("a").quota("default", cpu=(9, 1)),
            CQ("b").quota("default", cpu=12),
            10,
            11,
            id="borrowing-limit",
        ),
        # lendingLimit 1 on B => A max 9 + 1 = 10, B keeps 12 - 1 = 11 private.
        pytest.param(
            CQ("a").quota("default", cpu=9),
            CQ("b").quota("default", cpu=(12, None, 1)),
            10,
            11,
            id="lending-limit",
        ),
    ],
)
def test_borrowing_and_lending_limits(a: CQ, b: CQ, a_max: int, b_keeps: int) -> None:
    state = cohort_ab(a, b)
    admitted = fill(state, "a", 30)
    assert len(admitted) == a_max
    assert state.usage("a") == {FR: a_max * 1000}
    node_a = state.tree.cqs["a"]
    assert potential_available(node_a, FR) == a_max * 1000
    if b_keeps:
        # B can still get what A could not take.
        assert len(fill(state, "b", 30, start=100)) == b_keeps


def test_lending_limit_local_quota_and_usage_bubbling() -> None:
    # B: nominal 12, lendingLimit 1 => localQuota 11; only usage past 11 reaches the cohort.
    state = cohort_ab(CQ("a").quota("default", cpu=9), CQ("b").quota("default", cpu=(12, None, 1)))
    b, cohort = state.tree.cqs["b"], state.tree.cohorts["c"]
    assert local_quota(b, FR) == 11000
    assert cohort.subtree_quota[FR] == 9000 + (12000 - 11000)
    fill(state, "b", 11)
    assert cohort.usage.get(FR, 0) == 0  # within B's private part
    fill(state, "b", 1, start=50)
    assert cohort.usage[FR] == 1000
    assert available(state.tree.cqs["a"], FR) == 9000  # 10 in the cohort, 1 used by B


def hierarchy():
    # root (nominal 4) <- mid (lendingLimit 2, nominal 0) <- {x: 4, y: 4}; root <- z: 2
    return make_state(
        CQ("x").cohort("mid").quota("default", cpu=4),
        CQ("y").cohort("mid").quota("default", cpu=4),
        CQ("z").cohort("root").quota("default", cpu=2),
        cohorts=(
            CohortB("root").quota("default", cpu=4),
            CohortB("mid").parent("root").quota("default", cpu=(0, None, 2)),
        ),
    )


def test_hierarchical_subtree_quota_and_potential_available() -> None:
    state = hierarchy()
    mid, root = state.tree.cohorts["mid"], state.tree.cohorts["root"]
    # mid: 0 + 4 + 4 = 8; lends 2 of it, keeps 6 local.
    assert mid.subtree_quota[FR] == 8000
    assert local_quota(mid, FR) == 6000
    # root: 4 + (8 - 6) + 2 = 8
    assert root.subtree_quota[FR] == 8000
    x, z = state.tree.cqs["x"], state.tree.cqs["z"]
    # x: localQuota 0 + potentialAvailable(mid) = 6 + potentialAvailable(root) = 6 + 8 = 14
    assert potential_available(mid, FR) == 14000
    assert potential_available(x, FR) == 14000
    # z: 0 + 8
    assert potential_available(z, FR) == 8000


def test_hierarchical_usage_bubbles_past_local_parts() -> None:
    state = hierarchy()
    mid, root = state.tree.cohorts["mid"], state.tree.cohorts["root"]
    fill(state, "x", 6)  # x: 6 (borrows 2 from y inside mid)
    assert mid.usage[FR] == 6000
    assert root.usage.get(FR, 0) == 0  # still within mid's local 6
    fill(state, "x", 3, start=10)  # 9: 3 past mid's local part go to root
    assert mid.usage[FR] == 9000
    assert root.usage[FR] == 3000
    z = state.tree.cqs["z"]
    # root has 8: 3 used by mid => z may use 5.
    assert available(z, FR) == 5000
    # x can still get: mid local 0 left + min(root available 5, ...) = 5
    assert available(state.tree.cqs["x"], FR) == 5000


def test_drop_at_tells_each_level_what_removing_usage_would_free() -> None:
    """Preemption's what-if: the usage a node would give up, worked out without removing it."""
    state = hierarchy()
    fill(state, "x", 9)  # x 9, mid 9 (local part 6), root 3
    x, mid, root = state.tree.cqs["x"], state.tree.cohorts["mid"], state.tree.cohorts["root"]
    two = {FR: 2000}
    # Removing 2 from x frees 2 in x and mid, and 2 of the 3 mid stored in root.
    assert drop_at(x, two, x) == {FR: 2000}
    assert drop_at(x, two, mid) == {FR: 2000}
    assert drop_at(x, two, root) == {FR: 2000}
    # Removing 5: mid had only 3 past its local part in root, so root frees 3.
    assert drop_at(x, {FR: 5000}, root) == {FR: 3000}
    before = {id(n): dict(n.usage) for n in (x, mid, root)}
    with state.tree.journal.transaction():
        state.tree.remove_usage(x, {FR: 5000})
        actual = {id(n): before[id(n)].get(FR, 0) - n.usage.get(FR, 0) for n in (x, mid, root)}
    assert actual == {id(n): drop_at(x, {FR: 5000}, n).get(FR, 0) for n in (x, mid, root)}
    assert {id(n): dict(n.usage) for n in (x, mid, root)} == before


def test_cohort_borrowing_limit_caps_subtree() -> None:
    state = make_state(
        CQ("x").cohort("mid").quota("default", cpu=2),
        CQ("z").cohort("root").quota("default", cpu=10),
        cohorts=(CohortB("root"), CohortB("mid").parent("root").quota("default", cpu=(0, 3))),
    )
    x = state.tree.cqs["x"]
    # mid may borrow at most 3 beyond its subtree quota 2 => x tops out at 5.
    assert potential_available(x, FR) == 5000
    assert len(fill(state, "x", 10)) == 5


@pytest.mark.parametrize(
    ("request_cpu", "level", "hierarchical"), [(2, 0, True), (5, 1, True), (9, 2, False)]
)
def test_borrowing_level(request_cpu: int, level: int, hierarchical: bool) -> None:
    state = hierarchy()
    x = state.tree.cqs["x"]
    # 2 fit x's nominal 4 (level 0); 5 fit mid's 8 (height 1); 9 fit only at root (height 2).
    assert lowest_subtree_that_fits(x, FR, request_cpu * 1000) == (level, hierarchical)


def test_no_fit_past_maximum_capacity_message() -> None:
    state = cohort_ab(CQ("a").quota("default", cpu=9), CQ("b").quota("default", cpu=12))
    w = workload("big", "lq-a", cpu=22)
    state.submit(w)
    assignment = state.assign(w)
    assert assignment.mode is Mode.NO_FIT
    assert assignment.message() == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously "
        "considered podsets requests (0) + current podset request (22) > maximum capacity (21)"
    )
