"""The one-line summary counted from the filters' arrays equals the count over the per-node statuses."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from allot.cluster.nodes import NodeInfo
from allot.model.base import ObjectMeta
from allot.model.core import Node
from allot.scheduling.framework import Rejection
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.status import Code, Status

SIZE = 6
NODES = [NodeInfo(i, Node(metadata=ObjectMeta(name=f"n{i}")), {}, (), {}) for i in range(SIZE)]
REASONS = [
    "Insufficient cpu",
    "Insufficient memory",
    "node(s) were unschedulable",
    "cannot allocate all claims",
]

rejection = st.tuples(
    st.sampled_from(["NodeResourcesFit", "NodeUnschedulable", "DynamicResources"]),
    st.sampled_from(REASONS),
    st.lists(st.booleans(), min_size=SIZE, max_size=SIZE),
    st.sampled_from([Code.UNSCHEDULABLE, Code.UNRESOLVABLE]),
)
filtered = st.dictionaries(
    st.integers(0, SIZE - 1), st.lists(st.sampled_from(REASONS), min_size=1, max_size=2), max_size=3
)


def per_node_count(statuses: NodeStatuses) -> Counter[str]:
    counts: Counter[str] = Counter()
    for status in statuses.values():
        for reason in dict.fromkeys(status.reasons):
            counts[reason] += 1
    return counts


@given(st.lists(rejection, max_size=6), filtered)
def test_histogram_from_arrays_matches_the_per_node_statuses(
    raw: list[tuple[str, str, list[bool], Code]], node_filter: dict[int, list[str]]
) -> None:
    rejections = [(plugin, Rejection(reason, np.array(mask), code)) for plugin, reason, mask, code in raw]
    statuses = {
        i: Status(Code.UNSCHEDULABLE, tuple(reasons), "DynamicResources")
        for i, reasons in node_filter.items()
    }
    lazy = NodeStatuses(rejections, statuses, NODES)
    from_arrays = lazy.histogram()
    assert from_arrays == per_node_count(NodeStatuses(rejections, statuses, NODES))
    # Reading the mapping first gives the same answer.
    assert per_node_count(lazy) == from_arrays == lazy.histogram()


def test_first_plugin_wins_and_later_array_changes_do_not_leak() -> None:
    cpu = np.array([True, True, False, False, False, False])
    rejections = [
        ("NodeUnschedulable", Rejection("node(s) were unschedulable", np.array([True] + [False] * 5))),
        ("NodeResourcesFit", Rejection("Insufficient cpu", cpu)),
    ]
    statuses = NodeStatuses(rejections, {}, NODES)
    cpu[:] = True  # the plugin reuses its array for the next pod
    assert dict(statuses) == {
        "n0": Status(Code.UNSCHEDULABLE, ("node(s) were unschedulable",), "NodeUnschedulable"),
        "n1": Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit"),
    }
    assert statuses.histogram() == Counter({"node(s) were unschedulable": 1, "Insufficient cpu": 1})


@given(st.lists(rejection, max_size=6), filtered)
def test_nodes_by_code_from_arrays_match_the_per_node_statuses(
    raw: list[tuple[str, str, list[bool], Code]], node_filter: dict[int, list[str]]
) -> None:
    rejections = [(plugin, Rejection(reason, np.array(mask), code)) for plugin, reason, mask, code in raw]
    statuses = {
        i: Status(Code.UNRESOLVABLE, tuple(reasons), "DynamicResources") for i, reasons in node_filter.items()
    }
    for code in (Code.UNSCHEDULABLE, Code.UNRESOLVABLE):
        from_arrays = NodeStatuses(rejections, statuses, NODES).indices_with(code)
        built = NodeStatuses(rejections, statuses, NODES)
        expected = sorted(int(name[1:]) for name, status in built.items() if status.code == code)
        assert from_arrays == expected == built.indices_with(code)


class _RefuseToReserve:
    name = "RefuseToReserve"

    def reserve(self, cycle: object, index: int) -> Status:
        return Status(Code.UNSCHEDULABLE, ("node refused at reserve",), self.name)


def test_a_node_refused_at_reserve_says_why() -> None:
    # Every node passes the filters, then a plugin refuses each at reserve: the pod's message names
    # that reason for every node, as kube-scheduler reports a failed Reserve.
    from allot.cluster.state import ClusterState
    from allot.scheduling.scheduler import Scheduler, Unschedulable
    from builders import node, pod

    state = ClusterState(nodes=[node("a", cpu="4"), node("b", cpu="4")], pods=[pod("p", cpu="1")])
    scheduler = Scheduler(state)
    plugins = scheduler.plugins("default-scheduler")
    assert plugins is not None
    plugins.reservers.append(_RefuseToReserve())  # type: ignore[arg-type]
    outcome = scheduler.place("default/p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message.startswith("0/2 nodes are available: 2 node refused at reserve."), outcome.message
