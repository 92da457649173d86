"""The pod index follows bound pods through binds, relabels and node-table changes."""

from __future__ import annotations

from msgspec.structs import replace

from allot.cluster.pod_index import Matcher
from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector
from builders import node, pod

WEB = Matcher.of([(None, LabelSelector(match_labels={"app": "web"}))])
TERMINATING_SKIPPED = Matcher.of(
    [(frozenset({"default"}), LabelSelector(match_labels={"app": "web"}))], skip_terminating=True
)


def test_counts_follow_binds_relabels_and_new_node_tables() -> None:
    state = ClusterState(
        nodes=[node("n1"), node("n2")],
        pods=[pod("a", labels={"app": "web"}, node_name="n1"), pod("b", labels={"app": "db"})],
    )
    assert state.pod_index.count(WEB).tolist() == [1, 0]
    state.bind("default/b", "n2", {})
    assert state.pod_index.count(WEB).tolist() == [1, 0]
    # A bound pod relabelled (the API says so) moves between selectors.
    relabelled = replace(
        state.pods["default/b"].pod,
        metadata=replace(state.pods["default/b"].pod.metadata, labels={"app": "web"}),
    )
    state.update_pod(relabelled)
    assert state.pod_index.count(WEB).tolist() == [1, 1]
    # Pods being deleted still count for affinity, not for spreading.
    info = state.pods["default/a"]
    state.update_pod(
        replace(info.pod, metadata=replace(info.pod.metadata, deletion_timestamp="2026-01-01T00:00:00Z"))
    )
    assert state.pod_index.count(WEB).tolist() == [1, 1]
    assert state.pod_index.count(TERMINATING_SKIPPED).tolist() == [0, 1]
    # A new node table (nodes added, renamed order) is counted afresh.
    state.replace_nodes([node("n0"), node("n1"), node("n2")])
    assert state.pod_index.count(WEB).tolist() == [0, 1, 1]
