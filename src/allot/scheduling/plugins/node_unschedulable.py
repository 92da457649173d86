"""NodeUnschedulable: cordoned nodes take only pods that tolerate the unschedulable taint."""

from __future__ import annotations

from allot.cluster.events import NODE_EVENTS
from allot.model.core import Taint
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.plugins.taint_toleration import tolerates
from allot.scheduling.status import Code

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"
_UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


class NodeUnschedulable:
    name = NAME
    # Only a node changing (uncordoned, taint removed, a new node) can undo this rejection.
    wake_on = NODE_EVENTS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        cordoned = candidates & ~cycle.state.nodes.schedulable
        if not cordoned.any() or tolerates(cycle.pod.pod.spec.tolerations, _UNSCHEDULABLE_TAINT):
            return []
        return [Rejection(REASON, cordoned, Code.UNRESOLVABLE)]
