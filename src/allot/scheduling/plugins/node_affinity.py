"""NodeAffinity: spec.nodeSelector and required node affinity filter; preferred affinity scores.

Both depend only on the pod's selector and the nodes' labels, so results
are cached per distinct (nodeSelector, affinity) pair.
"""

from __future__ import annotations

import msgspec
import numpy as np

from allot.cluster.events import NODE_EVENTS
from allot.dra.errors import AllocationError
from allot.dra.nodes import selector_matches
from allot.model.core import Node, NodeSelector, NodeSelectorTerm
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.status import Code

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    try:
        return selector_matches(NodeSelector(node_selector_terms=(term,)), node)
    except AllocationError:
        return False


class NodeAffinity:
    name = NAME
    # Labels change only with the node.
    wake_on = NODE_EVENTS

    def __init__(self) -> None:
        self._cache: dict[tuple[object, bytes], tuple[BoolArray, IntArray]] = {}

    def _for(self, cycle: Cycle) -> tuple[BoolArray, IntArray]:
        spec = cycle.pod.pod.spec
        table = cycle.state.nodes
        signature = msgspec.json.encode((sorted(spec.node_selector.items()), spec.affinity))
        key = (table, signature)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        preferred = affinity.preferred_during_scheduling_ignored_during_execution if affinity else ()
        matches = np.ones(table.size, dtype=np.bool_)
        weights = np.zeros(table.size, dtype=np.int64)
        for info in table.infos:
            labels = info.labels
            ok = all(labels.get(k) == v for k, v in spec.node_selector.items())
            if ok and required is not None:
                try:
                    ok = selector_matches(required, info.node)
                except AllocationError:
                    ok = False
            matches[info.index] = ok
            weights[info.index] = sum(p.weight for p in preferred if _term_matches(p.preference, info.node))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = (matches, weights)
        return matches, weights

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        matches, _ = self._for(cycle)
        rejected = candidates & ~matches
        return [Rejection(REASON, rejected, Code.UNRESOLVABLE)] if rejected.any() else []

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        _, weights = self._for(cycle)
        values = weights[nodes]
        highest = values.max() if values.size else 0
        if highest <= 0:
            return np.zeros(nodes.size)
        return (values * 100 // highest).astype(np.float64)
