"""NodeName: a pod that names its node (`spec.nodeName`) fits only that node.

kube-scheduler never schedules a pod whose nodeName is set (it is bound already); allot
meets one when it names a node the input does not have, and keeps it off every other node.
A pod that was bound here and that allot took off its node (moved by consolidation, evicted
from a failed node, preempted) stands for the pod its controller creates in its place, which
names no node: the name no longer holds it.
"""

from __future__ import annotations

import numpy as np

from allot.cluster.events import NODE_EVENTS
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import Code

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME
    # Only the named node appearing can help.
    wake_on = NODE_EVENTS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        wanted = cycle.pod.pod.spec.node_name
        if not wanted or cycle.pod.started:
            return []
        rejected = candidates.copy()
        index = cycle.state.nodes.index.get(wanted)
        if index is not None:
            rejected[index] = False
        return [Rejection(REASON, rejected, Code.UNRESOLVABLE)] if np.any(rejected) else []
