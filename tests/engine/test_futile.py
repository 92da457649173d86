"""Which events let a failed preempting placement be skipped, and which make it worth trying again."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from admission.builders import workload
from allot.admission.flavors import Assignment, FlavorChoice, Mode, PodSetAssignment
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.engine.futile import FutilePreemptions

WORKLOAD = workload("team-a/big", gpu=8)


def assignment(flavor: str) -> Assignment:
    choice = FlavorChoice(flavor, Mode.PREEMPT)
    return Assignment("team-a", (PodSetAssignment("main", 1, {"gpu": choice}, {"gpu": 8}, ("short",)),))


def never_fits(probes: Sequence[str], nodes: Sequence[int], victims: Sequence[str]) -> bool:
    return False


def failed_once() -> FutilePreemptions:
    futile = FutilePreemptions()
    futile.failed(WORKLOAD, assignment("h100"), ["b/v2", "b/v1"], "no node fits")
    return futile


def nodes_of(workloads: Iterable[str]) -> set[int]:
    """Victim b/v<n> runs on node n."""
    return {int(key.rsplit("v", 1)[1]) for key in workloads}


def repeat(
    futile: FutilePreemptions, victims: list[str], fits=never_fits, flavor: str = "h100"
) -> str | None:
    return futile.repeat(WORKLOAD, assignment(flavor), victims, ("team-a/big-0",), fits, nodes_of)


def test_the_same_attempt_with_nothing_changed_is_skipped_with_its_reason() -> None:
    futile = failed_once()
    # Binds, arrivals and quota changes give no node room (the victims are compared instead).
    futile.observe(
        [
            ClusterEvent(ClusterEventKind.POD_BOUND, 3),
            ClusterEvent(ClusterEventKind.POD_ADDED),
            ClusterEvent(ClusterEventKind.QUOTA_CHANGED, cluster_queue="team-a"),
        ]
    )
    assert repeat(futile, ["b/v1", "b/v2"]) == "no node fits"


def test_other_flavors_are_tried() -> None:
    assert repeat(failed_once(), ["b/v1", "b/v2"], flavor="a100") is None


def test_other_victims_count_only_where_they_free_room_the_failed_attempt_did_not() -> None:
    futile = failed_once()
    asked: list[tuple[list[int], list[str]]] = []

    def fits_on_seven(probes: Sequence[str], nodes: Sequence[int], victims: Sequence[str]) -> bool:
        asked.append((list(nodes), list(victims)))
        return 7 in nodes

    # Fewer victims than then: no node has more room than it had.
    assert repeat(futile, ["b/v1"], fits_on_seven) == "no node fits"
    # A new victim on node 3, where the pod would not fit: it would fail alike.
    assert repeat(futile, ["b/v1", "b/v3"], fits_on_seven) == "no node fits"
    assert asked == [([3], ["b/v1", "b/v3"])]
    # A new victim on node 7, where it would: tried.
    assert repeat(futile, ["b/v2", "b/v7"], fits_on_seven) is None


def test_a_changed_node_is_asked_whether_a_pod_fits_it_without_the_victims() -> None:
    futile = failed_once()
    futile.observe([ClusterEvent(ClusterEventKind.POD_LEFT, 5), ClusterEvent(ClusterEventKind.POD_LEFT, 2)])
    asked: list[tuple[list[int], list[str]]] = []

    def fits(probes: Sequence[str], nodes: Sequence[int], victims: Sequence[str]) -> bool:
        asked.append((list(nodes), list(victims)))
        return nodes == [2, 5]

    assert repeat(futile, ["b/v1", "b/v2"], fits) is None
    assert asked == [([2, 5], ["b/v1", "b/v2"])]
    # A node that changed but has no room for it does not count.
    assert repeat(futile, ["b/v1", "b/v2"]) == "no node fits"


def test_changes_not_tied_to_a_node_and_a_new_workload_object_are_tried() -> None:
    futile = failed_once()
    futile.observe([ClusterEvent(ClusterEventKind.SLICE_CHANGED)])
    assert repeat(futile, ["b/v1", "b/v2"]) is None
    again = failed_once()
    resubmitted = workload("team-a/big", gpu=8)
    assert again.repeat(resubmitted, assignment("h100"), ["b/v1", "b/v2"], (), never_fits, nodes_of) is None
    again.forget("team-a/big")
    assert repeat(again, ["b/v1", "b/v2"]) is None
