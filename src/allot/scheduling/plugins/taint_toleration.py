"""TaintToleration: NoSchedule/NoExecute taints keep pods off unless tolerated; PreferNoSchedule scores.

A node that is not Ready counts as carrying `node.kubernetes.io/not-ready:
NoSchedule`, the taint Kubernetes' node lifecycle controller would put on it.
Per-node results depend only on the pod's tolerations and the nodes' taints,
so they are computed once per distinct toleration list and reused.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from allot.cluster.events import NODE_EVENTS
from allot.model.core import Taint, Toleration
from allot.model.taints import tolerates as toleration_matches
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.status import Code

NAME = "TaintToleration"
NOT_READY_TAINT = Taint(key="node.kubernetes.io/not-ready", effect="NoSchedule")
_BLOCKING = ("NoSchedule", "NoExecute")


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(toleration_matches(t, taint) for t in tolerations)


# kube-scheduler v1.36's reason, the same whatever the taint (older releases named the taint).
UNTOLERATED = "node(s) had untolerated taint(s)"


class _PerTolerations:
    __slots__ = ("prefer_counts", "tolerates_not_ready", "untolerated")

    def __init__(self, untolerated: BoolArray, prefer: IntArray, not_ready: bool) -> None:
        # Nodes with a NoSchedule or NoExecute taint the pod does not tolerate.
        self.untolerated = untolerated
        self.prefer_counts = prefer
        self.tolerates_not_ready = not_ready


class TaintToleration:
    name = NAME
    # Taints change only with the node.
    wake_on = NODE_EVENTS

    def __init__(self) -> None:
        self._cache: dict[tuple[object, tuple[Toleration, ...]], _PerTolerations] = {}

    def _for(self, cycle: Cycle) -> _PerTolerations:
        tolerations = cycle.pod.pod.spec.tolerations
        table = cycle.state.nodes
        key = (table, tolerations)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        untolerated = np.zeros(table.size, dtype=np.bool_)
        prefer = np.zeros(table.size, dtype=np.int64)
        for info in table.infos:
            untolerated[info.index] = any(
                taint.effect in _BLOCKING and not tolerates(tolerations, taint) for taint in info.taints
            )
            prefer[info.index] = sum(
                1 for t in info.taints if t.effect == "PreferNoSchedule" and not tolerates(tolerations, t)
            )
        cached = _PerTolerations(untolerated, prefer, tolerates(tolerations, NOT_READY_TAINT))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = cached
        return cached

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        per = self._for(cycle)
        rejected = per.untolerated & candidates
        if not per.tolerates_not_ready:
            rejected |= candidates & ~cycle.state.nodes.ready
        return [Rejection(UNTOLERATED, rejected, Code.UNRESOLVABLE)] if rejected.any() else []

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        counts = self._for(cycle).prefer_counts[nodes]
        highest = counts.max() if counts.size else 0
        if highest == 0:
            return np.full(nodes.size, 100.0)
        # kube-scheduler's reverse normalisation: fewest intolerable taints scores 100.
        return 100.0 - (counts * 100 // highest).astype(np.float64)
